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
    return candidate.merge(control, on=PAIR_KEY, suffixes=("_cand", "_ctl"), how="inner")


def _binary(paired: pd.DataFrame, column: str) -> tuple[dict[str, Any], int]:
    """Figures of a per-unit yes/no metric: rates, paired difference with its CI, p and MDE."""
    cand = paired[f"{column}_cand"].to_numpy(dtype=bool)
    ctl = paired[f"{column}_ctl"].to_numpy(dtype=bool)
    n = len(paired)
    if n == 0:
        return dict(NOT_MEASURED), 0
    per_case = pd.DataFrame({"case": paired["case_id"].to_numpy(), "c": cand, "k": ctl, "n": 1}).groupby("case").sum()
    diff, ci, boot_p = paired_ratio_diff(
        per_case["c"].to_numpy(float), per_case["k"].to_numpy(float), per_case["n"].to_numpy(float)
    )
    ctl_only, cand_only, mcnemar_p = mcnemar_exact(ctl, cand)
    one_epoch = per_case["n"].max() == 1
    return {
        "control": float(ctl.mean()),
        "candidate": float(cand.mean()),
        "diff": diff,
        "diff_ci": list(ci) if ci else None,
        # McNemar's exact test needs independent pairs: with several epochs of a case, the case-cluster bootstrap
        "p": mcnemar_p if one_epoch else boot_p,
        "test": "mcnemar_exact" if one_epoch else "cluster_bootstrap",
        "mde": mde_paired_binary(n, ctl_only + cand_only),
    }, n


def _claims(paired: pd.DataFrame, gold: dict[str, dict[str, list[str]]]) -> tuple[dict[str, Any], int]:
    """Claim accuracy: the case-cluster bootstrap on claims right; MDE over claims as paired units."""
    total = paired["claims_total_cand"].to_numpy(float)
    if len(paired) == 0 or total.sum() == 0:
        return dict(NOT_MEASURED), 0
    frame = (
        pd.DataFrame(
            {
                "case": paired["case_id"].to_numpy(),
                "c": paired["claims_right_cand"].to_numpy(float),
                "k": paired["claims_right_ctl"].to_numpy(float),
                "n": total,
            }
        )
        .groupby("case")
        .sum()
    )
    diff, ci, p = paired_ratio_diff(frame["c"].to_numpy(float), frame["k"].to_numpy(float), frame["n"].to_numpy(float))
    discordant = 0
    for row in paired.itertuples(index=False):
        if not isinstance(row.claims_ctl, dict):  # labels not kept by an older baseline: the count's lower bound
            discordant += int(abs(row.claims_right_cand - row.claims_right_ctl))
            continue
        for cid, ok in gold.get(row.case_id, {}).items():
            discordant += (_label(row.claims_cand, cid) in ok) != (_label(row.claims_ctl, cid) in ok)
    return {
        "control": float(frame["k"].sum() / frame["n"].sum()),
        "candidate": float(frame["c"].sum() / frame["n"].sum()),
        "diff": diff,
        "diff_ci": list(ci) if ci else None,
        "p": p,
        "test": "cluster_bootstrap",
        "mde": mde_paired_binary(int(total.sum()), discordant),
    }, int(total.sum())


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
    metrics: dict[str, MetricComparison] = {}
    verdict, n_verdict = _binary(paired, "verdict_correct")
    metrics["verdict_accuracy"] = judge_metric(verdict, n_verdict, False, "verdict_accuracy" in gated, margin, alpha)
    claims, n_claims = _claims(paired, gold)
    metrics["claim_accuracy"] = judge_metric(claims, n_claims, False, "claim_accuracy" in gated, margin, alpha)
    # an older baseline kept no unsafe-PASS flags: that metric is not measured (never read as all-True)
    control_has_unsafe = "unsafe_pass" in control_units.columns
    eligible = paired[paired["unsafe_eligible_cand"].astype(bool)] if control_has_unsafe else paired.iloc[0:0]
    unsafe, n_unsafe = _binary(eligible, "unsafe_pass")
    metrics["unsafe_pass_rate"] = judge_metric(unsafe, n_unsafe, True, "unsafe_pass_rate" in gated, margin, alpha)
    kind, reasons = _outcome(metrics, margin, alpha, control_has_unsafe=control_has_unsafe)
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
    metrics: dict[str, MetricComparison], margin: float, alpha: float, control_has_unsafe: bool
) -> tuple[DecisionKind, list[str]]:
    """block / ship / inconclusive, with one reason per gated metric.

    A gated metric with no paired unit (no unsafe-eligible case, say) cannot decide anything: it is named
    as not measured, and a decision with no measured gated metric is inconclusive.
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
            reasons.append(f"{name}: significantly worse, {_pp(m.diff)} (p {_p(m.p)}, alpha {alpha})")
        elif m.non_inferior:
            reasons.append(
                f"{name}: {_pp(m.diff)}, 95% CI {_ci(m.diff_ci)} within the {_pp(margin, sign=False)} margin"
            )
        else:
            reasons.append(
                f"{name}: {_pp(m.diff)}, 95% CI {_ci(m.diff_ci)} reaches past the {_pp(margin, sign=False)} margin"
                f" (detectable at 80% power: {_pp(m.mde, sign=False) if m.mde is not None else 'n/a'})"
            )
    if worse:
        return "block", reasons
    if measured and all(m.non_inferior for m in measured.values()):
        return "ship", reasons
    if not measured:
        reasons.append("no gated metric could be measured on the paired cases")
    return "inconclusive", reasons


def _pp(value: float | None, sign: bool = True) -> str:
    if value is None:
        return "n/a"
    points = value * 100 + 0.0
    return f"{points:+.1f} pp" if sign else f"{points:.1f} pp"


def _ci(ci: list[float] | None) -> str:
    return "n/a" if ci is None else f"[{ci[0] * 100 + 0.0:+.1f}, {ci[1] * 100 + 0.0:+.1f}] pp"


def _p(p: float | None) -> str:
    from harness.score.compare import format_p

    return format_p(p)


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
