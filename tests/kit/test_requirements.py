"""The requirement registry: stable ids, verbatim quotes, checks that exist, and a coverage page kept current."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.corpus.catalogue import DEFAULT_SPEC_DIR
from harness.kit.requirements import (
    DOC,
    PROTOCOL,
    REQUIREMENTS,
    case_requirements,
    corpus_coverage,
    coverage_markdown,
    requirement,
    resolve,
)
from tests.kit.helpers import ROOT


def _source_text(source: str) -> str:
    path = ROOT / source if source == PROTOCOL else DEFAULT_SPEC_DIR / source
    return " ".join(path.read_text(encoding="utf-8").split())


def test_ids_are_unique_and_levels_are_rfc_2119() -> None:
    ids = [r.id for r in REQUIREMENTS]
    assert len(ids) == len(set(ids))
    assert {r.level for r in REQUIREMENTS} <= {"MUST", "MUST NOT", "SHOULD", "MAY"}


@pytest.mark.parametrize("req", REQUIREMENTS, ids=lambda r: r.id)
def test_each_quote_is_verbatim_from_its_source(req: object) -> None:
    assert req.quote in _source_text(req.source), (req.id, req.source)  # type: ignore[attr-defined]


@pytest.mark.parametrize("req", REQUIREMENTS, ids=lambda r: r.id)
def test_each_check_names_a_function_that_exists(req: object) -> None:
    assert req.checks  # type: ignore[attr-defined]
    for check in req.checks:  # type: ignore[attr-defined]
        assert callable(resolve(check)), check


def test_an_unknown_requirement_id_is_named_with_the_known_ones() -> None:
    with pytest.raises(KeyError, match=r"unknown requirement .no\.such.*facts\.mapping"):
        requirement("no.such")


def test_a_case_names_its_requirements_in_meta_kit() -> None:
    assert case_requirements({"kit": {"requirements": ["facts.mapping", 3]}}) == ["facts.mapping"]
    assert case_requirements({"kit": {"requirements": "refs.model"}}) == ["refs.model"]
    assert case_requirements({"source": "x"}) == []


def test_the_committed_coverage_page_is_current() -> None:
    want = coverage_markdown(corpus_coverage([ROOT / "cases"]))
    got = (ROOT / DOC).read_text(encoding="utf-8")
    assert got == want, "docs/conformance/REQUIREMENTS.md is stale: run python -m harness.kit.requirements --write"


def test_the_page_lists_every_requirement_with_its_cases(tmp_path: Path) -> None:
    text = coverage_markdown({"refs.model": ["case-b", "case-a"]})
    for req in REQUIREMENTS:
        assert f"`{req.id}`" in text
    assert "Cases: `case-b`, `case-a`" in text
