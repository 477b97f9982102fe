"""Seeded-fault variants of the bundled SUT: each breaks one rule of INTERPRETATION §2-§7 (test only).

    python -m tests.kit.faulty_sut --fault NAME --port-file F

runs `vbench sut serve`'s server in its own process with one fault patched in, so the kit's own
scoring (in the test process) is never touched by it. `vbench certify` must catch every fault.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import select

from harness.system import gatekeeper, pipeline, policy, reply, store
from harness.system.models import (
    LEGACY_MAPPING,
    Derivability,
    EvidenceBinding,
    GatekeeperResult,
    LegacyVerification,
    ToolInvocation,
    Verdict,
)
from tests.kit.seeds import Seed, evaluation_fault, persisted_fault


def _wrap_policy(
    change: Callable[[policy.PolicyOutcome, tuple[Any, ...], dict[str, Any]], policy.PolicyOutcome],
) -> None:
    original = pipeline.apply_policy

    def patched(*args: Any, **kwargs: Any) -> policy.PolicyOutcome:
        return change(original(*args, **kwargs), args, kwargs)

    pipeline.apply_policy = patched  # type: ignore[assignment]


def legacy_inference_as_direct() -> None:
    policy.LEGACY_MAPPING = {**LEGACY_MAPPING, Derivability.REASONABLE_INFERENCE: LegacyVerification.DIRECT_EVIDENCE}


def no_reject_on_invocation_ref() -> None:
    def downgrade(verdict: Verdict, status: str, failed_rules: Any) -> Verdict:
        return Verdict.LOW_CONFID if status == "fail" and verdict == Verdict.PASS else verdict

    policy.gatekeeper_downgrade = downgrade


def pass_on_malformed() -> None:
    def change(outcome: policy.PolicyOutcome, args: tuple[Any, ...], _kw: dict[str, Any]) -> policy.PolicyOutcome:
        parsed, model_reply = args[0], args[2]
        if parsed.parse_status.status != "valid" and model_reply is not None:
            return dataclasses.replace(outcome, verdict=model_reply.verdict)
        return outcome

    _wrap_policy(change)


def siblings_dropped() -> None:
    def write(self: store.Store, session_id: str, evaluation: Any) -> dict[str, Any]:
        merged = {store.EVALUATION_KEY: evaluation.model_dump(mode="json")}
        with self._transaction() as conn:
            conn.execute(store._UPDATE_EVALUATION, {"b_session": session_id, "self_evaluation": merged})
        return merged

    store.Store.write_verifier_evaluation = write  # type: ignore[method-assign]


def refs_not_filled() -> None:
    policy.complete_refs = lambda refs, claim, trace: list(refs)


def unknown_checks_kept() -> None:
    original = policy.sanitise_claim_checks

    def sanitise(checks: Any, claims: Any, *rest: Any) -> Any:
        kept, notes = original(checks, claims, *rest)
        known = {c.claim_id for c in claims}
        return kept + [c for c in checks if c.claim_id not in known], notes

    policy.sanitise_claim_checks = sanitise


def model_critical_count_trusted() -> None:
    def change(outcome: policy.PolicyOutcome, args: tuple[Any, ...], _kw: dict[str, Any]) -> policy.PolicyOutcome:
        model_reply = args[2]
        if model_reply is None:
            return outcome
        return dataclasses.replace(outcome, critical_fact_count=model_reply.critical_fact_count)

    _wrap_policy(change)


def failed_rules_unsorted() -> None:
    original = pipeline.run_gatekeeper

    def run(*args: Any, **kwargs: Any) -> GatekeeperResult:
        result = original(*args, **kwargs)
        return result.model_copy(update={"failed_rules": sorted(result.failed_rules, reverse=True)})

    pipeline.run_gatekeeper = run  # type: ignore[assignment]


def nested_reply_accepted() -> None:
    def every_object(text: str) -> Iterator[dict[str, Any]]:
        for start, ch in enumerate(text):
            if ch == "{":
                try:
                    value, _ = json.JSONDecoder().raw_decode(text, start)
                except ValueError:
                    continue
                if isinstance(value, dict):
                    yield value

    reply.json_objects = every_object


def mistyped_ids_unchecked() -> None:
    gatekeeper.binding_invocation_ids = lambda binding: (  # the reading before issue 15
        [gatekeeper.as_invocation_id(i) for i in binding["source_invocation_ids"]]
        if isinstance(binding.get("source_invocation_ids"), list)
        else []
    )


def unresolved_direct_kept() -> None:
    """Every claim counts as having resolving evidence (an empty binding stands in when it has none)."""
    policy.resolving_bindings = lambda claim, *args: list(claim.evidence_bindings) or [EvidenceBinding()]


def no_claim_guard() -> None:
    original = pipeline.apply_policy

    def apply(*args: Any, **kwargs: Any) -> policy.PolicyOutcome:
        kwargs.pop("settings", None)
        return original(*args[:5], settings=policy.PolicySettings(claim_guard=False), **kwargs)

    pipeline.apply_policy = apply  # type: ignore[assignment]


def other_sessions_rows_accepted() -> None:
    def invocations(self: store.Store, session_id: str) -> list[ToolInvocation]:
        table = store.tool_invocation
        with self._transaction() as conn:
            rows = conn.execute(select(table).order_by(table.c.pk)).all()
        return [
            ToolInvocation(
                id=r.invocation_id, tool_name=r.tool_name, arguments=r.arguments, status=r.status, result=r.result
            )
            for r in rows
        ]

    store.Store.invocations = invocations  # type: ignore[method-assign]


def groundedness_threshold_ignored() -> None:
    policy.PASS_THRESHOLD = 0.0


def gatekeeper_withheld_from_model() -> None:
    original = pipeline.prepare

    def prepare(*args: Any, **kwargs: Any) -> pipeline.Prepared:
        prepared = original(*args, **kwargs)
        blank = GatekeeperResult(status="pass")
        return dataclasses.replace(prepared, inputs=prepared.inputs.model_copy(update={"gatekeeper_result": blank}))

    pipeline.prepare = prepare  # type: ignore[assignment]


def trace_withheld_from_model() -> None:
    original = pipeline.prepare

    def prepare(*args: Any, **kwargs: Any) -> pipeline.Prepared:
        prepared = original(*args, **kwargs)
        return dataclasses.replace(prepared, inputs=prepared.inputs.model_copy(update={"tool_trace_summary": []}))

    pipeline.prepare = prepare  # type: ignore[assignment]


def trace_ref_warning_missing() -> None:
    gatekeeper.RULES.pop("evidence.trace_ref")


def missing_check_not_unsupported() -> None:
    original = policy.sanitise_claim_checks

    def sanitise(checks: Any, claims: Any, *rest: Any) -> Any:
        kept, notes = original(checks, claims, *rest)
        returned = {c.claim_id for c in checks}
        return [c for c in kept if c.claim_id in returned], notes

    policy.sanitise_claim_checks = sanitise


def _empty_refs(evaluation: dict[str, Any]) -> None:
    for check in evaluation["claim_checks"]:
        check["evidence_refs"] = []


def _blank_facts(evaluation: dict[str, Any]) -> None:
    for fact in evaluation["facts_checked"]:
        fact["fact"] = ""


def _null_siblings(merged: dict[str, Any]) -> None:
    for key in merged:
        if key != store.EVALUATION_KEY:
            merged[key] = None


ORIGINAL: list[Seed] = [
    Seed(
        "legacy-inference-as-direct",
        "facts.mapping",
        "§6 legacy mapping: reasonable_inference mapped to direct_evidence",
        legacy_inference_as_direct,
    ),
    Seed(
        "no-reject-on-invocation-ref",
        "verdict.gatekeeper-downgrade",
        "§5.4 no REJECT when evidence.invocation_ref failed",
        no_reject_on_invocation_ref,
    ),
    Seed(
        "pass-on-malformed",
        "verdict.not-valid-no-pass",
        "§5.1 the model's verdict kept when the parse status is not valid",
        pass_on_malformed,
    ),
    Seed(
        "siblings-dropped", "persist.siblings", "§7 sibling keys of self_evaluation dropped on write", siblings_dropped
    ),
    Seed(
        "refs-not-filled",
        "refs.completed",
        "§5.3/§7 evidence refs not completed from bindings and trace",
        refs_not_filled,
    ),
    Seed(
        "unknown-checks-kept", "claims.unknown-dropped", "§5.3 checks for unknown claim ids kept", unknown_checks_kept
    ),
    Seed(
        "model-critical-count-trusted",
        "claims.critical-count",
        "§5.3 the model's critical_fact_count trusted",
        model_critical_count_trusted,
    ),
    Seed("failed-rules-unsorted", "gatekeeper.rules", "§3 failed_rules not sorted", failed_rules_unsorted),
    Seed(
        "nested-reply-accepted",
        "verdict.reply-contract",
        "§5.2 a contract object nested in other JSON taken as the reply",
        nested_reply_accepted,
    ),
    Seed(
        "mistyped-ids-unchecked",
        "gatekeeper.rules",
        "§3 a bare-string source_invocation_ids not checked",
        mistyped_ids_unchecked,
    ),
    Seed(
        "unresolved-direct-kept",
        "claims.sanitised",
        "§5.3 direct_observation kept without resolving evidence",
        unresolved_direct_kept,
    ),
    Seed("no-claim-guard", "verdict.effective", "§5.5 claim guard never applied", no_claim_guard),
    Seed(
        "other-sessions-rows-accepted",
        "gatekeeper.rules",
        "§3 another session's invocation ids accepted",
        other_sessions_rows_accepted,
    ),
    Seed(
        "groundedness-threshold-ignored",
        "verdict.groundedness-threshold",
        "§4 PASS below groundedness 0.5",
        groundedness_threshold_ignored,
    ),
    Seed(
        "gatekeeper-withheld-from-model",
        "input.gatekeeper",
        "the gatekeeper result not given to the verifier",
        gatekeeper_withheld_from_model,
    ),
    Seed(
        "trace-withheld-from-model",
        "input.trace",
        "the tool trace summary not given to the verifier",
        trace_withheld_from_model,
    ),
    Seed(
        "trace-ref-warning-missing",
        "gatekeeper.rules",
        "§3 evidence.trace_ref warning rule missing",
        trace_ref_warning_missing,
    ),
    Seed(
        "missing-check-not-unsupported",
        "claims.sanitised",
        "§5.3 a claim with no check not counted as unsupported",
        missing_check_not_unsupported,
    ),
    Seed(
        "trace-emptied",
        "persist.trace",
        "§7 tool_trace_summary persisted empty",
        evaluation_fault(lambda e: e.update(tool_trace_summary=[])),
    ),
    Seed(
        "refs-emptied",
        "refs.completed",
        "§5.3/§7 every check's evidence_refs persisted empty",
        evaluation_fault(_empty_refs),
    ),
    Seed(
        "siblings-nulled",
        "persist.siblings",
        "§7 sibling keys of self_evaluation kept but set to null",
        persisted_fault(_null_siblings),
    ),
    Seed(
        "facts-blank",
        "facts.statement",
        "§6 facts_checked[].fact not the claim's statement",
        evaluation_fault(_blank_facts),
    ),
    Seed(
        "groundedness-out-of-range",
        "groundedness.range",
        "§4 groundedness_score persisted as 7.5",
        evaluation_fault(lambda e: e.update(groundedness_score=7.5)),
    ),
    Seed(
        "adjustments-dropped",
        "verdict.adjustment",
        "§5 verdict changes persisted with no adjustment",
        evaluation_fault(lambda e: e.update(adjustments=[])),
    ),
    Seed(
        "gatekeeper-errors-dropped",
        "gatekeeper.consistent",
        "§3 gatekeeper_result.errors persisted empty",
        evaluation_fault(lambda e: e["gatekeeper_result"].update(errors=[])),
    ),
]


def all_seeds() -> dict[str, Seed]:
    """Every seeded fault and every correct variant that patches the SUT, by name."""
    from tests.kit.java_faults import FAULTS as JAVA
    from tests.kit.java_faults import VARIANTS as JAVA_VARIANTS
    from tests.kit.more_faults import FAULTS as MORE
    from tests.kit.rule_faults import FAULTS as RULES
    from tests.kit.variants import VARIANTS

    return {s.name: s for s in [*ORIGINAL, *MORE, *RULES, *JAVA, *VARIANTS, *JAVA_VARIANTS] if s.apply is not None}


def main(argv: list[str] | None = None) -> None:
    from harness.system.serve import SutServer, serve

    parser = argparse.ArgumentParser(description=__doc__)
    seeds = all_seeds()
    parser.add_argument("--fault", required=True, choices=sorted(seeds))
    parser.add_argument("--port-file", type=Path, required=True)
    args = parser.parse_args(argv)
    seeds[args.fault].apply()  # type: ignore[misc]
    asyncio.run(serve(SutServer(name=f"bundled system with seeded fault {args.fault}"), port_file=args.port_file))


if __name__ == "__main__":
    main()
