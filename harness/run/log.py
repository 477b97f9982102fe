"""The typed, versioned run log: the single source for metrics and reports.

A run folder holds `manifest.json` (what ran), `cases.jsonl` (the content of
every case, once), and `results.jsonl` (one record per case × variant × epoch,
appended and flushed as each finishes, so a killed run loses nothing finished).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.corpus.schema import Case
from harness.system.models import Usage

RESULTS_SCHEMA = "results_v1"
MANIFEST_SCHEMA = "manifest_v1"
RESULTS_FILE, MANIFEST_FILE, CASES_FILE = "results.jsonl", "manifest.json", "cases.jsonl"


class LogModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GatekeeperOutcome(LogModel):
    status: str
    failed_rules: list[str]
    warnings: list[str]


class Gold(LogModel):
    """The case's expectations, copied so metrics need nothing but the log."""

    parse_status: str
    gatekeeper: dict[str, Any]
    claims: dict[str, list[str]] | None
    verdict: list[str]
    model_verdict: list[str] | None


class ResultRecord(LogModel):
    """One case × variant × epoch."""

    schema_version: Literal["results_v1"] = "results_v1"
    case_id: str
    case_hash: str
    kind: Literal["policy", "quality"]
    variant: str
    epoch: int
    dataset: str
    tags: list[str]
    spec: list[str]
    parse_status: str | None
    gatekeeper: GatekeeperOutcome | None
    claims: dict[str, str]
    critical_claims: list[str] = Field(default_factory=list)
    executor_claim_ids: list[str] = Field(default_factory=list)
    model_verdict: str | None
    verdict: str | None
    derived_verdict: str | None = None
    error: str | None
    reply_status: str | None = None
    invalid_reason: str | None = None
    raw_reply: str | None = None
    parsed_reply: dict[str, Any] | None = None
    adjustments: list[dict[str, Any]] = Field(default_factory=list)
    gold: Gold
    sibling_keys: list[str] = Field(default_factory=list)
    persisted: dict[str, Any] | None = None
    latency_ms: float = 0.0
    usage: Usage = Field(default_factory=Usage)
    attempts: int = 0
    cached: bool = False
    replayed: bool = False
    """The whole result was replayed from an earlier run (same code, case, variant, epoch: `harness.run.replay`)."""
    harness_cpu_ms: float = 0.0
    finished_at: str = ""
    perturbation: str | None = None
    """The perturbation (harness.corpus.perturb) this unit ran under; None for the case as written."""
    perturbation_seed: int | None = None
    claim_id_map: dict[str, str] | None = None
    """Perturbed claim id -> the case's own (claim-ids), to read the answers back."""
    store_namespace: str | None = None
    """The prefix of every session id this result's case wrote to the store (`--store`: where to find its rows)."""

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.case_id, self.case_hash, self.variant, self.epoch)


def error_reason(error: str) -> str:
    """The reason word of a record's `error` (`timeout: no reply within 5 s` -> `timeout`): what the run's
    errors are counted by. Errors are written `<reason>: <detail>` (a client `ErrorReason`, `case_timeout`,
    `harness_error`)."""
    return error.split(":", 1)[0].strip() or "unknown"


class VariantInfo(LogModel):
    """A component value: everything that identifies what produced a figure."""

    name: str
    model: str
    prompt: str | None
    prompt_version: str | None = None
    prompt_hash: str | None = None
    prompt_path: str | None = None
    """The variant directory a prompt given as a path was loaded from (packaged prompts: None)."""
    claim_guard: bool = True
    settings: dict[str, Any] = Field(default_factory=dict)


class Manifest(LogModel):
    schema_version: Literal["manifest_v1"] = "manifest_v1"
    run_id: str
    created: str
    package_version: str
    git_sha: str | None
    corpus_hash: str
    case_dirs: list[str]
    case_count: int
    policy_cases: int
    quality_cases: int
    epochs: int
    concurrency: int
    excerpt_chars: int
    filters: list[str] = Field(default_factory=list)
    variants: list[VariantInfo]
    prompts: dict[str, dict[str, Any]] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)
    python: str = ""
    platform: str = ""
    verifiers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Each variant's `Verifier.describe()`: what built its results (a baseline's version, signals, settings)."""
    components: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Per variant, recorded when the run ended: its provider, its verifier's `describe()` then (the model
    client's settings without secrets, the structured-output mode in use and the refusals met, the prompt)
    and its `replay_identity()`. Absent from a manifest written before it existed."""


# --- writing -------------------------------------------------------------------------


