"""Pure builders: a case and one pipeline run in, a `ResultRecord` out."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from harness.corpus.perturb import Perturbed
from harness.corpus.schema import Case
from harness.run.conformance import findings_of
from harness.run.log import GatekeeperOutcome, Gold, ResultRecord, case_trace, elide_trace
from harness.system.models import Claim, VerifierEvaluation
from harness.system.pipeline import PipelineRun
from harness.system.protocol import ReportedEvaluation
from harness.system.store_names import EVALUATION_KEY
from harness.system.trace import DEFAULT_EXCERPT_CHARS

DEFAULT_DATASET = "verifier-bench"


def gold_of(case: Case) -> Gold:
    exp = case.expected
    return Gold(
        parse_status=exp.parse_status,
        gatekeeper=exp.gatekeeper.model_dump(mode="json"),
        claims=None
        if exp.claims is None
        else {cid: sorted(v.value for v in ok) for cid, ok in exp.acceptable_labels().items()},
        verdict=sorted(v.value for v in exp.acceptable_verdicts()),
        model_verdict=None
        if exp.model_verdict is None
        else sorted(v.value for v in exp.acceptable_model_verdicts() or ()),
    )


def dataset_of(case: Case) -> str:
    """Which data set a case belongs to: `meta.dataset`, else the project's own corpus."""
    value = case.meta.get("dataset")
    return value if isinstance(value, str) and value else DEFAULT_DATASET


def perturbation_fields(perturbed: Perturbed | None) -> dict[str, object]:
    """What a perturbed unit's record carries to be reproduced and read back (nothing for the case as written)."""
    if perturbed is None:
        return {}
    return {"perturbation": perturbed.name, "perturbation_seed": perturbed.seed, "claim_id_map": perturbed.claim_id_map}


def base_record(
    case: Case,
    variant: str,
    epoch: int,
    case_hash: str | None = None,
    claims: Sequence[Claim] | None = None,
    perturbed: Perturbed | None = None,
) -> dict[str, object]:
    """The fields every record has; `case_hash` and `claims` (the executor's, as the pipeline read them) when the
    caller already has them (neither is free)."""
    if claims is None:
        claims = case.executor_claims
    return {
        "case_id": case.id,
        "case_hash": case_hash or case.content_hash(),
        "kind": case.kind,
        "variant": variant,
        "epoch": epoch,
        "dataset": dataset_of(case),
        "tags": list(case.tags),
        "spec": list(case.spec),
        "gold": gold_of(case),
        "executor_claim_ids": [c.claim_id for c in claims],
        "critical_claims": [c.claim_id for c in claims if c.critical],
        "sibling_keys": sorted(k for k in case.session.self_evaluation if k != EVALUATION_KEY),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        **perturbation_fields(perturbed),
    }


def record_from_run(
    case: Case,
    variant: str,
    epoch: int,
    run: PipelineRun,
    case_hash: str | None = None,
    perturbed: Perturbed | None = None,
    excerpt_chars: int | None = None,
) -> ResultRecord:
    """Everything the metrics and the report need about one finished case run.

    With the run's `excerpt_chars`, a persisted trace summary that is the case's own is not copied into the
    record (`trace_from_case`; a perturbed unit's case is not the one in cases.jsonl, so its trace stays), and the
    record is checked against its case at that limit (`findings`: scoring then needs no case).
    """
    ev, call = run.evaluation, run.call
    transport_error = call.error if call.raw_reply is None and call.error else None
    persisted: dict[str, Any] | None = dict(run.self_evaluation)
    elided = False
    if perturbed is None and excerpt_chars is not None:
        persisted, elided = elide_trace(persisted, case_trace(case, excerpt_chars, keep=False))  # not kept: see Case
    record = ResultRecord(
        **base_record(case, variant, epoch, case_hash, run.claims, perturbed),  # type: ignore[arg-type]
        **outcome_fields(ev),
        derived_verdict=ev.derived_verdict,
        error=transport_error,
        reply_status=ev.reply_status.status,
        invalid_reason=ev.reply_status.reason,
        raw_reply=call.raw_reply,
        adjustments=[a.model_dump(mode="json") for a in ev.adjustments],
        persisted=persisted,
        trace_from_case=elided,
        latency_ms=call.latency_ms,
        usage=call.usage,
        attempts=call.attempts,
        cached=call.cached,
        harness_cpu_ms=run.cpu_ms,
    )
    if perturbed is None and excerpt_chars is not None:
        if run.output is not None:
            case.adopt_executor_output(run.output)  # the findings read the claims the run read
        record.findings = findings_of(record, case, excerpt_chars)
    return record


