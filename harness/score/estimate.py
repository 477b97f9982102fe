"""`DIR/estimate.json`: the production verifier's verdict accuracy, unsafe-PASS rate and claim accuracy over ALL
imported sessions, from the labelled ones and a judge's answers on every session (`harness.score.ppi`).

Per session i (P the production verifier, T the people's labels, J the judge):
- verdict accuracy: Y = [P's verdict is one the labels allow], f = [P's verdict is J's];
- unsafe PASS: Y = [P says PASS and the labels do not allow PASS], f = [P says PASS and J does not];
- claim accuracy: Y = claims where P's class is one the labels allow / mean claims per session, f the same with
  J's class (so the mean of Y over all sessions is the share of all claims P gets right).
The labelled sessions must be a random sample of the imported ones (`vbench label serve --order random`, or
`--order active` with its recorded probabilities); a sample chosen otherwise (`--order disagreement`, the import's
`--sample disagreement`) gives a biased estimate, and the estimate says so when it can tell.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from harness.corpus.labels import read_adjudicated, read_drawn, read_labels
from harness.corpus.sessions import Imported, load_imported
from harness.score import ppi
from harness.score.intervals import ALPHA
from harness.score.label_export import gold_labels, labelled_case
from harness.system.models import Verdict

RATES = ("verdict_accuracy", "unsafe_pass_rate", "claim_accuracy")
MIN_PER_STRATUM = 2


class JudgeAnswer(BaseModel):
    """A judge's answer on one session: its verdict and each claim's class."""

    verdict: Verdict | None
    claims: dict[str, str] = Field(default_factory=dict)


class RateEstimate(BaseModel):
    name: str
    estimate: float
    ci: list[float]
    human_estimate: float | None
    human_ci: list[float] | None
    lam: float | None
    """The power-tuning λ (0: the judge is not used; 1: as much as a label); None when stratified (one per stratum)."""
    effective_labels: float | None
    """How many human labels alone would give this interval's variance."""
    labels_needed: int | None
    """Labels in all for the chosen half-width at the judge's present agreement; None: not reachable."""
    labels_still_needed: int | None
    label_all: bool = False
    """The half-width needs as many labels as there are sessions (or the judge's part alone is wider): label every
    session, and the figure is exact."""
    strata: list[str] | None = None


class Estimate(BaseModel):
    """`estimate.json`."""

    sessions: int
    labelled: int
    judge: str
    alpha: float
    half_width: float
    design: str
    rates: list[RateEstimate]
    notes: list[str] = Field(default_factory=list)
    biased: bool = False
    """The labels were not chosen at random nor with recorded probabilities (a disagreement order): the estimate
    and its interval do not describe all sessions."""

    def lines(self) -> list[str]:
        out = [f"{self.labelled} of {self.sessions} sessions labelled; judge {self.judge}; design {self.design}"]
        for r in self.rates:
            human = f"{r.human_estimate:.3f} [{r.human_ci[0]:.3f}, {r.human_ci[1]:.3f}]" if r.human_ci else "n/a"
            need = f"{r.labels_still_needed} more" + (" (every session)" if r.label_all else "")
            eff = "n/a" if r.effective_labels is None else f"{r.effective_labels:.0f}"
            out.append(
                f"  {r.name}: {r.estimate:.3f} [{r.ci[0]:.3f}, {r.ci[1]:.3f}] (human-only {human}; "
                f"worth {eff} labels; ±{self.half_width:g}: {need})"
            )
        out += [f"  note: {n}" for n in self.notes]
        return out

    def markdown(self) -> str:
        """The report's section."""
        rows = [
            "## Production verifier on all imported sessions",
            "",
            f"{self.labelled} of {self.sessions} sessions labelled; judge `{self.judge}`; labels chosen {self.design}. "
            f"{round((1 - self.alpha) * 100)}% intervals (PPI++, Angelopoulos et al. 2023).",
            "",
            "| rate | estimate [CI] | human labels only [CI] | worth (labels) | for ±"
            f"{self.half_width:g}: labels still needed |",
            "|---|---|---|---:|---:|",
        ]
        for r in self.rates:
            human = f"{r.human_estimate:.3f} [{r.human_ci[0]:.3f}, {r.human_ci[1]:.3f}]" if r.human_ci else "n/a"
            eff = "n/a" if r.effective_labels is None else f"{r.effective_labels:.0f}"
            need = f"{r.labels_still_needed}" + (" (every session)" if r.label_all else "")
            rows.append(f"| {r.name} | {r.estimate:.3f} [{r.ci[0]:.3f}, {r.ci[1]:.3f}] | {human} | {eff} | {need} |")
        rows += ["", *(f"- {n}" for n in self.notes)]
        return "\n".join(rows) + "\n"


