"""A spec that moves: a repository's OpenSpec tree read against the catalogue and the requirement registry.

`vbench cases stats --spec DIR` and `vbench certify --spec DIR` read the team's own tree (its `changes/` and
`changes/archive/`) instead of the package's copy. Scenarios it adds are new (and uncovered when no case cites
them); a scenario whose text differs from the package's copy is changed, with the cases that cite it; a registry
requirement whose quote is no longer in the latest text of its OpenSpec requirement is stale, with the cases and
requirement ids it affects. Pure over the files read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel

from harness.corpus.catalogue import (
    DEFAULT_SPEC_DIR,
    RequirementBlock,
    Scenario,
    load_catalogue,
    parse_spec_text,
    requirement_blocks,
    slug,
    spec_files_under,
)
from harness.corpus.schema import Case
from harness.kit.requirements import INTERP, PROTOCOL, REQUIREMENTS, Requirement, case_requirements


class SpecDirError(ValueError):
    """The folder given as `--spec` holds no OpenSpec spec file."""


class ChangedScenario(BaseModel):
    id: str
    source: str
    """The file of the team's tree with the latest text."""
    cases: list[str]
    requirements: list[str]
    """Registry ids quoting the OpenSpec requirement the scenario belongs to."""


class StaleRequirement(BaseModel):
    id: str
    section: str
    quote: str
    now: str | None
    """The requirement's latest text in the team's tree (None: no requirement of that title is left)."""
    source: str | None
    cases: list[str]


class SpecDrift(BaseModel):
    spec_dir: str
    added: list[str]
    uncovered: list[str]
    """Added scenarios no case cites."""
    changed: list[ChangedScenario]
    removed: list[str]
    stale: list[StaleRequirement]

    @property
    def clean(self) -> bool:
        """Nothing a corpus must answer for: no uncovered new scenario, no changed or removed one, no stale quote."""
        return not (self.uncovered or self.changed or self.removed or self.stale)


def resolve_spec_dir(path: Path) -> Path:
    """A repository root (holding `openspec/`) or an OpenSpec folder; SpecDirError when it holds no spec file."""
    spec_dir = path / "openspec" if (path / "openspec").is_dir() else path
    if not spec_dir.is_dir():
        raise SpecDirError(f"--spec {path}: no such folder")
    if not spec_files_under(spec_dir):
        raise SpecDirError(
            f"--spec {path}: no spec.md under it (an OpenSpec tree: openspec/changes/<change>/specs/...)"
        )
    return spec_dir


def _latest_first(source: str, change: str) -> tuple[int, str]:
    """Order of precedence: an active change over an archived one, then the later change name (dated names sort)."""
    return (0 if "/archive/" in f"/{source}" else 1, change)


def all_blocks(spec_dir: Path) -> list[RequirementBlock]:
    """Every OpenSpec requirement block of the tree, oldest change first (an active change after the archive)."""
    blocks = [
        block
        for path, _capability, change, rel in spec_files_under(spec_dir)
        for block in requirement_blocks(path.read_text(encoding="utf-8"), change, _tree_path(rel))
    ]
    return sorted(blocks, key=lambda b: _latest_first(b.source, b.change))


def _tree_path(rel: str) -> str:
    """A spec file's path inside the OpenSpec tree, whether the folder given was the repository or `openspec/`."""
    marker = rel.find("openspec/")
    return rel[marker + len("openspec/") :] if marker >= 0 else rel


def stale_reason(
    req: Requirement, blocks: Sequence[RequirementBlock], known_changes: set[str]
) -> RequirementBlock | bool | None:
    """Whether a registry quote went stale in the tree: False when it holds, else the block whose text no longer
    holds it (None: no requirement of that title is left). The quote is looked for in its own file's block, and in
    every block of the same requirement a change the package does not know writes (a newer change rewrote it)."""
    quote = " ".join(req.quote.split())
    same = [b for b in blocks if slug(b.title) == slug(req.section)]
    if not same:
        return None
    own = [b for b in same if b.source == _tree_path(req.source)]
    newer = [b for b in same if b.change not in known_changes]
    judged = [*own, *newer] or same[-1:]
    for block in reversed(judged):
        if quote not in block.text:
            return block
    return False


def latest_scenarios(spec_dir: Path) -> dict[str, Scenario]:
    """Each scenario as the latest change in the tree writes it (the catalogue keeps the first)."""
    found = [
        scenario
        for path, capability, change, rel in spec_files_under(spec_dir)
        for scenario in parse_spec_text(path.read_text(encoding="utf-8"), capability, change, rel)
    ]
    return {s.id: s for s in sorted(found, key=lambda s: _latest_first(s.source, s.change))}


