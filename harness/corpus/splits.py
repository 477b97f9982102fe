"""Development and held-out splits of the hand-written quality cases, fixed by a hash of the case id.

A case's split never changes while its id does not, and a new case lands in one split without moving any
other. Baselines are tuned on `development` only; `held-out` shows whether a rule generalises. Imported
datasets (HaluEval QA part 1) are development data as a whole.
"""

from __future__ import annotations

import hashlib
from typing import Literal

Split = Literal["development", "held-out"]
HELD_OUT_PERCENT = 30


def split_of(case_id: str) -> Split:
    """`held-out` for about 30% of ids (by the first 8 hex digits of the id's SHA-256), else `development`."""
    bucket = int(hashlib.sha256(case_id.encode("utf-8")).hexdigest()[:8], 16) % 100
    return "held-out" if bucket < HELD_OUT_PERCENT else "development"
