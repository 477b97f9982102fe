"""A run's cases in compact form: what a run keeps of each case between loading it and running its units.

A validated `Case` is some 17 KiB of Python objects, and a run used to keep every one of them for its whole
length (each planned unit held its case), so its peak memory grew with the corpus. A
`CaseRef` keeps the case's id, kind and content hash, and the case as JSON (the bytes cases.jsonl embeds),
compressed: a tenth of the size; each unit validates its own `Case` from those bytes when it runs and lets it go
with its record. The bytes are made from the validated case when it is loaded and hashed, so a run uses that
content whatever happens to the case file afterwards.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from harness.corpus.schema import VALIDATED_BEFORE, Case, CaseKind


@dataclass(frozen=True, slots=True)
class CaseRef:
    id: str
    kind: CaseKind
    hash: str
    """The content hash of the case (`Case.content_hash`): resume, cache and replay keys, records, manifest."""
    packed: bytes
    """`content`, compressed (zlib, fastest level: a 5 KiB case in some 1.5 KiB, for 10 µs to read back)."""

    @classmethod
    def of(cls, case: Case) -> CaseRef:
        """`case` in compact form (hashing and dumping it: done once per case, when it is loaded)."""
        return cls.from_json(
            case.id, case.kind, case.content_hash(), case.model_dump_json(by_alias=True, exclude_none=True).encode()
        )

    @classmethod
    def from_json(cls, case_id: str, kind: CaseKind, content_hash: str, content: bytes) -> CaseRef:
        return cls(case_id, kind, content_hash, zlib.compress(content, 1))

    @property
    def content(self) -> bytes:
        """The case as JSON (`Case.model_dump_json(by_alias=True, exclude_none=True)`, UTF-8)."""
        return zlib.decompress(self.packed)

    def load(self) -> Case:
        """The case, validated again from its JSON: a new object each call, for the caller alone. The JSON was
        made from a validated case, so the checks only a new file needs are not made again."""
        return Case.model_validate_json(self.content, context=VALIDATED_BEFORE)
