"""Case builders for the corpus tests: the two spec examples, as dicts to vary and write."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from harness.corpus.schema import Case

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parents[2]


def example(name: str = "quality") -> dict[str, Any]:
    """A fresh copy of `example-redis-quality` or `example-redis-fabricated-id` (policy)."""
    file = {"quality": "example-redis-quality.yaml", "policy": "example-redis-fabricated-id.yaml"}[name]
    return copy.deepcopy(yaml.safe_load((DATA / file).read_text(encoding="utf-8")))


def write(folder: Path, data: dict[str, Any] | str, name: str | None = None) -> Path:
    """Write a case (a dict, or raw YAML text) as `<name or id>.yaml` under `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path = folder / f"{name}.yaml"
        path.write_text(data, encoding="utf-8")
    else:
        path = folder / f"{name or data['id']}.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def case(data: dict[str, Any]) -> Case:
    return Case.model_validate(data)


def quality(case_id: str, **changes: Any) -> dict[str, Any]:
    """The quality example under another id; `changes` set top-level or `expected` keys (`expected__verdict`)."""
    data = example("quality")
    data["id"] = case_id
    for key, value in changes.items():
        parts = key.split("__")
        target = data
        for part in parts[:-1]:
            target = target[part]
        target[parts[-1]] = value
    return data
