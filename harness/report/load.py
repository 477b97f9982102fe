"""Reading finished run folders for the report: one streaming pass over the log, bounded memory.

Every figure the scorer computes comes from summary.json. Of each result only
the few fields in `RecordSummary` are parsed (for the sign-off and the per-epoch
table), a small tuple each, so memory stays small however long the log is; a whole
record is parsed only for the few the page embeds for drill-down (see
`select`), and case content is read only for those. When several runs are combined, a variant
name that occurs in more than one run is prefixed with its run id.
"""

from __future__ import annotations

import functools
import itertools
import zlib
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError
from pydantic_core import from_json

from harness import UsageError
from harness.corpus.schema import VALIDATED_BEFORE, Case
from harness.report.casedata import CaseShown, case_payload, html_json, html_safe
from harness.report.select import DEFAULT_LIMIT, Selector, category
from harness.report.signoff import ResultRow, result_row
from harness.run.fingerprint import fingerprint_of
from harness.run.folder import (
    CASE_VIEWS_FILE,
    MANIFEST_FILE,
    RESULTS_FILE,
    RunFileError,
    folder_fingerprint,
    iter_cases,
    read_manifest,
    record_data,
    write_lines,
)
from harness.run.gates import GateSettings
from harness.run.log import POLICY_VARIANT, Manifest, RecordSummary, with_trace
from harness.run.runlog import RunLog
from harness.score.headline import is_headline
from harness.score.summary_model import ConformanceFailure, Summary, read_summary_or_none

FailureKey = tuple[str, str, int]


class ReportError(UsageError):
    """A run folder that cannot be reported on; the message names the file."""


@dataclass
class LoadedRun:
    run_dir: Path
    label: str
    manifest: Manifest
    summary: Summary
    """The run's summary, its variant names mapped by `rename`."""
    rename: dict[str, str]
    results: list[ResultRow] = field(default_factory=list)
    """Every headline result, once (the last of a retried unit)."""
    picked: list[tuple[int, str, bool, bytes]] = field(default_factory=list)
    """The results `stream_results` picked for drill-down: (category, case id, whether its trace was elided, the
    results.jsonl line)."""
    cases: dict[str, CaseShown] = field(default_factory=dict)
    """The picked results' cases as the drill-down shows them, by id (a record's elided trace is put back from
    their trace summaries)."""
    selection: dict[str, Any] = field(default_factory=dict)

    @property
    def policy_variant(self) -> str:
        return self.rename.get(POLICY_VARIANT, POLICY_VARIANT)

    def failures(self) -> dict[FailureKey, ConformanceFailure]:
        """Conformance failures (policy mismatches, invariant violations, deterministic mismatches) by result key."""
        return self.summary.failures_by_unit()


def read_manifest_checked(run_dir: Path) -> Manifest:
    path = run_dir / MANIFEST_FILE
    if not run_dir.is_dir():
        raise ReportError(f"{run_dir}: no such run folder")
    if not path.exists():
        raise ReportError(f"{path}: missing; is {run_dir} a run folder written by `vbench run`?")
    try:
        return read_manifest(run_dir)
    except RunFileError as exc:
        raise ReportError(str(exc)) from exc


def unique_labels(manifests: Sequence[Manifest]) -> list[str]:
    """Run ids, made unique with a numeric suffix when two runs share one."""
    seen: Counter[str] = Counter()
    labels = []
    for m in manifests:
        seen[m.run_id] += 1
        labels.append(m.run_id if seen[m.run_id] == 1 else f"{m.run_id}-{seen[m.run_id]}")
    return labels


def variant_renames(manifests: Sequence[Manifest], labels: Sequence[str]) -> list[dict[str, str]]:
    """Per run: variant name -> name in the combined report (prefixed with the run label when it clashes)."""
    names = [{v.name for v in m.variants} | {POLICY_VARIANT} for m in manifests]
    counts = Counter(n for group in names for n in group)
    return [
        {n: (f"{label}/{n}" if counts[n] > 1 and len(manifests) > 1 else n) for n in sorted(group)}
        for group, label in zip(names, labels, strict=True)
    ]