def _allowed_verdicts(case: Imported, labels: Mapping[str, list]) -> set[Verdict]:
    verdict = labelled_case(case, labels).expected.verdict
    return set(verdict) if isinstance(verdict, list) else {verdict}


def session_values(
    case: Imported, judge: JudgeAnswer, truth: Mapping[str, list] | None
) -> tuple[np.ndarray, np.ndarray | None, int]:
    """(f per rate, Y per rate or None when unlabelled, claims): the raw values before claim scaling."""
    production = case.production
    p_verdict = production.verdict
    p_claims = {c.claim_id: c.verification.value for c in production.claim_checks}
    claim_ids = [c.claim_id for c in case.prepared().claims]
    f = np.array([
        float(p_verdict is not None and p_verdict == judge.verdict),
        float(p_verdict == Verdict.PASS and judge.verdict != Verdict.PASS),
        float(sum(1 for c in claim_ids if c in p_claims and p_claims[c] == judge.claims.get(c))),
    ])  # fmt: skip
    if truth is None:
        return f, None, len(claim_ids)
    allowed = _allowed_verdicts(case, truth)
    y = np.array([
        float(p_verdict in allowed),
        float(p_verdict == Verdict.PASS and Verdict.PASS not in allowed),
        float(sum(1 for c in claim_ids if p_claims.get(c) in {x.value for x in truth[c]})),
    ])  # fmt: skip
    return f, y, len(claim_ids)


def truth_of(folder: Path, cases: Sequence[Imported]) -> tuple[dict[str, dict[str, list]], list[str]]:
    """The labels per fully labelled session (the export's rule: adjudicated, else every annotator's answers),
    and the sessions left out because a claim has more labels than a case allows."""
    by_annotator, adjudicated = read_labels(folder), read_adjudicated(folder)
    answered = {key[0] for given in (*by_annotator.values(), adjudicated) for key in given}
    out, unsettled = {}, []
    for case in cases:
        if case.id not in answered:
            continue
        ids = [c.claim_id for c in case.prepared().claims]
        if not ids or not any(
            (case.id, i) in a or (case.id, i) in adjudicated for a in by_annotator.values() for i in ids
        ):
            continue
        labels, problem = gold_labels(ids, case.id, by_annotator, adjudicated)
        if problem is None:
            out[case.id] = labels
        elif "different labels" in problem:
            unsettled.append(case.id)
    return out, unsettled


@dataclass(frozen=True)
class Sample:
    """The labelled sessions as the estimate uses them: their indexes among all sessions, in draw order, and
    each draw's probability (None: a simple random sample, equal weights)."""

    idx: np.ndarray
    probability: np.ndarray | None
    design: str
    notes: tuple[str, ...] = ()
    biased: bool = False


def sample_of(folder: Path, cases: Sequence[Imported], labelled: set[str]) -> Sample:
    """How the labelled sessions were chosen, from the draws their label lines record: an active draw sequence
    (its longest prefix of fully labelled draws), a random one, a disagreement order (biased), or unrecorded."""
    position = {c.id: i for i, c in enumerate(cases)}
    drawn = read_drawn(folder)
    everyone = [d for per in drawn.values() for d in per.values()]
    plain = np.array(sorted(position[c] for c in labelled), dtype=int)
    if any(d.order == "active" for d in everyone):
        who = max(drawn, key=lambda a: sum(1 for d in drawn[a].values() if d.order == "active"))
        by_draw = {d.draw: (cid, d) for cid, d in drawn[who].items() if d.order == "active"}
        prefix = []
        while len(prefix) + 1 in by_draw and by_draw[len(prefix) + 1][0] in labelled:
            prefix.append(by_draw[len(prefix) + 1])
        notes = [f"labels chosen actively by {who}: {len(prefix)} consecutive labelled draws used, each weighted by "
                 "the probability it was drawn with"]  # fmt: skip
        if len(prefix) < len(labelled):
            notes.append(f"{len(labelled) - len(prefix)} labelled session(s) outside that sequence left out "
                         "(a draw not labelled ends it)")  # fmt: skip
        return Sample(
            idx=np.array([position[cid] for cid, _ in prefix], dtype=int),
            probability=np.array([d.probability or 1.0 for _, d in prefix]),
            design="actively (recorded probabilities)",
            notes=tuple(notes),
        )
    if any(d.order == "disagreement" and cid in labelled for per in drawn.values() for cid, d in per.items()):
        return Sample(plain, None, "by disagreement (biased)", (
            "sessions were labelled in disagreement order, not at random: the estimate is biased toward the "
            "sessions the verifiers disagree on, and its interval does not describe all sessions",),
            biased=True)  # fmt: skip
    if everyone and all(d.order == "random" for d in everyone):
        return Sample(plain, None, "uniformly at random (recorded)")
    return Sample(plain, None, "uniformly at random (assumed)",
                  ("the labelled sessions are taken to be a random sample of the imported ones",))  # fmt: skip


