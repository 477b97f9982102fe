"""Every read and write of a run folder: the one place that knows its files and their formats.

A run folder holds `manifest.json`, `cases.jsonl` (each case once) and `results.jsonl` (one record per unit,
appended as it finishes). This module knows the line format and its rules (the torn tail of a killed writer,
a corrupt line named by number, a v1 line upgraded); the one reader of a run's results is `harness.run.runlog.
RunLog`, built on `unit_offsets`, `record_at` and `project_results` here. `CaseIndex` reads one case at a time
by id. A results_v1
line is upgraded on read (`log.upgrade_v1`), so run folders and baselines written before v2 still read.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, TextIO, TypeVar, cast

from pydantic import BaseModel, ValidationError
from pydantic_core import from_json

from harness import UsageError
from harness.corpus import appendlog
from harness.corpus.schema import Case
from harness.run.caseref import CaseRef
from harness.run.lock import orphaned  # imported with the folder's writers: it notes every fork from here on
from harness.run.log import Manifest, ResultRecord, upgrade_v1

# Every file of a run folder is named here and read or written through this module: the run log as typed
# records, the derived files (summary, outcomes, junit, certificate, report) as text their layers make.
RESULTS_FILE, MANIFEST_FILE, CASES_FILE = "results.jsonl", "manifest.json", "cases.jsonl"
DROPPED_FILE = "results.dropped.jsonl"
"""Where `drop_corrupt_results` keeps the lines it took out of results.jsonl (for a person to look at)."""
SUMMARY_FILE, OUTCOMES_FILE, JUNIT_FILE = "summary.json", "outcomes.jsonl", "junit.xml"
CERTIFICATE_JSON, CERTIFICATE_HTML = "certificate.json", "certificate.html"
REPORT_FILE, MARKDOWN_FILE, SCREENSHOT_FILE = "report.html", "summary.md", "report-overview.png"
CASE_VIEWS_FILE = "case_views.jsonl"
"""The drill-down's case views the report used (`report.load.write_case_views`), for the next `vbench report`."""
SUT_LOG, LLAMA_LOG = "sut-log.jsonl", "llama-server.log"
"""Streamed logs (`open_log`): a conformance kit's requests and answers of the service it certified; the local
llama.cpp server's output, which the local-model closing note reads."""
LOCK_FILE = ".vbench.lock"
"""The one-writer lock (`harness.run.lock`): it holds the pid of the process writing the folder."""
UnitKey = tuple[str, str, str, int]
_TEMP = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.tmp$")
_CASE_ID = re.compile(rb'^\{"id": ("(?:[^"\\]|\\.)*")')


class RunFileError(UsageError):
    """A damaged run file: the message names the file and, for a JSON-lines file, the line (exit code 2)."""

    def __init__(self, path: Path, problem: str, line: int | None = None) -> None:
        self.path = path
        self.line = line
        super().__init__(f"{path}:{line}: {problem}" if line else f"{path}: {problem}")


# --- writing -------------------------------------------------------------------------


