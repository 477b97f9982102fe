"""The ship decision: a candidate against its control, paired by case and epoch.

Each registered decidable metric turns the paired units into per-case counts (`CaseCounts`); the one
paired rule (`harness.score.paired.decide_counts`) reads them: Tango's score interval of the difference
(design-effect adjusted when a case has several units), the exact paired test (McNemar's, or its sign-flip
form over cases), the worse-side bound against the margin, and the cases a clear answer needs. The outcome:

- `block`: significantly worse on a gated metric (p < alpha, in the worse direction);
- `ship`: on every gated metric the CI's worse-side bound is within the margin;
- `inconclusive`: neither: the paired cases cannot rule out a loss past the margin (`cases_needed` says
  about how many would), a gated metric was not measured, or answers were left unpaired.

Units are fractions (-0.05 = 5 points worse); displays turn them into points.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

import numpy as np
import pandas as pd

from harness.run.gates import DEFAULT_DECIDE_ON, Gates
from harness.run.log import Manifest, VariantInfo
from harness.score.outcome import claim_right
from harness.score.outcomes import UNIT_COLUMNS
from harness.score.paired import TESTS, PairedDecision, combine, decide_counts
from harness.score.registry import metrics as registered_metrics
from harness.score.stats import mde_paired_binary
from harness.score.summary_model import ClaimChange, Regression
from harness.score.summary_model import Decision as Decision  # the decision's models live with summary.json's
from harness.score.summary_model import DecisionKind as DecisionKind
from harness.score.summary_model import MetricComparison as MetricComparison
from harness.score.wording import pp_text

DEFAULT_GATED: tuple[str, ...] = DEFAULT_DECIDE_ON
DEFAULT_MARGIN = Gates().margin_fraction
"""The default margin as the decision computes with it (a fraction)."""
PAIR_KEY = ["case_id", "case_hash", "epoch"]


class CaseCounts(NamedTuple):
    """One metric's paired units summed per case (one entry per case): what the paired rule reads."""

    ctl_right: np.ndarray
    cand_right: np.ndarray
    cand_only: np.ndarray
    ctl_only: np.ndarray
    units: np.ndarray


def pair_units(candidate: pd.DataFrame, control: pd.DataFrame) -> pd.DataFrame:
    """Units of both sides joined on case, content hash and epoch (suffixes `_cand` and `_ctl`)."""
    control = control if "epoch" in control else control.assign(epoch=1)  # a baseline kept before epochs
    candidate = candidate if "epoch" in candidate else candidate.assign(epoch=1)
    # a column one side (a baseline kept before it) or both lack is unknown there, never True or False
    columns = [c for c in UNIT_COLUMNS if c not in PAIR_KEY and c != "variant"]
    control = control.assign(**{c: None for c in columns if c not in control.columns})
    candidate = candidate.assign(**{c: None for c in columns if c not in candidate.columns})
    # one row per unit on each side (a retried unit may appear twice in a log: the last answer counts)
    candidate = candidate.drop_duplicates(PAIR_KEY, keep="last")
    control = control.drop_duplicates(PAIR_KEY, keep="last")
    return candidate.merge(control, on=PAIR_KEY, suffixes=("_cand", "_ctl"), how="inner")


def _per_case(frame: pd.DataFrame) -> CaseCounts | None:
    """Columns case, k (control), c (candidate), b (candidate only), o (control only), n summed per case."""
    if frame.empty or frame["n"].sum() == 0:
        return None
    per_case = frame.groupby("case", sort=True)[["k", "c", "b", "o", "n"]].sum()
    return CaseCounts(*(per_case[col].to_numpy(float) for col in ("k", "c", "b", "o", "n")))


def _binary(paired: pd.DataFrame, column: str) -> CaseCounts | None:
    """Per-case counts of a per-unit yes/no metric. A unit whose value is missing on either side (a baseline
    kept before the column, a damaged row) is left out of this metric, never read as True or False."""
    known = paired[paired[f"{column}_cand"].notna() & paired[f"{column}_ctl"].notna()]
    cand = known[f"{column}_cand"].astype(bool).to_numpy()
    ctl = known[f"{column}_ctl"].astype(bool).to_numpy()
    frame = pd.DataFrame(
        {"case": known["case_id"].to_numpy(), "k": ctl, "c": cand, "b": cand & ~ctl, "o": ctl & ~cand, "n": 1}
    )
    return _per_case(frame.astype({"k": int, "c": int, "b": int, "o": int}))


