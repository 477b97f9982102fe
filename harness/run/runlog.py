"""A run log read back: the one reader of results.jsonl, and the typed read model every reader takes.

`RunLog` is what a finished (or stopped) run left, as typed objects: its `Manifest`, its cases by id, and the
last `ResultRecord` of each unit (case, hash, variant, epoch) in unit-key order, each carrying the outcome it
was judged with when it was made (`ResultRecord.outcome`; never judged again here). It comes from a run folder
(`RunLog.read`) or from what a caller holds in memory (`RunLog.of`: the run that just wrote the records), and
readers see the same thing either way, in the same order, so every figure made from it is the same.

Resuming, merging, early stopping, scoring, outcomes, the report and the validity study all read a run's results
through it. Read from a folder, the manifest is parsed once; when first needed, cases.jsonl is indexed by id
(each case validated once, when first asked for) and results.jsonl is scanned once for its unit keys (`folder.unit_offsets`: the line heads
read without parsing the records, the torn-tail and corrupt-line rules of `harness.run.folder`); a record is
parsed when a reader reaches it. Memory holds a key and an offset per unit, not the records: a long log's
records are some 20 KiB each as objects. A reader that walks the records twice parses them twice; one that
needs them again keeps what it needs of them.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Container, Iterable, Iterator, Mapping
from pathlib import Path
from typing import BinaryIO, TypeVar

from pydantic import BaseModel

from harness.corpus.schema import Case
from harness.run.caseref import CaseRef
from harness.run.folder import (
    RESULTS_FILE,
    CaseIndex,
    UnitKey,
    lines_at,
    project_results,
    read_manifest,
    record_at,
    unit_offsets,
)
from harness.run.log import Manifest, ResultRecord

M = TypeVar("M", bound=BaseModel)

CASES_KEPT = 8
"""Validated cases a `RunLog` keeps (the last asked for): a stream in key order asks for each case's records
together, a report asks for a few cases at random; neither needs every case of a long corpus as objects (a case
is some 17 KiB of objects, which every full garbage collection walks while scoring streams the log)."""


class CaseCache:
    """Cases by id, each validated at most once while kept: from cases.jsonl, or from the run's own objects."""

    def __init__(self, source: CaseIndex | Mapping[str, Case | CaseRef]) -> None:
        self._source = source
        self._kept: OrderedDict[str, Case | None] = OrderedDict()

    def __contains__(self, case_id: object) -> bool:
        return case_id in self._source

    def __len__(self) -> int:
        return len(self._source)

    def get(self, case_id: str) -> Case | None:
        if case_id in self._kept:
            self._kept.move_to_end(case_id)
            return self._kept[case_id]
        found = self._source.get(case_id)
        case = found.load() if isinstance(found, CaseRef) else found
        self._kept[case_id] = case
        if len(self._kept) > CASES_KEPT:
            self._kept.popitem(last=False)
        return case


