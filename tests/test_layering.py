"""The harness is layered one way: llm → system → baselines → corpus/run → score → validity → history → report → devtools → kit → app
→ cli.

Baselines (the reference verifier) sit just above the system: they use its models and policy functions, and
the system never imports them (so the replay fingerprint of `system/` does not change when a baseline does).
Devtools (the local test server, the llama.cpp helpers) are development tooling, not the runtime model layer:
they sit above the report (the local-model closing note is the report's) and below the kit, whose
certification serves each case's scripted model from the local server. Nothing below them imports them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "harness"
# what each layer may import from harness (besides itself and the top-level package)
ALLOWED = {
    "llm": set(),
    "system": {"llm"},
    "baselines": {"llm", "system"},
    "corpus": {"llm", "system", "baselines"},
    "run": {"llm", "system", "corpus", "baselines"},
    "score": {"llm", "system", "corpus", "run", "baselines"},
    "validity": {"llm", "system", "corpus", "run", "score", "baselines"},
    "history": {"llm", "system", "corpus", "run", "score", "baselines", "validity"},
    "report": {"llm", "system", "corpus", "run", "score", "baselines", "history", "validity"},
    "devtools": {"llm", "system", "corpus", "run", "score", "report", "baselines", "history", "validity"},
    "kit": {"llm", "system", "corpus", "run", "score", "report", "baselines", "devtools", "history", "validity"},
    "app": {"llm", "system", "corpus", "run", "score", "report", "kit", "baselines", "devtools", "history", "validity"},
    "cli": {
        "llm",
        "system",
        "corpus",
        "run",
        "score",
        "report",
        "kit",
        "baselines",
        "devtools",
        "history",
        "app",
        "validity",
    },
}


def harness_imports(path: Path) -> set[str]:
    """The harness subpackages a module imports (absolute and relative imports)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module == "harness" and not node.level:
            # from harness import report (a subpackage); __version__ and the like are the top level
            names = [f"harness.{alias.name}" for alias in node.names if (PACKAGE / alias.name).is_dir()]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.level:
                names = [
                    ".".join((*path.relative_to(PACKAGE.parent).with_suffix("").parts[: -node.level], node.module))
                ]
            else:
                names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "harness" and len(parts) > 1:
                found.add(parts[1])
    return found


def modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).parts
        if len(rel) > 1:
            out.append((rel[0], path))
    return out


@pytest.mark.parametrize(
    ("layer", "path"), modules(), ids=lambda v: str(v.relative_to(PACKAGE)) if isinstance(v, Path) else v
)
def test_layer_imports_only_lower_layers(layer: str, path: Path) -> None:
    if layer not in ALLOWED:
        pytest.fail(f"{path} is in a subpackage {layer!r} that the layering test does not know")
    illegal = harness_imports(path) - ALLOWED[layer] - {layer}
    assert not illegal, f"{path.relative_to(PACKAGE)} ({layer}) imports {sorted(illegal)}"


def test_the_checker_sees_an_illegal_import(tmp_path: Path) -> None:
    module = tmp_path / "probe.py"
    module.write_text(
        "from harness.score import conformance\nimport harness.report\nfrom harness.llm import x\nfrom harness import cli\n"
    )
    assert harness_imports(module) == {"score", "report", "llm", "cli"}
