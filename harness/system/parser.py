"""Executor-output parser: raw text in, `executor_output_parse_status` out.

Broken JSON is never repaired (INTERPRETATION §2): what `json.loads` does not
accept is `malformed`. Full V2 conformance is the gatekeeper's job.
"""

from __future__ import annotations

import re

from harness.system import strictjson
from harness.system.models import ParsedExecutorOutput, ParseStatus

_FENCED_JSON = re.compile(r"```(?:json|JSON)?[ \t]*\n(.*?)\n?```", re.DOTALL)


def parse_structured_output(raw: str | None) -> ParsedExecutorOutput:
    """Classify what the executor emitted as `valid`, `missing` or `malformed`."""
    if raw is None or not raw.strip():
        return _status("missing", "the executor emitted no structured output")
    try:
        value = strictjson.loads(raw)
    except (ValueError, RecursionError) as exc:
        return _status("malformed", f"not JSON: {exc}")
    if not isinstance(value, dict):
        return _status("malformed", f"not a JSON object but {type(value).__name__}")
    if not isinstance(value.get("claims"), list):
        return _status("malformed", "no readable `claims` list")
    return ParsedExecutorOutput(parse_status=ParseStatus(status="valid"), structured=value)


def split_combined_message(message: str) -> tuple[str, str | None]:
    """Split one executor message into (prose, structured-output text or None).

    The structured output is the *last* fenced json block after the prose; the
    prose is everything before it. A message with no fenced block has none.
    """
    matches = list(_FENCED_JSON.finditer(message))
    if not matches:
        return message.strip(), None
    last = matches[-1]
    return message[: last.start()].strip(), last.group(1)


def parse_combined_message(message: str) -> tuple[str, ParsedExecutorOutput]:
    """Parse a prose answer followed by a fenced json block."""
    prose, raw = split_combined_message(message)
    return prose, parse_structured_output(raw)


def _status(status: str, reason: str) -> ParsedExecutorOutput:
    return ParsedExecutorOutput(parse_status=ParseStatus(status=status, reason=reason))  # type: ignore[arg-type]
