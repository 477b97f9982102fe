"""What a case's claims cite, as the system resolves it (binding resolution is written once, here).

The corpus needs the tool invocations a claim's evidence is: a mutation changes them, a perturbation moves
their content. It asks the system: the gatekeeper on the case's strict parse, then `policy.resolving_entries`
(INTERPRETATION §5 step 3: a binding resolves when all its ids are current-session rows under its tool name,
or, having no ids, its trace_ref is in the trace summary; a claim that failed `evidence.invocation_ref` has no
resolving binding). Nothing here resolves a binding itself.
"""

from __future__ import annotations

from harness.corpus.schema import Case
from harness.system.gatekeeper import GatekeeperInput, run_gatekeeper
from harness.system.models import GatekeeperResult
from harness.system.policy import resolving_entries
from harness.system.trace import DEFAULT_EXCERPT_CHARS


def case_gatekeeper(case: Case, excerpt_chars: int = DEFAULT_EXCERPT_CHARS) -> GatekeeperResult:
    """The gatekeeper's result on the case, as `pipeline.prepare` runs it, from the case's cached strict parse."""
    rows = {inv.id: inv for inv in case.session.tool_invocations}
    return run_gatekeeper(GatekeeperInput(parsed=case.parsed_output, invocations=rows, trace=case.trace(excerpt_chars)))


def cited_invocations(case: Case, excerpt_chars: int = DEFAULT_EXCERPT_CHARS) -> dict[str, frozenset[str]]:
    """Claim id -> ids of the invocations its resolving bindings point at, for each claim the system reads."""
    trace = case.trace(excerpt_chars)
    gatekeeper = case_gatekeeper(case, excerpt_chars)
    return {
        claim.claim_id: frozenset(
            inv_id for entry in resolving_entries(claim, gatekeeper, trace) for inv_id in entry.source_invocation_ids
        )
        for claim in case.executor_claims
    }
