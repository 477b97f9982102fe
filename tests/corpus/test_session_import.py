"""`vbench import sessions`: unlabelled cases from JSONL, SQLite and PostgreSQL, redacted, idempotent, bad rows
named and skipped, sampled by disagreement with the reference verifier."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import JSON, Text
from sqlalchemy.dialects.postgresql import JSONB

from harness.cli import main
from harness.corpus.sessions import RowError
from harness.system.models import Derivability
from tests.corpus.production import SECRETS, case_data, folder_data, jsonl, rows, session_table

QUERY = "SELECT id, session, executor FROM prod_sessions ORDER BY id"


def imported(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["import", "sessions", *args])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_jsonl_rows_become_unlabelled_cases_that_validate_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = rows()
    code, out = imported([str(jsonl(tmp_path / "s.jsonl", source)), "--out", str(tmp_path / "imp")], capsys)
    assert code == 0, out
    files = sorted((tmp_path / "imp").glob("*.yaml"))
    assert [f.stem for f in files] == sorted(r["id"] for r in source)
    by_id = {r["id"]: r for r in source}
    for f in files:
        data = yaml.safe_load(f.read_text())
        row = by_id[data["id"]]
        assert "expected" not in data and data["meta"]["unlabelled"] is True
        # the production evaluation is kept apart; the session is as before the verifier ran, siblings kept
        assert "verifier_evaluation" not in data["session"]["self_evaluation"]
        assert data["session"]["self_evaluation"]["executor_confidence"] == 0.7
        production = row["session"]["self_evaluation"]["verifier_evaluation"]
        assert [c["claim_id"] for c in data["meta"]["production"]["claim_checks"]] == [
            c["claim_id"] for c in production["claim_checks"]
        ]
        assert (
            data["tags"][0] == "production"
            and f"production-{production['verdict'].lower().replace('_', '-')}" in data["tags"]
        )
    code = main(["cases", "validate", str(tmp_path / "imp")])
    out = capsys.readouterr()
    assert code == 2
    assert f"{files[0]}: meta.unlabelled: unlabelled:" in out.out + out.err


def test_secrets_are_redacted_and_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = imported([str(jsonl(tmp_path / "s.jsonl")), "--out", str(tmp_path / "imp")], capsys)
    assert code == 0
    text = "".join(p.read_text() for p in (tmp_path / "imp").glob("*.yaml"))
    assert not [s for s in SECRETS if s in text]
    assert "postgresql://svc_orders:[REDACTED:url_password]@db.internal" in text
    listed = [r for p in (tmp_path / "imp").glob("*.yaml") for r in yaml.safe_load(p.read_text())["meta"]["redactions"]]
    kinds = {r["kind"] for r in listed if r["path"] == "session.tool_invocations[0].result"}
    assert kinds == {"api_key", "bearer_token", "url_password", "email"}
    assert "redacted api_key: 2, bearer_token: 2, email: 2, url_password: 2" in out  # the result, and its excerpt


def test_reimport_adds_nothing_and_rewrites_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = jsonl(tmp_path / "s.jsonl")
    out_dir = tmp_path / "imp"
    assert imported([str(source), "--out", str(out_dir)], capsys)[0] == 0
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in out_dir.glob("*.yaml")}
    code, out = imported([str(source), "--out", str(out_dir)], capsys)
    assert code == 0 and f"0 written, {len(before)} unchanged" in out
    assert {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in out_dir.glob("*.yaml")} == before
    # the same id with other content is never overwritten (labels may point at its claims)
    changed = rows()
    changed[0]["session"]["question"] += " (edited)"
    code, out = imported([str(jsonl(tmp_path / "c.jsonl", changed)), "--out", str(out_dir)], capsys)
    assert f"kept {changed[0]['id']}: its file holds other content" in out
    assert {p.name: p.read_bytes() for p in out_dir.glob("*.yaml")} == {k: v[1] for k, v in before.items()}


def test_bad_rows_are_named_and_skipped_good_rows_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    good = rows()
    no_eval = json.loads(json.dumps(good[1]))
    no_eval["id"] = "no-evaluation"
    del no_eval["session"]["self_evaluation"]["verifier_evaluation"]
    huge = json.loads(json.dumps(good[2]))
    huge["id"] = "huge"
    huge["session"]["tool_invocations"][0]["result"] = "x" * 300_000
    bad_class = json.loads(json.dumps(good[3]))
    bad_class["id"] = "bad-class"
    bad_class["session"]["self_evaluation"]["verifier_evaluation"]["claim_checks"][0]["verification"] = "maybe"
    lines = [
        json.dumps(good[0]),
        '{"id": "cut-off", "session": {',
        json.dumps({"id": "bad-shape", "session": ["a", "list"], "executor": {}}),
        json.dumps(no_eval),
        json.dumps(huge),
        json.dumps(bad_class),
        json.dumps({"id": "Upper Case!", "session": {}, "executor": {}}),
        json.dumps(good[4]),
    ]
    (tmp_path / "s.jsonl").write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("VBENCH_MAX_CASE_BYTES", "200000")
    code, out = imported([str(tmp_path / "s.jsonl"), "--out", str(tmp_path / "imp")], capsys)
    assert code == 0
    assert sorted(p.stem for p in (tmp_path / "imp").glob("*.yaml")) == sorted([good[0]["id"], good[4]["id"]])
    assert "skipped s.jsonl:2: not JSON" in out
    assert "skipped bad-shape: wrong shape: session: an object, not list" in out
    assert (
        "skipped no-evaluation: wrong shape: session.self_evaluation.verifier_evaluation: the production evaluation is missing"
        in out
    )
    assert "skipped huge: too large" in out
    assert (
        "skipped bad-class: wrong shape: session.self_evaluation.verifier_evaluation.claim_checks.0.verification" in out
    )
    assert "skipped Upper Case!: bad id" in out
    assert "2 written, 0 unchanged, 0 kept as they were, 6 bad row(s) skipped" in out


def test_a_row_without_optional_fields_is_imported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    row = rows()[1]
    evaluation = row["session"]["self_evaluation"]["verifier_evaluation"]
    row["session"]["self_evaluation"]["verifier_evaluation"] = {
        "claim_checks": [
            {"claim_id": c["claim_id"], "verification": c["verification"]} for c in evaluation["claim_checks"]
        ]
    }
    code, out = imported([str(jsonl(tmp_path / "s.jsonl", [row])), "--out", str(tmp_path / "imp")], capsys)
    assert code == 0, out
    data = yaml.safe_load((tmp_path / "imp" / f"{row['id']}.yaml").read_text())
    assert "production-pass" not in " ".join(data["tags"]) and len(data["spec"]) == 1


def _table(url: str, json_type: Any) -> None:
    session_table(url, "prod_sessions", json_type, rows())


def _same_as_jsonl(url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    jsonl_dir, db_dir = tmp_path / "from-jsonl", tmp_path / name
    if not jsonl_dir.exists():
        assert imported([str(jsonl(tmp_path / "s.jsonl")), "--out", str(jsonl_dir)], capsys)[0] == 0
    code, out = imported([url, "--query", QUERY, "--out", str(db_dir)], capsys)
    assert code == 0, out
    assert folder_data(db_dir) == folder_data(jsonl_dir)
    # the same sessions from another source are the same content: importing them over the JSONL ones adds nothing
    code, out = imported([url, "--query", QUERY, "--out", str(jsonl_dir)], capsys)
    assert "0 written" in out and "0 kept" in out


@pytest.mark.parametrize("json_type", [Text, JSON], ids=["json-text", "json-type"])
def test_sqlite_source(tmp_path: Path, capsys: pytest.CaptureFixture[str], json_type: Any) -> None:
    url = f"sqlite:///{tmp_path / 'prod.db'}"
    _table(url, json_type)
    _same_as_jsonl(url, tmp_path, capsys, "from-sqlite")


@pytest.mark.parametrize("json_type", [Text, JSON, JSONB], ids=["text", "json", "jsonb"])
def test_postgres_source(postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], json_type: Any) -> None:
    _table(postgres_url, json_type)
    _same_as_jsonl(postgres_url, tmp_path, capsys, "from-postgres")


def test_database_problems_stop_before_any_row_and_hide_the_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'prod.db'}"
    _table(url, Text)
    code, out = imported(
        [url, "--query", "SELECT id, session FROM prod_sessions", "--out", str(tmp_path / "a")], capsys
    )
    assert code == 2 and "lack column(s) ['executor']" in out
    assert not list((tmp_path / "a").glob("*.yaml"))
    code, out = imported([url, "--out", str(tmp_path / "b")], capsys)
    assert code == 2 and "needs --query" in out
    secret = "postgresql+psycopg://u:s3cr3t-pw@127.0.0.1:1/none"
    code, out = imported([secret, "--query", QUERY, "--out", str(tmp_path / "c")], capsys)
    assert code == 2 and "s3cr3t-pw" not in out and "***" in out


def _flip(row: dict[str, Any]) -> None:
    """Make the production verifier answer otherwise on every claim and verdict."""
    evaluation = row["session"]["self_evaluation"]["verifier_evaluation"]
    for check in evaluation["claim_checks"]:
        check["verification"] = "contradicted" if check["verification"] != "contradicted" else "direct_observation"
    evaluation["verdict"] = "PASS" if evaluation["verdict"] != "PASS" else "REJECT"


def test_sample_disagreement_puts_the_most_disagreeing_session_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = rows()
    _flip(source[5])  # the production verifier now disagrees with the reference on every claim and the verdict
    path = jsonl(tmp_path / "s.jsonl", source)
    code, _ = imported([str(path), "--out", str(tmp_path / "d"), "--sample", "disagreement", "--limit", "1"], capsys)
    assert code == 0
    assert [p.stem for p in (tmp_path / "d").glob("*.yaml")] == [source[5]["id"]]
    code, _ = imported([str(path), "--out", str(tmp_path / "r"), "--sample", "random", "--limit", "3"], capsys)
    assert len(list((tmp_path / "r").glob("*.yaml"))) == 3


def test_case_data_ignores_the_source_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The interoperability comparison above drops `meta.source` only: the rest is compared whole."""
    imported([str(jsonl(tmp_path / "s.jsonl")), "--out", str(tmp_path / "imp")], capsys)
    first = sorted((tmp_path / "imp").glob("*.yaml"))[0]
    data = case_data(first)
    assert set(data) >= {"id", "title", "spec", "tags", "meta", "session", "executor"}
    assert {c["verification"] for c in data["meta"]["production"]["claim_checks"]} <= {d.value for d in Derivability}


def test_a_row_whose_case_file_would_be_too_large_is_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limit every reader applies holds for the written file too, not only for the row as read."""
    from harness.corpus.sessions import case_yaml, row_size, to_imported

    row = rows()[1]
    case = to_imported(row["id"], row["session"], row["executor"], "s.jsonl", 10**7)
    assert not isinstance(case, RowError)
    as_row, as_file = row_size(row["session"], row["executor"]), len(case_yaml(case.case_data()).encode())
    assert as_row < as_file
    monkeypatch.setenv("VBENCH_MAX_CASE_BYTES", str(as_file - 1))
    code, out = imported([str(jsonl(tmp_path / "s.jsonl", [row])), "--out", str(tmp_path / "imp")], capsys)
    assert code == 2 and f"skipped {row['id']}: too large: as a case file" in out
    assert not list((tmp_path / "imp").glob("*.yaml"))
