"""pandas frames built from the run log after the run: one row per quality result, one per gold claim.

Users can load these for their own analysis:
`quality_frame([r for r in RunLog.read(run_dir).records() if is_headline(r)])` (`harness.run.runlog.RunLog`
streams the log; without `harness.score.headline.is_headline`, the robustness units of a `--perturb` run count too).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pandas as pd

from harness.run.log import ResultRecord
from harness.score.outcome import Outcome, record_outcome
from harness.system.models import DERIVABILITY_CLASSES, AdjustmentStep

CLASSES = DERIVABILITY_CLASSES
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


ListMaker = Callable[[Iterable[str]], list[str]]


class SharedLists:
    """Equal lists made once: called with the same values again, it gives the same list object.

    A long log's frames then hold one list per distinct value (a case's tags and scenarios, a gold label set), not
    one per result: less memory, and far fewer objects for the garbage collector to walk at every full collection
    while scoring streams the log (the lists outlive the records they came from). The frames' list cells are
    values: nothing changes them in place.
    """

    def __init__(self) -> None:
        self._made: dict[tuple[str, ...], list[str]] = {}

    def __call__(self, values: Iterable[str]) -> list[str]:
        key = tuple(values)
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = list(key)
        return made


def quality_row(r: ResultRecord, result: Outcome, lists: ListMaker = list) -> dict[str, Any]:
    """The quality frame's row of one quality result; `result` is its `record_outcome` (computed once per record),
    `lists` makes its list cells (`SharedLists` in a long stream)."""
    scored = result.scored
    invalid = scored and r.reply_status == "invalid"
    return {
        "case_id": r.case_id,
        "variant": r.variant,
        "epoch": r.epoch,
        "dataset": r.dataset,
        "tags": lists(r.tags),
        "spec": lists(r.spec),
        "error": r.error,
        "scored": scored,
        "verdict": r.verdict,
        "model_verdict": r.model_verdict,
        "gold_verdicts": lists(r.gold.verdict),
        "verdict_correct": result.verdict_correct,
        "model_verdict_correct": result.model_verdict_correct,
        "unsafe_eligible": result.unsafe_eligible,
        "unsafe_pass": result.unsafe_pass,
        "invalid": invalid,
        "invalid_reason": r.invalid_reason if invalid else None,
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


def claim_rows(r: ResultRecord, result: Outcome, lists: ListMaker = list) -> list[dict[str, Any]]:
    """The claims frame's rows of one quality result, one per gold-labelled claim; `result` is its `record_outcome`,
    `lists` makes its list cells (`SharedLists` in a long stream)."""
    if not r.gold.claims:
        return []
    critical = set(r.critical_claims)
    wrong = set(result.claims_wrong)
    rows = []
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
                "gold": lists(acceptable),
                "gold_single": single_gold(predicted, acceptable, CLASSES),
                "correct": claim_id not in wrong,
                "scored": result.scored,
            }
        )
    return rows


def quality_table(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The quality frame of `quality_row` rows."""
    return _with_bools(pd.DataFrame(rows, columns=QUALITY_COLUMNS), QUALITY_BOOLS)


def claims_table(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The claims frame of `claim_rows` rows."""
    return _with_bools(pd.DataFrame(rows, columns=CLAIM_COLUMNS), CLAIM_BOOLS)


def _with_bools(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """`frame` with `columns` of dtype bool: explicit, since an empty frame must still mask as booleans (a
    policy-only run has no rows). Only columns of another dtype are cast: `astype` copies the whole frame, and
    scoring makes one per chunk of the log."""
    cast = {c: bool for c in columns if frame[c].dtype != bool}
    return frame.astype(cast) if cast else frame


def quality_frame(records: Sequence[ResultRecord]) -> pd.DataFrame:
    """One row per quality case × variant × epoch; `scored` is False for transport errors."""
    return quality_table([quality_row(r, record_outcome(r)) for r in records if r.kind == "quality"])


def claims_frame(records: Sequence[ResultRecord]) -> pd.DataFrame:
    """One row per gold-labelled claim of each quality result."""
    return claims_table([row for r in records if r.kind == "quality" for row in claim_rows(r, record_outcome(r))])
