"""Result replay: a warm rerun reuses a finished quality result instead of running the system again.

The response cache spares the model call; the system still costs ~1-3 ms a case to run on the cached reply,
a floor no cache of replies can go under. A result is deterministic given what went into it, so a quality
result whose reply came through the response cache is also kept, beside that cache, and a later run replays
it when all of these are unchanged:

- the *code*: every source file of the layers that make a record (`harness/llm`, `system`, `corpus`, `run`,
  the package version, and `cli/run.py`, which builds the verifiers; score, report and the rest of cli only
  read records) and the versions of Python and the libraries they use;
- the case's content hash, the variant (model, prompt and its hash, claim guard, recorded settings), the epoch;
- the verifier's reply identity (model name, base URL, the settings that change replies, the cache folder
  and its epoch, the prompt's hash: `LLMVerifier.replay_identity`), and the trace excerpt size.

Change any of them and the system runs again (on cached replies where the requests did not change). Policy
cases, results without a reply cache (`--no-cache`, the reference verifier) and error records are never
replayed, so conformance is always executed. `--no-replay` runs the system on every case and refreshes the kept
results; a replayed record says so. Entries are kept per code fingerprint (`results/<fingerprint>.sqlite3`), so
the sets of older builds can be deleted in one go.
"""

from __future__ import annotations

import functools
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.llm.entries import EntryFile
from harness.run import fingerprint
from harness.run.log import ResultRecord, VariantInfo

REPLAY_VERSION = 1
REPLAY_DIR = "results"
"""Entries live in this folder of the response cache (deleting the cache deletes them too)."""
FINGERPRINT_PARTS = ("__init__.py", "llm", "system", "corpus", "run", "cli/run.py")
"""What decides a result record: the layers up to run/ (tests/test_layering.py keeps them from importing above),
and cli/run.py, whose `default_factory` builds the verifiers a run uses."""


@functools.cache
def code_fingerprint() -> str:
    """The fingerprint of this installed `harness` package (computed once per process, a few ms)."""
    return fingerprint_of(Path(__file__).resolve().parents[1])


def fingerprint_of(root: Path, parts: tuple[str, ...] = FINGERPRINT_PARTS) -> str:
    """The replay fingerprint of the `harness` package at `root` (`fingerprint.fingerprint_of` of `parts`)."""
    return fingerprint.fingerprint_of(root, parts, f"replay-v{REPLAY_VERSION}")


def variant_digest(
    variant: VariantInfo, reply_identity: dict[str, Any], epoch: int, excerpt_chars: int, fingerprint: str
) -> str:
    """What every result of one variant × epoch shares; a task's key adds its case id and content hash."""
    payload = {
        "v": REPLAY_VERSION,
        "code": fingerprint,
        "variant": variant.model_dump(mode="json"),
        "reply": reply_identity,
        "epoch": epoch,
        "excerpt_chars": excerpt_chars,
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def task_key(shared: str, case_id: str, case_hash: str) -> str:
    return hashlib.sha256(f"{shared}\0{case_id}\0{case_hash}".encode()).hexdigest()


def replayable(record: ResultRecord) -> bool:
    """Only quality results that got a reply (valid or not) and did not crash are kept for replay."""
    return record.kind == "quality" and record.error is None and record.verdict is not None


class ResultReplay:
    """Result entries in `<cache>/results/<fingerprint>.sqlite3` by task key (`harness.llm.entries`: written in
    the background; `flush_writes` waits for them).

    `read=False` (--no-replay): nothing is replayed, every new result is still kept (refreshing old entries).
    A cache that cannot be written is reported once and left alone: the run and its log go on.
    """

    def __init__(self, cache_dir: str | Path, fingerprint: str, read: bool = True) -> None:
        self.path = Path(cache_dir) / REPLAY_DIR / f"{fingerprint[:16]}.sqlite3"
        self.read = read
        self._entries = EntryFile(self.path, "result replay", "results are not kept for replay")

    @property
    def write_error(self) -> str | None:
        return self._entries.write_error

    def get(self, key: str, case_id: str, variant: str, epoch: int) -> ResultRecord | None:
        """The stored result, marked replayed, or None (absent, unreadable, or for another task)."""
        if not self.read:
            return None
        text = self._entries.get(key)
        if text is None:
            return None
        try:
            record = ResultRecord.model_validate_json(text)
        except (ValueError, ValidationError):
            return None
        if (record.case_id, record.variant, record.epoch) != (case_id, variant, epoch):
            return None  # a hash collision or a hand-edited entry: run the system
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        return record.model_copy(update={"cached": True, "replayed": True, "finished_at": stamp})

    def put(self, key: str, line: str) -> None:
        """Keep one result (its results.jsonl line, already serialised), written in the background; never raises."""
        self._entries.put(key, line)
