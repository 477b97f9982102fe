"""mkdocs hook: nav entries marked optional appear only when their page exists.

Pages other branches add (a guide, a concepts page) are listed in mkdocs.yml's nav ahead of time under
`extra.optional_pages`; a build on a tree without them leaves them out instead of failing `--strict`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def on_config(config: Any, **_: Any) -> Any:
    docs = Path(config["docs_dir"])
    optional = set(config["extra"].get("optional_pages", []))
    config["nav"] = _prune(config["nav"], docs, optional)
    return config


def _prune(items: Any, docs: Path, optional: set[str]) -> Any:
    kept = []
    for item in items:
        if isinstance(item, dict):
            ((title, value),) = item.items()
            if isinstance(value, list):
                value = _prune(value, docs, optional)
                if value:
                    kept.append({title: value})
            elif value not in optional or (docs / value).exists():
                kept.append(item)
        elif item not in optional or (docs / item).exists():
            kept.append(item)
    return kept
