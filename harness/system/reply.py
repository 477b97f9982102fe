"""Verifier reply parsing: find the JSON object, validate it strictly, never repair it."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from harness.system.models import InvalidReason, ReplyStatus, VerifierCall, VerifierReply

_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()


def extract_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text`: the whole text, a fenced block, or a `{...}` in prose.

    Only complete, valid JSON is returned; nothing is closed or repaired.
    """
    stripped = text.strip()
    candidates = [stripped] + [m.group(1).strip() for m in _FENCE.finditer(text)]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    for start in (i for i, ch in enumerate(text) if ch == "{"):
        try:
            value, _ = _DECODER.raw_decode(text, start)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


def parse_verifier_reply(call: VerifierCall) -> tuple[VerifierReply | None, ReplyStatus]:
    """Validate a verifier call's reply against the contract; say why when it fails."""
    if call.raw_reply is None and call.error:
        return None, ReplyStatus(status="invalid", reason="transport", message=call.error)
    if call.refusal:
        return None, ReplyStatus(status="invalid", reason="refusal", message=call.refusal[:500])
    text = call.raw_reply or ""
    if not text.strip():
        return None, ReplyStatus(status="invalid", reason="empty", message="the reply was empty")
    obj = extract_json_object(text)
    if obj is None:
        if call.finish_reason == "length":
            return None, ReplyStatus(status="invalid", reason="truncated", message="cut off by max_tokens")
        return None, ReplyStatus(status="invalid", reason="not_json", message="no complete JSON object in the reply")
    try:
        reply = VerifierReply.model_validate(obj)
    except ValidationError as exc:
        reason: InvalidReason = "truncated" if call.finish_reason == "length" else "schema"
        return None, ReplyStatus(status="invalid", reason=reason, message=_short_errors(exc))
    return reply, ReplyStatus(status="valid")


def _short_errors(exc: ValidationError, limit: int = 5) -> str:
    parts = [f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors()[:limit]]
    more = len(exc.errors()) - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
