"""The plan of a run: its variants, its units, its manifest, and whether a run folder may be resumed with it.

All of it is decided before a unit runs, from the study, the cases and the run folder; `runner` then runs the
units it plans. Kept apart so the runner says how a run executes and this module says what the run is (the CLI
preflight and the certification kit use the plan without the executor).
"""

from __future__ import annotations

import hashlib
import platform
import sys
from collections.abc import Sequence
from datetime import UTC, datetime

from harness import UsageError, __version__
from harness.corpus.perturb import PerturbContext, Perturbed, perturb
from harness.corpus.schema import Case
from harness.run.caseref import CaseRef
from harness.run.folder import folder_fingerprint
from harness.run.log import Manifest, ManifestSettings, VariantInfo
from harness.run.provenance import package_git_sha
from harness.run.providers import provider_of
from harness.run.replay import code_fingerprint
from harness.run.schedule import Task
from harness.run.shard import parse_shard, plan_digest
from harness.run.study import Study, StudyError
from harness.system.prompts.variant import prompt_source
from harness.system.store import public_store_url


class ResumeError(UsageError):
    """--resume on a folder whose run asked for something else."""


def variant_name(model: str, prompt: str | None) -> str:
    return model if prompt is None else f"{model}@{prompt}"


def build_variants(study: Study) -> list[VariantInfo]:
    """One variant per model × prompt; the reference verifier uses no prompt, so it is one variant."""
    variants: list[VariantInfo] = []
    for model in study.models:
        settings = study.model_settings.get(model)
        prompts: Sequence[str | None] = study.prompts if provider_of(model).takes_prompt else [None]
        for prompt in prompts:
            name, directory = prompt_source(prompt) if prompt is not None else (None, None)
            variants.append(
                VariantInfo(
                    name=variant_name(model, name),
                    model=model,
                    prompt=name,
                    prompt_path=str(directory) if directory is not None else None,
                    policy=study.policy,
                    settings=settings.recorded() if settings else {},
                )
            )
    names = [v.name for v in variants]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise StudyError(f"two prompts give the same variant name {', '.join(twice)}: rename one prompt directory")
    return variants


def plan_tasks(
    cases: Sequence[CaseRef],
    variants: Sequence[VariantInfo],
    epochs: int,
    run_policy: bool = True,
    perturbed: Sequence[Perturbed] = (),
) -> list[Task]:
    """Policy cases once per suite; quality cases once per variant × epoch, and so is each perturbed case.

    A perturbed case keeps its case's id under its own content hash, so its unit has its own resume, cache
    and replay keys. The units of one case share its ref.
    """
    tasks = [Task(c, None, 0) for c in cases if c.kind == "policy"] if run_policy else []
    perturbed_refs = [(p, CaseRef.of(p.case)) for p in perturbed]
    for variant in variants:
        for epoch in range(1, epochs + 1):
            tasks.extend(Task(c, variant, epoch) for c in cases if c.kind == "quality")
            tasks.extend(Task(ref, variant, epoch, p) for p, ref in perturbed_refs)
    return tasks


def perturb_cases(cases: Sequence[Case], names: Sequence[str], seed: int, excerpt_chars: int) -> list[Perturbed]:
    """Every quality case under every named perturbation that applies to it; the other quality cases are the
    distractor pool. A perturbation that applies to no case is an error (exit 2), not a silent no-op."""
    quality = [c for c in cases if c.kind == "quality"]
    context = PerturbContext(pool=quality, excerpt_chars=excerpt_chars)
    out: list[Perturbed] = []
    for name in names:
        found = [p for case in quality if (p := perturb(case, name, seed, context)) is not None]
        if not found:
            raise StudyError(
                f"--perturb {name}: applies to none of the {len(quality)} selected quality cases "
                "(no structured claims, too few invocations or no other incident to draw from)"
            )
        out += found
    return out


def corpus_hash(cases: Sequence[CaseRef]) -> str:
    digest = hashlib.sha256()
    for case in sorted(cases, key=lambda c: c.id):
        digest.update(f"{case.id}:{case.hash}\n".encode())
    return digest.hexdigest()[:16]


