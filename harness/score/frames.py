"""pandas frames built from the run log after the run: one row per quality result, one per gold claim.

Users can load these for their own analysis: `quality_frame([r for r in iter_latest(run_dir) if is_headline(r)])`
(`harness.run.folder.iter_latest` streams the log; without `harness.score.headline.is_headline`, the robustness
units of a `--perturb` run count too).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from harness.run.log import ResultRecord
from harness.score.outcome import record_outcome
from harness.system.models import AdjustmentStep, Derivability

CLASSES = [d.value for d in Derivability]
VERDICTS = ["PASS", "LOW_CONFID", "REJECT"]
SUPPORTED = {"direct_observation", "reasonable_inference"}

QUALITY_COLUMNS = [
    "case_id",
    "variant",
    "epoch",
    "dataset",
    "tags",
    "spec",
    "error",
    "scored",
    "verdict",
    "model_verdict",
    "gold_verdicts",
    "verdict_correct",
    "model_verdict_correct",
    "unsafe_eligible",
    "unsafe_pass",
    "invalid",
    "invalid_reason",
    "guard_intervened",
    "groundedness",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "latency_ms",
    "harness_cpu_ms",
    "cached",
    "replayed",
]
QUALITY_BOOLS = [
    "scored",
    "verdict_correct",
    "model_verdict_correct",
    "unsafe_eligible",
    "unsafe_pass",
    "invalid",
    "guard_intervened",
    "cached",
    "replayed",
]
CLAIM_BOOLS = ["critical", "correct", "scored"]
CLAIM_COLUMNS = [
    "case_id",
    "variant",
    "epoch",
    "dataset",
    "claim_id",
    "critical",
    "predicted",
    "gold",
    "gold_single",
    "correct",
    "scored",
]


def single_gold(predicted: str | None, acceptable: Sequence[str], order: Sequence[str]) -> str:
    """One gold label for confusion matrices: the prediction when acceptable, else the first acceptable."""
    if predicted in acceptable:
        return predicted  # type: ignore[return-value]
    return sorted(acceptable, key=order.index)[0]


def quality_frame(records: Sequence[ResultRecord]) -> pd.DataFrame:
    """One row per quality case × variant × epoch; `scored` is False for transport errors."""
    rows = []
    for r in records:
        if r.kind != "quality":
            continue
        gold = r.gold.verdict
        result = record_outcome(r)
        scored = result.scored
        rows.append(
            {
                "case_id": r.case_id,
                "variant": r.variant,
                "epoch": r.epoch,
                "dataset": r.dataset,
                "tags": list(r.tags),
                "spec": list(r.spec),
                "error": r.error,
                "scored": scored,
                "verdict": r.verdict,
                "model_verdict": r.model_verdict,
                "gold_verdicts": list(gold),
                "verdict_correct": result.verdict_correct,
                "model_verdict_correct": result.model_verdict_correct,
                "unsafe_eligible": result.unsafe_eligible,
                "unsafe_pass": result.unsafe_pass,
                "invalid": scored and r.reply_status == "invalid",
                "invalid_reason": r.invalid_reason if scored and r.reply_status == "invalid" else None,
                "guard_intervened": any(a.get("step") == AdjustmentStep.CLAIM_GUARD for a in r.adjustments),
                "groundedness": r.groundedness if scored else None,
                "prompt_tokens": r.usage.prompt_tokens,
                "completion_tokens": r.usage.completion_tokens,
                "total_tokens": r.usage.total_tokens,
                "latency_ms": r.latency_ms,
                "harness_cpu_ms": r.harness_cpu_ms,
                "cached": r.cached,
                "replayed": r.replayed,
            }
        )
    # explicit dtypes: an empty frame must still mask as booleans (a policy-only run has no rows)
    return pd.DataFrame(rows, columns=QUALITY_COLUMNS).astype(dict.fromkeys(QUALITY_BOOLS, bool))


def claims_frame(records: Sequence[ResultRecord]) -> pd.DataFrame:
    """One row per gold-labelled claim of each quality result."""
    rows = []
    for r in records:
        if r.kind != "quality" or not r.gold.claims:
            continue
        critical = set(r.critical_claims)
        result = record_outcome(r)
        wrong = set(result.claims_wrong)
        for claim_id, acceptable in r.gold.claims.items():
            predicted = r.claims.get(claim_id)
            rows.append(
                {
                    "case_id": r.case_id,
                    "variant": r.variant,
                    "epoch": r.epoch,
                    "dataset": r.dataset,
                    "claim_id": claim_id,
                    "critical": claim_id in critical,
                    "predicted": predicted,
                    "gold": list(acceptable),
                    "gold_single": single_gold(predicted, acceptable, CLASSES),
                    "correct": claim_id not in wrong,
                    "scored": result.scored,
                }
            )
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS).astype(dict.fromkeys(CLAIM_BOOLS, bool))