def _claims(paired: pd.DataFrame, gold: dict[str, dict[str, list[str]]]) -> CaseCounts | None:
    """Per-case counts of claims right. Which claims each side alone got right comes from the claims each
    unit's outcome judged wrong (`claims_wrong`, stored as the record was judged). Outcomes kept before they
    held it fall back to the labels and the gold; without the gold (a comparison of two folders), a claim whose
    labels differ counts as discordant, split so the counts keep the known difference (an upper bound on
    discordance: a wider, safe interval); without labels (an older baseline), the difference in counts (a lower
    bound)."""
    names = (
        "case_id", "claims_right_cand", "claims_right_ctl", "claims_total_cand", "claims_cand", "claims_ctl",
        "claims_wrong_cand", "claims_wrong_ctl",
    )  # fmt: skip
    rows = []
    known = (paired["claims_right_ctl"].notna() & paired["claims_right_cand"].notna()).tolist()
    columns = (paired[c].tolist() for c in names)
    for ok, (case, right_c, right_k, total, cand, ctl, wrong_c, wrong_k) in zip(
        known, zip(*columns, strict=True), strict=True
    ):
        if not ok or not total:
            continue
        diff = float(right_c) - float(right_k)
        if isinstance(wrong_c, list) and isinstance(wrong_k, list):
            b, o = float(len(set(wrong_k) - set(wrong_c))), float(len(set(wrong_c) - set(wrong_k)))
        else:
            b, o = _claim_discordance(diff, cand, ctl, gold.get(case) or {})
        rows.append((case, float(right_k), float(right_c), b, o, total))
    return _per_case(pd.DataFrame(rows, columns=["case", "k", "c", "b", "o", "n"]))


def _claim_discordance(diff: float, cand: Any, ctl: Any, gold: dict[str, list[str]]) -> tuple[float, float]:
    """(claims only the candidate got right, claims only the control got right) of one paired unit whose outcomes
    predate `claims_wrong`; `diff` is its claims right, candidate minus control."""
    if isinstance(cand, dict) and isinstance(ctl, dict) and gold:
        only_cand = only_ctl = 0
        for cid, labels in gold.items():
            right_c, right_k = claim_right(cand.get(cid), labels), claim_right(ctl.get(cid), labels)
            only_cand += right_c and not right_k
            only_ctl += right_k and not right_c
        return float(only_cand), float(only_ctl)
    if isinstance(cand, dict) and isinstance(ctl, dict):
        differ = max(float(sum(cand.get(cid) != ctl.get(cid) for cid in set(cand) | set(ctl))), abs(diff))
        return (differ + diff) / 2, (differ - diff) / 2
    return max(diff, 0.0), max(-diff, 0.0)


def paired_verdict_accuracy(paired: pd.DataFrame, gold: dict[str, dict[str, list[str]]]) -> CaseCounts | None:
    return _binary(paired, "verdict_correct")


def paired_claim_accuracy(paired: pd.DataFrame, gold: dict[str, dict[str, list[str]]]) -> CaseCounts | None:
    return _claims(paired, gold)


def paired_unsafe_pass_rate(paired: pd.DataFrame, gold: dict[str, dict[str, list[str]]]) -> CaseCounts | None:
    """Over the units whose gold verdict forbids PASS; a control that kept no unsafe-PASS flags (its paired
    column all missing) measures nothing."""
    return _binary(paired[paired["unsafe_eligible_cand"].fillna(False).astype(bool)], "unsafe_pass")


def _label(claims: Any, claim_id: str) -> str | None:
    return claims.get(claim_id) if isinstance(claims, dict) else None


def judge_metric(
    counts: CaseCounts | None, name: str, lower_is_better: bool, gated: bool, margin: float, alpha: float
) -> MetricComparison:
    """The paired rule on one metric's counts, with the MDE beside it (None counts: not measured)."""
    d = None if counts is None else decide_counts(*counts, metric=name, margin=margin, alpha=alpha,
                                                  lower_is_better=lower_is_better)  # fmt: skip
    if counts is None or d is None:
        return MetricComparison(
            control=None, candidate=None, diff=None, diff_ci=None, p=None, test="none", mde=None, units=0,
            gated=gated, significantly_worse=False, non_inferior=False, reason=f"{name}: not measured, no paired unit",
        )  # fmt: skip
    # Connor's MDE over cases (epochs of one case are not independent evidence): the share of each case's
    # units the two sides answer differently, summed
    discordance = float(((counts.cand_only + counts.ctl_only) / counts.units).sum())
    return _comparison(d, gated, mde_paired_binary(len(counts.units), discordance))


