"""Export: the case and claim tables, and their round trip through Parquet and `datasets`."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
from datasets import load_from_disk

from harness.cli import main
from harness.corpus.export import CASES_SCHEMA, CLAIMS_SCHEMA, cases_table, claims_table, write_export
from harness.corpus.schema import Case
from tests.corpus.helpers import case, example, quality, write


def small_corpus() -> list[Case]:
    two_labels = quality("q-two-labels", expected__verdict=["PASS", "LOW_CONFID"])
    two_labels["expected"]["claims"]["C3"] = ["reasonable_inference", "overstated"]
    missing = quality("q-missing", tags=["incident-cache"])
    missing["executor"]["structured_output"] = None
    missing["expected"].update({"parse_status": "missing", "claims": None, "verdict": "LOW_CONFID"})
    return [case(d) for d in (example("quality"), example("policy"), two_labels, missing)]


def test_cases_table_rows() -> None:
    rows = {r["id"]: r for r in cases_table(small_corpus()).to_pylist()}
    policy = rows["example-redis-fabricated-id"]
    assert (policy["kind"], policy["verdicts"], policy["model_verdicts"]) == ("policy", ["REJECT"], ["PASS"])
    assert policy["failed_rules"] == ["evidence.invocation_ref"] and policy["claim_count"] == 3
    assert rows["q-two-labels"]["verdicts"] == ["LOW_CONFID", "PASS"]
    assert rows["q-missing"]["claim_count"] == 0 and rows["q-missing"]["model_verdicts"] is None
    assert rows["example-redis-quality"]["question"] == "Carts fail to load since 08:00, why?"


def test_claims_table_rows() -> None:
    rows = {(r["case_id"], r["claim_id"]): r for r in claims_table(small_corpus()).to_pylist()}
    assert len(rows) == 9  # three claims in each of the three cases with a structured output
    assert rows[("q-two-labels", "C3")]["gold_labels"] == ["overstated", "reasonable_inference"]
    c1 = rows[("example-redis-quality", "C1")]
    assert (c1["critical"], c1["status"], c1["gold_labels"]) == (True, "confirmed", ["direct_observation"])
    assert c1["statement"] == "cart-service Redis GETs time out after 3000 ms."


def test_an_empty_corpus_keeps_its_columns() -> None:
    assert cases_table([]).schema == CASES_SCHEMA and cases_table([]).num_rows == 0
    assert claims_table([]).schema == CLAIMS_SCHEMA


def test_round_trip_through_parquet_and_datasets(tmp_path: Path) -> None:
    corpus = small_corpus()
    paths = write_export(corpus, tmp_path / "out")
    cases, claims = cases_table(corpus), claims_table(corpus)
    assert pq.read_table(paths["cases"]).equals(cases)
    assert pq.read_table(paths["claims"]).equals(claims)
    dataset = load_from_disk(str(paths["hf"]))
    assert dataset["cases"].to_list() == cases.to_pylist()
    assert dataset["claims"].to_list() == claims.to_pylist()
    for row, original in zip(dataset["cases"], corpus, strict=True):
        rebuilt = Case.model_validate(json.loads(row["case_json"]))
        assert rebuilt.content_hash() == original.content_hash() == row["content_hash"]


def test_cli_export(tmp_path: Path) -> None:
    for data in (example("quality"), example("policy")):
        write(tmp_path / "cases", data)
    assert main(["cases", "export", str(tmp_path / "cases"), "--out", str(tmp_path / "out")]) == 0
    assert pq.read_table(tmp_path / "out" / "cases.parquet").num_rows == 2
    assert load_from_disk(str(tmp_path / "out" / "hf"))["claims"].num_rows == 6
