"""Correct variants of the bundled SUT: each changes only what the spec and protocol leave free (test only).

`vbench certify` must certify every one. Encodings run the plain SUT behind tests/kit/reencode.py's proxy
(the answers, and the prompt text the SUT sends its model, re-encoded as another JSON library writes them);
the others patch the SUT's HTTP answer in its own process (tests/kit/faulty_sut.py).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from typing import Any

from aiohttp import web

from harness.system import serve
from tests.kit.reencode import Encoding
from tests.kit.seeds import Seed

SLOW_SHARE = 0.5
"""A slow answer waits this share of the request's `timeout_s` before it is computed (within the limit)."""
SLOW_ANSWERS = 2
"""How many requests answer slowly (each costs the suite SLOW_SHARE * timeout_s of wall time)."""


def answer_text(change: Callable[[dict[str, Any]], str]) -> Callable[[], None]:
    """The HTTP answer of `POST /verify` written by `change` from the computed one (the one patch of the answer)."""

    def apply() -> None:
        original = serve.SutServer._verify

        async def verify(self: serve.SutServer, request: web.Request) -> web.Response:
            response = await original(self, request)
            if response.status != 200 or not isinstance(response.body, bytes):
                return response
            return web.Response(body=change(json.loads(response.body)).encode(), content_type="application/json")

        serve.SutServer._verify = verify  # type: ignore[method-assign]

    return apply


def _answers(change: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
    """Change every HTTP answer of `POST /verify` after the system computed it."""

    def rewrite(body: dict[str, Any]) -> str:
        change(body)
        return json.dumps(body)

    return answer_text(rewrite)


def _extra_keys(body: dict[str, Any]) -> None:
    """Keys of the SUT's own beside every object the protocol names (none as a sibling of the stored row)."""
    body["served_by"] = {"implementation": "variant", "build": 7}
    evaluation = body["self_evaluation"]["verifier_evaluation"]
    evaluation["x_trace_id"] = "abc-123"
    evaluation["gatekeeper_result"]["x_rules_version"] = 3
    for key in ("claim_checks", "facts_checked", "adjustments", "tool_trace_summary"):
        for item in evaluation.get(key) or []:
            item["x_note"] = f"extra {key}"
    for check in evaluation.get("claim_checks") or []:
        for ref in check.get("evidence_refs") or []:
            ref["x_excerpt_offset"] = 0
    evaluation["verifier"]["x_region"] = "eu-west-1"


def _reworded(body: dict[str, Any]) -> None:
    """Free text worded the SUT's way, adjustments with fields of its own (PROTOCOL.md fixes only their reason)."""
    evaluation = body["self_evaluation"]["verifier_evaluation"]
    evaluation["rationale"] = "Rationale: " + str(evaluation.get("rationale") or "")
    for key in ("claim_checks", "facts_checked"):
        for item in evaluation.get(key) or []:
            item["detail"] = "Detail: " + str(item.get("detail") or "")
    for index, adjustment in enumerate(evaluation.get("adjustments") or []):
        adjustment["reason"] = f"Policy note {index + 1}: {adjustment['reason']}"
        adjustment["recorded_at"] = "2026-01-01T00:00:00Z"


def delayed_answers(share: float, count: int, beyond_s: float = 0.0) -> Callable[[], None]:
    """The first `count` requests wait `share` of their timeout_s, plus `beyond_s` seconds, before they are answered."""

    def apply() -> None:
        original = serve.SutServer._verify
        counter = itertools.count()

        async def verify(self: serve.SutServer, request: web.Request) -> web.Response:
            body = await request.json()
            if next(counter) < count:
                await asyncio.sleep(share * float(body["settings"]["timeout_s"]) + beyond_s)
            return await original(self, request)

        serve.SutServer._verify = verify  # type: ignore[method-assign]

    return apply


VARIANTS: list[Seed] = [
    Seed(
        "gson-html-safe-escaping",
        "input.trace",
        "Gson's default escaping (\\u003d \\u003c \\u003e \\u0026 \\u0027, ASCII only)",
        encoding=Encoding(escape="gson"),
    ),
    Seed("php-slash-escaping", "input.trace", "PHP's \\/ escaping of every slash", encoding=Encoding(escape="php")),
    Seed(
        "ensure-ascii",
        "input.claims",
        "every non-ASCII character escaped (ensure_ascii)",
        encoding=Encoding(escape="ascii"),
    ),
    Seed(
        "free-lists-shuffled",
        "facts.mapping",
        "facts_checked, claim_checks, adjustments, errors, warnings in another order; keys reversed",
        encoding=Encoding(key_order="reversed", shuffle_seed=7),
    ),
    Seed(
        "number-spellings",
        "groundedness.reply",
        "numbers spelled 1e0 / 0.85e0, pretty-printed with sorted keys",
        encoding=Encoding(numbers="exp", indent=2, key_order="sorted"),
    ),
    Seed(
        "extra-keys",
        "protocol.extra-keys",
        "keys of the SUT's own in the answer, the evaluation and its items",
        _answers(_extra_keys),
    ),
    Seed(
        "reworded-text",
        "verdict.adjustment",
        "rationale, details and adjustment reasons worded differently, adjustments with extra fields",
        _answers(_reworded),
    ),
    Seed(
        "slow-within-timeout",
        "protocol.timeout",
        f"{SLOW_ANSWERS} answers wait {SLOW_SHARE:.0%} of timeout_s first",
        delayed_answers(SLOW_SHARE, SLOW_ANSWERS),
    ),
]