def _rate(name: str, f_all: np.ndarray, y_all: np.ndarray, sample: Sample, scale: float,
          strata: np.ndarray | None, half_width: float, alpha: float) -> RateEstimate:  # fmt: skip
    idx, n, big_n = sample.idx, len(sample.idx), len(f_all)
    groups = [None] if strata is None or sample.probability is not None else sorted(set(strata.tolist()))
    parts = []
    for g in groups:
        in_g = np.ones(big_n, bool) if g is None else strata == g
        lab = idx[in_g[idx]]
        y, f = y_all[lab], f_all[lab]
        if sample.probability is not None:
            y = ppi.sequential_terms(y, sample.probability, big_n)
            f = ppi.sequential_terms(f, sample.probability, big_n)
        parts.append((in_g.mean(), ppi.interval(y, f, f_all[in_g], alpha=alpha, scale=scale),
                      ppi.interval(y, f, f_all[in_g], lam=0.0, alpha=alpha, scale=scale)))  # fmt: skip
    z = ppi.z_of(alpha)

    def combine(k: int) -> tuple[float, float, float, float, float]:
        """(estimate, low, high, rectifier variance, judge variance) of PPI++ (k=1) or human-only (k=2),
        the strata weighted by their share of the sessions (stratified PPI: Fisch et al. 2024)."""
        if len(parts) == 1:
            m = parts[0][k]
            return float(m.estimate), float(m.low), float(m.high), float(m.rectifier_variance), float(m.judge_variance)
        est = sum(p[0] * float(p[k].estimate) for p in parts)
        centre = sum(p[0] * float(p[k].low + p[k].high) / 2 for p in parts)
        half = z * math.sqrt(sum(p[0] ** 2 * float(p[k].variance) for p in parts))
        rect = sum(p[0] * float(p[k].rectifier_variance) for p in parts)
        judge = sum(p[0] ** 2 * float(p[k].judge_variance) for p in parts)
        return est, min(max(centre - half, 0.0), est), max(min(centre + half, scale), est), rect, judge

    est, low, high, rect, judge = combine(1)
    h_est, h_low, h_high, _, _ = combine(2)
    ppi_var = sum(w * w * float(a.variance) for w, a, _ in parts)
    human_var = sum(w * w * float(b.variance) for w, _, b in parts)
    needed = ppi.labels_for_half_width(rect, judge, half_width, alpha)
    label_all = needed is None or needed >= big_n
    needed = big_n if label_all else needed
    return RateEstimate(
        name=name,
        estimate=round(min(max(est, 0.0), 1.0), 6),  # unbiased, so a small sample may step past a bound
        ci=[round(low, 6), round(min(high, 1.0), 6)],
        human_estimate=round(min(max(h_est, 0.0), 1.0), 6),
        human_ci=[round(h_low, 6), round(min(h_high, 1.0), 6)],
        lam=round(float(parts[0][1].lam), 6) if len(parts) == 1 else None,
        effective_labels=None if (e := ppi.effective_labels(human_var, ppi_var, n)) is None else round(e, 1),
        labels_needed=needed,
        labels_still_needed=max(0, needed - n),
        label_all=label_all,
        strata=None if len(groups) == 1 else [str(g) for g in groups],
    )


