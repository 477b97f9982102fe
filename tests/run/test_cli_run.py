"""`vbench run` end to end: the real OpenAI client against the local server, cache, resume after kill -9, exit codes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from statistics import NormalDist

import pytest
import yaml

from harness.cli import main
from harness.devtools.local_server import Fault, LocalOpenAIServer
from harness.run.folder import read_results
from tests.run.corpus_builder import quality_case, write_corpus

ENTRY = "import sys; from harness.cli import main; sys.exit(main())"


def llm_args(server: LocalOpenAIServer, corpus: Path, out: Path, *extra: str) -> list[str]:
    return [
        "run",
        "--cases",
        str(corpus),
        "--model",
        "openai:local-model",
        "--base-url",
        server.base_url,
        "--out",
        str(out),
        "--no-report",
        *extra,
    ]


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    key = "sk-test-never-written-anywhere-1234"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    return key


def test_two_prompts_two_epochs_end_to_end(tmp_path: Path, openai_server: LocalOpenAIServer, api_key: str) -> None:
    corpus = write_corpus(tmp_path / "cases")
    out = tmp_path / "run"
    code = main(
        llm_args(
            openai_server,
            corpus,
            out,
            "--prompt",
            "baseline",
            "--prompt",
            "strict-evidence",
            "--epochs",
            "2",
            "--cache",
            str(tmp_path / "cache"),
        )
    )
    assert code == 0
    records = read_results(out)
    assert len(records) == 1 + 7 * 2 * 2
    assert openai_server.request_count == 7 * 2 * 2
    summary = json.loads((out / "summary.json").read_text())
    assert [v["name"] for v in summary["variants"]] == [
        "openai:local-model@baseline",
        "openai:local-model@strict-evidence",
    ]
    assert all(v["prompt_hash"] for v in summary["variants"])
    assert summary["variants"][0]["prompt_hash"] != summary["variants"][1]["prompt_hash"]
    assert len(summary["comparisons"]) == 1 and summary["comparisons"][0]["cases"] == 7
    assert summary["variants"][0]["stability"] is not None
    for name in ("manifest.json", "summary.json", "junit.xml", "results.jsonl", "outcomes.jsonl", "cases.jsonl"):
        text = (out / name).read_text()
        assert api_key not in text, name
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["prompts"]["baseline"]["hash"] == summary["variants"][0]["prompt_hash"]


def test_warm_cache_rerun_sends_no_request(tmp_path: Path, openai_server: LocalOpenAIServer, api_key: str) -> None:
    corpus = write_corpus(tmp_path / "cases")
    cache = str(tmp_path / "cache")
    assert main(llm_args(openai_server, corpus, tmp_path / "cold", "--cache", cache)) == 0
    cold_requests = openai_server.request_count
    assert cold_requests == 7
    assert main(llm_args(openai_server, corpus, tmp_path / "warm", "--cache", cache)) == 0
    assert openai_server.request_count == cold_requests
    warm = read_results(tmp_path / "warm")
    assert all(r.cached for r in warm if r.kind == "quality")
    cold_summary = json.loads((tmp_path / "cold" / "summary.json").read_text())["variants"][0]
    warm_summary = json.loads((tmp_path / "warm" / "summary.json").read_text())["variants"][0]
    assert warm_summary["claim_accuracy"] == cold_summary["claim_accuracy"]
    assert main(llm_args(openai_server, corpus, tmp_path / "nocache", "--no-cache")) == 0
    assert openai_server.request_count == cold_requests + 7


@pytest.mark.slow
def test_resume_after_kill_9_ends_with_the_same_metrics(tmp_path: Path, api_key: str) -> None:
    corpus = write_corpus(tmp_path / "cases")
    with LocalOpenAIServer(latency_ms=250) as server:
        out = tmp_path / "killed"
        args = llm_args(
            server,
            corpus,
            out,
            "--prompt",
            "baseline",
            "--prompt",
            "strict-evidence",
            "--no-cache",
            "--concurrency",
            "2",
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", ENTRY, *args],
            env={**os.environ, "OPENAI_API_KEY": api_key},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        results = out / "results.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if results.exists() and results.read_text().count("\n") >= 6:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        finished = read_results(out)
        finished_quality = sum(r.kind == "quality" for r in finished)
        assert 0 < finished_quality < 14, "the kill must land mid-run"
        server.reset()
        assert main([*args, "--resume"]) == 0
        assert server.request_count == 14 - finished_quality  # finished work is not redone
        resumed = read_results(out)
        assert len(resumed) == 15 and len({r.key for r in resumed}) == 15

        straight = tmp_path / "straight"
        assert (
            main(
                llm_args(server, corpus, straight, "--prompt", "baseline", "--prompt", "strict-evidence", "--no-cache")
            )
            == 0
        )
    a = json.loads((out / "summary.json").read_text())
    b = json.loads((straight / "summary.json").read_text())
    keys = (
        "claim_accuracy",
        "claim_accuracy_ci",
        "verdict_accuracy",
        "verdict_accuracy_ci",
        "unsafe_pass_rate",
        "macro_f1",
        "claim_confusion",
    )
    for va, vb in zip(a["variants"], b["variants"], strict=True):
        assert {k: va[k] for k in keys} == {k: vb[k] for k in keys}
    assert a["conformance"] == b["conformance"]


def test_exit_0_offline_reference_and_1_on_a_failed_gate(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "cases")
    assert main(["run", "--cases", str(corpus), "--out", str(tmp_path / "ok"), "--no-report"]) == 0
    assert (
        main(
            [
                "run",
                "--cases",
                str(corpus),
                "--out",
                str(tmp_path / "gate"),
                "--no-report",
                "--fail-under",
                "verdict_accuracy=1.01",
            ]
        )
        == 1
    )
    summary = json.loads((tmp_path / "gate" / "summary.json").read_text())
    failed = [g for g in summary["gates"] if not g["passed"]]
    assert [g["gate"] for g in failed] == ["verdict_accuracy>=1.01"]
    junit = (tmp_path / "gate" / "junit.xml").read_text()
    assert 'name="pol-demo-fabricated"' in junit and "<failure" in junit


def test_exit_1_when_a_policy_case_does_not_conform(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = write_corpus(tmp_path / "cases", ["q1"])
    policy = yaml.safe_load((corpus / "policy.yaml").read_text())
    policy["expected"]["verdict"] = "PASS"  # the system says REJECT, as the spec requires
    (corpus / "policy.yaml").write_text(yaml.safe_dump(policy))
    assert main(["run", "--cases", str(corpus), "--out", str(tmp_path / "r"), "--no-report"]) == 1
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["conformance"]["policy_passed"] == 0
    assert summary["conformance"]["failures"][0]["mismatches"] == ['verdict: expected ["PASS"], got REJECT']
    printed = capsys.readouterr().out
    assert f"failing policy cases (1): {policy['id']}" in printed
    assert "gate failed policy_conformance [all]: 0/1 policy cases" in printed
    assert "gate passed error_rate<=0.0 [reference]" in printed  # every gate line, passed or not, names its variant


@pytest.mark.parametrize(
    "extra",
    [
        ["--fail-under", "nonsense=0.5"],
        ["--fail-under", "verdict_accuracy"],
        ["--model", "gpt-4"],
        ["--filter", "tag:no-such-tag"],
        ["--cases", "/no/such/folder"],
        ["--epochs", "0"],
        ["--no-such-flag"],
        ["--extra-body", "[1]"],
    ],
)
def test_exit_2_on_bad_usage(tmp_path: Path, extra: list[str]) -> None:
    corpus = write_corpus(tmp_path / "cases", ["q1"])
    assert main(["run", "--cases", str(corpus), "--out", str(tmp_path / "r"), "--no-report", *extra]) == 2


def test_exit_2_on_a_broken_case_file_naming_file_and_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = write_corpus(tmp_path / "cases", ["q1"])
    broken = quality_case("q2")
    broken["expected"]["claims"]["C1"] = "probably_true"
    (corpus / "broken.yaml").write_text(yaml.safe_dump(broken))
    assert main(["run", "--cases", str(corpus), "--out", str(tmp_path / "r"), "--no-report"]) == 2
    err = capsys.readouterr().err
    assert "broken.yaml" in err and "expected.claims.C1" in err
    assert not (tmp_path / "r").exists()  # nothing ran


def test_exit_2_when_resuming_with_other_settings(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "cases", ["q1"])
    base = ["run", "--cases", str(corpus), "--out", str(tmp_path / "r"), "--no-report"]
    assert main(base) == 0
    assert main(base) == 2  # the folder already holds a run
    assert main([*base, "--resume", "--epochs", "2"]) == 2
    assert main([*base, "--resume"]) == 0


def test_study_file_and_flags(tmp_path: Path, openai_server: LocalOpenAIServer, api_key: str) -> None:
    corpus = write_corpus(tmp_path / "cases", ["q1", "q2"])
    study = tmp_path / "study.toml"
    study.write_text(
        f'cases = ["{corpus}"]\nmodels = ["reference", "openai:local-model"]\nprompts = ["strict-evidence"]\ncache = "{tmp_path / "cache"}"\n'
        f'[model_settings."openai:local-model"]\nbase_url = "{openai_server.base_url}"\nmax_tokens = 900\nstructured_mode = "json_object"\n'
        f"[gates]\nfail_under = {{ claim_accuracy = 0.0 }}\n"
    )
    assert main(["run", "--study", str(study), "--out", str(tmp_path / "r"), "--no-report"]) == 0
    assert openai_server.response_formats() == ["json_object", "json_object"]
    assert [b["max_tokens"] for b in openai_server.requests] == [900, 900]
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert [v["name"] for v in summary["variants"]] == ["reference", "openai:local-model@strict-evidence"]
    assert {g["gate"] for g in summary["gates"]} == {"policy_conformance", "claim_accuracy>=0.0", "error_rate<=0.0"}
    described = json.loads((tmp_path / "r" / "manifest.json").read_text())["verifiers"]
    from harness.baselines.reference import VERSION, ReferenceSettings

    assert described["reference"]["version"] == VERSION  # the baseline's version and settings, via describe()
    assert described["reference"]["signals"] == list(ReferenceSettings().signals)
    assert described["openai:local-model@strict-evidence"]["prompt"]["name"] == "strict-evidence"
    assert api_key not in json.dumps(described)
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: [reference]\nepochz: 3\n")
    assert main(["run", "--study", str(bad), "--out", str(tmp_path / "r2")]) == 2


def test_baseline_gate_fails_on_a_significant_drop_and_passes_on_equal(tmp_path: Path, api_key: str) -> None:
    corpus = tmp_path / "cases"
    corpus.mkdir()
    for i in range(8):
        case = quality_case("q1")
        case["id"] = f"pass-{i}"
        (corpus / f"pass-{i}.yaml").write_text(yaml.safe_dump(case))
    with LocalOpenAIServer() as good:
        assert main(llm_args(good, corpus, tmp_path / "base", "--no-cache")) == 0
        assert main(llm_args(good, corpus, tmp_path / "same", "--no-cache", "--baseline", str(tmp_path / "base"))) == 0

    def contradicts(body: dict) -> str:
        checks = [
            {"claim_id": c, "verification": "contradicted", "detail": "", "evidence_refs": []} for c in ("C1", "C2")
        ]
        return json.dumps(
            {
                "verdict": "REJECT",
                "groundedness_score": 0.1,
                "critical_fact_count": 2,
                "claim_checks": checks,
                "facts_checked": [],
                "rationale": "r",
            }
        )

    with LocalOpenAIServer(contradicts) as bad:
        assert main(llm_args(bad, corpus, tmp_path / "worse", "--no-cache", "--baseline", str(tmp_path / "base"))) == 1
    summary = json.loads((tmp_path / "worse" / "summary.json").read_text())
    failed = {g["gate"] for g in summary["gates"] if not g["passed"]}
    assert failed == {"ship_decision"}
    (decision,) = summary["decisions"]
    assert decision["decision"] == "block" and decision["metrics"]["verdict_accuracy"]["diff"] == -1.0
    assert decision["metrics"]["unsafe_pass_rate"]["units"] == 0  # every case's gold is PASS: nothing to measure
    assert any("unsafe_pass_rate: not measured" in r for r in decision["reasons"])
    same = json.loads((tmp_path / "same" / "summary.json").read_text())["decisions"][0]
    # identical answers, but no case here can show an unsafe PASS: a gated metric nobody measured never ships
    z2 = NormalDist().inv_cdf(0.975) ** 2  # no discordant pair of 8: Tango's ±z²/(8 + z²)
    assert same["decision"] == "inconclusive"
    assert same["metrics"]["verdict_accuracy"]["diff_ci"] == pytest.approx([-z2 / (8 + z2), z2 / (8 + z2)])


def test_compare_two_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = write_corpus(tmp_path / "cases")
    assert main(["run", "--cases", str(corpus), "--out", str(tmp_path / "a"), "--no-report"]) == 0
    assert main(["run", "--cases", str(corpus), "--out", str(tmp_path / "b"), "--no-report", "--no-claim-guard"]) == 0
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json", str(tmp_path / "cmp.json")]) == 0
    rows = json.loads((tmp_path / "cmp.json").read_text())
    assert rows[0]["a"] == rows[0]["b"] == "reference" and rows[0]["cases"] == 7
    assert "McNemar" in capsys.readouterr().out
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "nope")]) == 2


def test_a_policy_only_run_scores_and_exits_0(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "cases", ["q1"])
    assert (
        main(["run", "--cases", str(corpus), "--filter", "kind:policy", "--out", str(tmp_path / "r"), "--no-report"])
        == 0
    )
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["conformance"]["policy_passed"] == 1
    assert summary["variants"][0]["quality_cases"] == 0 and summary["variants"][0]["verdict_accuracy"] is None
    assert (tmp_path / "r" / "junit.xml").exists()


def test_a_run_where_every_call_failed_exits_1(tmp_path: Path, api_key: str) -> None:
    corpus = write_corpus(tmp_path / "cases", ["q1", "q2"], with_policy=False)
    with LocalOpenAIServer() as server:  # it answers GET /models, and a 500 to every completion
        server.script(*[Fault(kind="server_error")] * 4)
        args = [
            "run",
            "--cases",
            str(corpus),
            "--model",
            "openai:m",
            "--base-url",
            server.base_url,
            "--max-attempts",
            "1",
            "--no-cache",
            "--no-report",
        ]
        assert main([*args, "--out", str(tmp_path / "dead")]) == 1
        summary = json.loads((tmp_path / "dead" / "summary.json").read_text())
        assert summary["variants"][0]["errors"] == 2
        assert [g["gate"] for g in summary["gates"] if not g["passed"]] == ["error_rate<=0.0"]
        assert main([*args, "--out", str(tmp_path / "allowed"), "--max-error-rate", "1"]) == 0


def test_resume_retries_the_cases_that_got_no_reply(tmp_path: Path, api_key: str) -> None:
    corpus = write_corpus(tmp_path / "cases", ["q1", "q2", "q3"], with_policy=False)
    out = tmp_path / "r"
    with LocalOpenAIServer() as server:
        server.script(*[Fault(kind="server_error", status=503)] * 1)
        args = [
            "run",
            "--cases",
            str(corpus),
            "--model",
            "openai:m",
            "--base-url",
            server.base_url,
            "--max-attempts",
            "1",
            "--no-cache",
            "--no-report",
            "--concurrency",
            "1",
            "--out",
            str(out),
        ]
        assert main(args) == 1  # one case got no reply
        assert sum(r.error is not None for r in read_results(out)) == 1
        server.reset()
        assert main([*args, "--resume"]) == 0
        assert server.request_count == 1  # only the failed case is sent again
    records = read_results(out)
    assert len(records) == 3 and all(r.error is None for r in records)


def test_a_study_file_names_the_key_variable(
    tmp_path: Path, openai_server: LocalOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_ENDPOINT_KEY", "sk-from-named-variable-0000")
    corpus = write_corpus(tmp_path / "cases", ["q1"])
    study = tmp_path / "study.toml"
    study.write_text(
        f'cases = ["{corpus}"]\nmodels = ["openai:local-model"]\ncache = "{tmp_path / "cache"}"\n'
        f'[model_settings."openai:local-model"]\nbase_url = "{openai_server.base_url}"\napi_key_env = "MY_ENDPOINT_KEY"\n'
    )
    assert main(["run", "--study", str(study), "--out", str(tmp_path / "r"), "--no-report"]) == 0
    assert openai_server.authorizations == ["Bearer sk-from-named-variable-0000"]
    assert "sk-from-named-variable" not in (tmp_path / "r" / "manifest.json").read_text()
    monkeypatch.delenv("MY_ENDPOINT_KEY")
    assert main(["run", "--study", str(study), "--out", str(tmp_path / "r2"), "--no-report"]) == 2


def test_the_shipped_study_file_is_valid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.run.study import build_study, load_study_file

    root = Path(__file__).resolve().parents[2]
    for name in ("compare-models.toml", "prompt-regression.yaml"):
        study = build_study(load_study_file(root / "studies" / name), {})
        assert study.models


@pytest.mark.parametrize("extra", [["--model", "openai:m", "--prompt", "no-such-prompt"]])
def test_exit_2_on_an_unknown_prompt(tmp_path: Path, extra: list[str], api_key: str) -> None:
    corpus = write_corpus(tmp_path / "cases", ["q1"])
    assert main(["run", "--cases", str(corpus), "--out", str(tmp_path / "r"), "--no-report", *extra]) == 2


def test_the_transport_flag_reaches_the_client_and_the_manifest(
    tmp_path: Path, openai_server: LocalOpenAIServer, api_key: str
) -> None:
    corpus = write_corpus(tmp_path / "cases", ["q1"])
    out = tmp_path / "r"
    assert main(llm_args(openai_server, corpus, out, "--transport", "httpx", "--no-cache")) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["variants"][0]["settings"]["transport"] == "httpx"
    assert openai_server.authorizations == [f"Bearer {api_key}"]
    assert main(llm_args(openai_server, corpus, tmp_path / "bad", "--transport", "curl")) == 2


def test_a_filtered_run_certifies_only_part_of_the_corpus(tmp_path: Path) -> None:
    """A `vbench run` narrowed by --filter is partial in certificate.json and the report, even with every
    scenario it names passing (issue 15 review: a filtered run must not read as certified)."""
    policy = Path(__file__).resolve().parents[2] / "cases" / "policy"
    out = tmp_path / "run"
    assert main(["run", "--cases", str(policy), "--filter", "id:pol-fab-*", "--out", str(out)]) == 0
    cert = json.loads((out / "certificate.json").read_text(encoding="utf-8"))
    corpus = len(list(policy.rglob("*.yaml")))
    assert cert["status"] == "partial" and cert["corpus_policy_cases"] == corpus > cert["policy_cases"] > 0
    assert (
        cert["headline"].startswith("Partially certified (")
        and f"{cert['policy_cases']}/{corpus} policy cases" in cert["headline"]
    )
    assert cert["headline"] in (out / "report.html").read_text(encoding="utf-8")
