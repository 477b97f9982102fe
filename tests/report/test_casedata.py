"""The drill-down's case data: the claims shown are the system's strict parse of what the case gave, whichever
of its two forms (`structured_output` as an object, `structured_output_raw` as the exact text) it was given in."""

from __future__ import annotations

import copy
import datetime
import json
from pathlib import Path
from typing import Any

import yaml

from harness.cli import main
from harness.report.casedata import case_payload, clip
from harness.system.parser import output_of
from tests.report.conftest import embedded

ROOT = Path(__file__).resolve().parents[2]
QUALITY_CASE = ROOT / "cases" / "quality" / "batch" / "q-batch-airflow-401-and-exit-code.yaml"


def as_raw_text(case: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The case with its executor output moved from `structured_output` to `structured_output_raw` (a string)."""
    raw_case = copy.deepcopy(case)
    raw_case["id"] = f"{case['id']}-raw"
    text = json.dumps(raw_case["executor"].pop("structured_output"), indent=2)
    raw_case["executor"]["structured_output_raw"] = text
    return raw_case, text


def test_a_case_given_as_raw_text_shows_the_claims_of_its_strict_parse(tmp_path: Path) -> None:
    case = yaml.safe_load(QUALITY_CASE.read_text(encoding="utf-8"))
    raw_case, raw_text = as_raw_text(case)
    corpus = tmp_path / "cases"
    corpus.mkdir()
    for c in (case, raw_case):
        (corpus / f"{c['id']}.yaml").write_text(yaml.safe_dump(c, sort_keys=False, allow_unicode=True))
    out = tmp_path / "run"
    assert main(["run", "--cases", str(corpus), "--no-cache", "--out", str(out)]) in (0, 1)
    data = embedded(out / "report.html")
    (run,) = {r["run"] for r in data["records"]}
    as_object, as_raw = data["cases"][f"{run}::{case['id']}"], data["cases"][f"{run}::{raw_case['id']}"]
    expected = [c["claim_id"] for c in case["executor"]["structured_output"]["claims"]]
    assert list(as_object["claims"]) == expected
    assert as_raw["claims"] == as_object["claims"]  # the same strict parse, whichever form the case used
    assert as_raw["claims"]["C1"]["bindings"] == ["T1 · airflow_get_task_instances · inv-b801"]
    # the text shown is what the case gave: the raw string as written, the object serialised
    assert as_raw["structured"] == {"text": raw_text, "more": 0}
    assert as_object["structured"]["text"] == json.dumps(
        case["executor"]["structured_output"], ensure_ascii=False, indent=1
    )


def test_claims_come_from_the_parse_passed_in_not_from_the_case_text() -> None:
    structured = {"claims": [{"claim_id": "C1", "statement": "s", "status": "confirmed", "critical": True}]}
    raw = {"id": "c", "executor": {"final_answer": "a", "structured_output_raw": json.dumps(structured)}}
    assert list(case_payload(raw, output_of(structured))["claims"]) == ["C1"]
    assert case_payload(raw, output_of(structured))["structured"]["text"] == json.dumps(structured)
    # an object the strict parser did not accept (no reading, or an invalid one) shows its text but no claims
    unparsed = {"id": "c", "executor": {"structured_output": structured}}
    for output in (None, output_of({"claims": "not a list"})):
        payload = case_payload(unparsed, output)
        assert payload["claims"] == {} and payload["structured"]["text"] == json.dumps(structured, indent=1)


def test_a_structured_output_is_shown_as_indented_json_of_the_same_meaning() -> None:
    given = {"claims": [{"claim_id": "C1", "statement": "é <b>", "n": 1e-05, "ok": True, "none": None}], "k": {"2": 3}}
    shown = case_payload({"id": "c", "executor": {"structured_output": given}})["structured"]["text"]
    assert json.loads(shown) == given
    assert shown.splitlines()[1] == ' "claims": ['  # indented by one, one item per line, for a person to read


def test_a_value_json_has_no_form_for_is_shown_as_its_text() -> None:
    when = datetime.datetime(2026, 12, 4, 12, 0, tzinfo=datetime.UTC)  # a YAML timestamp loads as this
    shown = clip({"at": when, "raw": b"\x00\xff"}, 1000)["text"]
    assert json.loads(shown)["at"].startswith("2026-12-04") and json.loads(shown)["raw"] == "AP8="
