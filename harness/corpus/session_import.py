"""`vbench import sessions`: read production sessions from JSONL or SQL, order them, write unlabelled cases.

Each good row is written at once, atomically (a later bad row or a crash never loses it); a bad row is
reported with its id (or line) and skipped. A file already present with the same content hash is left as it
is, and one with another hash is never overwritten (labels may already point at its claims): a re-import of
the same source adds nothing and rewrites nothing.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness.baselines.reference import ReferenceVerifier
from harness.corpus.durable import write_whole
from harness.corpus.loader import max_case_bytes
from harness.corpus.sessions import Imported, RowError, case_yaml, read_imported, to_imported
from harness.system.pipeline import conclude
from harness.system.store import public_store_url

Sample = Literal["random", "disagreement"]
ROW_COLUMNS = ("id", "session", "executor")
ID_NEAR_START = re.compile(rb'^\s*\{\s*"id"\s*:\s*"([a-z0-9._-]{1,185})"')
"""A too-large line's id, when the row starts with it: the report names the row, not only its line."""


class SourceError(Exception):
    """The source cannot be read at all (no file, a bad URL or query, missing columns): nothing is imported."""


@dataclass
class ImportReport:
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    bad: list[RowError] = field(default_factory=list)
    redactions: dict[str, int] = field(default_factory=dict)

    def lines(self) -> list[str]:
        out = [f"skipped {e}" for e in self.bad]
        out += [f"kept {cid}: its file holds other content (not overwritten)" for cid in self.conflicts]
        out.append(
            f"{len(self.written)} written, {len(self.unchanged)} unchanged, {len(self.conflicts)} kept as they were, "
            f"{len(self.bad)} bad row(s) skipped"
        )
        if self.redactions:
            kinds = ", ".join(f"{k}: {n}" for k, n in sorted(self.redactions.items()))
            out.append(f"redacted {kinds} (listed per case under meta.redactions)")
        else:
            out.append("redacted nothing (no API key, bearer token, password in a URL or email found)")
        return out


def jsonl_rows(path: Path, max_bytes: int) -> Iterator[tuple[str, Any, Any, Any] | RowError]:
    """(row id, id, session, executor) per line, or the error of a line that is not a JSON object."""
    import json

    with path.open("rb") as fh:
        for number, line in enumerate(_bounded_lines(fh, max_bytes), start=1):
            where = f"{path.name}:{number}"
            if isinstance(line, tuple):
                found = ID_NEAR_START.search(line[0])
                name = found.group(1).decode("utf-8", "replace") if found else where
                yield RowError(row=name, reason="too large", message=f"{where} is over {max_bytes:,} bytes")
                continue
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                yield RowError(row=where, reason="not JSON", message=str(exc))
                continue
            if not isinstance(row, dict):
                yield RowError(row=where, reason="wrong shape", message=f"a row is an object, not {type(row).__name__}")
                continue
            yield where, row.get("id"), row.get("session"), row.get("executor")


def _bounded_lines(fh: Any, max_bytes: int) -> Iterator[bytes | tuple[bytes]]:
    """Each line, or (its first KiB,) for one over `max_bytes` (read through, never held whole)."""
    while True:
        line = fh.readline(max_bytes + 1)
        if not line:
            return
        if len(line) > max_bytes and not line.endswith(b"\n"):
            while (rest := fh.readline(1 << 20)) and not rest.endswith(b"\n"):
                pass
            yield (line[:1024],)
            continue
        yield line


