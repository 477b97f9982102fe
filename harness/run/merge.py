"""Merging shards: the run folders of `vbench run --shard I/N` become one normal run folder.

A merge takes shards of one plan only: the same cases, variants, prompts, settings and code, every shard
1..N exactly once and each one finished. Anything else is refused with a `MergeError` that says what differs
(exit code 2), so a merged run's figures are the single run's. The merged folder holds manifest.json,
cases.jsonl and results.jsonl like any run; scoring and reports read it as they read any other.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from harness import UsageError
from harness.run.folder import (
    CASES_FILE,
    MANIFEST_FILE,
    RESULTS_FILE,
    read_manifest,
    write_lines,
    write_manifest,
)
from harness.run.lock import holding
from harness.run.log import Manifest, ManifestSettings, ResultRecord
from harness.run.runlog import RunLog
from harness.run.shard import Shard, UnitKey, plan_digest

PER_SHARD_SETTINGS = ("shard", "cache", "replay", "executor", "store", "planned_units")
"""Settings a shard may have of its own: they change where and how fast units ran, never a figure."""


TIMING_KEYS = frozenset({"run", "latency_ms", "harness_cpu_ms", "tokens", "cached_results", "replayed_results"})
"""The only summary.json keys (at any depth) in which a merged run may differ from the single run."""


def without_timings(value: Any) -> Any:
    """A summary.json value with every `TIMING_KEYS` key removed at any depth: what a merge must reproduce."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


class MergeError(UsageError):
    """Shards that cannot be merged (exit code 2)."""


class ShardRun(BaseModel):
    """One shard folder, read."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    path: Path
    manifest: Manifest
    shard: Shard
    records: list[ResultRecord]


def read_shard(path: Path) -> ShardRun:
    """A shard folder: its manifest must record a shard (a run made with --shard)."""
    if not (path / MANIFEST_FILE).exists():
        raise MergeError(f"{path}: not a run folder (no {MANIFEST_FILE})")
    manifest = read_manifest(path)
    info = manifest.settings.shard
    if info is None:
        raise MergeError(f"{path}: not a shard (run without --shard); merge takes the folders of `vbench run --shard`")
    try:
        records = list(RunLog.read(path).records())
    except ValueError as exc:
        raise MergeError(str(exc)) from exc
    return ShardRun(path=path, manifest=manifest, shard=Shard(index=info.index, count=info.count), records=records)


def plan_identity(manifest: Manifest) -> dict[str, Any]:
    """Everything that decides a shard's results and the plan they belong to (not where or how fast it ran)."""
    shard = manifest.settings.shard
    return {
        "package_version": manifest.package_version,
        "corpus_hash": manifest.corpus_hash,
        "case_count": manifest.case_count,
        "epochs": manifest.epochs,
        "excerpt_chars": manifest.excerpt_chars,
        "filters": manifest.filters,
        "variants": [v.model_dump() for v in manifest.variants],
        "prompts": manifest.prompts,
        "verifiers": manifest.verifiers,
        "settings": {k: v for k, v in manifest.settings.items() if k not in PER_SHARD_SETTINGS},
        "shard_count": shard.count if shard is not None else None,
        "plan_units": shard.plan_units if shard is not None else None,
        "plan_digest": shard.plan_digest if shard is not None else None,
    }


