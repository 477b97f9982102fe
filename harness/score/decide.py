"""The ship decision: a candidate against its control, paired by case and epoch.

For each gated metric the paired difference (candidate − control) gets a 95%
cluster-bootstrap CI over cases, a paired test and the smallest difference the
paired units could detect at 80% power. The outcome:

- `block`: significantly worse on a gated metric (p < alpha, in the worse direction);
- `ship`: on every gated metric the CI's worse-side bound is within the margin;
- `inconclusive`: neither; the MDE says how large a change could have hidden.

Units are fractions (−0.05 = 5 points worse); displays turn them into points.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from harness.run.log import Manifest, VariantInfo
from harness.run.study import DEFAULT_DECIDE_ON, DEFAULT_MARGIN_PP
from harness.score.wording import format_p, pp_text
from harness.score.outcome import claim_right
from harness.score.registry import metrics as registered_metrics
from harness.score.stats import mcnemar_exact, mde_paired_binary, paired_ratio_diff

DecisionKind = Literal["ship", "block", "inconclusive"]
DEFAULT_GATED: tuple[str, ...] = DEFAULT_DECIDE_ON
DEFAULT_MARGIN = DEFAULT_MARGIN_PP / 100
PAIR_KEY = ["case_id", "case_hash", "epoch"]
NOT_MEASURED: dict[str, Any] = dict.fromkeys(("control", "candidate", "diff", "diff_ci", "p", "mde")) | {"test": "none"}


class MetricComparison(BaseModel):
    """One metric of one decision."""

    control: float | None
    candidate: float | None
    diff: float | None
    diff_ci: list[float] | None
    p: float | None
    test: str
    mde: float | None
    units: int
    gated: bool
    significantly_worse: bool
    non_inferior: bool


class Regression(BaseModel):
    """A paired unit where the control's verdict was right and the candidate's is wrong."""

    case_id: str
    epoch: int
    control_verdict: str | None
    candidate_verdict: str | None
    claim_changes: list[dict[str, Any]] = Field(default_factory=list)


class Decision(BaseModel):
    candidate: str
    control: str
    control_run: str
    paired_cases: int
    unpaired_cases: int
    paired_units: int
    unpaired_units: int = 0
    """The candidate's units with no control unit (an epoch the control did not run, a changed case)."""
    metrics: dict[str, MetricComparison]
    margin: float
    mde: float | None
    alpha: float
    decision: DecisionKind
    reasons: list[str]
    regressed_cases: list[str]
    regressions: list[Regression]
    changed: dict[str, dict[str, Any]]


def pair_units(candidate: pd.DataFrame, control: pd.DataFrame) -> pd.DataFrame:
    """Units of both sides joined on case, content hash and epoch (suffixes `_cand` and `_ctl`)."""
    control = control if "epoch" in control else control.assign(epoch=1)  # a baseline kept before epochs
    missing = [c for c in candidate.columns if c not in control.columns and c not in PAIR_KEY and c != "variant"]
    control = control.assign(**dict.fromkeys(missing, None))  # a baseline kept before these columns: unknown
    # one row per unit on each side (a retried unit may appear twice in a log: the last answer counts)
    candidate = candidate.drop_duplicates(PAIR_KEY, keep="last")
    control = control.drop_duplicates(PAIR_KEY, keep="last")
    return candidate.merge(control, on=PAIR_KEY, suffixes=("_cand", "_ctl"), how="inner")


def _binary(paired: pd.DataFrame, column: str) -> tuple[dict[str, Any], int]:
    """Figures of a per-unit yes/no metric: rates, paired difference with its CI, p and MDE.

    A unit whose value is missing on either side (a baseline kept before the column, a damaged row) is left
    out of this metric, never read as True or False. The CI is the paired case-cluster bootstrap the issue
    specifies: two sides that agree on every paired unit get [0, 0] and ship, which is why a candidate with
    answers the control never gave (unpaired units) cannot ship at all (`_outcome`).
    """
    known = paired[paired[f"{column}_cand"].notna() & paired[f"{column}_ctl"].notna()]
    n = len(known)
    if n == 0:
        return dict(NOT_MEASURED), 0
    cand = known[f"{column}_cand"].astype(bool).to_numpy()
    ctl = known[f"{column}_ctl"].astype(bool).to_numpy()
    per_case = pd.DataFrame({"case": known["case_id"].to_numpy(), "c": cand, "k": ctl, "n": 1, "d": cand != ctl})
    per_case = per_case.groupby("case").sum()
    diff, boot_ci, boot_p = paired_ratio_diff(
        per_case["c"].to_numpy(float), per_case["k"].to_numpy(float), per_case["n"].to_numpy(float)
    )
    _, _, mcnemar_p = mcnemar_exact(ctl, cand)
    one_epoch = per_case["n"].max() == 1
    return {
        "control": float(ctl.mean()),
        "candidate": float(cand.mean()),
        "diff": diff,
        "diff_ci": list(boot_ci) if boot_ci else None,
        # McNemar's exact test needs independent pairs: with several epochs of a case, the case-cluster bootstrap
        "p": mcnemar_p if one_epoch else boot_p,
        "test": "mcnemar_exact" if one_epoch else "cluster_bootstrap",
        # over cases, not units: epochs of one case are not independent evidence
        "mde": mde_paired_binary(len(per_case), float((per_case["d"] / per_case["n"]).sum())),
    }, n


