"""Run one case through the system under test, against its own fresh store."""

from __future__ import annotations

from harness.corpus.schema import Case
from harness.system.models import ExecutorEmission, VerifierEvaluation
from harness.system.pipeline import PipelineRun, run_pipeline
from harness.system.policy import PolicySettings
from harness.system.store import NewSession, Store
from harness.system.trace import DEFAULT_EXCERPT_CHARS
from harness.system.verifiers.base import Verifier
from harness.system.verifiers.scripted import ScriptedVerifier


def load_case_into_store(
    case: Case, store: Store, namespace: str = "", emission: ExecutorEmission | None = None
) -> list[str]:
    """The case's session, its other sessions, and their tool_invocation rows; returns the session ids written.

    Every session id is prefixed with `namespace`, the case's own in a shared store, so concurrent workers and
    other runs never touch each other's rows. A private store is emptied first; in a shared one, rows already
    under these ids (an earlier try of this very case) are replaced, nothing else is deleted. `emission`: the
    case's executor emission when the caller already built it.
    """
    sessions = [
        NewSession(namespace + other.id, invocations=other.tool_invocations) for other in case.session.other_sessions
    ]
    sessions.append(
        NewSession(
            namespace + case.session_id,
            question=case.session.question,
            invocations=case.session.tool_invocations,
            self_evaluation=case.session.self_evaluation,
            final_answer=case.executor.final_answer,
            structured_output_raw=(emission or case.executor.emission()).structured_output_raw,
        )
    )
    if store.private:  # it holds one case at a time: two plain deletes, cheaper than deleting these ids
        store.clear()
    store.add_sessions(sessions, replace=not store.private)
    return [s.id for s in sessions]


def scripted_verifier_for(case: Case) -> ScriptedVerifier:
    """The replayed reply of a policy case."""
    if case.verifier_response is None:
        raise ValueError(f"case {case.id} is a quality case: it has no verifier_response")
    return ScriptedVerifier(reply_json=case.verifier_response.json_, reply_raw=case.verifier_response.raw)


async def execute_case(
    case: Case,
    verifier: Verifier,
    settings: PolicySettings = PolicySettings(),
    excerpt_chars: int = DEFAULT_EXCERPT_CHARS,
    store: Store | None = None,
    namespace: str = "",
) -> PipelineRun:
    """Run the case through the whole system, its session ids prefixed with `namespace` (see `load_case_into_store`).

    A given store is left open (a runner worker reuses one): a private in-memory one holds this case's rows until
    the next case empties it (`load_case_into_store`), any other keeps them. Without a store a new in-memory one
    is made and closed.
    """
    own = store is None
    store = store or Store()
    try:
        emission = case.executor.emission()  # built once: it serialises the structured output
        load_case_into_store(case, store, namespace, emission)
        pinned = case.settings  # a case that pins a setting runs at it (`meta.kit.settings`)
        if pinned.claim_guard is not None and pinned.claim_guard != settings.claim_guard:
            settings = settings.model_copy(update={"claim_guard": pinned.claim_guard})
        return await run_pipeline(
            store,
            namespace + case.session_id,
            case.session.question,
            emission,
            verifier,
            settings,
            trace=case.session.tool_trace_summary,
            excerpt_chars=case.excerpt_limit(excerpt_chars),
        )
    finally:
        if own:
            store.close()


async def run_case(
    case: Case,
    verifier: Verifier,
    settings: PolicySettings = PolicySettings(),
    excerpt_chars: int = DEFAULT_EXCERPT_CHARS,
) -> tuple[VerifierEvaluation, dict[str, object]]:
    """Run the case; return the evaluation and the whole persisted `self_evaluation`."""
    run = await execute_case(case, verifier, settings, excerpt_chars)
    return run.evaluation, run.self_evaluation
