"""One recorded run: who made it (git commit and branch), what it ran (model, prompt, corpus, code, policy), what it
measured (the summary's figures, tokens, cost) and, per unit, its outcome in columnar form.

A record has a small head (what `list`, refs and `trend` read) and a body (the unit outcomes and the manifest,
what pairing by case reads). The body's units are the same columns as a run's outcomes.jsonl, so a record can
stand in for the run folder it came from as the control of a decision.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from harness import UsageError
from harness.run.folder import MANIFEST_FILE, read_manifest
from harness.run.log import Manifest
from harness.score.outcomes import load_outcomes
from harness.score.registry import metrics as registered_metrics
from harness.score.summary_model import Summary, read_summary_file


class HistoryError(UsageError):
    """A store, ref or record that cannot serve the request (a usage error: exit 2)."""


class Figure(BaseModel):
    """One metric of one variant: its value and its CI as the summary gave them."""

    value: float | None = None
    ci: list[float] | None = None


class VariantHead(BaseModel):
    """One variant of a recorded run: identity, figures, tokens and cost."""

    model_config = ConfigDict(extra="forbid")
    name: str
    model: str = ""
    prompt: str | None = None
    prompt_hash: str | None = None
    figures: dict[str, Figure] = Field(default_factory=dict)
    units: int = 0
    unsafe_eligible: int = 0
    unsafe_pass: int = 0
    verdict_correct: int = 0
    tokens: dict[str, int] = Field(default_factory=dict)
    cost: dict[str, Any] | None = None


class RecordHead(BaseModel):
    """What a recorded run is: enough to list it, resolve a ref to it and draw its point of a trend."""

    model_config = ConfigDict(extra="forbid")
    id: str
    run_id: str
    recorded_at: str
    created: str = ""
    branch: str | None = None
    commit: str | None = None
    corpus_hash: str = ""
    package_version: str = ""
    code_fingerprint: str | None = None
    policy: dict[str, Any] | None = None
    passed: bool = False
    decisions: dict[str, str] = Field(default_factory=dict)
    """Candidate variant -> ship / block / inconclusive, as the run decided."""
    variants: list[VariantHead] = Field(default_factory=list)

    @property
    def models(self) -> list[str]:
        return sorted({v.model for v in self.variants})

    def variant(self, name: str | None = None) -> VariantHead:
        """The named variant, or the only one; a run of several variants needs a name."""
        if name is None and len(self.variants) == 1:
            return self.variants[0]
        found = [v for v in self.variants if v.name == name]
        if not found:
            names = ", ".join(v.name for v in self.variants)
            raise HistoryError(
                f"run {self.id} has no variant {name!r} (its variants: {names}): name one with --variant"
            )
        return found[0]


class RunRecord(BaseModel):
    """A whole record: its head, the run's manifest and its unit outcomes as columns."""

    model_config = ConfigDict(extra="forbid")
    head: RecordHead
    manifest: dict[str, Any]
    units: dict[str, list[Any]]
    """Column name -> one value per unit (the columns of outcomes.jsonl)."""

    def unit_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.units)

    def manifest_model(self) -> Manifest:
        return Manifest.model_validate(self.manifest)


def git_identity(cwd: Path | None = None) -> tuple[str | None, str | None]:
    """(branch, commit) of the git work tree at `cwd`. On a detached head (a CI checkout of a pull request) the
    branch is the CI's own name for it (GitHub Actions' GITHUB_HEAD_REF or GITHUB_REF_NAME, GitLab's
    CI_COMMIT_REF_NAME); None for what neither can tell (no repository)."""

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=True)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() or None

    branch = git("rev-parse", "--abbrev-ref", "HEAD")
    if branch in (None, "HEAD"):
        env = (os.environ.get(k) for k in ("GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME"))
        branch = next((value for value in env if value), None)
    return branch, git("rev-parse", "HEAD")


def _variant_head(v: Any, units: pd.DataFrame, cost: dict[str, Any] | None) -> VariantHead:
    figures = {
        m.key: Figure(value=v.figure(m.key), ci=v.figure(f"{m.key}_ci"))
        for m in registered_metrics()
        if v.figure(m.key) is not None
    }
    mine = units[units["variant"] == v.name] if "variant" in units else units.iloc[0:0]
    eligible = mine["unsafe_eligible"].fillna(False).astype(bool) if "unsafe_eligible" in mine else None
    unsafe = int(mine.loc[eligible, "unsafe_pass"].fillna(False).astype(bool).sum()) if eligible is not None else 0
    correct = int(mine["verdict_correct"].fillna(False).astype(bool).sum()) if "verdict_correct" in mine else 0
    return VariantHead(
        name=v.name, model=v.model, prompt=v.prompt, prompt_hash=v.prompt_hash, figures=figures, units=len(mine),
        unsafe_eligible=int(eligible.sum()) if eligible is not None else 0, unsafe_pass=unsafe,
        verdict_correct=correct, tokens=dict(v.tokens), cost=cost,
    )  # fmt: skip


def record_from_summary(
    summary: Summary,
    manifest: Manifest,
    units: pd.DataFrame,
    *,
    branch: str | None,
    commit: str | None,
    costs: dict[str, dict[str, Any] | None] | None = None,
    now: datetime | None = None,
) -> RunRecord:
    """The record of a scored run (pure: everything it reads is given)."""
    if summary.run is None:
        raise HistoryError("only a run's summary can be recorded (this one is a certification's)")
    when = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S.%fZ")
    costs = costs or {}
    head = RecordHead(
        id=f"{when}-{uuid.uuid4().hex[:8]}",
        run_id=summary.run.run_id,
        recorded_at=when,
        created=manifest.created,
        branch=branch,
        commit=commit,
        corpus_hash=manifest.corpus_hash,
        package_version=manifest.package_version,
        code_fingerprint=manifest.settings.code_fingerprint,
        policy=manifest.settings.policy.model_dump(mode="json") if manifest.settings.policy else None,
        passed=summary.passed,
        decisions={d.candidate: d.decision for d in summary.decisions},
        variants=[_variant_head(v, units, costs.get(v.name)) for v in summary.variants],
    )
    columns = {c: units[c].tolist() for c in units.columns}
    return RunRecord(head=head, manifest=manifest.model_dump(mode="json"), units=columns)


def record_run_folder(
    run_dir: Path,
    *,
    branch: str | None = None,
    commit: str | None = None,
    costs: dict[str, dict[str, Any] | None] | None = None,
) -> RunRecord:
    """The record of a finished, scored run folder; git branch and commit default to the working directory's."""
    if not (run_dir / MANIFEST_FILE).is_file():
        raise HistoryError(f"{run_dir}: not a run folder (no {MANIFEST_FILE})")
    try:
        summary = read_summary_file(run_dir)
    except FileNotFoundError:
        raise HistoryError(f"{run_dir}: the run has no summary.json: it did not finish, and is not recorded") from None
    except (OSError, ValueError) as exc:
        raise HistoryError(f"{run_dir}/summary.json: cannot be read: {str(exc).splitlines()[0]}") from None
    if branch is None or commit is None:
        found_branch, found_commit = git_identity()
        branch, commit = branch or found_branch, commit or found_commit
    return record_from_summary(
        summary, read_manifest(run_dir), load_outcomes(run_dir), branch=branch, commit=commit, costs=costs
    )
