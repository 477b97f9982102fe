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
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

from harness.corpus.schema import Case
from harness.run.meaning import MAX_NESTING, mentions, normal_space, text_views, token_in
from harness.system.protocol import (
    ExecutorInput,
    OtherSessionRows,
    SessionInput,
    VerifierEndpoint,
    VerifyRequest,
    VerifySettings,
)
from harness.system.reply import prose_json_values
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


@dataclass(frozen=True)
class PromptData:
    """What a model request says, read as data: the text views, every JSON object in it at any depth, and
    every key/value pair (JSON members, XML attributes and elements, `key: value` lines).

    The kit reads the request the way the model would read structure, never by its spacing: a value is in a
    JSON object whether the SUT wrote it compact, pretty-printed (`"status" : "pass"`), inside XML, in prose, or
    as a JSON string holding JSON."""

    views: tuple[str, ...]
    objects: tuple[dict[str, Any], ...]
    pairs: tuple[tuple[str, Any], ...]

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(k for k, _v in self.pairs)


def prompt_data(text: str) -> PromptData:
    """`text` read as data (`PromptData`): JSON values found in every view of it (`text_views`: as written and
    with each layer of escaping undone), JSON inside JSON strings, XML tags and `key: value` lines."""
    views = text_views(text)
    objects: list[dict[str, Any]] = []
    pairs: list[tuple[str, Any]] = []
    for view in views:
        for value in prose_json_values(view):
            _walk(value, objects, pairs, MAX_NESTING)
        tags = _Tags()
        tags.feed(view)
        tags.close()
        pairs += tags.pairs
        pairs += [(m.group(1), m.group(2)) for m in _KEY_VALUE.finditer(view)]
    for _key, value in list(pairs):
        if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
            _walk_text(value, objects, pairs, MAX_NESTING)
    return PromptData(views, tuple(objects), tuple(pairs))


_KEY_VALUE = re.compile(r"(?<![\w.-])([A-Za-z_][\w.-]*)[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9_.-]+)")
"""A `key: value` or `key = value` pair of a YAML line, an attribute or prose, whatever the spacing and quotes."""


def _walk(value: Any, objects: list[dict[str, Any]], pairs: list[tuple[str, Any]], depth: int) -> None:
    """Every object and member of a decoded JSON value; a string holding JSON is read too (JSON inside JSON)."""
    if isinstance(value, dict):
        objects.append(value)
        for key, item in value.items():
            pairs.append((key, item))
            _walk(item, objects, pairs, depth)
    elif isinstance(value, list):
        for item in value:
            _walk(item, objects, pairs, depth)
    elif isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        _walk_text(value, objects, pairs, depth)


def _walk_text(text: str, objects: list[dict[str, Any]], pairs: list[tuple[str, Any]], depth: int) -> None:
    if depth <= 0:
        return
    for value in prose_json_values(text):
        _walk(value, objects, pairs, depth - 1)


class _Tags(HTMLParser):
    """XML/HTML attributes and leaf elements as key/value pairs (`<status>pass</status>`, `status="pass"`);
    tolerant of text that is not well-formed, as a prompt mixing prose and tags is not."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.pairs: list[tuple[str, Any]] = []
        self._open: list[tuple[str, list[str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.pairs += [(name, value) for name, value in attrs if value is not None]
        self._open.append((tag, []))

    def handle_data(self, data: str) -> None:
        if self._open:
            self._open[-1][1].append(data)

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            name, text = self._open.pop()
            if name == tag:
                self.pairs.append((tag, "".join(text).strip()))
                return


def _same_text(value: Any, want: str) -> bool:
    return isinstance(value, str) and normal_space(value) == normal_space(want)


def _strings(value: Any) -> set[str]:
    """Every string in a JSON value, at any depth (rule ids in a list of strings or of issue objects)."""
    if isinstance(value, str):
        return {normal_space(value)}
    if isinstance(value, dict):
        return {s for v in value.values() for s in _strings(v)}
    if isinstance(value, list):
        return {s for v in value for s in _strings(v)}
    return set()


def input_problems(
    case: Case, model_requests: Sequence[dict[str, Any]], excerpt_chars: int = DEFAULT_EXCERPT_CHARS
) -> list[str]:
    """What the spec requires the verifier to be given and the SUT's model request lacked.

    The request is read as data (`prompt_data`): JSON wherever it sits (compact or pretty-printed, in prose,
    in XML, inside a JSON string), XML tags and `key: value` lines, with each layer of JSON and HTML/XML
    escaping undone, so any valid encoding and layout the SUT chose counts."""
    if not model_requests:
        return ["input: the SUT never called the model endpoint (the verifier is called for every case, §5 step 1)"]
    data = prompt_data(request_text(model_requests[-1]))
    return [
        *gatekeeper_input_problems(case, data),
        *claim_input_problems(case, data.views),
        *trace_input_problems(case, data.views, excerpt_chars),
    ]


def gatekeeper_input_problems(case: Case, data: PromptData) -> list[str]:
    """The gatekeeper result's four fields, its status value and every failed and warning rule id.

    Read from a gatekeeper object (a JSON object with `status` and `failed_rules`) when the request holds one;
    else from the `status` pairs (XML, `key: value`) and the rule ids as whole tokens anywhere."""
    gk = case.expected.gatekeeper
    out = [
        f'input: the gatekeeper_result key "{f}" is not in the model request'
        for f in GATEKEEPER_FIELDS
        if f not in data.keys
    ]
    objects = [o for o in data.objects if "status" in o and "failed_rules" in o]
    chosen = [o for o in objects if _same_text(o["status"], gk.status)]
    if objects and not chosen:
        found = ", ".join(sorted({json.dumps(o["status"]) for o in objects}))
        out.append(
            f'input: the gatekeeper_result in the model request has "status": {found}; the spec\'s gatekeeper gives '
            f"{json.dumps(gk.status)}"
        )
    elif not objects and not any(k == "status" and _same_text(v, gk.status) for k, v in data.pairs):
        out.append(f"input: the gatekeeper status {json.dumps(gk.status)} is not in the model request")
    for what, key, rules in (
        ("failed rule", "failed_rules", gk.failed_rules),
        ("warning rule", "warnings", gk.warnings or []),
    ):
        given = set().union(*(_strings(o.get(key)) for o in chosen)) if chosen else None
        out += [
            f"input: {what} {r} is not in the model request"
            + (f" (its gatekeeper_result {json.dumps(key)} lacks it)" if given is not None else "")
            for r in rules
            if (r not in given if given is not None else not token_in(data.views, r))
        ]
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
