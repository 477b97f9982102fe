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

from harness.system.protocol import PROTOCOL_VERSION, SutInfo

MIN_GRACE_S, GRACE_SHARE = 1.0, 0.1
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


def answer_deadline(timeout_s: float) -> float:
    """How long the kit waits for `POST /verify`: the `timeout_s` the SUT was given for its model, plus a grace
    of a tenth (at least `MIN_GRACE_S`) for its own parsing and persistence; no longer."""
    return timeout_s + max(MIN_GRACE_S, GRACE_SHARE * timeout_s)


def info_problems(raw: Any) -> list[str]:
    """`GET /info` names the implementation (non-empty `name` and `version`) and the protocol the kit speaks."""
    if not isinstance(raw, dict):
        return ["GET /info: the answer is not a JSON object"]
    out = [
        f"GET /info: {k} is {raw.get(k)!r}, not a non-empty string"
        for k in ("name", "version")
        if not (isinstance(raw.get(k), str) and raw[k].strip())
    ]
    if raw.get("protocol") != PROTOCOL_VERSION:
        out.append(f"GET /info: protocol is {raw.get('protocol')!r}; the kit speaks {PROTOCOL_VERSION!r}")
    return out


async def fetch_info(session: aiohttp.ClientSession, base_url: str, timeout_s: float) -> tuple[SutInfo, list[str]]:
    """The SUT's identity and what is wrong with its answer; `SutUnreachable` with the reason when it cannot be had."""
    try:
        async with session.get(_url(base_url, "/info"), timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
            text = await resp.text()
            if resp.status != 200:
                raise SutUnreachable(f"GET {base_url}/info answered HTTP {resp.status}")
        raw = json.loads(text)
        return SutInfo.model_validate(raw), info_problems(raw)
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        raise SutUnreachable(f"GET {base_url}/info failed: {type(exc).__name__}: {exc}") from exc
    except (ValueError, ValidationError) as exc:
        raise SutUnreachable(f"GET {base_url}/info did not answer {{name, version}} as JSON: {exc}") from exc


async def post_verify(
    session: aiohttp.ClientSession, base_url: str, body: dict[str, Any], timeout_s: float
) -> SutReply:
    """One `POST /verify`, waited for `answer_deadline(timeout_s)`; every failure becomes `SutReply.error`."""
    start = time.perf_counter()
    wait_s = answer_deadline(timeout_s)
    payload = json.dumps(body).encode("utf-8")
    status: int | None = None
    text = ""
    try:
        async with session.post(
            _url(base_url, "/verify"),
            data=payload,
            headers={"Content-Type": "application/json"},
            timeout=aiohttp.ClientTimeout(total=wait_s),
        ) as resp:
            status = resp.status
            text = (await resp.read()).decode("utf-8", errors="replace")
    except TimeoutError:
        return _failed(
            status, text, f"timeout: no answer within {wait_s:g} s (timeout_s {timeout_s:g} and its grace)", start
        )
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