def _comparison(d: PairedDecision, gated: bool, mde: float | None) -> MetricComparison:
    return MetricComparison(
        control=d.control, candidate=d.candidate, diff=d.diff, diff_ci=list(d.ci), p=d.p, test=d.test, mde=mde,
        units=d.units, gated=gated, significantly_worse=d.significantly_worse, non_inferior=d.non_inferior,
        outcome=d.outcome, interval=d.interval, cases=d.cases, discordant=d.discordant,
        design_effect=d.design_effect, worse_bound=d.worse_bound, cases_needed=d.cases_needed, reason=d.reason,
    )  # fmt: skip


def regressions(paired: pd.DataFrame, gold: dict[str, dict[str, list[str]]]) -> list[Regression]:
    """Units the control got right and the candidate got wrong, with the claims whose label changed."""
    out = []
    lost = paired[paired["verdict_correct_ctl"].astype(bool) & ~paired["verdict_correct_cand"].astype(bool)]
    for row in lost.sort_values(["case_id", "epoch"]).itertuples(index=False):
        changes = [
            ClaimChange(
                claim_id=cid, control=_label(row.claims_ctl, cid), candidate=_label(row.claims_cand, cid), gold=ok
            )
            for cid, ok in gold.get(row.case_id, {}).items()
            if isinstance(row.claims_ctl, dict) and _label(row.claims_ctl, cid) != _label(row.claims_cand, cid)
        ]
        out.append(
            Regression(
                case_id=row.case_id,
                epoch=int(row.epoch),
                control_verdict=_none(row.verdict_ctl),
                candidate_verdict=_none(row.verdict_cand),
                claim_changes=changes,
            )
        )
    return out


def _none(value: Any) -> Any:
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else value


def decide(
    candidate_units: pd.DataFrame,
    control_units: pd.DataFrame,
    gold: dict[str, dict[str, list[str]]],
    *,
    candidate: str,
    control: str,
    control_run: str,
    changed: dict[str, dict[str, Any]],
    gated: tuple[str, ...] = DEFAULT_GATED,
    margin: float = DEFAULT_MARGIN,
    alpha: float = 0.05,
) -> Decision:
    """The decision for one candidate against its control (`gold`: case id → claim id → acceptable labels)."""
    paired = pair_units(candidate_units, control_units)
    cases_cand, cases_ctl = set(candidate_units["case_id"].tolist()), set(control_units["case_id"].tolist())
    paired_cases = set(paired["case_id"].tolist())
    # an older baseline kept no unsafe-PASS flags: that metric is not measured (never read as all-True)
    control_has_unsafe = "unsafe_pass" in control_units.columns
    metrics: dict[str, MetricComparison] = {}
    for spec in registered_metrics():
        if spec.paired is not None:
            counts = spec.paired(paired, gold)
            lower = not spec.higher_is_better
            metrics[spec.key] = judge_metric(counts, spec.key, lower, spec.key in gated, margin, alpha)
    candidate_units_total = len(candidate_units.drop_duplicates([c for c in PAIR_KEY if c in candidate_units]))
    unpaired_units = candidate_units_total - len(paired)
    kind, reasons = _outcome(metrics, control_has_unsafe, unpaired_units, candidate_units_total)
    lost = regressions(paired, gold)
    unpaired = len((cases_cand | cases_ctl) - paired_cases)
    if unpaired:
        reasons.append(f"{len(paired_cases)} cases paired, {unpaired} unpaired (decided on the paired cases only)")
    if "corpus_hash" in changed:
        reasons.append("the control ran on a different corpus: " + _corpus_note(changed["corpus_hash"]))
    used = {name for m in metrics.values() for name in (m.test, m.interval) if name in TESTS}
    needed = [m.cases_needed for m in metrics.values() if m.gated and m.outcome == "inconclusive" and m.cases_needed]
    return Decision(
        candidate=candidate,
        control=control,
        control_run=control_run,
        paired_cases=len(paired_cases),
        unpaired_cases=unpaired,
        paired_units=len(paired),
        unpaired_units=unpaired_units,
        metrics=metrics,
        margin=margin,
        mde=metrics["verdict_accuracy"].mde,
        alpha=alpha,
        decision=kind,
        reasons=reasons,
        regressed_cases=sorted({r.case_id for r in lost}),
        regressions=lost,
        changed=changed,
        tests={name: TESTS[name] for name in sorted(used)},
        cases_needed=max(needed) if kind == "inconclusive" and needed else None,
    )


def _corpus_note(change: dict[str, Any]) -> str:
    return f"corpus {change.get('control')} vs {change.get('candidate')}"


