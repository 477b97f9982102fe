"""The outcome of one result against its gold, as scoring, conformance, decisions, junit and the report read it.

The rule itself (`outcome`, re-exported here) lives beside the run log in `harness.run.outcome`: a record is
judged once, as the run's worker writes it, and `record_outcome` reads that judgement back. Categories order
what a reader sees first: conformance failures, errors, wrong verdicts, wrong claims, then results that are
right.
"""

from __future__ import annotations

from harness.run.log import ResultRecord
from harness.run.outcome import Facts, Outcome, claim_right, judged_outcome, outcome

__all__ = [
    "CATEGORY_NAMES",
    "Facts",
    "Outcome",
    "category",
    "claim_right",
    "is_failure",
    "judged_outcome",
    "outcome",
    "record_outcome",
]

CONFORMANCE_FAILURE, ERROR, VERDICT_WRONG, CLAIMS_WRONG, RIGHT = range(5)
CATEGORY_NAMES = {
    CONFORMANCE_FAILURE: "conformance failure",
    ERROR: "error",
    VERDICT_WRONG: "verdict wrong",
    CLAIMS_WRONG: "claims wrong",
    RIGHT: "right",
}


def record_outcome(record: ResultRecord) -> Outcome:
    """The outcome of a result record of the run log: its stored judgement (`ResultRecord.outcome`, made when the
    record was), with what was judged beside it for the mismatch lines."""
    return judged_outcome(record.outcome, record.facts)


def category(result: Outcome, kind: str, conformance_failed: bool) -> int:
    """Where a result stands, worst first: conformance failure, error, verdict wrong, claims wrong, right."""
    if conformance_failed:
        return CONFORMANCE_FAILURE
    if not result.scored:
        return ERROR
    if kind == "policy":
        return RIGHT
    if not result.verdict_correct:
        return VERDICT_WRONG
    return CLAIMS_WRONG if result.claims_wrong else RIGHT


def is_failure(cat: int) -> bool:
    """A category the report always shows: a conformance failure, an error or a wrong verdict."""
    return cat <= VERDICT_WRONG
