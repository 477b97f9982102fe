"""Shards: a deterministic part of a run's work units, chosen by a hash of each unit's key.

A unit is one (case id, content hash, variant, epoch): a policy case once, a quality case (or a perturbed one,
which has its own content hash) per variant × epoch. Its shard depends on that key alone, never on its
position in the plan, so shards `1/N` ... `N/N` cover every unit exactly once, whatever order the cases were
loaded in, and a shard stays the same part when it is resumed. `harness.run.merge` puts shards back together.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from harness import UsageError

UnitKey = tuple[str, str, str, int]
_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class ShardError(UsageError):
    """A shard that cannot be: not I/N, or I outside 1..N (exit code 2)."""


class Shard(BaseModel):
    """Shard `index` of `count` (1-based)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    index: int = Field(ge=1)
    count: int = Field(ge=1)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, key: UnitKey) -> bool:
        return shard_of(key, self.count) == self.index


def parse_shard(text: str) -> Shard:
    """'I/N' with 1 <= I <= N."""
    match = _SHARD.match(str(text))
    if match is None:
        raise ShardError(f"shard {text!r}: expected I/N, e.g. 2/3 (the second of three shards)")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise ShardError(f"shard {text!r}: I must run from 1 to N, and N be at least 1")
    return Shard(index=index, count=count)


def shard_of(key: UnitKey, count: int) -> int:
    """The shard (1..count) a unit belongs to: sha256 of its key, so it is the same on every machine and run."""
    case_id, content_hash, variant, epoch = key
    digest = hashlib.sha256(f"{case_id}\0{content_hash}\0{variant}\0{epoch}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def plan_digest(keys: Iterable[UnitKey]) -> str:
    """One digest of a set of unit keys (order does not matter): what a merge checks its union against."""
    digest = hashlib.sha256()
    for case_id, content_hash, variant, epoch in sorted(set(keys)):
        digest.update(f"{case_id}\0{content_hash}\0{variant}\0{epoch}\n".encode())
    return digest.hexdigest()[:16]