class ResultWriter:
    """Appends records to results.jsonl, one flushed line each."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / RESULTS_FILE
        appendlog.end_torn_tail(self.path, parse_record)  # appends start on a fresh line
        self._fh = self.path.open("a", encoding="utf-8")

    def write(self, record: ResultRecord) -> None:
        self.write_line(record.model_dump_json())

    def write_line(self, line: str) -> None:
        """One record already serialised by `ResultRecord.model_dump_json` (the runner reuses the line)."""
        self._fh.write(line + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_manifest(run_dir: Path, manifest: Manifest) -> None:
    write_text(run_dir, MANIFEST_FILE, manifest.model_dump_json(indent=2) + "\n")


def write_text(run_dir: Path, name: str, text: str) -> Path:
    """Write one file of a run folder whole: to a temp file, then renamed, so a reader (or a crash) never meets
    half a summary or certificate. Returns its path."""
    return write_lines(run_dir, name, (text,))


class OrphanedWriter(RuntimeError):
    """A forked child was about to write a run file after the run that forked it died."""


def write_lines(run_dir: Path, name: str, lines: Iterable[str]) -> Path:
    """`write_text` for text made piece by piece (outcomes, the report page): streamed to the temp file.

    A forked child whose parent died writes nothing (`OrphanedWriter`): the run it would finish is gone."""
    if orphaned():
        raise OrphanedWriter(f"not writing {run_dir / name}: the run that started this process has ended")
    path = run_dir / name
    tmp = path.with_name(f".{name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            fh.writelines(lines)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def remove_stale_temps(run_dir: Path) -> list[Path]:
    """Remove the temporary files writers that died left (`.NAME.PID.tmp` of a pid no longer alive, and
    `--drop-corrupt`'s results.jsonl.tmp); the caller holds the folder's lock. Returns what was removed."""
    removed = []
    for path in run_dir.glob(".*.tmp"):
        match = _TEMP.match(path.name)
        if match is not None and not _alive(int(match["pid"])):
            path.unlink(missing_ok=True)
            removed.append(path)
    dropping = run_dir / (RESULTS_FILE + ".tmp")
    if dropping.exists():
        dropping.unlink(missing_ok=True)
        removed.append(dropping)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def open_log(run_dir: Path, name: str) -> TextIO:
    """A streamed log of the run folder, written line by line as things happen (not atomically: a log)."""
    return (run_dir / name).open("w", encoding="utf-8")


def read_text(run_dir: Path, name: str, errors: str = "strict") -> str:
    """One derived file of a run folder (FileNotFoundError when the run has none)."""
    return (run_dir / name).read_text(encoding="utf-8", errors=errors)


def write_cases(run_dir: Path, cases: Iterable[CaseRef]) -> None:
    """cases.jsonl: each case once, as the run holds it."""
    with (run_dir / CASES_FILE).open("wb") as fh:
        for case in cases:
            # {"id": ..., "hash": ..., "case": ...} with the id first (readers skip lines by it); the case is the
            # ref's JSON (pydantic's, made in one step: the same JSON as model_dump + json.dumps at a third of the cost)
            head = f'{{"id": {json.dumps(case.id, ensure_ascii=False)}, "hash": {json.dumps(case.hash)}, "case": '
            fh.write(head.encode() + case.content + b"}\n")


# --- results -------------------------------------------------------------------------


def _is_v1(line: bytes) -> bool:
    """Whether a results.jsonl line is a results_v1 record (the writer put `schema_version` first)."""
    return b'"schema_version":"results_v1"' in line[:64] or b'"schema_version": "results_v1"' in line[:64]


def parse_record(line: bytes) -> ResultRecord:
    """One results.jsonl line as a v2 record (a v1 line upgraded); `ValidationError` when it is not one."""
    if _is_v1(line):
        try:
            data = json.loads(line)
        except ValueError:
            data = None
        if isinstance(data, dict):
            return ResultRecord.model_validate(upgrade_v1(data))
    return ResultRecord.model_validate_json(line)


def record_data(line: bytes) -> dict[str, Any]:
    """One results.jsonl line as a v2 record's JSON object, for a reader of a few of its keys (the report's
    drill-down) without the record model's cost: the line's own object (pydantic-core's parser), a v1 line
    upgraded. `ValueError` when the line is no JSON object."""
    if _is_v1(line):
        return parse_record(line).model_dump(mode="json")
    data = from_json(line)
    if not isinstance(data, dict):
        raise ValueError("a results.jsonl line is a JSON object")
    return data


T = TypeVar("T")


def _read_lines(
    path: Path, parse: Callable[[bytes], T]
) -> Iterator[tuple[int, int, bytes, T | None, ValidationError | None]]:
    """(line number, byte offset, line, `parse(line)` or None, its error) for every non-blank line of a run log;
    the torn tail of a killed writer ends it (`appendlog.read_lines`, the rule's one home)."""
    return appendlog.read_lines(path, parse)


def _result_lines(path: Path) -> Iterator[tuple[int, bytes, ResultRecord | None, str | None]]:
    """(line number, raw line, its record or None, why it is corrupt); the torn tail of a kill ends it."""
    if not path.exists():
        return
    for number, _, line, record, exc in _read_lines(path, parse_record):
        yield number, line, record, None if exc is None else str(exc.errors()[0]["msg"])


M = TypeVar("M", bound=BaseModel)


def project_results(run_dir: Path, model: type[M]) -> Iterator[tuple[int, M]]:
    """Each line of results.jsonl read as `model`, a projection of the record (the few fields a reader needs,
    parsed without the rest), with the line's byte offset (`lines_at` reads it again); the torn tail of a kill
    ends it, a bad line is named."""
    path = run_dir / RESULTS_FILE
    for number, offset, _, row, exc in _read_lines(path, model.model_validate_json):
        if exc is not None:
            raise RunFileError(path, first_problem(exc), number) from None
        yield offset, cast(M, row)


def lines_at(run_dir: Path, offsets: Iterable[int]) -> dict[int, bytes]:
    """The lines of results.jsonl that start at `offsets` (as `project_results` gave them), by offset."""
    out: dict[int, bytes] = {}
    with (run_dir / RESULTS_FILE).open("rb") as fh:
        for offset in offsets:
            fh.seek(offset)
            out[offset] = fh.readline()
    return out


def iter_results(path: Path) -> Iterator[ResultRecord]:
    """The records of a results.jsonl in order; `RunFileError` at the first corrupt line."""
    for number, _, record, error in _result_lines(path):
        if record is None:
            raise RunFileError(path, f"not a results record: {error}", number)
        yield record


def read_results(run_dir: Path) -> list[ResultRecord]:
    """Every complete record, the last one per (case, hash, variant, epoch) winning.

    A torn last line (a killed writer) is skipped; a case that a resumed run redid (after a transport
    error) is counted once, with its newer result. Any other line that is not a record raises
    `RunFileError` naming it. Holds every record: a reader of a long log streams it with `RunLog` instead.
    """
    latest: dict[UnitKey, ResultRecord] = {}
    for record in iter_results(run_dir / RESULTS_FILE):
        latest.pop(record.key, None)
        latest[record.key] = record
    return list(latest.values())


_KEY_HEAD = re.compile(
    rb'^\{"schema_version":"results_v[12]","case_id":("(?:[^"\\]|\\.)*"),"case_hash":("(?:[^"\\]|\\.)*"),'
    rb'"kind":"(?:policy|quality)","variant":("(?:[^"\\]|\\.)*"),"epoch":(-?\d+),'
)
"""The head every record line the harness writes starts with (its fields in model order): the unit key read
without parsing the rest of the line. A line written otherwise is parsed whole."""


def _json_string(quoted: bytes) -> str:
    """A JSON string literal the key head matched (quotes included): its UTF-8 text as is when it holds no escape
    (what json.loads gives, without its cost on every line), else json.loads."""
    return quoted[1:-1].decode() if b"\\" not in quoted else json.loads(quoted)


class _Key(BaseModel):
    case_id: str
    case_hash: str
    variant: str
    epoch: int


def _unit_key(line: bytes) -> UnitKey:
    """A record line's unit key: from the head the harness writes (no parse of the rest), else the line parsed."""
    head = _KEY_HEAD.match(line)
    if head is not None and line.endswith(b"\n"):
        cid, digest, variant = (_json_string(g) for g in head.groups()[:3])
        epoch = int(head.group(4))
    else:
        k = _Key.model_validate_json(line)
        cid, digest, variant, epoch = k.case_id, k.case_hash, k.variant, k.epoch
    # interned: a case's id and hash and a variant's name recur in every unit's key (one string each, not one per
    # unit, in the index a long log keeps while it is read)
    return (sys.intern(cid), sys.intern(digest), sys.intern(variant), epoch)


def unit_offsets(run_dir: Path) -> dict[UnitKey, tuple[int, int]]:
    """Unit key -> (byte offset, line number) of its last line in results.jsonl: one cheap pass, no record kept."""
    path = run_dir / RESULTS_FILE
    out: dict[UnitKey, tuple[int, int]] = {}
    if not path.exists():
        return out
    for number, offset, _, key, exc in _read_lines(path, _unit_key):
        if exc is not None:
            raise RunFileError(path, f"not a results record: {exc.errors()[0]['msg']}", number) from None
        out.pop(cast(UnitKey, key), None)
        out[cast(UnitKey, key)] = (offset, number)
    return out


def record_at(fh: BinaryIO, path: Path, offset: int, number: int) -> ResultRecord:
    """The record on the line at `offset` of an open results.jsonl (`path`, line `number`, for the error)."""
    fh.seek(offset)
    line = fh.readline()
    try:
        return parse_record(line)
    except ValidationError as exc:
        raise RunFileError(path, f"not a results record: {exc.errors()[0]['msg']}", number) from None


def drop_corrupt_results(run_dir: Path) -> list[int]:
    """Rewrite results.jsonl without its corrupt lines, so `--resume` redoes their cases; return their numbers.

    The dropped lines are appended to results.dropped.jsonl as `{"line": N, "text": ...}`; the file is replaced
    atomically, so a kill during the rewrite leaves the old or the new file, never a mix.
    """
    path = run_dir / RESULTS_FILE
    kept: list[bytes] = []
    dropped: list[tuple[int, str]] = []
    for number, line, record, _ in _result_lines(path):
        if record is None:
            dropped.append((number, line.rstrip(b"\n").decode("utf-8", errors="replace")))
        else:
            kept.append(line if line.endswith(b"\n") else line + b"\n")
    if not dropped:
        return []
    with (run_dir / DROPPED_FILE).open("a", encoding="utf-8") as fh:
        for number, text in dropped:
            fh.write(json.dumps({"line": number, "text": text}, ensure_ascii=False) + "\n")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(b"".join(kept))
    tmp.replace(path)
    return [number for number, _ in dropped]


# --- manifest and cases --------------------------------------------------------------


def read_manifest(run_dir: Path) -> Manifest:
    path = run_dir / MANIFEST_FILE
    try:
        return Manifest.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        raise RunFileError(path, first_problem(exc)) from None


def first_problem(exc: ValidationError) -> str:
    """The first thing a run file's model refused, as `key.path: message` (`(top level)` for the whole file)."""
    err = exc.errors()[0]
    return f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}"


def _case_line(path: Path, number: int, line: bytes) -> tuple[str, dict[str, Any]]:
    try:
        row = json.loads(line)
        return str(row["id"]), row["case"]
    except (ValueError, KeyError, TypeError) as exc:
        raise RunFileError(path, f"not a case line: {exc}", number) from None


def iter_cases(run_dir: Path, wanted: set[str] | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """(id, case content) from cases.jsonl one at a time (only the `wanted` ids when given); a corrupt line is named."""
    path = run_dir / CASES_FILE
    if not path.exists() or wanted == set():
        return
    with path.open("rb") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            if wanted is not None:
                m = _CASE_ID.match(line)
                if m and json.loads(m.group(1)) not in wanted:
                    continue  # the id leads each line: skip the rest without parsing it
            cid, case = _case_line(path, number, line)
            if wanted is None or cid in wanted:
                yield cid, case


def read_cases(run_dir: Path, wanted: set[str] | None = None) -> dict[str, dict[str, Any]]:
    """Case content by id (only the `wanted` ids when given), as the run saw it; a corrupt line is named."""
    return dict(iter_cases(run_dir, wanted))


class CaseIndex:
    """The cases of a run folder by id, read one at a time from cases.jsonl (offsets kept, content not).

    `get` keeps the last case read, so the records of one case (adjacent in key order) parse it once.
    """

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / CASES_FILE
        self._offsets: dict[str, tuple[int, int]] = {}
        self._last: tuple[str, Case | None] | None = None
        if not self.path.exists():
            return
        with self.path.open("rb") as fh:
            offset = 0
            for number, line in enumerate(fh, start=1):
                m = _CASE_ID.match(line)
                if m:
                    self._offsets[json.loads(m.group(1))] = (offset, number)
                elif line.strip():
                    self._offsets[_case_line(self.path, number, line)[0]] = (offset, number)
                offset += len(line)

    def __contains__(self, case_id: object) -> bool:
        return case_id in self._offsets

    def __len__(self) -> int:
        return len(self._offsets)

    def get(self, case_id: str) -> Case | None:
        """The case, validated; None when the run folder does not hold it."""
        if self._last is not None and self._last[0] == case_id:
            return self._last[1]
        found = self._offsets.get(case_id)
        case = None
        if found is not None:
            offset, number = found
            with self.path.open("rb") as fh:
                fh.seek(offset)
                _, data = _case_line(self.path, number, fh.readline())
            case = Case.model_validate(data)
        self._last = (case_id, case)
        return case


def folder_fingerprint(folder: Path) -> str | None:
    """sha256 of the files a run folder is paired by (outcomes.jsonl, else results.jsonl): a baseline's identity."""
    for name in ("outcomes.jsonl", RESULTS_FILE):
        path = folder / name
        if path.is_file():
            digest = hashlib.sha256()
            with path.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
            return digest.hexdigest()
    return None