def _text(scenario: Scenario) -> str:
    return " ".join(" ".join([scenario.requirement_text, *(f"{s.keyword} {s.text}" for s in scenario.steps)]).split())


def spec_quoted(requirement: Requirement) -> bool:
    """A registry requirement that quotes an OpenSpec file (not INTERPRETATION or the protocol page)."""
    return requirement.source not in (INTERP, PROTOCOL)


def spec_drift(
    spec_dir: Path,
    cases: Sequence[Case],
    baseline_dir: Path = DEFAULT_SPEC_DIR,
    requirements: Iterable[Requirement] = REQUIREMENTS,
) -> SpecDrift:
    """The team's tree at `spec_dir` against the package's spec (`baseline_dir`), the registry and the cases."""
    ours = {sid: s for sid, s in latest_scenarios(baseline_dir).items()}
    theirs = latest_scenarios(spec_dir)
    citing = _citing(cases)
    by_requirement = _by_requirement(cases)
    quoting: dict[str, list[str]] = {}
    for req in requirements:
        if spec_quoted(req):
            quoting.setdefault(slug(req.section), []).append(req.id)
    added = sorted(set(theirs) - set(ours))
    changed = [
        ChangedScenario(
            id=sid,
            source=theirs[sid].source,
            cases=citing.get(sid, []),
            requirements=quoting.get(slug(theirs[sid].requirement), []),
        )
        for sid in sorted(set(theirs) & set(ours))
        if _text(theirs[sid]) != _text(ours[sid])
    ]
    blocks = all_blocks(spec_dir)
    known = {change for _p, _c, change, _r in spec_files_under(baseline_dir)}
    stale = []
    for req in requirements:
        if not spec_quoted(req) or (reason := stale_reason(req, blocks, known)) is False:
            continue
        block = reason if isinstance(reason, RequirementBlock) else None
        stale.append(
            StaleRequirement(
                id=req.id,
                section=req.section,
                quote=req.quote,
                now=block.text if block else None,
                source=block.source if block else None,
                cases=by_requirement.get(req.id, []),
            )
        )
    return SpecDrift(
        spec_dir=str(spec_dir),
        added=added,
        uncovered=[sid for sid in added if not citing.get(sid)],
        changed=changed,
        removed=sorted(set(ours) - set(theirs)),
        stale=stale,
    )


def _citing(cases: Iterable[Case]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for case in cases:
        for sid in dict.fromkeys(case.spec):
            out.setdefault(sid, []).append(case.id)
    return {k: sorted(v) for k, v in out.items()}


def _by_requirement(cases: Iterable[Case]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for case in cases:
        for rid in case_requirements(case.meta):
            out.setdefault(rid, []).append(case.id)
    return {k: sorted(v) for k, v in out.items()}


def drift_lines(drift: SpecDrift) -> list[str]:
    """The drift as lines a person reads (empty when the tree says what the package's copy says)."""
    lines: list[str] = []
    if drift.added:
        lines.append(f"new scenarios in {drift.spec_dir} ({len(drift.added)}, {len(drift.uncovered)} without a case):")
        lines += [f"  {sid}" + ("  (no case cites it)" if sid in drift.uncovered else "") for sid in drift.added]
    for c in drift.changed:
        lines.append(
            f"changed scenario {c.id} ({c.source}): review its cases {', '.join(c.cases) or '(none)'}"
            + (f"; requirement ids {', '.join(c.requirements)}" if c.requirements else "")
        )
    if drift.removed:
        lines.append(f"scenarios gone from {drift.spec_dir} ({len(drift.removed)}): " + ", ".join(drift.removed))
    for s in drift.stale:
        where = (
            f"its text now ({s.source}) no longer holds it"
            if s.now is not None
            else "no requirement of that title is left"
        )
        lines.append(
            f'stale requirement {s.id}: quotes "{s.quote}" from "{s.section}"; {where}; '
            f"cases naming it: {', '.join(s.cases) or '(none)'}"
        )
    return lines


def catalogue_for(spec: Path | None) -> Mapping[str, Scenario]:
    """The scenario catalogue of `--spec DIR`, else the package's."""
    return load_catalogue(resolve_spec_dir(spec), fresh=True) if spec is not None else load_catalogue()
