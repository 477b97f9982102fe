"""The scenario catalogue, parsed from the OpenSpec files kept in the repo.

Accepts the plain form (`Requirement: ...`, `Scenario: ...`, `• WHEN ...`) and
canonical markdown (`### Requirement: ...`, `#### Scenario: ...`, `- **WHEN** ...`).
Ids follow INTERPRETATION §1: `<capability>/<requirement-slug>/<scenario-slug>`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

DEFAULT_SPEC_DIR = Path(__file__).resolve().parents[1] / "spec"
"""The spec ships inside the package (an installed wheel has its catalogue); cases/spec links here."""

_REQ = re.compile(r"^\s*(?:#+\s*)?Requirement:\s*(?P<title>.+?)\s*$")
_SCN = re.compile(r"^\s*(?:#+\s*)?Scenario:\s*(?P<title>.+?)\s*$")
_STEP = re.compile(r"^\s*(?:[•\-*]\s*)?(?:\*\*)?(?P<kw>WHEN|THEN|AND|OR|GIVEN)(?:\*\*)?\s+(?P<text>.+?)\s*$")
_SECTION = re.compile(r"^\s*(?:#+\s*)?(?P<kind>ADDED|MODIFIED|REMOVED|RENAMED) Requirements\s*$")


class Step(BaseModel):
    model_config = ConfigDict(frozen=True)
    keyword: str
    text: str


class Scenario(BaseModel):
    model_config = ConfigDict(frozen=True)
    id: str
    capability: str
    requirement: str
    requirement_text: str
    title: str
    steps: tuple[Step, ...]
    change: str
    section: str
    source: str


def slug(title: str) -> str:
    """Lower-case; every run of characters other than a-z0-9 becomes one `-`; trimmed."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def parse_spec_text(text: str, capability: str, change: str, source: str) -> list[Scenario]:
    """Every scenario block of one spec file, in order."""
    scenarios: list[Scenario] = []
    section, requirement, req_lines = "", "", []  # type: ignore[var-annotated]
    current: dict[str, object] | None = None

    def close() -> None:
        nonlocal current
        if current is not None:
            scenarios.append(Scenario(**current))  # type: ignore[arg-type]
            current = None

    for line in text.splitlines():
        if m := _SECTION.match(line):
            close()
            section = m["kind"]
        elif m := _REQ.match(line):
            close()
            requirement, req_lines = m["title"], []
        elif m := _SCN.match(line):
            close()
            current = {
                "id": f"{capability}/{slug(requirement)}/{slug(m['title'])}",
                "capability": capability,
                "requirement": requirement,
                "requirement_text": " ".join(req_lines),
                "title": m["title"],
                "steps": (),
                "change": change,
                "section": section,
                "source": source,
            }
        elif (m := _STEP.match(line)) and current is not None:
            current["steps"] = (*current["steps"], Step(keyword=m["kw"], text=m["text"]))  # type: ignore[misc]
        elif current is None and requirement and line.strip():
            req_lines.append(line.strip())
    close()
    return scenarios


def load_catalogue(spec_dir: Path = DEFAULT_SPEC_DIR, fresh: bool = False) -> dict[str, Scenario]:
    """All scenarios under `spec_dir`, keyed by id. The same id from two changes is kept once. `fresh`: read the
    files again (a team's tree may have moved since; the package's own copy is read once per process)."""
    return dict(_load.__wrapped__(spec_dir.resolve()) if fresh else _load(spec_dir.resolve()))


@lru_cache(maxsize=8)
def _load(spec_dir: Path) -> tuple[tuple[str, Scenario], ...]:
    found: dict[str, Scenario] = {}
    for path, capability, change, rel in spec_files_under(spec_dir):
        for scenario in parse_spec_text(path.read_text(encoding="utf-8"), capability, change, rel):
            found.setdefault(scenario.id, scenario)
    return tuple(found.items())


class RequirementBlock(BaseModel):
    """One `Requirement:` block of a spec file as written: its title, its whole text (steps included, whitespace
    runs as one space), the change it belongs to and the file it is in (relative to the spec folder)."""

    model_config = ConfigDict(frozen=True)
    title: str
    text: str
    change: str
    source: str

    @property
    def archived(self) -> bool:
        return "/archive/" in f"/{self.source}"


def requirement_blocks(text: str, change: str, source: str) -> list[RequirementBlock]:
    """Every requirement block of one spec file, in order (a section header ends a block)."""
    blocks: list[RequirementBlock] = []
    title, lines = "", []  # type: ignore[var-annotated]

    def close() -> None:
        if title:
            blocks.append(
                RequirementBlock(title=title, text=" ".join(" ".join(lines).split()), change=change, source=source)
            )

    for line in text.splitlines():
        if _SECTION.match(line):
            close()
            title, lines = "", []
        elif m := _REQ.match(line):
            close()
            title, lines = m["title"], []
        elif title:
            lines.append(line.strip())
    close()
    return blocks


def spec_files_under(spec_dir: Path) -> list[tuple[Path, str, str, str]]:
    """Each `spec.md` under a spec folder: (path, capability, change, path relative to the folder), sorted."""
    return [
        (path, path.parent.name, path.parent.parent.parent.name, str(path.relative_to(spec_dir)))
        for path in sorted(spec_dir.rglob("spec.md"))
    ]