def gate_settings(manifest: Manifest) -> GateSettings:
    """The gates and decisions the run asked for, from its manifest (a baseline folder only while it is still there)."""
    baseline = manifest.settings.baseline
    if baseline:
        recorded = manifest.settings.baseline_sha256
        if not Path(baseline).is_dir() or (recorded and folder_fingerprint(Path(baseline)) != recorded):
            raise ReportError(
                f"run {manifest.run_id} was decided against the baseline {baseline}, which is gone or has changed "
                "since: its decisions cannot be made again. Restore that baseline, or report from the run's own "
                "summary.json (without --rescore)"
            )
    return GateSettings.from_manifest_settings(manifest.settings)


class Scanned(NamedTuple):
    """What the report keeps of one headline result of results.jsonl (`scan_results`): a small tuple of atoms,
    its outcome category both ways (its conformance failures are the summary's, known after scoring), and the
    offset of its line (read again only if the page embeds it)."""

    case_id: str
    case_hash: str
    variant: str
    epoch: int
    kind: str
    spec: tuple[str, ...]
    scored: bool
    verdict_correct: bool
    category: int
    category_failed: int
    trace_from_case: bool
    offset: int

    @property
    def key(self) -> FailureKey:
        return (self.case_id, self.variant, self.epoch)


def scan_results(log: RunLog) -> list[Scanned]:
    """Every headline result of results.jsonl, in the order written. Only the few fields each result
    contributes are parsed (`RecordSummary`); a robustness unit is left out (only summary.json's robustness figures
    read it)."""
    assert log.run_dir is not None
    path = log.run_dir / RESULTS_FILE
    if not path.exists():
        raise ReportError(f"{path}: missing; the run wrote no results")
    return [
        Scanned(
            row.case_id,
            row.case_hash,
            row.variant,
            row.epoch,
            row.kind,
            tuple(row.spec),
            row.scored,
            row.verdict_correct,
            category(row, False),
            category(row, True),
            row.trace_from_case,
            offset,
        )
        for offset, row in log.lines(RecordSummary)
        if is_headline(row)
    ]


def stream_results(run: LoadedRun, limit: int, scanned: list[Scanned]) -> int:
    """The report's rows of the run's results: a `ResultRow` of every headline result, and the picks for the
    embedded drill-down (their lines read by offset). `scanned`: the results as `scan_results` read them.
    Returns how many results there are (a retried unit counts once)."""
    failed = run.failures()
    selector = Selector(limit=limit)
    rows: dict[tuple[str, str, int], ResultRow] = {}  # a retried unit is logged twice: the last one counts
    keys: set[tuple[str, str, str, int]] = set()  # ... and the summary counts it once
    for row in scanned:
        keys.add((row.case_id, row.case_hash, row.variant, row.epoch))
        renamed = run.rename.get(row.variant, row.variant)
        if renamed != row.variant:
            row = row._replace(variant=renamed)
        conformance_failed = row.key in failed
        pick = (row.case_id, row.trace_from_case, row.offset)
        cat = row.category_failed if conformance_failed else row.category
        selector.offer(row.case_id, row.variant, row.epoch, cat, pick)
        rows.pop(row.key, None)
        rows[row.key] = result_row(run.label, row, failed)
    run.results = list(rows.values())
    chosen = selector.chosen()
    lines = RunLog(run.manifest, run_dir=run.run_dir).lines_at(sorted({offset for _, (_, _, offset) in chosen}))
    run.picked = [(cat, cid, elided, lines[offset]) for cat, (cid, elided, offset) in chosen]
    run.selection = selector.describe()
    return len(keys)


