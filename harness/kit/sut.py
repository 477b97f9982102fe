"""Talking to a system under test over the protocol: `GET /info` and `POST /verify`, nothing else.

A SUT that times out, answers a non-200 status, or answers something that is not a JSON object with a
`self_evaluation` object gives a `SutReply` with `error` set: the kit records it for that case and goes on.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

import aiohttp

from harness.system import strictjson
from harness.system.protocol import PROTOCOL_VERSION, SutInfo
from harness.system.strictjson import StrictJSONError

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
        return [f"GET /info: the answer is {json_type(raw)}, not a JSON object"]
    out = [
        f"GET /info: {json.dumps(k)} is {_shown(raw.get(k, _ABSENT))}, not a non-empty string"
        + (f" (write it as a JSON string: {json.dumps(str(raw[k]))})" if isinstance(raw.get(k), int | float) else "")
        for k in ("name", "version")
        if not (isinstance(raw.get(k), str) and raw[k].strip())
    ]
    if raw.get("protocol") != PROTOCOL_VERSION:
        out.append(
            f'GET /info: "protocol" is {_shown(raw.get("protocol", _ABSENT))}; the kit speaks {json.dumps(PROTOCOL_VERSION)}'
        )
    return out


def _shown(value: Any) -> str:
    """A value as JSON (`null`, `2`, `"x"`), or `absent`."""
    return "absent" if value is _ABSENT else json.dumps(value)


_ABSENT: Any = object()


def info_of(raw: Any) -> SutInfo:
    """The identity to write into the certificate, whatever `/info` answered (its problems are listed apart)."""
    raw = raw if isinstance(raw, dict) else {}
    fields = {k: raw[k] if isinstance(raw.get(k), str) else json.dumps(raw.get(k)) for k in ("name", "version")}
    protocol = raw.get("protocol")
    return SutInfo.model_validate(
        {**raw, **fields, "protocol": protocol if isinstance(protocol, str) else json.dumps(protocol)}
    )


async def fetch_info(session: aiohttp.ClientSession, base_url: str, timeout_s: float) -> tuple[SutInfo, list[str]]:
    """The SUT's identity and what is wrong with its answer (a protocol problem, never a crash); `SutUnreachable`
    with the reason when no answer can be had."""
    try:
        async with session.get(_url(base_url, "/info"), timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
            text = await resp.text()
            if resp.status != 200:
                raise SutUnreachable(f"GET {base_url}/info answered HTTP {resp.status}")
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        raise SutUnreachable(f"GET {base_url}/info failed: {type(exc).__name__}: {exc}") from exc
    try:
        raw = strictjson.loads(text)
    except ValueError as exc:
        return info_of(None), [f"GET /info: the answer is not JSON ({exc}): {json.dumps(text[:200])}"]
    return info_of(raw), info_problems(raw)


async def post_verify(
    session: aiohttp.ClientSession, base_url: str, body: dict[str, Any], timeout_s: float
) -> SutReply:
    """One `POST /verify`, waited for `answer_deadline(timeout_s)` exactly; every failure becomes `SutReply.error`.

    The deadline is held to the fraction of a second on the monotonic clock: the HTTP client's own timeout
    rounds a deadline over a few seconds up to a whole second, so the kit cancels the exchange itself at the
    deadline and refuses an answer whose last byte came later."""
    start = time.perf_counter()
    wait_s = answer_deadline(timeout_s)
    payload = json.dumps(body).encode("utf-8")
    status: int | None = None
    text = ""
    late = f"timeout: no answer within {wait_s:g} s (timeout_s {timeout_s:g} and its grace)"

    async def exchange() -> tuple[int, str]:
        async with session.post(
            _url(base_url, "/verify"),
            data=payload,
            headers={"Content-Type": "application/json"},
            timeout=aiohttp.ClientTimeout(total=None),
        ) as resp:
            return resp.status, (await resp.read()).decode("utf-8", errors="replace")

    try:
        async with asyncio.timeout(wait_s):
            status, text = await exchange()
    except TimeoutError:
        return _failed(status, text, late, start)
    except (aiohttp.ClientError, OSError) as exc:
        return _failed(status, text, f"transport: {type(exc).__name__}: {exc}", start)
    if time.perf_counter() - start > wait_s:
        return _failed(status, text, late, start)
    if status != 200:
        return _failed(status, text, f"HTTP {status}: {text[:300]}", start)
    return read_answer(status, text, start)


def _failed(status: int | None, text: str, error: str, start: float) -> SutReply:
    return SutReply(status, text[:MAX_KEPT_BODY], None, error, _ms(start))


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}


def json_type(value: Any) -> str:
    """The JSON name of a decoded value's type (`null`, `string`, `object`, ...): what a reader in any language sees."""
    return "null" if value is None else JSON_TYPES.get(type(value), type(value).__name__)


def read_answer(status: int, text: str, start: float) -> SutReply:
    """A 200 answer read as strict JSON (no NaN, no repeated key) with a `self_evaluation` object; each failure
    said in JSON terms with the fix where it is plain."""
    try:
        value = strictjson.loads_by_value(text)  # numbers by value: `9007199254740993e0` is that integer
    except StrictJSONError as exc:
        return _failed(
            status,
            text,
            f"not one JSON reading: {exc} in the answer (JSON readers disagree on a repeated key: Jackson keeps "
            "the last, Gson refuses it; write each key once and numbers as JSON numbers)",
            start,
        )
    except ValueError:
        return _failed(status, text, f"not JSON: {json.dumps(text[:300])}", start)
    if not isinstance(value, dict) or "self_evaluation" not in value:
        return _failed(
            status, text, 'the response has no "self_evaluation" key: answer {"self_evaluation": {...}}', start
        )
    found = value["self_evaluation"]
    if isinstance(found, str):
        return _failed(
            status,
            text,
            '"self_evaluation" is a JSON string, not an object: write the object itself, not its serialised text',
            start,
        )
    if not isinstance(found, dict):
        return _failed(status, text, f'"self_evaluation" is {json_type(found)}, not an object', start)
    return SutReply(status, text[:MAX_KEPT_BODY], found, None, _ms(start))