def check_shards(shards: Sequence[ShardRun]) -> None:
    """Same plan, every shard once, each finished, the union exactly the plan: or a MergeError saying why."""
    first = shards[0]
    reference = plan_identity(first.manifest)
    for other in shards[1:]:
        identity = plan_identity(other.manifest)
        differ = [key for key in reference if reference[key] != identity[key]]
        differ = [f"settings.{k}" for k in _differing(reference["settings"], identity["settings"])] + [
            k for k in differ if k != "settings"
        ]
        if differ:
            what = "code fingerprint" if differ == ["settings.code_fingerprint"] else ", ".join(differ)
            raise MergeError(f"{first.path} and {other.path} are shards of different runs: {what} differ")
    seen: dict[int, Path] = {}
    for shard in shards:
        if shard.shard.index in seen:
            raise MergeError(
                f"overlapping units: shard {shard.shard} is given twice ({seen[shard.shard.index]} and {shard.path})"
            )
        seen[shard.shard.index] = shard.path
    count = first.shard.count
    missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in seen]
    if missing:
        raise MergeError(f"missing units: shard(s) {', '.join(missing)} not given (a merge needs all {count})")
    for shard in shards:
        _check_finished(shard)
    keys = [r.key for shard in shards for r in shard.records]
    if len(set(keys)) != len(keys):
        raise MergeError("overlapping units: a unit is in two shards")
    if plan_digest(keys) != reference["plan_digest"] or len(keys) != reference["plan_units"]:
        raise MergeError(f"missing units: the shards hold {len(keys)} units, the plan has {reference['plan_units']}")


def _check_finished(shard: ShardRun) -> None:
    units = shard.manifest.settings.shard.units if shard.manifest.settings.shard is not None else None
    outside: list[UnitKey] = [r.key for r in shard.records if not shard.shard.holds(r.key)]
    if outside:
        raise MergeError(f"{shard.path}: {len(outside)} result(s) do not belong to shard {shard.shard}")
    if len(shard.records) != units:
        raise MergeError(
            f"unfinished shard: {shard.path} holds {len(shard.records)} of its {units} units; finish it with "
            f"`vbench run --shard {shard.shard} --resume --out {shard.path}` (and the same settings)"
        )


def _differing(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def merge_shards(paths: Sequence[Path], out: Path) -> Manifest:
    """Check the shards, then write one run folder to `out`: the first shard's manifest without its shard, the
    shared cases.jsonl, and every shard's results. Returns the merged manifest."""
    if not paths:
        raise MergeError("no shard folder given")
    if (out / MANIFEST_FILE).exists():
        raise MergeError(f"{out} already holds a run: choose another --out")
    if any(p.resolve() == out.resolve() for p in paths):
        raise MergeError(f"--out {out} is one of the shards: choose another folder")
    shards = [read_shard(p) for p in paths]
    check_shards(shards)
    with holding(out):  # makes the folder; one writer (`harness.run.lock`)
        if (out / MANIFEST_FILE).exists():  # another merge wrote it while this one read the shards
            raise MergeError(f"{out} already holds a run: choose another --out")
        manifest = merged_manifest(shards, out.name)
        shutil.copyfile(shards[0].path / CASES_FILE, out / CASES_FILE)
        ordered = sorted(shards, key=lambda s: s.shard.index)
        records = (record.model_dump_json() + "\n" for shard in ordered for record in shard.records)
        write_lines(out, RESULTS_FILE, records)
        write_manifest(out, manifest)  # last: a folder with a manifest is a whole run
    return manifest


def merged_manifest(shards: Sequence[ShardRun], run_id: str) -> Manifest:
    """The first shard's manifest, a run of the whole plan: no shard, and the shards it came from."""
    first = sorted(shards, key=lambda s: s.shard.index)[0].manifest
    settings = {k: v for k, v in first.settings.items() if k != "shard"}
    settings["planned_units"] = sum(
        s.manifest.settings.shard.units or 0 for s in shards if s.manifest.settings.shard is not None
    )
    settings["merged_from"] = [
        {
            "path": str(s.path),
            "run_id": s.manifest.run_id,
            "shard": str(s.shard),
            "units": len(s.records),
            "executor": executor.model_dump() if (executor := s.manifest.settings.executor) is not None else None,
        }
        for s in sorted(shards, key=lambda s: s.shard.index)
    ]
    return first.model_copy(
        update={
            "run_id": run_id,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "settings": ManifestSettings.model_validate(settings),
        }
    )
