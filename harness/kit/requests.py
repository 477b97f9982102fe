"""A policy case as a protocol request, and the spec's input requirements checked on the model request.

Both pure. The input checks are language neutral: they look for what the spec says the verifier must be
given (the gatekeeper result with status, failed_rules, warnings and errors; the structured claims; the
trace refs and each whole result excerpt) anywhere in the text the SUT sent to the model, in whatever
format and escaping the SUT chose.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from harness.corpus.schema import Case
from harness.run.meaning import mentions, text_views, token_in
from harness.system.protocol import (
    ExecutorInput,
    OtherSessionRows,
    SessionInput,
    VerifierEndpoint,
    VerifyRequest,
    VerifySettings,
)
from harness.system.trace import DEFAULT_EXCERPT_CHARS

SCRIPTED_MODEL = "kit-scripted-verifier"
GATEKEEPER_FIELDS = ("status", "failed_rules", "warnings", "errors")


def scripted_reply(case: Case) -> str:
    """The exact text the kit's model endpoint answers for a policy case."""
    if case.verifier_response is None:
        raise ValueError(f"case {case.id} is a quality case: it has no scripted reply")
    if case.verifier_response.raw is not None:
        return case.verifier_response.raw
    return json.dumps(case.verifier_response.json_)


def case_settings(case: Case, excerpt_chars: int = DEFAULT_EXCERPT_CHARS, timeout_s: float = 30.0) -> VerifySettings:
    """The settings sent with a case: what the case pins in `meta.kit.settings`, else the kit's."""
    pinned = case.settings
    return VerifySettings(
        excerpt_chars=case.excerpt_limit(excerpt_chars),
        claim_guard=True if pinned.claim_guard is None else pinned.claim_guard,
        timeout_s=timeout_s,
    )


def request_for(
    case: Case,
    base_url: str,
    excerpt_chars: int = DEFAULT_EXCERPT_CHARS,
    model: str = SCRIPTED_MODEL,
    timeout_s: float = 30.0,
) -> VerifyRequest:
    """Everything the SUT needs for one case, in the body (no headers, no shared state)."""
    emission = case.executor.emission()
    return VerifyRequest(
        session=SessionInput(
            id=case.session_id,
            question=case.session.question,
            tool_invocations=list(case.session.tool_invocations),
            other_sessions=[
                OtherSessionRows(id=o.id, tool_invocations=list(o.tool_invocations))
                for o in case.session.other_sessions
            ],
            self_evaluation=dict(case.session.self_evaluation),
            tool_trace_summary=case.session.tool_trace_summary,
        ),
        executor=ExecutorInput(
            final_answer=emission.final_answer, structured_output_raw=emission.structured_output_raw
        ),
        verifier=VerifierEndpoint(base_url=base_url, model=model),
        settings=case_settings(case, excerpt_chars, timeout_s),
    )


def request_text(body: dict[str, Any]) -> str:
    """All message text of a chat request (string or content-part messages)."""
    parts: list[str] = []
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
        elif content is not None:
            parts.append(str(content))
    return "\n".join(parts)


def input_problems(
    case: Case, model_requests: Sequence[dict[str, Any]], excerpt_chars: int = DEFAULT_EXCERPT_CHARS
) -> list[str]:
    """What the spec requires the verifier to be given and the SUT's model request lacked.

    Values are looked for by meaning: in the message text as written and with each layer of JSON and
    HTML/XML escaping undone (`harness.run.meaning.text_views`), so any valid encoding the SUT chose counts."""
    if not model_requests:
        return ["input: the SUT never called the model endpoint (the verifier is called for every case, §5 step 1)"]
    views = text_views(request_text(model_requests[-1]))
    return [
        *gatekeeper_input_problems(case, views),
        *claim_input_problems(case, views),
        *trace_input_problems(case, views, excerpt_chars),
    ]


def gatekeeper_input_problems(case: Case, views: Sequence[str]) -> list[str]:
    """The gatekeeper result's four fields, its status value and every failed and warning rule id."""
    gk = case.expected.gatekeeper
    out = [
        f"input: gatekeeper_result field {f!r} is not in the model request"
        for f in GATEKEEPER_FIELDS
        if not any(f in view for view in views)
    ]
    if not any(re.search(rf"status\W{{0,4}}{gk.status}\b", view) for view in views):
        out.append(f"input: the gatekeeper status {gk.status!r} is not in the model request")
    out += [f"input: failed rule {r} is not in the model request" for r in gk.failed_rules if not token_in(views, r)]
    out += [f"input: warning rule {r} is not in the model request" for r in gk.warnings or [] if not token_in(views, r)]
    return out


def claim_input_problems(case: Case, views: Sequence[str]) -> list[str]:
    """Every structured claim's id and statement."""
    out: list[str] = []
    for claim in case.executor_output.objects:
        cid, statement = claim.get("claim_id"), claim.get("statement")
        if isinstance(cid, str) and cid and not mentions(views, cid):
            out.append(f"input: structured claim {cid} is not in the model request")
        if isinstance(statement, str) and statement and not mentions(views, statement):
            out.append(f"input: the statement of claim {cid} is not in the model request")
    return out


def trace_input_problems(case: Case, views: Sequence[str], excerpt_chars: int = DEFAULT_EXCERPT_CHARS) -> list[str]:
    """Every trace ref of the session's trace summary and its whole result excerpt (cut at the limit)."""
    trace = case.trace(excerpt_chars)
    out = [
        f"input: trace ref {e.trace_ref} is not in the model request" for e in trace if not token_in(views, e.trace_ref)
    ]
    out += [
        f"input: the result excerpt of trace ref {e.trace_ref} ({len(e.result_excerpt)} characters) is not in the "
        "model request whole"
        for e in trace
        if e.result_excerpt.strip() and not mentions(views, e.result_excerpt)
    ]
    return out