def estimate(
    folder: Path,
    judge: Mapping[str, JudgeAnswer],
    judge_name: str,
    half_width: float = 0.02,
    alpha: float = ALPHA,
    strata: Mapping[str, str] | None = None,
) -> Estimate:
    """The estimate over every session of `folder`; ValueError when the judge lacks a session or too few are
    labelled."""
    cases = load_imported(folder)
    missing = [c.id for c in cases if c.id not in judge]
    if missing:
        raise ValueError(f"the judge has no answer for {len(missing)} session(s), e.g. {', '.join(missing[:3])}")
    truth, unsettled = truth_of(folder, cases)
    values = [session_values(c, judge[c.id], truth.get(c.id)) for c in cases]
    f_all = np.array([v[0] for v in values]).T
    y_all = np.array([v[1] if v[1] is not None else np.full(3, np.nan) for v in values]).T
    claims = np.array([v[2] for v in values], dtype=float)
    sample = sample_of(folder, cases, set(truth))
    if len(sample.idx) < 2:
        raise ValueError(f"{len(sample.idx)} session(s) fully labelled: at least 2 are needed for an interval")
    mean_claims = claims.mean() if claims.mean() > 0 else 1.0
    f_all[2] /= mean_claims
    y_all[2] /= mean_claims
    scales = [1.0, 1.0, max(claims.max(), 1.0) / mean_claims]
    notes = list(sample.notes)
    group = None
    if strata is not None:
        group = np.array([strata.get(c.id, "-") for c in cases])
        small = [g for g in sorted(set(group)) if (group[sample.idx] == g).sum() < MIN_PER_STRATUM]
        if sample.probability is not None:
            notes.append("not stratified: the labels were chosen actively (their weights already use the cells)")
        elif small:
            notes.append(f"not stratified: stratum {', '.join(small[:3])} has fewer than {MIN_PER_STRATUM} labelled "
                         "sessions")  # fmt: skip
            group = None
    if unsettled:
        notes.append(f"{len(unsettled)} session(s) left out: annotators disagree beyond what a case allows "
                     "(settle them in labels/adjudicated.jsonl); leaving them out can bias the estimate")  # fmt: skip
    rates = [_rate(r, f_all[k], y_all[k], sample, scales[k], group, half_width, alpha) for k, r in enumerate(RATES)]
    return Estimate(sessions=len(cases), labelled=len(sample.idx), judge=judge_name, alpha=alpha,
                    half_width=half_width, design=sample.design, rates=rates, notes=notes,
                    biased=sample.biased)  # fmt: skip


def judge_from_run(run_dir: Path, variant: str | None = None) -> dict[str, JudgeAnswer]:
    """Each case's first-epoch answer in a finished run's results.jsonl (one variant: `variant`, or the only one),
    read through the run log (`RunLog`: its one reader, with the torn-last-line rule)."""
    from harness.run.folder import RESULTS_FILE, RunFileError
    from harness.run.runlog import RunLog

    path = run_dir / RESULTS_FILE
    if not path.is_file():
        raise ValueError(f"{path}: no such file (a finished `vbench run` folder has one)")
    try:
        records = list(RunLog.read(run_dir).records())
    except RunFileError as exc:
        raise ValueError(str(exc)) from None
    variants = sorted({r.variant for r in records})
    chosen = variant or (variants[0] if len(variants) == 1 else None)
    if chosen is None or chosen not in variants:
        raise ValueError(f"{path}: choose the judge with --variant, one of {variants}")
    out: dict[str, JudgeAnswer] = {}
    for r in sorted((r for r in records if r.variant == chosen), key=lambda r: r.epoch):
        out.setdefault(r.case_id, JudgeAnswer(verdict=r.verdict, claims=dict(r.claims)))
    return out


def judge_reference(cases: Sequence[Imported]) -> dict[str, JudgeAnswer]:
    """The offline reference verifier's answer on each session, run here."""
    import asyncio

    from harness.baselines.reference import ReferenceVerifier
    from harness.system.pipeline import conclude

    verifier = ReferenceVerifier()
    prepared = [case.prepared() for case in cases]

    async def calls() -> list:
        return list(await asyncio.gather(*(verifier.verify(p.inputs) for p in prepared)))

    out = {}
    for case, prep, call in zip(cases, prepared, asyncio.run(calls()), strict=True):
        evaluation = conclude(prep, call)
        out[case.id] = JudgeAnswer(
            verdict=evaluation.verdict, claims={c.claim_id: c.verification.value for c in evaluation.claim_checks}
        )
    return out


def read_estimate(path: Path) -> Estimate:
    """`estimate.json` as `vbench estimate` wrote it; OSError or ValueError (pydantic's) when it is not one."""
    return Estimate.model_validate_json(path.read_bytes())


def write_estimate(report: Estimate, folder: Path) -> Path:
    path = folder / "estimate.json"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(report.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    (folder / "estimate.md").write_text(report.markdown(), encoding="utf-8")
    return path
