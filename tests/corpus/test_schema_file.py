"""The committed case JSON Schema is the one the model generates, and it describes real case files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.cli.cases import schema_text
from harness.corpus.schema import case_json_schema
from tests.corpus.helpers import REPO, example

COMMITTED = REPO / "cases" / "case.schema.json"


def test_committed_schema_equals_the_generated_one() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == schema_text(), "run: vbench cases schema"


def test_cli_writes_the_schema(tmp_path: Path) -> None:
    out = tmp_path / "deep" / "case.schema.json"
    assert main(["cases", "schema", "--out", str(out)]) == 0
    assert json.loads(out.read_text(encoding="utf-8")) == case_json_schema()


def test_the_schema_accepts_the_examples_and_rejects_an_unknown_key() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(case_json_schema())
    for name in ("quality", "policy"):
        assert list(validator.iter_errors(example(name))) == []
    broken = example("quality")
    broken["expected"]["verdictt"] = "PASS"
    assert any("verdictt" in e.message for e in validator.iter_errors(broken))
    broken = example("quality")
    broken["expected"]["claims"]["C1"] = "seen"
    assert list(validator.iter_errors(broken))
