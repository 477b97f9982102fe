"""Verifier reply parsing: find the JSON object, validate it strictly, never repair it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from pydantic import ValidationError

from harness.system import strictjson
from harness.system.models import InvalidReason, ReplyStatus, VerifierCall, VerifierReply

_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_VALUE_START = re.compile(r"\{\s*[\"}]|\[")
"""Where a JSON text can start in prose: `{` before a key or `}`, or `[` (a `{` before anything else cannot)."""
_CUT_SLACK = 8
FIRST_WINDOW = 256
"""Characters a decode first sees: an error's cost is then bounded by the window, not by where it sits."""


def json_objects(text: str) -> Iterator[dict[str, Any]]:
    """Every JSON object that is the top-level value of a JSON text in `text`, in order.

    The whole text, then each fenced block, then the JSON texts in prose (§5 step 2). An object nested
    inside another JSON value (an object or an array) is not a top-level value, so it is never returned.
    Only strict, complete JSON is returned; nothing is closed or repaired.
    """
    for candidate in [text.strip()] + [m.group(1).strip() for m in _FENCE.finditer(text)]:
        try:
            value = strictjson.loads(candidate)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            yield value
    yield from prose_json_objects(text)


def prose_json_objects(text: str) -> Iterator[dict[str, Any]]:
    """The top-level JSON objects in prose, in one pass, with no limit on what comes before them."""
    return (value for value in prose_json_values(text) if isinstance(value, dict))


def prose_json_values(text: str) -> Iterator[Any]:
    """The top-level JSON objects and arrays in prose (or XML, or any text), in order, in one pass."""
    return (value for _start, _end, value in prose_json_spans(text))


def prose_json_spans(text: str) -> Iterator[tuple[int, int, Any]]:
    """Each top-level JSON object or array in `text` with where it starts and ends, in order, in one pass.

    A decode is tried at each place a value can start that is not inside a value already decoded; a
    value that decodes is skipped over whole (its nested objects are not top-level, and scanning them
    again would be quadratic). Nesting too deep to decode is skipped to where its brackets close.
    """
    index = 0
    while (match := _VALUE_START.search(text, index)) is not None:
        start = match.start()
        try:
            value, end = decode_at(text, start)
        except RecursionError:
            index = bracket_end(text, start)
            continue
        except ValueError:
            index = start + 1
            continue
        yield start, end, value
        index = end


def decode_at(text: str, start: int) -> tuple[Any, int]:
    """One strict JSON value at `start` and where it ends, decoded in a growing window.

    Decoding the whole text at every start would make each error cost its position (the decoder counts
    lines up to it), so a decode sees a window that grows only while the value runs off its end.
    """
    size = FIRST_WINDOW
    while True:
        window = text[start : start + size]
        try:
            value, end = strictjson.raw_decode(window, 0)
        except ValueError as exc:
            if start + size >= len(text) or not _ran_off(exc, len(window)):
                raise
            size *= 4
            continue
        return value, start + end


def _ran_off(exc: ValueError, length: int) -> bool:
    """Whether a decode error may come from the window's end rather than the text.

    A cut can fall inside a literal or an escape (`tr`, `\\u12`), so an error within a few characters of
    the end counts; a repeated key or NaN (strict errors) never does.
    """
    if not isinstance(exc, json.JSONDecodeError):
        return False
    return exc.pos >= length - _CUT_SLACK or exc.msg.startswith("Unterminated string")


def bracket_end(text: str, start: int) -> int:
    """Just past where the brackets opened at `start` close (strings skipped), or the text's end."""
    depth = 0
    index = start
    in_string = False
    while index < len(text):
        ch = text[index]
        if in_string:
            if ch == "\\":
                index += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return len(text)


def extract_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text`, or None."""
    return next(json_objects(text), None)


def parse_verifier_reply(call: VerifierCall) -> tuple[VerifierReply | None, ReplyStatus]:
    """Validate a verifier call's reply against the contract; say why when it fails.

    The reply is the first top-level JSON object in the text that is a valid
    reply: a model that quotes the executor's JSON or a `{"trace_ref": ...}`
    before its answer is not failed for it, but a reply nested inside another
    JSON value is not the reply (§5 step 2). When none is valid, the error shown is that of
    the first object that looks like a reply (it has a `verdict`), else the first.
    """
    if call.raw_reply is None and call.error:
        return None, ReplyStatus(status="invalid", reason="transport", message=call.error)
    if call.refusal:
        return None, ReplyStatus(status="invalid", reason="refusal", message=call.refusal[:500])
    text = call.raw_reply or ""
    if not text.strip():
        return None, ReplyStatus(status="invalid", reason="empty", message="the reply was empty")
    first_error: ValidationError | None = None
    for obj in json_objects(text):
        try:
            return VerifierReply.model_validate(obj), ReplyStatus(status="valid")
        except ValidationError as exc:
            if first_error is None or ("verdict" in obj and not _looked_like_reply(first_error)):
                first_error = exc
    if first_error is None:
        if call.finish_reason == "length":
            return None, ReplyStatus(status="invalid", reason="truncated", message="cut off by max_tokens")
        return None, ReplyStatus(status="invalid", reason="not_json", message="no complete JSON object in the reply")
    reason: InvalidReason = "truncated" if call.finish_reason == "length" else "schema"
    return None, ReplyStatus(status="invalid", reason=reason, message=_short_errors(first_error))


def _looked_like_reply(exc: ValidationError) -> bool:
    """Whether the object behind an error had a `verdict` (its error is then the one to show)."""
    return not any(err["loc"] == ("verdict",) and err["type"] == "missing" for err in exc.errors())


def _short_errors(exc: ValidationError, limit: int = 5) -> str:
    parts = [f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors()[:limit]]
    more = len(exc.errors()) - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
