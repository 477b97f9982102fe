"""`--store` (issue 17): the policy corpus on a real PostgreSQL at concurrency 4 ends with 0 errors and the same
outcomes as the private SQLite stores; every case writes under its own namespace, sibling keys of
`self_evaluation` survive, rows stay after the run and a second run into the same database succeeds too.
Everything is checked by reading the rows back with SQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from harness.cli import main
from harness.corpus.loader import load_cases
from harness.corpus.schema import MAX_SESSION_ID, Case
from harness.run.folder import read_manifest, read_results
from harness.run.log import ResultRecord, persisted_of
from harness.system.store import EVALUATION_KEY, KEY_LENGTH, store_url
from harness.system.trace import DEFAULT_EXCERPT_CHARS
from tests.corpus.helpers import example, write

REPO = Path(__file__).resolve().parents[2]
POLICY = REPO / "cases" / "policy"
OUTCOME_FIELDS = ("parse_status", "gatekeeper", "claims", "model_verdict", "verdict", "derived_verdict", "persisted")


def run_policy(out: Path, *extra: str) -> list[ResultRecord]:
    args = ["run", "--cases", str(POLICY), "--out", str(out), "--no-cache", "--no-report", "--concurrency", "4"]
    assert main([*args, *extra]) == 0
    return sorted(read_results(out), key=lambda r: r.case_id)


def outcomes(records: list[ResultRecord]) -> dict[str, dict[str, Any]]:
    return {r.case_id: r.model_dump(include=set(OUTCOME_FIELDS)) for r in records}


def rows_exist(url: str) -> bool:
    """Whether the database has the store's tables yet (an earlier test of the session may have made them)."""
    engine = sa.create_engine(store_url(url))
    try:
        return sa.inspect(engine).has_table("diagnosis_session")
    finally:
        engine.dispose()


def rows(url: str, sql: str, **params: Any) -> list[Any]:
    engine = sa.create_engine(store_url(url))
    try:
        with engine.connect() as conn:
            return list(conn.execute(sa.text(sql), params))
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def sqlite_run(tmp_path_factory: pytest.TempPathFactory) -> list[ResultRecord]:
    return run_policy(tmp_path_factory.mktemp("sqlite") / "run")


def check_rows(url: str, records: list[ResultRecord]) -> None:
    """Each case's rows, read back with SQL: its session and other sessions under its namespace, its invocations,
    and a self_evaluation that holds the case's sibling keys next to the verifier's evaluation."""
    cases = {c.id: c for c in load_cases([POLICY])}
    for record in records:
        case: Case = cases[record.case_id]
        ns = record.store_namespace
        assert ns and ns.startswith("vb")
        (row,) = rows(url, "SELECT self_evaluation FROM diagnosis_session WHERE id = :id", id=ns + case.session_id)
        stored = row[0] if isinstance(row[0], dict) else json.loads(row[0])
        for key, value in case.session.self_evaluation.items():  # sibling keys preserved
            if key != EVALUATION_KEY:  # a stale evaluation a case starts with is replaced, by design
                assert stored[key] == value, (case.id, key)
        persisted = persisted_of(record, case, DEFAULT_EXCERPT_CHARS)  # the trace is referenced from cases.jsonl
        assert stored["verifier_evaluation"] == persisted["verifier_evaluation"]  # type: ignore[index]
        invocation_ids = rows(
            url,
            "SELECT invocation_id FROM tool_invocation WHERE session_id = :id ORDER BY seq",
            id=ns + case.session_id,
        )
        assert [r[0] for r in invocation_ids] == [inv.id for inv in case.session.tool_invocations]
        others = rows(url, "SELECT id FROM diagnosis_session WHERE id LIKE :p", p=ns.replace(".", "_") + "%")
        assert len(others) == 1 + len(case.session.other_sessions)