def outcome_fields(ev: VerifierEvaluation | ReportedEvaluation) -> dict[str, Any]:
    """The record's outcome keys (the contract users' scripts read) read from an evaluation, the system's own or a SUT's."""
    return {
        "parse_status": ev.executor_output_parse_status.status,
        "gatekeeper": GatekeeperOutcome(
            status=ev.gatekeeper_result.status,
            failed_rules=ev.gatekeeper_result.failed_rules,
            warnings=ev.gatekeeper_result.warning_rules,
        ),
        "claims": {c.claim_id: str(c.verification) for c in ev.claim_checks},
        "model_verdict": ev.model_verdict,
        "verdict": ev.verdict,
    }


def record_from_crash(
    case: Case,
    variant: str,
    epoch: int,
    error: str,
    case_hash: str | None = None,
    perturbed: Perturbed | None = None,
) -> ResultRecord:
    """A case whose run raised: recorded as an error so the run finishes and nothing is lost (with its findings: no
    evaluation, which a policy case must have)."""
    record = _no_outcome(base_record(case, variant, epoch, case_hash, perturbed=perturbed), error)
    if perturbed is None:
        record.findings = findings_of(record, case, DEFAULT_EXCERPT_CHARS)  # no trace to read: any limit
    return record


def _no_outcome(base: dict[str, object], error: str | None, **fields: Any) -> ResultRecord:
    """A record with no outcome to read (the run raised, or a SUT's answer does not follow §7)."""
    return ResultRecord(
        **base,  # type: ignore[arg-type]
        parse_status=None,
        gatekeeper=None,
        claims={},
        model_verdict=None,
        verdict=None,
        error=error,
        **fields,
    )


def record_from_sut(
    case: Case,
    variant: str,
    self_evaluation: dict[str, Any] | None,
    error: str | None,
    raw_reply: str | None,
    latency_ms: float = 0.0,
    case_hash: str | None = None,
) -> ResultRecord:
    """A case a system under test answered over the protocol: its outcome read by the §7 names.

    An answer that cannot be read that way keeps `persisted` (conformance says what is wrong with it) and
    leaves the outcome fields empty; a SUT failure (timeout, 5xx, not JSON) is the record's `error`.
    """
    base = base_record(case, variant, 0, case_hash)
    stored = (self_evaluation or {}).get(EVALUATION_KEY)
    try:
        ev = ReportedEvaluation.model_validate(stored) if isinstance(stored, dict) else None
    except ValidationError:
        ev = None
    if ev is None:
        return _no_outcome(base, error, raw_reply=raw_reply, persisted=self_evaluation, latency_ms=latency_ms)
    return ResultRecord(
        **base,  # type: ignore[arg-type]
        **outcome_fields(ev),
        error=error,
        raw_reply=raw_reply,
        adjustments=list(ev.adjustments),
        reply_status=_reported_reply_status(ev),
        persisted=self_evaluation,
        latency_ms=latency_ms,
    )


def _reported_reply_status(ev: ReportedEvaluation) -> str | None:
    """`reply_status.status` when the SUT reports it (the bundled one does; the protocol does not require it)."""
    status = (ev.model_extra or {}).get("reply_status")
    return status.get("status") if isinstance(status, dict) and isinstance(status.get("status"), str) else None
