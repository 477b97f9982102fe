"""Production sessions for the tests, made by the project's own fixture generator from the disk quality cases
(`harness.devtools.production_sessions`: each case run through the pipeline, as the service persists it)."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import Column, MetaData, String, Table, Text, create_engine, insert

from harness.devtools.production_sessions import PLANTED, production_rows, write_jsonl

REPO = Path(__file__).resolve().parents[2]
QUALITY = REPO / "cases" / "quality" / "disk"
SECRETS = (
    "eyJhbGciOiJIUzI1NiJ9",
    "sk-proj-abcdefghijklmnopqrstuvwx0123",
    "hunter2-Secret",
    "oncall.engineer@example.com",
)
"""The secrets `PLANTED` holds: none may be in any imported file."""
assert all(s in PLANTED for s in SECRETS)


@cache
def _rows() -> str:
    return json.dumps(production_rows([QUALITY]))


def rows() -> list[dict[str, Any]]:
    """A fresh copy of the rows (a test may change its copy)."""
    return copy.deepcopy(json.loads(_rows()))


def jsonl(path: Path, data: list[dict[str, Any]] | None = None) -> Path:
    return write_jsonl(rows() if data is None else data, path)


def case_data(path: Path) -> dict[str, Any]:
    """A written case file's mapping, without the field that names the source (it differs by source)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["meta"].pop("source")
    return data


def folder_data(folder: Path) -> dict[str, dict[str, Any]]:
    return {p.name: case_data(p) for p in sorted(folder.glob("*.yaml"))}


def session_table(url: str, name: str, json_type: Any, data: list[dict[str, Any]]) -> None:
    """A table `name(id, session, executor)` holding the rows, its two blocks as `json_type` (Text: JSON text)."""
    engine = create_engine(url)
    meta = MetaData()
    table = Table(
        name,
        meta,
        Column("id", String(200), primary_key=True),
        Column("session", json_type),
        Column("executor", json_type),
    )
    meta.drop_all(engine)
    meta.create_all(engine)

    def cell(value: Any) -> Any:
        return json.dumps(value) if json_type is Text else value

    with engine.begin() as conn:
        conn.execute(
            insert(table),
            [{"id": r["id"], "session": cell(r["session"]), "executor": cell(r["executor"])} for r in data],
        )
    engine.dispose()