def test_the_policy_corpus_on_postgresql_at_concurrency_4(
    postgres_url: str, sqlite_run: list[ResultRecord], tmp_path: Path
) -> None:
    bare = postgres_url.replace("postgresql+psycopg://", "postgresql://")  # read as psycopg 3's URL
    count = "SELECT count(*) FROM diagnosis_session"
    other_tests = rows(bare, count)[0][0] if rows_exist(bare) else 0  # the cluster is shared by the session
    first = run_policy(tmp_path / "pg-1", "--store", bare)
    assert [r.error for r in first if r.error] == []
    assert outcomes(first) == outcomes(sqlite_run)
    assert any(r.sibling_keys for r in first) or any(c.session.self_evaluation for c in load_cases([POLICY])), (
        "the corpus must have sibling keys for this test to check them"
    )
    check_rows(bare, first)
    assert read_manifest(tmp_path / "pg-1").settings["store"] == postgres_url
    before = rows(bare, count)[0][0] - other_tests

    second = run_policy(tmp_path / "pg-2", "--store", bare)  # the first run's rows stay; this one succeeds too
    assert [r.error for r in second if r.error] == []
    assert outcomes(second) == outcomes(sqlite_run)
    assert rows(bare, count)[0][0] - other_tests == 2 * before
    check_rows(bare, first)
    check_rows(bare, second)


def test_a_sqlite_file_store_keeps_its_rows(sqlite_run: list[ResultRecord], tmp_path: Path) -> None:
    db = tmp_path / "stores" / "verifier.db"
    records = run_policy(tmp_path / "run", "--store", str(db))
    assert outcomes(records) == outcomes(sqlite_run)
    check_rows(f"sqlite:///{db}", records)


def test_a_store_that_cannot_be_opened_exits_2_without_its_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["run", "--cases", str(POLICY), "--out", str(tmp_path / "run"), "--no-cache", "--no-report"]
    assert main([*args, "--store", "postgresql://u:hunter2-pw@127.0.0.1:1/db"]) == 2
    err = capsys.readouterr().err
    assert "cannot open the store postgresql+psycopg://u:***@127.0.0.1:1/db" in err and "hunter2-pw" not in err
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_store_urls() -> None:
    assert store_url("postgresql://u@h:5/d") == "postgresql+psycopg://u@h:5/d"
    assert store_url("postgres://u@h/d") == "postgresql+psycopg://u@h/d"
    assert store_url("postgresql+psycopg://u@h/d") == "postgresql+psycopg://u@h/d"
    assert store_url("sqlite://") == "sqlite://"
    assert store_url("x/y.db") == f"sqlite:///{Path('x/y.db').resolve()}"


def _case_with(tmp_path: Path, **changes: Any) -> Path:
    data = example("policy")
    if "session_id" in changes:
        data["session"]["id"] = changes["session_id"]
    if "tool_name" in changes:
        data["session"]["tool_invocations"][0]["tool_name"] = changes["tool_name"]
    if "result" in changes:
        data["session"]["tool_invocations"][0]["result"] = changes["result"]
    return write(tmp_path, data)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"session_id": "s" * (MAX_SESSION_ID + 1)}, f"session.id is {MAX_SESSION_ID + 1} characters"),
        ({"tool_name": "t" * (KEY_LENGTH + 1)}, f"tool_name is {KEY_LENGTH + 1} characters"),
        ({"result": "before\x00after"}, "session.tool_invocations[0].result holds a NUL character"),
    ],
)
def test_the_contract_refuses_what_a_backend_cannot_hold(
    tmp_path: Path, change: dict[str, str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _case_with(tmp_path / "cases", **change)
    assert main(["cases", "validate", str(tmp_path / "cases")]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and message in err


def test_the_longest_ids_the_contract_allows_run_on_postgresql(postgres_url: str, tmp_path: Path) -> None:
    _case_with(tmp_path / "cases", session_id="s" * MAX_SESSION_ID, tool_name="t" * KEY_LENGTH)
    out = tmp_path / "run"
    args = ["run", "--cases", str(tmp_path / "cases"), "--out", str(out), "--no-cache", "--no-report"]
    assert main([*args, "--store", postgres_url]) in (0, 1)  # the example's own expectations are not the point
    (record,) = read_results(out)
    assert record.error is None and record.verdict is not None
    ids = rows(
        postgres_url,
        "SELECT id FROM diagnosis_session WHERE id = :id",
        id=record.store_namespace + "s" * MAX_SESSION_ID,
    )  # type: ignore[operator]
    assert len(ids) == 1 and len(ids[0][0]) == KEY_LENGTH
