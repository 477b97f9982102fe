"""Verifier reply parsing: find the JSON object, validate it strictly, never repair it."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Any

from pydantic import ValidationError

from harness.system import strictjson
from harness.system.models import InvalidReason, ReplyStatus, VerifierCall, VerifierReply

_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
MAX_OBJECT_STARTS = 256
"""How many `{` positions in prose are tried: bounds the scan of a huge or hostile reply."""


def json_objects(text: str) -> Iterator[dict[str, Any]]:
    """Every complete JSON object in `text`, in order: the whole text, fenced blocks, then `{...}` in prose.

    Only strict, complete JSON is returned; nothing is closed or repaired.
    """
    for candidate in [text.strip()] + [m.group(1).strip() for m in _FENCE.finditer(text)]:
        try:
            value = strictjson.loads(candidate)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            yield value
    starts = (i for i, ch in enumerate(text) if ch == "{")
    for start in itertools.islice(starts, MAX_OBJECT_STARTS):
        try:
            value, _ = strictjson.raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            yield value


def extract_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text`, or None."""
    return next(json_objects(text), None)


def parse_verifier_reply(call: VerifierCall) -> tuple[VerifierReply | None, ReplyStatus]:
    """Validate a verifier call's reply against the contract; say why when it fails.

    The reply is the first JSON object in the text that is a valid reply: a
    model that quotes the executor's JSON or a `{"trace_ref": ...}` before its
    answer is not failed for it. When none is valid, the error shown is that of
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