class ResultWriter:
    """Appends records to results.jsonl, one flushed line each."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / RESULTS_FILE
        _truncate_partial_tail(self.path)
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


def _truncate_partial_tail(path: Path) -> None:
    """Drop a last line cut off by a kill, so appends start on a fresh line."""
    if not path.exists() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return
    cut = data.rfind(b"\n") + 1
    with path.open("r+b") as fh:
        fh.truncate(cut)


def write_manifest(run_dir: Path, manifest: Manifest) -> None:
    (run_dir / MANIFEST_FILE).write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")


def write_cases(run_dir: Path, cases: Iterable[Case], hashes: Mapping[str, str] | None = None) -> None:
    """cases.jsonl; `hashes` (case id -> content hash) when the caller already computed them."""
    hashes = hashes or {}
    with (run_dir / CASES_FILE).open("w", encoding="utf-8") as fh:
        for case in cases:
            # {"id": ..., "hash": ..., "case": ...} with the id first (the report skips lines by it); the case
            # serialised by pydantic in one step, the same JSON as model_dump + json.dumps at a third of the cost
            digest = hashes.get(case.id) or case.content_hash()
            fh.write(f'{{"id": {json.dumps(case.id, ensure_ascii=False)}, "hash": {json.dumps(digest)}, "case": ')
            fh.write(case.model_dump_json(by_alias=True, exclude_none=True) + "}\n")


# --- reading -------------------------------------------------------------------------


class RunFileError(ValueError):
    """A damaged run file: the message names the file and, for a JSON-lines file, the line (exit code 2)."""

    def __init__(self, path: Path, problem: str, line: int | None = None) -> None:
        self.path = path
        self.line = line
        super().__init__(f"{path}:{line}: {problem}" if line else f"{path}: {problem}")


DROPPED_FILE = "results.dropped.jsonl"
"""Where `drop_corrupt_results` keeps the lines it took out of results.jsonl (for a person to look at)."""


def read_results(run_dir: Path) -> list[ResultRecord]:
    """Every complete record, the last one per (case, hash, variant, epoch) winning.

    A torn last line (a killed writer) is skipped; a case that a resumed run
    redid (after a transport error) is counted once, with its newer result.
    Any other line that is not a record raises `RunFileError` naming it.
    """
    latest: dict[tuple[str, str, str, int], ResultRecord] = {}
    for record in iter_results(run_dir / RESULTS_FILE):
        latest.pop(record.key, None)
        latest[record.key] = record
    return list(latest.values())


def iter_results(path: Path) -> Iterator[ResultRecord]:
    """The records of a results.jsonl in order; `RunFileError` at the first corrupt line."""
    for number, _, record, error in _result_lines(path):
        if record is None:
            raise RunFileError(path, f"not a results_v1 record: {error}", number)
        yield record


def _result_lines(path: Path) -> Iterator[tuple[int, bytes, ResultRecord | None, str | None]]:
    """(line number, raw line, its record or None, why it is corrupt); the torn tail of a kill ends it."""
    if not path.exists():
        return
    with path.open("rb") as fh:
        lines = fh.readlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield number, line, ResultRecord.model_validate_json(line), None
        except ValidationError as exc:
            if number == len(lines) and not line.endswith(b"\n"):
                return  # torn tail after a kill
            yield number, line, None, str(exc.errors()[0]["msg"])


def corrupt_result_lines(run_dir: Path) -> list[int]:
    """The line numbers of results.jsonl that are not records (the torn tail of a kill is not one)."""
    return [number for number, _, record, _ in _result_lines(run_dir / RESULTS_FILE) if record is None]


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


def read_manifest(run_dir: Path) -> Manifest:
    path = run_dir / MANIFEST_FILE
    try:
        return Manifest.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise RunFileError(path, f"{loc}: {err['msg']}") from None


def read_cases(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Case content by id, as the run saw it; `RunFileError` names a corrupt line."""
    path = run_dir / CASES_FILE
    if not path.exists():
        return {}
    out: dict[str, dict[str, Any]] = {}
    with path.open(encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, start=1):
            if line.strip():
                try:
                    row = json.loads(line)
                    out[row["id"]] = row["case"]
                except (ValueError, KeyError, TypeError) as exc:
                    raise RunFileError(path, f"not a case line: {exc}", number) from None
    return out


def folder_fingerprint(folder: Path) -> str | None:
    """sha256 of the files a run folder is paired by (outcomes.jsonl, else results.jsonl): a baseline's identity."""
    import hashlib

    for name in ("outcomes.jsonl", RESULTS_FILE):
        path = folder / name
        if path.is_file():
            digest = hashlib.sha256()
            with path.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
            return digest.hexdigest()
    return None