def _claims(paired: pd.DataFrame, gold: dict[str, dict[str, list[str]]]) -> tuple[dict[str, Any], int]:
    """Claim accuracy: the paired case-cluster bootstrap on claims right; MDE over cases."""
    total = paired["claims_total_cand"].to_numpy(float)
    if len(paired) == 0 or total.sum() == 0:
        return dict(NOT_MEASURED), 0
    frame = pd.DataFrame(
        {
            "case": paired["case_id"].to_numpy(),
            "c": paired["claims_right_cand"].to_numpy(float),
            "k": paired["claims_right_ctl"].to_numpy(float),
            "n": total,
        }
    )
    if frame["k"].isna().any():  # a control without claim outcomes for some units
        frame = frame[frame["k"].notna()]
        if frame.empty:
            return dict(NOT_MEASURED), 0
    per_case = frame.groupby("case").sum()
    diff, boot_ci, p = paired_ratio_diff(
        per_case["c"].to_numpy(float), per_case["k"].to_numpy(float), per_case["n"].to_numpy(float)
    )
    case_discordance: dict[str, float] = {}
    for row in paired.itertuples(index=False):
        ok = gold.get(row.case_id, {})
        if isinstance(row.claims_ctl, dict) and ok:
            right_cand = [claim_right(_label(row.claims_cand, cid), labels) for cid, labels in ok.items()]
            right_ctl = [claim_right(_label(row.claims_ctl, cid), labels) for cid, labels in ok.items()]
            share = sum(a != b for a, b in zip(right_cand, right_ctl, strict=True)) / len(ok)
        else:  # labels not kept by an older baseline: the difference in counts, a lower bound
            share = abs(float(row.claims_right_cand) - float(row.claims_right_ctl or 0)) / max(row.claims_total_cand, 1)
        case_discordance[row.case_id] = case_discordance.get(row.case_id, 0.0) + share
    units_per_case = paired.groupby("case_id").size()
    discordance = sum(v / units_per_case[c] for c, v in case_discordance.items())
    n_claims = int(per_case["n"].sum())
    return {
        "control": float(per_case["k"].sum() / per_case["n"].sum()),
        "candidate": float(per_case["c"].sum() / per_case["n"].sum()),
        "diff": diff,
        "diff_ci": list(boot_ci) if boot_ci else None,
        "p": p,
        "test": "cluster_bootstrap",
        "mde": mde_paired_binary(len(per_case), discordance),
    }, n_claims


def paired_verdict_accuracy(paired: pd.DataFrame, gold: dict[str, dict[str, list[str]]]) -> tuple[dict[str, Any], int]:
    return _binary(paired, "verdict_correct")


def paired_claim_accuracy(paired: pd.DataFrame, gold: dict[str, dict[str, list[str]]]) -> tuple[dict[str, Any], int]:
    return _claims(paired, gold)


def paired_unsafe_pass_rate(paired: pd.DataFrame, gold: dict[str, dict[str, list[str]]]) -> tuple[dict[str, Any], int]:
    """Over the units whose gold verdict forbids PASS; a control that kept no unsafe-PASS flags (its paired
    column all missing) measures nothing."""
    return _binary(paired[paired["unsafe_eligible_cand"].astype(bool)], "unsafe_pass")


def _label(claims: Any, claim_id: str) -> str | None:
    return claims.get(claim_id) if isinstance(claims, dict) else None


def judge_metric(
    figures: dict[str, Any], units: int, lower_is_better: bool, gated: bool, margin: float, alpha: float
) -> MetricComparison:
    """Significance in the worse direction, and non-inferiority read from the CI's worse-side bound."""
    diff, ci, p = figures["diff"], figures["diff_ci"], figures["p"]
    worse_sign = 1.0 if lower_is_better else -1.0
    significantly_worse = diff is not None and p is not None and diff * worse_sign > 0 and p < alpha
    worst = None if ci is None else (ci[1] if lower_is_better else ci[0])
    non_inferior = worst is not None and worst * worse_sign <= margin + 1e-12
    return MetricComparison(
        **figures, units=units, gated=gated, significantly_worse=significantly_worse, non_inferior=non_inferior
    )