def make_manifest(
    study: Study,
    cases: Sequence[CaseRef],
    variants: Sequence[VariantInfo],
    run_id: str,
    perturbed: Sequence[Perturbed] = (),
) -> Manifest:
    prompts = {
        v.prompt: {
            "version": v.prompt_version,
            "hash": v.prompt_hash,
            **({"path": v.prompt_path} if v.prompt_path else {}),
        }
        for v in variants
        if v.prompt
    }
    return Manifest(
        run_id=run_id,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        package_version=__version__,
        git_sha=package_git_sha(),
        corpus_hash=corpus_hash(cases),
        case_dirs=[str(p) for p in study.cases],
        case_count=len(cases),
        policy_cases=sum(1 for c in cases if c.kind == "policy"),
        quality_cases=sum(1 for c in cases if c.kind == "quality"),
        epochs=study.epochs,
        concurrency=study.concurrency,
        excerpt_chars=study.excerpt_chars,
        filters=list(study.filters),
        variants=list(variants),
        prompts=prompts,
        settings=ManifestSettings.model_validate(
            {
                "claim_guard": study.policy.claim_guard,
                "policy": study.policy.model_dump(mode="json"),
                "cache": str(study.cache) if study.cache else None,
                "replay": bool(study.cache and study.replay),
                "case_timeout": study.case_timeout,
                "store": public_store_url(study.store) if study.store else None,
                "code_fingerprint": code_fingerprint(),
                "gates": study.gates.model_dump(),
                "control": study.control,
                # absolute, with the outcomes' hash: a later rescore decides against this very baseline or not at all
                "baseline": str(study.baseline.resolve()) if study.baseline else None,
                "baseline_sha256": folder_fingerprint(study.baseline) if study.baseline else None,
                "anchor": str(study.anchor.resolve()) if study.anchor else None,
                "perturb": list(study.perturb),
                "perturb_seed": study.perturb_seed,
                "stop_early": {"look_size": study.look_size, "seed": study.stop_seed} if study.stop_early else None,
                "perturbed_cases": {name: sum(p.name == name for p in perturbed) for name in study.perturb},
            }
        ),
        python=sys.version.split()[0],
        platform=platform.platform(),
    )


def check_resumable(old: Manifest, new: Manifest) -> None:
    """A resumed run must ask for the same thing as the run it finishes."""
    same = (
        old.corpus_hash == new.corpus_hash
        and old.epochs == new.epochs
        and [(v.name, v.prompt_hash, v.policy, v.settings) for v in old.variants]
        == [(v.name, v.prompt_hash, v.policy, v.settings) for v in new.variants]
        and old.excerpt_chars == new.excerpt_chars
        and _perturbations(old) == _perturbations(new)
        and _shard_name(old) == _shard_name(new)
    )
    if not same:
        raise ResumeError(
            "--resume: this folder holds a run of other cases, variants, prompts or settings; use a new --out"
        )


def _shard_name(manifest: Manifest) -> str | None:
    return manifest.settings.shard.shard if manifest.settings.shard is not None else None


def _perturbations(manifest: Manifest) -> tuple[list[str], int | None]:
    """The perturbations a run asked for and their seed (a run from before perturbations asked for none)."""
    names = list(manifest.settings.get("perturb") or [])
    return names, manifest.settings.get("perturb_seed") if names else None


def missing_units(manifest: Manifest, written: int) -> int:
    """How many of the units the run planned have no result (`written`: units with one): 0 for a finished run,
    for a run its early-stopping rule ended, and for a folder whose manifest did not record its plan."""
    planned = manifest.settings.planned_units
    stop = manifest.settings.stop_early
    if planned is None or (stop is not None and stop.ended):
        return 0
    return max(0, planned - written)


def shard_tasks(planned: list[Task], shard_text: str, manifest: Manifest) -> list[Task]:
    """This shard's units; the manifest records the shard, its unit count and the whole plan's digest (the
    merge checks the shards' union against it)."""
    shard = parse_shard(shard_text)
    mine = [t for t in planned if shard.holds(t.key)]
    manifest.settings["shard"] = {
        "shard": str(shard),
        "index": shard.index,
        "count": shard.count,
        "units": len(mine),
        "plan_units": len(planned),
        "plan_digest": plan_digest(t.key for t in planned),
    }
    return mine