class RunLog:
    """A run's manifest, cases and the last record of each unit in unit-key order (see the module's doc): the one
    reader of a run folder's results.jsonl.

    - `manifest`: the run's `Manifest`; `run_dir`: the folder it was read from (None when made in memory).
    - `keys()`: the unit keys, sorted; `len(log)`: how many.
    - `records()`: the last record of each unit, in key order, one at a time.
    - `record(key)`: one unit's record; `case(case_id)`: one case, validated (None when the run lacks it).
    - `finished_units()`: the units whose last record has a result (what `--resume` skips).
    - `lines(model)`: every line in the order written, read as a projection of the record, with its offset;
      `lines_at(offsets)`: those lines' bytes again (a reader of a few fields of every result, then of a few
      whole records).

    Read from a folder, nothing is scanned until it is needed: the unit index when a reader first asks for keys
    or records, the case index when it first asks for a case.
    """

    def __init__(
        self,
        manifest: Manifest,
        cases: CaseIndex | Mapping[str, Case | CaseRef] | None = None,
        *,
        run_dir: Path | None = None,
        offsets: Mapping[UnitKey, tuple[int, int]] | None = None,
        held: Mapping[UnitKey, ResultRecord] | None = None,
    ) -> None:
        self.manifest = manifest
        self.run_dir = run_dir
        self._cases = CaseCache(cases) if cases is not None else None
        self._held = held
        self._keys: list[UnitKey] | None = None
        if held is not None:
            self._keys = sorted(held)
        elif offsets is not None:
            self._index(offsets)

    def _index(self, offsets: Mapping[UnitKey, tuple[int, int]]) -> None:
        self._keys = sorted(offsets)
        # where each unit's line is, in key order, as two flat arrays (not a dict of tuples: the index lives as
        # long as the log, beside the frames a long log's scoring builds)
        spots = [offsets[key] for key in self._keys]
        self._offset = array("q", (offset for offset, _ in spots))
        self._number = array("q", (number for _, number in spots))

    def _unit_keys(self) -> list[UnitKey]:
        """The sorted unit keys, scanning results.jsonl for them once (`folder.unit_offsets`) when first needed."""
        if self._keys is None:
            self._index(unit_offsets(self.run_dir) if self.run_dir is not None else {})
        assert self._keys is not None
        return self._keys

    @classmethod
    def read(cls, run_dir: Path) -> RunLog:
        """The run folder's log: its manifest parsed; results.jsonl and cases.jsonl indexed when first needed.

        `RunFileError` (naming the file and line) for a manifest that is not one or a line that is not a record;
        the torn last line of a killed writer is no record and no error.
        """
        return cls(read_manifest(run_dir), run_dir=run_dir)

    @classmethod
    def of(cls, manifest: Manifest, records: Iterable[ResultRecord], cases: Mapping[str, Case | CaseRef]) -> RunLog:
        """The log of records already in memory (a run that just made them), the last per unit winning, as a
        folder's would be; `cases` by id, as the run holds them (nothing is validated again but a `CaseRef`,
        once, when its case is asked for)."""
        held: dict[UnitKey, ResultRecord] = {}
        for record in records:
            held[record.key] = record
        return cls(manifest, cases, held=held)

    def __len__(self) -> int:
        return len(self._unit_keys())

    def keys(self) -> list[UnitKey]:
        return list(self._unit_keys())

    def case(self, case_id: str) -> Case | None:
        if self._cases is None:
            self._cases = CaseCache(CaseIndex(self.run_dir) if self.run_dir is not None else {})
        return self._cases.get(case_id)

    def records(self, start: int = 0) -> Iterator[ResultRecord]:
        """Each unit's last record in key order (from the `start`-th unit)."""
        keys = self._unit_keys()
        if self._held is not None:
            yield from (self._held[key] for key in keys[start:])
            return
        if not keys:
            return
        assert self.run_dir is not None
        path = self.run_dir / RESULTS_FILE
        with path.open("rb") as fh:
            for i in range(start, len(keys)):
                yield self._parse_at(fh, path, i)

    def units(self, skip: Container[UnitKey] = ()) -> Iterator[tuple[UnitKey, ResultRecord | None]]:
        """Each unit's key and last record, in key order, as `records()`; a key in `skip` comes with None and its
        line is not read (a caller that already holds that record)."""
        keys = self._unit_keys()
        if self._held is not None:
            yield from ((key, None if key in skip else self._held[key]) for key in keys)
            return
        if not keys:
            return
        assert self.run_dir is not None
        path = self.run_dir / RESULTS_FILE
        with path.open("rb") as fh:
            for i, key in enumerate(keys):
                yield key, None if key in skip else self._parse_at(fh, path, i)

    def record(self, key: UnitKey) -> ResultRecord:
        """One unit's record (`KeyError` when the log has no such unit)."""
        keys = self._unit_keys()
        if self._held is not None:
            return self._held[key]
        i = bisect_left(keys, key)
        if i == len(keys) or keys[i] != key:
            raise KeyError(key)
        assert self.run_dir is not None
        path = self.run_dir / RESULTS_FILE
        with path.open("rb") as fh:
            return self._parse_at(fh, path, i)

    def finished_units(self) -> set[UnitKey]:
        """The units whose last record has a result: `--resume` skips them (an error is tried again)."""
        return {record.key for record in self.records() if record.error is None}

    def lines(self, model: type[M]) -> Iterator[tuple[int, M]]:
        """Every line of results.jsonl in the order written, as `model` (a projection of the record: the few
        fields a reader needs, parsed without the rest), with its byte offset; a retried unit's lines all come.
        The torn tail of a kill ends it; a bad line is a `RunFileError` naming it."""
        if self.run_dir is None:
            raise ValueError("a log made in memory has no lines")
        return project_results(self.run_dir, model)

    def lines_at(self, offsets: Iterable[int]) -> dict[int, bytes]:
        """The lines of results.jsonl that start at `offsets` (as `lines` gave them), by offset."""
        if self.run_dir is None:
            raise ValueError("a log made in memory has no lines")
        return lines_at(self.run_dir, offsets)

    def _parse_at(self, fh: BinaryIO, path: Path, i: int) -> ResultRecord:
        """The record of the `i`-th unit in key order, read from its line of `path` (open as `fh`)."""
        return record_at(fh, path, self._offset[i], self._number[i])
