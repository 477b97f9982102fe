"""Talking to a system under test over the protocol: `GET /info` and `POST /verify`, nothing else.

A SUT that times out, answers a non-200 status, or answers something that is not a JSON object with a
`self_evaluation` object gives a `SutReply` with `error` set: the kit records it for that case and goes on.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
from pydantic import ValidationError

from harness.system.protocol import SutInfo

MAX_KEPT_BODY = 1_000_000
"""How much of a response body the run log keeps (the whole of any sane response)."""


class SutUnreachable(RuntimeError):
    """`GET /info` failed: nothing can be certified."""


@dataclass(frozen=True)
class SutReply:
    status: int | None
    body: str
    self_evaluation: dict[str, Any] | None
    error: str | None
    elapsed_ms: float


def _url(base: str, path: str) -> str:
    return base.rstrip("/") + path


async def fetch_info(session: aiohttp.ClientSession, base_url: str, timeout_s: float) -> SutInfo:
    """The SUT's identity; `SutUnreachable` with the reason when it cannot be had."""
    try:
        async with session.get(_url(base_url, "/info"), timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
            text = await resp.text()
            if resp.status != 200:
                raise SutUnreachable(f"GET {base_url}/info answered HTTP {resp.status}")
        return SutInfo.model_validate(json.loads(text))
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        raise SutUnreachable(f"GET {base_url}/info failed: {type(exc).__name__}: {exc}") from exc
    except (ValueError, ValidationError) as exc:
        raise SutUnreachable(f"GET {base_url}/info did not answer {{name, version}} as JSON: {exc}") from exc


async def post_verify(
    session: aiohttp.ClientSession, base_url: str, body: dict[str, Any], timeout_s: float
) -> SutReply:
    """One `POST /verify`; every failure becomes `SutReply.error`, never an exception."""
    start = time.perf_counter()
    payload = json.dumps(body).encode("utf-8")
    status: int | None = None
    text = ""
    try:
        async with session.post(
            _url(base_url, "/verify"),
            data=payload,
            headers={"Content-Type": "application/json"},
            timeout=aiohttp.ClientTimeout(total=timeout_s),
        ) as resp:
            status = resp.status
            text = (await resp.read()).decode("utf-8", errors="replace")
    except TimeoutError:
        return _failed(status, text, f"timeout: no answer within {timeout_s:g} s", start)
    except (aiohttp.ClientError, OSError) as exc:
        return _failed(status, text, f"transport: {type(exc).__name__}: {exc}", start)
    if status != 200:
        return _failed(status, text, f"HTTP {status}: {text[:300]}", start)
    try:
        value = json.loads(text)
    except ValueError:
        return _failed(status, text, f"not JSON: {text[:300]!r}", start)
    if not isinstance(value, dict) or not isinstance(value.get("self_evaluation"), dict):
        return _failed(status, text, "the response has no self_evaluation object", start)
    return SutReply(status, text[:MAX_KEPT_BODY], value["self_evaluation"], None, _ms(start))


def _failed(status: int | None, text: str, error: str, start: float) -> SutReply:
    return SutReply(status, text[:MAX_KEPT_BODY], None, error, _ms(start))


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)