def regressions(paired: pd.DataFrame, gold: dict[str, dict[str, list[str]]]) -> list[Regression]:
    """Units the control got right and the candidate got wrong, with the claims whose label changed."""
    out = []
    lost = paired[paired["verdict_correct_ctl"].astype(bool) & ~paired["verdict_correct_cand"].astype(bool)]
    for row in lost.sort_values(["case_id", "epoch"]).itertuples(index=False):
        changes = [
            {
                "claim_id": cid,
                "control": _label(row.claims_ctl, cid),
                "candidate": _label(row.claims_cand, cid),
                "gold": ok,
            }
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
    cases_cand, cases_ctl = set(candidate_units["case_id"]), set(control_units["case_id"])
    paired_cases = set(paired["case_id"])
    # an older baseline kept no unsafe-PASS flags: that metric is not measured (never read as all-True)
    control_has_unsafe = "unsafe_pass" in control_units.columns
    metrics: dict[str, MetricComparison] = {}
    for spec in registered_metrics():
        if spec.paired is not None:
            figures, units = spec.paired(paired, gold)
            lower = not spec.higher_is_better
            metrics[spec.key] = judge_metric(figures, units, lower, spec.key in gated, margin, alpha)
    candidate_units_total = len(candidate_units.drop_duplicates(PAIR_KEY))
    unpaired_units = candidate_units_total - len(paired)
    kind, reasons = _outcome(metrics, margin, alpha, control_has_unsafe, unpaired_units, candidate_units_total)
    lost = regressions(paired, gold)
    unpaired = len((cases_cand | cases_ctl) - paired_cases)
    if unpaired:
        reasons.append(f"{len(paired_cases)} cases paired, {unpaired} unpaired (decided on the paired cases only)")
    if "corpus_hash" in changed:
        reasons.append("the control ran on a different corpus: " + _corpus_note(changed["corpus_hash"]))
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
    )


def _corpus_note(change: dict[str, Any]) -> str:
    return f"corpus {change.get('control')} vs {change.get('candidate')}"


def _outcome(
    metrics: dict[str, MetricComparison],
    margin: float,
    alpha: float,
    control_has_unsafe: bool,
    unpaired_units: int = 0,
    candidate_units: int = 0,
) -> tuple[DecisionKind, list[str]]:
    """block / ship / inconclusive, with one reason per gated metric.

    block: significantly worse on a measured gated metric. ship: every gated metric measured and non-inferior,
    and every one of the candidate's answers paired with the control's. Anything else is inconclusive: a gated
    metric nobody measured (no eligible unit, a baseline without the column) or answers left out of the
    pairing cannot support a ship.
    """
    gated = {name: m for name, m in metrics.items() if m.gated}
    measured = {name: m for name, m in gated.items() if m.diff is not None and m.diff_ci is not None}
    worse = [name for name, m in measured.items() if m.significantly_worse]
    reasons = []
    for name, m in gated.items():
        if name not in measured:
            stale = name == "unsafe_pass_rate" and not control_has_unsafe
            why = " (the control's outcomes predate unsafe-PASS outcomes: regenerate it)" if stale else ""
            reasons.append(f"{name}: not measured, no paired unit{why}")
        elif name in worse:
            reasons.append(f"{name}: significantly worse, {pp_text(m.diff)} (p {format_p(m.p)}, alpha {alpha})")
        elif m.non_inferior:
            reasons.append(
                f"{name}: {pp_text(m.diff)}, 95% CI {_ci(m.diff_ci)} within the {pp_text(margin, sign=False)} margin"
            )
        else:
            reasons.append(
                f"{name}: {pp_text(m.diff)}, 95% CI {_ci(m.diff_ci)} reaches past the {pp_text(margin, sign=False)} margin"
                f" (detectable at 80% power: {pp_text(m.mde, sign=False) if m.mde is not None else 'n/a'})"
            )
    if unpaired_units:
        reasons.append(
            f"{unpaired_units} of the candidate's {candidate_units} case × epoch answers have no control answer "
            "(an epoch or case the control did not run): they are not judged, so the candidate cannot ship"
        )
    if worse:
        return "block", reasons
    if len(measured) < len(gated) or not gated:
        reasons.append("a gated metric was not measured: nothing can ship on it")
        return "inconclusive", reasons
    if not unpaired_units and all(m.non_inferior for m in measured.values()):
        return "ship", reasons
    return "inconclusive", reasons


def _ci(ci: list[float] | None) -> str:
    return "n/a" if ci is None else f"[{ci[0] * 100 + 0.0:+.1f}, {ci[1] * 100 + 0.0:+.1f}] pp"


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
