"""Backoff timing and Retry-After parsing."""

from __future__ import annotations

import email.utils
import random

import pytest

from harness.llm.retry import backoff_delay, parse_retry_after


@pytest.mark.parametrize(("retry", "full"), [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (10, 8.0)])
def test_backoff_doubles_is_capped_and_jittered_to_half_or_more(retry: int, full: float) -> None:
    rng = random.Random(1)
    delays = [backoff_delay(retry, base=0.5, cap=8.0, rng=rng) for _ in range(200)]
    assert all(full * 0.5 <= d <= full for d in delays)
    assert len({round(d, 6) for d in delays}) > 100  # jittered, not constant


def test_retry_after_in_seconds() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "0.25"}) == 0.25


def test_retry_after_ms_wins_over_seconds() -> None:
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5


def test_retry_after_as_http_date() -> None:
    now = 1_700_000_000.0
    header = email.utils.formatdate(now + 7, usegmt=True)
    assert parse_retry_after({"Retry-After": header}, now=now) == pytest.approx(7.0, abs=1.0)


def test_retry_after_in_the_past_is_zero_and_garbage_is_none() -> None:
    assert parse_retry_after({"Retry-After": email.utils.formatdate(1_000, usegmt=True)}) == 0.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after({"Retry-After": "-5"}) == 0.0
