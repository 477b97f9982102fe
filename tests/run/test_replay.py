"""Result replay on a warm rerun: the real client against the local server, the reply cache, and `run_study`.

Replay must give the very records the system gave, and must step aside for anything that could change them.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from pathlib import Path

import pytest
import yaml

import harness
from harness.cli import main
from harness.cli.run import default_factory
from harness.corpus.loader import load_cases
from harness.devtools.local_server import Fault, LocalOpenAIServer
from harness.run import plan as plan_module
from harness.run import replay as replay_module
from harness.run import runner as runner_module
from harness.run.folder import read_manifest, read_results
from harness.run.log import ResultRecord
from harness.run.replay import REPLAY_DIR, fingerprint_of
from harness.run.runner import run_study
from harness.run.study import ModelSettings, Study
from harness.score.scoring import GateSettings, score_run
from tests.run.corpus_builder import write_corpus

MODEL = "openai:local-model"
VOLATILE = {"cached", "replayed", "finished_at", "latency_ms", "harness_cpu_ms", "store_namespace"}  # per run by design


def study_for(corpus: Path, cache: Path | None, server: LocalOpenAIServer, **kwargs) -> Study:
    return Study(
        cases=[corpus],
        models=[MODEL],
        cache=cache,
        concurrency=3,
        model_settings={MODEL: ModelSettings(base_url=server.base_url, max_attempts=1)},
        report=False,
        **kwargs,
    )


def run(study: Study, out: Path) -> list[ResultRecord]:
    run_study(study, load_cases(study.cases), out, default_factory(study))
    return sorted(read_results(out), key=lambda r: (r.case_id, r.variant))


def stable(records: list[ResultRecord]) -> list[dict]:
    return [r.model_dump(exclude=VOLATILE) for r in records]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "cases")


def test_a_warm_rerun_replays_every_quality_result_unchanged(
    tmp_path: Path, corpus: Path, openai_server: LocalOpenAIServer
) -> None:
    study = study_for(corpus, tmp_path / "cache", openai_server)
    cold = run(study, tmp_path / "cold")
    sent = openai_server.request_count
    warm = run(study, tmp_path / "warm")
    assert openai_server.request_count == sent  # no request
    quality = [r for r in warm if r.kind == "quality"]
    assert len(quality) == 7 and all(r.replayed and r.cached for r in quality)
    assert not any(r.replayed for r in warm if r.kind == "policy")  # conformance always runs
    assert not any(r.replayed for r in cold)
    assert stable(warm) == stable(cold)
    assert read_manifest(tmp_path / "warm").settings["replay"] is True
    variant = score_run(tmp_path / "warm", GateSettings()).to_json()["variants"][0]
    assert (variant["cached_results"], variant["replayed_results"]) == (7, 7)
    assert variant["harness_cpu_ms"]["p50"] is None  # no CPU was spent on a replayed result in this run


def test_no_replay_runs_the_system_on_the_cached_replies(
    tmp_path: Path, corpus: Path, openai_server: LocalOpenAIServer
) -> None:
    cold = run(study_for(corpus, tmp_path / "cache", openai_server), tmp_path / "cold")
    sent = openai_server.request_count
    rerun = run(study_for(corpus, tmp_path / "cache", openai_server, replay=False), tmp_path / "rerun")
    assert openai_server.request_count == sent
    quality = [r for r in rerun if r.kind == "quality"]
    assert all(r.cached and not r.replayed for r in quality)
    assert stable(rerun) == stable(cold)
    assert read_manifest(tmp_path / "rerun").settings["replay"] is False


def test_without_a_reply_cache_nothing_is_kept_or_replayed(
    tmp_path: Path, corpus: Path, openai_server: LocalOpenAIServer
) -> None:
    run(study_for(corpus, None, openai_server), tmp_path / "a")
    again = run(study_for(corpus, None, openai_server), tmp_path / "b")
    assert openai_server.request_count == 14
    assert not any(r.replayed or r.cached for r in again)


def test_changed_code_reruns_the_system_but_not_the_model(
    tmp_path: Path, corpus: Path, openai_server: LocalOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    study = study_for(corpus, tmp_path / "cache", openai_server)
    run(study, tmp_path / "cold")
    sent = openai_server.request_count
    monkeypatch.setattr(runner_module, "code_fingerprint", lambda: "another-build")
    monkeypatch.setattr(plan_module, "code_fingerprint", lambda: "another-build")  # the manifest's record
    rerun = run(study, tmp_path / "rerun")
    assert openai_server.request_count == sent  # replies still cached
    assert not any(r.replayed for r in rerun)
    assert all(r.cached for r in rerun if r.kind == "quality")


def test_a_changed_case_or_setting_is_run_again(tmp_path: Path, corpus: Path, openai_server: LocalOpenAIServer) -> None:
    study = study_for(corpus, tmp_path / "cache", openai_server)
    run(study, tmp_path / "cold")
    path = corpus / "q2.yaml"
    data = yaml.safe_load(path.read_text())
    data["session"]["question"] += " (edited)"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    edited = run(study, tmp_path / "edited")
    replayed = {r.case_id for r in edited if r.replayed}
    assert "q2" not in replayed and len(replayed) == 6
    guard_off = run(study_for(corpus, tmp_path / "cache", openai_server, claim_guard=False), tmp_path / "guard")
    assert not any(r.replayed for r in guard_off)
    excerpt = run(study_for(corpus, tmp_path / "cache", openai_server, excerpt_chars=99), tmp_path / "excerpt")
    assert not any(r.replayed for r in excerpt)
    other_epoch = run(study_for(corpus, tmp_path / "cache", openai_server, epochs=2), tmp_path / "epochs")
    assert {r.epoch for r in other_epoch if r.replayed} == {1}  # epoch 2 has its own replies and results


def kept_results(cache: Path) -> dict[str, str]:
    """Every kept result of the cache (its one fingerprint's store), read with plain sqlite3."""
    (path,) = (cache / REPLAY_DIR).glob("*.sqlite3")
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return dict(conn.execute("SELECT key, text FROM entries").fetchall())


def set_kept_results(cache: Path, entries: dict[str, str]) -> None:
    (path,) = (cache / REPLAY_DIR).glob("*.sqlite3")
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.executemany("UPDATE entries SET text = ? WHERE key = ?", [(t, k) for k, t in entries.items()])


def test_transport_errors_are_not_kept_and_a_broken_entry_is_a_miss(
    tmp_path: Path, corpus: Path, openai_server: LocalOpenAIServer
) -> None:
    openai_server.script(*[Fault(kind="server_error", status=500)] * 7)
    failed = run(study_for(corpus, tmp_path / "cache", openai_server), tmp_path / "failed")
    assert all(r.error for r in failed if r.kind == "quality")
    assert not (tmp_path / "cache" / REPLAY_DIR).exists()
    run(study_for(corpus, tmp_path / "cache", openai_server), tmp_path / "ok")
    entries = kept_results(tmp_path / "cache")
    assert len(entries) == 7
    keys = sorted(entries)
    set_kept_results(tmp_path / "cache", {keys[0]: "{not json", keys[1]: entries[keys[2]]})  # another task's result
    rerun = run(study_for(corpus, tmp_path / "cache", openai_server), tmp_path / "rerun")
    assert sum(r.replayed for r in rerun) == 5
    assert {r.case_id for r in rerun if r.kind == "quality"} == {f"q{i}" for i in range(1, 8)}


def test_the_fingerprint_follows_every_source_byte_of_the_layers_that_make_a_record(tmp_path: Path) -> None:
    pkg = tmp_path / "harness"
    (pkg / "system" / "prompts").mkdir(parents=True)
    (pkg / "system" / "policy.py").write_text("RULE = 1\n")
    (pkg / "system" / "prompts" / "user.j2").write_text("{{ question }}\n")
    first = fingerprint_of(pkg)
    assert fingerprint_of(pkg) == first
    (pkg / "system" / "policy.py").write_text("RULE = 2\n")
    second = fingerprint_of(pkg)
    assert second != first
    (pkg / "system" / "prompts" / "user.j2").write_text("{{ question }}!\n")
    assert fingerprint_of(pkg) not in (first, second)
    (pkg / "system" / "__pycache__").mkdir()
    before = fingerprint_of(pkg)
    (pkg / "system" / "__pycache__" / "policy.cpython-311.pyc").write_bytes(b"\0")
    assert fingerprint_of(pkg) == before  # compiled files are not source
    (pkg / "report").mkdir()
    (pkg / "report" / "render.py").write_text("TITLE = 'new'\n")
    (pkg / "cli").mkdir()
    (pkg / "cli" / "report.py").write_text("HELP = 'new'\n")
    assert fingerprint_of(pkg) == before  # above run/: they only read records
    (pkg / "cli" / "run.py").write_text("def default_factory(): ...\n")
    assert fingerprint_of(pkg) != before  # it builds the verifiers a run uses
    before = fingerprint_of(pkg)
    (pkg / "__init__.py").write_text("__version__ = '9'\n")
    assert fingerprint_of(pkg) != before
    assert replay_module.code_fingerprint() == fingerprint_of(Path(harness.__file__).resolve().parent)


def test_the_run_closes_every_client_it_opened(tmp_path: Path, corpus: Path, openai_server: LocalOpenAIServer) -> None:
    study = study_for(corpus, None, openai_server, prompts=["baseline", "strict-evidence"], epochs=2)
    made = []

    def factory(variant, epoch):
        made.append(default_factory(study)(variant, epoch))
        return made[-1]

    run_study(study, load_cases(study.cases), tmp_path / "run", factory)
    models = [verifier.model for verifier in made]
    assert len(models) == 4 and all(m.transport == "aiohttp" for m in models)
    assert all(m._client is None for m in models)  # aclose() ran in the run's loop: no unclosed aiohttp session


def test_a_reply_from_another_endpoint_is_not_a_replay(
    tmp_path: Path, corpus: Path, openai_server: LocalOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The endpoint can come from the environment alone: it is part of the reply identity, not of the variant."""
    study = Study(cases=[corpus], models=[MODEL], cache=tmp_path / "cache", concurrency=3, report=False)
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    run(study, tmp_path / "first")
    with LocalOpenAIServer() as other:
        monkeypatch.setenv("OPENAI_BASE_URL", other.base_url)
        moved = run(study, tmp_path / "moved")
        assert other.request_count == 7
    assert not any(r.replayed or r.cached for r in moved)
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    assert all(r.replayed for r in run(study, tmp_path / "back") if r.kind == "quality")


def test_no_replay_through_the_cli_runs_the_system_and_refreshes_the_kept_results(
    tmp_path: Path, corpus: Path, openai_server: LocalOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-replay")
    args = ["run", "--cases", str(corpus), "--model", MODEL, "--base-url", openai_server.base_url]
    args += ["--cache", str(tmp_path / "cache"), "--no-report"]
    assert main([*args, "--out", str(tmp_path / "cold")]) == 0
    entries = kept_results(tmp_path / "cache")
    assert len(entries) == 7
    set_kept_results(tmp_path / "cache", dict.fromkeys(entries, "{broken"))  # --no-replay must rewrite them all
    assert main([*args, "--out", str(tmp_path / "rerun"), "--no-replay"]) == 0
    rerun = read_results(tmp_path / "rerun")
    assert not any(r.replayed for r in rerun) and all(r.cached for r in rerun if r.kind == "quality")
    assert read_manifest(tmp_path / "rerun").settings["replay"] is False
    rewritten = kept_results(tmp_path / "cache")
    assert rewritten.keys() == entries.keys()
    assert all(ResultRecord.model_validate_json(text) for text in rewritten.values())  # every entry written again
    assert main([*args, "--out", str(tmp_path / "warm")]) == 0
    assert sum(r.replayed for r in read_results(tmp_path / "warm")) == 7


def test_a_cache_that_cannot_be_written_loses_no_result(
    tmp_path: Path,
    corpus: Path,
    openai_server: LocalOpenAIServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A cold run on a cache that cannot be written: the replies were paid for, so every result is kept; each cache
    says so once. The cache path is a file, so no folder can be made under it (a chmod would not stop root)."""
    (tmp_path / "cache").write_text("not a folder")  # both the reply cache and the replay entries fail to write
    with caplog.at_level(logging.WARNING):
        cold = run(study_for(corpus, tmp_path / "cache", openai_server), tmp_path / "cold")
    assert len(cold) == 8 and not any(r.error for r in cold) and openai_server.request_count == 7
    assert all(r.verdict for r in cold)
    assert len((tmp_path / "cold" / "results.jsonl").read_text().splitlines()) == 8
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum("response cache: cannot write" in m for m in messages) == 1
    assert sum("result replay: cannot write" in m for m in messages) == 1


def test_a_factory_that_fails_later_gives_error_records_not_a_dead_run(
    tmp_path: Path, corpus: Path, openai_server: LocalOpenAIServer
) -> None:
    study = study_for(corpus, tmp_path / "cache", openai_server, epochs=2)
    build = default_factory(study)

    def factory(variant, epoch):
        if epoch == 2:
            raise RuntimeError("no second client")
        return build(variant, epoch)

    run_study(study, load_cases(study.cases), tmp_path / "run", factory)
    records = read_results(tmp_path / "run")
    second = [r for r in records if r.epoch == 2]
    assert len(second) == 7 and all(r.error == "harness_error: RuntimeError: no second client" for r in second)
    assert all(r.error is None for r in records if r.epoch == 1)


def test_the_reference_verifier_is_never_replayed(tmp_path: Path, corpus: Path) -> None:
    study = Study(cases=[corpus], models=["reference"], cache=tmp_path / "cache", report=False)
    run(study, tmp_path / "a")
    again = run(study, tmp_path / "b")
    assert not any(r.replayed for r in again) and not (tmp_path / "cache" / REPLAY_DIR).exists()