def case_view(raw: Mapping[str, Any], case: Case | None, excerpt_chars: int, with_trace: bool) -> CaseShown:
    """The drill-down's view of one case: `raw` as cases.jsonl holds it, `case` validated from it (None when this
    version no longer accepts it: shown as written, its claims unparsed)."""
    payload = case_payload(raw, case.executor_output if case is not None else None)
    title = payload["title"] if isinstance(payload["title"], str) else None
    return CaseShown(
        title, html_json(payload), case.trace_json(excerpt_chars) if case is not None and with_trace else None
    )


# case_views.jsonl (`run.folder.CASE_VIEWS_FILE`): the drill-down's case views the run's report used, kept for
# `vbench report` to render the page again without reading and validating the cases again: a header line (format and `views_stamp`), then one view per line: its
# id, title, trace and the checksum of its page JSON, a tab, and that JSON as the page embeds it. Derived and
# disposable: a view it lacks, or a file of another format or code, is made again from cases.jsonl.
_VIEWS_FORMAT = "case_views_v2"
_VIEW_CODE = ("report/casedata.py", "report/load.py", "system", "corpus")
"""The code a view is made by (`case_view`: the case model, the executor-output parser, the trace summary)."""


@functools.cache
def views_stamp() -> str:
    """The fingerprint of the code that makes a case view: a view made by other code is not used."""
    return fingerprint_of(Path(__file__).resolve().parents[1], _VIEW_CODE, _VIEWS_FORMAT)


def write_case_views(run_dir: Path, views: Mapping[str, CaseShown]) -> None:
    """case_views.jsonl of the run folder: `views` (as the report just used them), written whole."""
    head = html_json({"format": _VIEWS_FORMAT, "code": views_stamp()})

    def line(cid: str, view: CaseShown) -> str:
        meta = {"id": cid, "title": view.title, "trace": view.trace, "crc": zlib.crc32(view.json.encode())}
        return f"{html_json(meta)}\t{view.json}\n"  # compact JSON has no raw tab: the first one splits the line

    write_lines(run_dir, CASE_VIEWS_FILE, itertools.chain((head + "\n",), (line(c, v) for c, v in views.items())))


def read_case_views(run_dir: Path, wanted: set[str]) -> Iterator[tuple[str, CaseShown]]:
    """The `wanted` views case_views.jsonl holds, when the code that wrote it makes views as this code does. Each
    view's page JSON is taken as written (not parsed and written again) when its checksum matches and it holds
    nothing HTML-unsafe; any other line is passed over (its case is read from cases.jsonl instead)."""
    try:
        fh = (run_dir / CASE_VIEWS_FILE).open("rb")
    except OSError:
        return
    with fh:
        try:
            head = from_json(fh.readline())
        except ValueError:
            return
        if head != {"format": _VIEWS_FORMAT, "code": views_stamp()}:
            return
        for line in fh:
            meta_text, tab, view = line.rstrip(b"\n").partition(b"\t")
            try:
                meta = from_json(meta_text) if tab else None
            except ValueError:
                continue
            if not (isinstance(meta, dict) and meta.get("id") in wanted and meta.get("crc") == zlib.crc32(view)):
                continue
            title, trace = meta.get("title"), meta.get("trace")
            if not view.startswith(b"{") or not html_safe(view):  # not written by `html_json`: not embedded
                continue
            if (title is None or isinstance(title, str)) and (trace is None or isinstance(trace, list)):
                yield meta["id"], CaseShown(title, view.decode("utf-8", "replace"), trace)


def load_drill_down(run: LoadedRun) -> None:
    """The picked results' cases, each kept only as its `CaseShown`: those case_views.jsonl keeps, the rest read
    from cases.jsonl, each validated once (its strict parse shows the claims)."""
    elided = {cid for _, cid, trace_elided, _ in run.picked if trace_elided}
    wanted = {cid for _, cid, _, _ in run.picked}

    def usable(cid: str, view: CaseShown) -> bool:
        return cid in wanted and (cid not in elided or view.trace is not None)

    run.cases = {cid: v for cid, v in read_case_views(run.run_dir, wanted) if usable(cid, v)}
    for cid, raw in iter_cases(run.run_dir, wanted - run.cases.keys()):
        try:
            # cases.jsonl holds what the run wrote from validated cases: its NUL walk is not made again
            case: Case | None = Case.model_validate(raw, context=VALIDATED_BEFORE)
        except ValidationError:
            case = None
        run.cases[cid] = case_view(raw, case, run.manifest.excerpt_chars, cid in elided)


