"""Retry timing: exponential backoff with jitter, and the server's `Retry-After`."""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping


def backoff_delay(retry: int, base: float, cap: float, rng: random.Random | None = None) -> float:
    """Seconds to wait before retry number `retry` (1-based): base·2^(retry-1), capped, jittered to 50–100%."""
    raw = min(cap, base * (2 ** max(0, retry - 1)))
    jitter = (rng or random).uniform(0.5, 1.0)
    return raw * jitter


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds the server asks us to wait: `retry-after-ms`, or `retry-after` as seconds or an HTTP date."""
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None or not value.strip():
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
