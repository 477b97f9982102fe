"""A policy case as a protocol request, and the spec's input requirements checked on the model request.

Both pure. The input checks are language neutral: they look for what the spec says the verifier must be
given (the gatekeeper result with status, failed_rules, warnings and errors; the structured claims; the
trace refs and the start of each result excerpt) anywhere in the text the SUT sent to the model, in whatever format the SUT chose.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from harness.corpus.schema import Case
from harness.system.protocol import (
    ExecutorInput,
    OtherSessionRows,
    SessionInput,
    VerifierEndpoint,
    VerifyRequest,
    VerifySettings,
)
from harness.system.trace import DEFAULT_EXCERPT_CHARS, session_trace_summary

SCRIPTED_MODEL = "kit-scripted-verifier"
GATEKEEPER_FIELDS = ("status", "failed_rules", "warnings", "errors")
EXCERPT_HEAD = 40


def scripted_reply(case: Case) -> str:
    """The exact text the kit's model endpoint answers for a policy case."""
    if case.verifier_response is None:
        raise ValueError(f"case {case.id} is a quality case: it has no scripted reply")
    if case.verifier_response.raw is not None:
        return case.verifier_response.raw
    return json.dumps(case.verifier_response.json_)


def request_for(
    case: Case, base_url: str, excerpt_chars: int = DEFAULT_EXCERPT_CHARS, model: str = SCRIPTED_MODEL
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
        settings=VerifySettings(excerpt_chars=excerpt_chars),
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


def _mentions(text: str, value: str) -> bool:
    """`value` appears as written, JSON-escaped, or XML/HTML-escaped (a SUT may embed it any of those ways)."""
    escaped_xml = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return any(
        form in text for form in (value, json.dumps(value)[1:-1], escaped_xml, escaped_xml.replace('"', "&quot;"))
    )


def _token(text: str, value: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(value)}(?![\w-])", text) is not None


def input_problems(
    case: Case, model_requests: Sequence[dict[str, Any]], excerpt_chars: int = DEFAULT_EXCERPT_CHARS
) -> list[str]:
    """What the spec requires the verifier to be given and the SUT's model request lacked."""
    if not model_requests:
        return ["input: the SUT never called the model endpoint (the verifier is called for every case, §5 step 1)"]
    text = request_text(model_requests[-1])
    out: list[str] = []
    gk = case.expected.gatekeeper
    out += [
        f"input: gatekeeper_result field {f!r} is not in the model request" for f in GATEKEEPER_FIELDS if f not in text
    ]
    if not re.search(rf"status\W{{0,4}}{gk.status}\b", text):
        out.append(f"input: the gatekeeper status {gk.status!r} is not in the model request")
    out += [f"input: failed rule {r} is not in the model request" for r in gk.failed_rules if not _token(text, r)]
    out += [f"input: warning rule {r} is not in the model request" for r in gk.warnings or [] if not _token(text, r)]
    for claim in case.executor_output.objects:
        cid, statement = claim.get("claim_id"), claim.get("statement")
        if isinstance(cid, str) and cid and not _mentions(text, cid):
            out.append(f"input: structured claim {cid} is not in the model request")
        if isinstance(statement, str) and statement and not _mentions(text, statement):
            out.append(f"input: the statement of claim {cid} is not in the model request")
    trace = session_trace_summary(case.session.tool_trace_summary, case.session.tool_invocations, excerpt_chars)
    out += [
        f"input: trace ref {e.trace_ref} is not in the model request" for e in trace if not _token(text, e.trace_ref)
    ]
    out += [
        f"input: the result excerpt of trace ref {e.trace_ref} is not in the model request"
        for e in trace
        if (head := _excerpt_head(e.result_excerpt)) and not _mentions(text, head)
    ]
    return out


def _excerpt_head(excerpt: str, chars: int = EXCERPT_HEAD) -> str:
    """The start of an excerpt's first non-blank line: what any rendering of the evidence must carry."""
    line = next((ln.strip() for ln in excerpt.splitlines() if ln.strip()), "")
    return line[:chars]