def drill_down(run: LoadedRun) -> Iterator[tuple[int, dict[str, Any]]]:
    """The picked records as the page embeds them (JSON, the elided trace put back), one at a time and taken
    off `run.picked` as they go: the report holds each whole record only while it is embedded."""
    run.picked.reverse()
    while run.picked:
        cat, cid, _, line = run.picked.pop()
        data = record_data(line)  # the line was read as a `RecordSummary` already: its object is a record's
        variant = data.get("variant")
        data["variant"] = run.rename.get(variant, variant) if isinstance(variant, str) else variant
        shown, persisted = run.cases.get(cid), data.get("persisted")
        if (
            data.get("trace_from_case")
            and shown is not None
            and shown.trace is not None
            and isinstance(persisted, dict)
        ):
            data["persisted"] = with_trace(persisted, shown.trace)
        yield cat, data


def _score(run_dir: Path, manifest: Manifest) -> Summary:
    """The run scored again from its log (rewriting summary.json, outcomes.jsonl and junit.xml)."""
    from harness.score.scoring import score_run  # scoring loads pandas: only when a run is scored again

    return score_run(run_dir, gate_settings(manifest))


def load_runs(run_dirs: Sequence[Path], limit: int = DEFAULT_LIMIT, rescore: bool = False) -> list[LoadedRun]:
    """Every run folder, ready for the analyses; the embedding budget is shared between runs.

    summary.json is used as the run wrote it (its gates included). It is scored again from the log
    (rewriting summary.json, outcomes.jsonl and junit.xml) when it is missing, when it counts other
    results than the log holds, or when `rescore` asks for it.
    """
    if not run_dirs:
        raise ReportError("no run folder given")
    manifests = [read_manifest_checked(Path(d)) for d in run_dirs]
    labels = unique_labels(manifests)
    renames = variant_renames(manifests, labels)
    per_run = max(1, limit // len(run_dirs))
    return [
        load_run(
            Path(run_dir), manifest, label, rename, per_run, None if rescore else read_summary_or_none(Path(run_dir))
        )
        for run_dir, manifest, label, rename in zip(run_dirs, manifests, labels, renames, strict=True)
    ]


def load_scored(
    run_dir: Path,
    summary: Summary,
    manifest: Manifest | None,
    limit: int,
) -> LoadedRun:
    """A run just scored, from the scorer's summary in memory: summary.json is not read and nothing is scored again
    (unless the summary counts other results than the log holds); the log is read once, for the per-result tables
    and the drill-down."""
    manifest = manifest or read_manifest_checked(run_dir)
    label = unique_labels([manifest])[0]
    renames = variant_renames([manifest], [label])[0]
    return load_run(run_dir, manifest, label, renames, limit, summary)


def load_run(
    run_dir: Path,
    manifest: Manifest,
    label: str,
    rename: dict[str, str],
    limit: int,
    summary: Summary | None,
) -> LoadedRun:
    """One run ready for the analyses, from its summary (scored again from the log when None or stale)."""
    if summary is None:
        summary = _score(run_dir, manifest)
    run = LoadedRun(run_dir, label, manifest, summary.renamed(rename), rename)
    scanned = scan_results(RunLog(manifest, run_dir=run_dir))
    if stream_results(run, limit, scanned) != summary.results:
        run.summary = _score(run_dir, manifest).renamed(rename)  # stale
        stream_results(run, limit, scanned)
    load_drill_down(run)
    return run