def sql_rows(url: str, query: str) -> Iterator[tuple[str, Any, Any, Any]]:
    """(row id, id, session, executor) per row of the query; SourceError when it cannot run or lacks a column."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import SQLAlchemyError

    from harness.system.store import store_url

    public = public_store_url(url)
    try:
        engine = create_engine(store_url(url))
    except Exception as exc:  # an unknown dialect or a malformed URL: say which, never the password
        raise SourceError(f"cannot use {public}: {type(exc).__name__}") from None
    try:
        try:
            conn = engine.connect()
        except SQLAlchemyError as exc:
            reason = str(getattr(exc, "orig", None) or exc).splitlines()[0]
            raise SourceError(f"cannot connect to {public}: {reason}") from None
        with conn:
            try:
                result = conn.execution_options(stream_results=True).execute(text(query))
            except SQLAlchemyError as exc:
                raise SourceError(
                    f"the query failed on {public}: {str(getattr(exc, 'orig', None) or exc).splitlines()[0]}"
                ) from None
            missing = [c for c in ROW_COLUMNS if c not in result.keys()]
            if missing:
                raise SourceError(f"the query's rows lack column(s) {missing}; they need {list(ROW_COLUMNS)}")
            for row in result.mappings():
                yield str(row["id"]), row["id"], row["session"], row["executor"]
    finally:
        engine.dispose()


def rows_of(source: str, query: str | None, max_bytes: int) -> Iterator[tuple[str, Any, Any, Any] | RowError]:
    """The rows of a JSONL file or of a SQLAlchemy URL with `--query`."""
    if "://" in source:
        if not query:
            raise SourceError("a database source needs --query (its rows: id, session, executor)")
        return sql_rows(source, query)
    path = Path(source)
    if query:
        raise SourceError("--query is for a database URL, not a file")
    if not path.is_file():
        raise SourceError(f"no such file: {source}")
    return jsonl_rows(path, max_bytes)


def disagreement(case: Imported) -> float:
    """How far the production verifier and the reference verifier disagree on the session: the share of the
    executor's claims they class differently, plus 1 when their effective verdicts differ."""
    prepared = case.prepared()
    call = asyncio.run(ReferenceVerifier().verify(prepared.inputs))
    reference = conclude(prepared, call)
    production = case.production
    ours = {c.claim_id: c.verification for c in reference.claim_checks}
    theirs = {c.claim_id: c.verification for c in production.claim_checks}
    ids = [c.claim_id for c in prepared.claims] or sorted(ours)
    differ = sum(1 for cid in ids if ours.get(cid) != theirs.get(cid))
    verdict = 1.0 if production.verdict is not None and production.verdict != reference.verdict else 0.0
    return differ / max(1, len(ids)) + verdict


def ordered(cases: list[Imported], sample: Sample, seed: int) -> list[Imported]:
    if sample == "random":
        out = list(cases)
        random.Random(seed).shuffle(out)
        return out
    scored = [(disagreement(c), c) for c in cases]
    return [c for _, c in sorted(scored, key=lambda sc: (-sc[0], sc[1].id))]


def write_case(
    folder: Path, case: Imported, max_bytes: int
) -> Literal["written", "unchanged", "conflict", "too large"]:
    """Write `DIR/<id>.yaml` atomically and durably, unless a file for the id is already there (or the case
    file would be over the size limit every reader applies)."""
    path = folder / f"{case.id}.yaml"
    if path.exists():
        try:
            same = read_imported(path).content_hash == case.content_hash
        except ValueError:
            same = False
        return "unchanged" if same else "conflict"
    text = case_yaml(case.case_data())
    if len(text.encode()) > max_bytes:
        return "too large"
    write_whole(path, text)
    return "written"


def import_sessions(
    source: str,
    out: Path,
    query: str | None = None,
    limit: int | None = None,
    sample: Sample | None = None,
    seed: int = 0,
) -> ImportReport:
    """Import the sessions of `source` into `out` (see the module's docstring); SourceError stops before any row."""
    max_bytes = max_case_bytes()
    rows = rows_of(source, query, max_bytes)
    shown = public_store_url(source) if "://" in source else Path(source).name
    report = ImportReport()
    out.mkdir(parents=True, exist_ok=True)
    kept: list[Imported] = []
    for row in rows:
        if isinstance(row, RowError):
            report.bad.append(row)
            continue
        where, row_id, session, executor = row
        case = to_imported(row_id, session, executor, shown, max_bytes)
        if isinstance(case, RowError):
            report.bad.append(case.model_copy(update={"row": case.row if row_id is not None else where}))
            continue
        if sample is None:
            _write(out, case, report, max_bytes)
            if limit is not None and len(report.written) + len(report.unchanged) >= limit:
                break
        else:
            kept.append(case)
    if sample is not None:
        for case in ordered(kept, sample, seed)[:limit]:
            _write(out, case, report, max_bytes)
    return report


def _write(out: Path, case: Imported, report: ImportReport, max_bytes: int) -> None:
    outcome = write_case(out, case, max_bytes)
    if outcome == "too large":
        message = f"as a case file (with the production evaluation) it is over {max_bytes:,} bytes"
        report.bad.append(RowError(row=case.id, reason="too large", message=message))
        return
    {"written": report.written, "unchanged": report.unchanged, "conflict": report.conflicts}[outcome].append(case.id)
    if outcome == "written":
        for r in case.meta["redactions"]:
            report.redactions[r["kind"]] = report.redactions.get(r["kind"], 0) + r["count"]