def _outcome(
    metrics: dict[str, MetricComparison],
    control_has_unsafe: bool,
    unpaired_units: int = 0,
    candidate_units: int = 0,
) -> tuple[DecisionKind, list[str]]:
    """block / ship / inconclusive, with one reason per gated metric (each the paired rule's own sentence).

    The gated metrics' outcomes combine (`paired.combine`): block if one blocks, ship if every one ships.
    A gated metric nobody measured (no eligible unit, a baseline without the column), or answers left out of
    the pairing, cannot support a ship: inconclusive.
    """
    gated = {name: m for name, m in metrics.items() if m.gated}
    reasons = []
    for name, m in gated.items():
        stale = m.diff is None and name == "unsafe_pass_rate" and not control_has_unsafe
        reasons.append(
            m.reason + (" (the control's outcomes predate unsafe-PASS outcomes: regenerate it)" if stale else "")
        )
    if unpaired_units:
        reasons.append(
            f"{unpaired_units} of the candidate's {candidate_units} case × epoch answers have no control answer "
            "(an epoch or case the control did not run): they are not judged, so the candidate cannot ship"
        )
    kind = combine({name: m for name, m in gated.items()})
    if kind == "block":
        return "block", reasons
    if any(m.diff is None for m in gated.values()) or not gated:
        reasons.append("a gated metric was not measured: nothing can ship on it")
        return "inconclusive", reasons
    return ("ship" if kind == "ship" and not unpaired_units else "inconclusive"), reasons


def with_anchor(decision: Decision, anchor: Decision) -> Decision:
    """The candidate decided against its control and, beside it, a fixed anchor (the last release): each is a
    non-inferiority test of its own, and together they decide as the gated metrics do (`paired.combine`: block if
    one blocks, ship only if both ship). A chain of changes that each pass against their moving control cannot
    drift past the margin against the anchor. `decided_by` names the comparison that gave the outcome (the
    control when both agree)."""
    outcome = combine({"control": _Outcome(decision.decision), "anchor": _Outcome(anchor.decision)})
    decided_by: Literal["control", "anchor"] = "control" if outcome == decision.decision else "anchor"
    return decision.model_copy(
        update={
            "decision": outcome,
            "anchor": anchor,
            "decided_by": decided_by,
            "control_decision": decision.decision,
            "reasons": [*decision.reasons, f"against the anchor {anchor.control_run}: {headline(anchor)}"],
        }
    )


class _Outcome(NamedTuple):
    outcome: DecisionKind


def headline(decision: Decision) -> str:
    """The one line of why: the reason that decided it (console, gates, JUnit, reports and `compare` read it)."""
    if decision.decided_by == "anchor" and decision.anchor is not None:
        return f"against the anchor {decision.anchor.control_run}: {headline(decision.anchor)}"
    if decision.decision == "ship":
        gated = ", ".join(name for name, m in decision.metrics.items() if m.gated)
        return f"non-inferior on {gated} within the {pp_text(decision.margin, sign=False)} margin"
    markers = (
        ("significantly worse",)
        if decision.decision == "block"
        else ("not measured", "have no control answer", "cannot rule out")
    )
    reason = next((r for m in markers for r in decision.reasons if m in r), None)
    return reason or (decision.reasons[-1] if decision.reasons else "no gated metric could be measured")


def decision_line(decision: Decision) -> str:
    """'INCONCLUSIVE cand against ctl: <why>': the decision as one sentence, the same everywhere it is stated."""
    return f"{decision.decision.upper()} {decision.candidate} against {decision.control}: {headline(decision)}"


def what_changed(
    candidate: VariantInfo, control: VariantInfo, run: Manifest, control_manifest: Manifest | None
) -> dict[str, dict[str, Any]]:
    """Settings that differ between the two sides: prompt, model, client settings, excerpt, code, corpus."""
    cand_side = _identity(candidate, run)
    ctl_side = _identity(control, control_manifest)
    return {
        key: {"control": ctl_side.get(key), "candidate": value}
        for key, value in cand_side.items()
        if ctl_side.get(key) != value and not (control_manifest is None and key in _RUN_KEYS)
    }


_RUN_KEYS = ("excerpt_chars", "code_fingerprint", "corpus_hash", "package_version", "git_sha", "epochs")


def _identity(variant: VariantInfo, manifest: Manifest | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "model": variant.model,
        "prompt": variant.prompt,
        "prompt_version": variant.prompt_version,
        "prompt_hash": variant.prompt_hash,
        "prompt_path": variant.prompt_path,
        "client_settings": variant.settings,
        "claim_guard": variant.claim_guard,
    }
    if manifest is not None:
        out.update(
            excerpt_chars=manifest.excerpt_chars,
            code_fingerprint=manifest.settings.get("code_fingerprint"),
            corpus_hash=manifest.corpus_hash,
            package_version=manifest.package_version,
            git_sha=manifest.git_sha,
            epochs=manifest.epochs,
        )
    return out
