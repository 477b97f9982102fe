"""`vbench sut serve` + `vbench certify`: the bundled system certified over HTTP on the whole policy corpus."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from harness.cli import main
from harness.corpus.loader import load_cases
from harness.corpus.schema import Case
from harness.kit.certify import CertifySettings, certify
from harness.run.conformance import invariant_violations, policy_case_mismatches
from harness.run.execute import run_case, scripted_verifier_for
from harness.run.folder import read_results
from harness.score.certificate_model import certificate_text, read_certificate
from harness.score.summary_model import read_summary_file
from harness.system.protocol import protocol_schemas
from tests.kit.helpers import ROOT, ThreadedApp, serve_args, sut_process

POLICY = [c for c in load_cases([ROOT / "cases" / "policy"]) if c.kind == "policy"]
BY_ID = {c.id: c for c in POLICY}


@pytest.fixture(scope="module")
def sut_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port_file = tmp_path_factory.mktemp("sut") / "port"
    with sut_process(serve_args(port_file), port_file) as url:
        yield url


@pytest.fixture(scope="module")
def full_run(sut_url: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("certify") / "full"
    code = main(["certify", "--sut", sut_url, "--cases", str(ROOT / "cases" / "policy"), "--out", str(out)])
    assert code == 0
    return out


def test_committed_protocol_schemas_are_current() -> None:
    for name, schema in protocol_schemas().items():
        committed = json.loads((ROOT / "docs" / "sut-protocol" / name).read_text(encoding="utf-8"))
        assert committed == schema, f"docs/sut-protocol/{name} is stale: run vbench sut schema"


def test_the_bundled_system_is_certified_over_http_on_every_policy_case(full_run: Path) -> None:
    summary = json.loads((full_run / "summary.json").read_text())
    cert = json.loads((full_run / "certificate.json").read_text())
    conf = summary["conformance"]
    assert conf["policy_cases"] == len(POLICY) > 100
    assert conf["policy_passed"] == conf["policy_cases"] and conf["invariant_violations"] == 0
    assert (
        cert["status"] == "certified"
        and cert["headline"]
        == f"Certified (22/22 scenarios, {len(POLICY)}/{len(POLICY)} policy cases) on {cert['corpus']}"
    )
    assert cert["corpus"].endswith(f"(corpus {cert['corpus_hash'][:12]})") and "cases" in cert["corpus"]
    assert cert["mode"] == "default" and cert["protocol_problems"] == [] and len(cert["kit"]["source_sha256"]) == 64
    assert cert["sut"]["name"] == "verifier-bench bundled system" and cert["sut"]["url"].startswith("http://127.0.0.1:")
    log = [json.loads(line) for line in (full_run / "sut-log.jsonl").read_text().splitlines()]
    assert {entry["case_id"] for entry in log} == set(BY_ID)
    assert all(entry["http_status"] == 200 and json.loads(entry["sut_response"])["self_evaluation"] for entry in log)
    assert all(len(entry["model_requests"]) == 1 for entry in log)  # the SUT's real client called the kit's endpoint


def test_the_certify_summary_is_a_summary(full_run: Path) -> None:
    """summary.json of a certification reads through the `Summary` model (a ValidationError fails this) and
    holds, written back, exactly what the file holds: the writer added, dropped and retyped nothing."""
    text = (full_run / "summary.json").read_text()
    model = read_summary_file(full_run)
    assert model.kind == "certify" and model.run is None and model.sut is not None and model.skipped is not None
    assert model.to_json() == json.loads(text)
    assert text == json.dumps(model.to_json(), indent=2, sort_keys=True) + "\n"  # the bytes certify has always written


def test_the_certify_certificate_is_a_certificate(full_run: Path) -> None:
    """certificate.json of a certification reads through the `Certificate` model and writes back to its bytes; the
    SUT's own `/info` keys (its protocol) are kept."""
    cert = read_certificate(full_run)
    assert cert.status == "certified" and cert.sut.model_extra and "protocol" in cert.sut.model_extra
    assert certificate_text(cert) == (full_run / "certificate.json").read_text()


def _outcome(evaluation: dict[str, Any]) -> dict[str, Any]:
    return {
        "verdict": evaluation["verdict"],
        "model_verdict": evaluation["model_verdict"],
        "parse_status": evaluation["executor_output_parse_status"]["status"],
        "gatekeeper": (evaluation["gatekeeper_result"]["status"], evaluation["gatekeeper_result"]["failed_rules"]),
        "warnings": sorted({w["rule"] for w in evaluation["gatekeeper_result"]["warnings"]}),
        "claims": [(c["claim_id"], c["verification"], c["evidence_refs"]) for c in evaluation["claim_checks"]],
        "facts": [(f["claim_id"], f["verification"]) for f in evaluation["facts_checked"]],
        "critical_fact_count": evaluation["critical_fact_count"],
        "adjustments": [(a["step"], a.get("claim_id"), a.get("to_verdict")) for a in evaluation["adjustments"]],
    }


def test_in_process_and_http_give_identical_outcomes_on_every_policy_case(full_run: Path) -> None:
    records = {r.case_id: r for r in read_results(full_run)}
    assert set(records) == set(BY_ID)
    for case in POLICY:
        evaluation, persisted = asyncio.run(run_case(case, scripted_verifier_for(case)))
        in_process = persisted["verifier_evaluation"]
        over_http = records[case.id].persisted
        assert over_http is not None
        assert _outcome(over_http["verifier_evaluation"]) == _outcome(in_process), case.id  # type: ignore[arg-type]
        assert {k for k in over_http if k != "verifier_evaluation"} == {
            k for k in persisted if k != "verifier_evaluation"
        }
        assert policy_case_mismatches(case, evaluation) == [] and invariant_violations(case, over_http) == []


def test_a_filtered_run_is_partial_and_says_how_far(sut_url: str, tmp_path: Path) -> None:
    out = tmp_path / "filtered"
    scenario = "scenario:invocation-rule-rejects-fabricated-invocation-ids"
    code = main(["certify", "--sut", sut_url, "--cases", str(ROOT / "cases"), "--out", str(out), "--filter", scenario])
    assert code == 1  # partial is not certified: a CI gate must tell them apart
    cert = json.loads((out / "certificate.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    covered = cert["scenarios_covered"]
    assert cert["status"] == "partial" and 0 < covered < 22
    corpus = sum(c.kind == "policy" for c in load_cases([ROOT / "cases"]))
    head = f"Partially certified ({covered}/22 scenarios, {cert['policy_cases']}/{corpus} policy cases) on {cert['corpus']}"
    assert cert["headline"] == head
    assert cert["filters"] == [scenario] and cert["skipped"]["quality_cases"] == summary["skipped"]["quality_cases"] > 0
    html = (out / "certificate.html").read_text()
    assert head in html and 'class="head partial"' in html


def covering_ids() -> list[str]:
    """A few policy cases that between them cover every scenario (greedy): a filtered run with full coverage."""
    left = {s for c in POLICY for s in c.spec}
    picked: list[str] = []
    while left:
        best = max(POLICY, key=lambda c: len(left & set(c.spec)))
        picked.append(best.id)
        left -= set(best.spec)
    return picked


def test_a_filtered_run_covering_every_scenario_is_still_partial(sut_url: str, tmp_path: Path) -> None:
    ids = covering_ids()
    assert len(ids) < len(POLICY)
    (tmp_path / "cover.txt").write_text("\n".join(ids) + "\n")
    out = tmp_path / "cover"
    policy = str(ROOT / "cases" / "policy")
    code = main(
        ["certify", "--sut", sut_url, "--cases", policy, "--out", str(out), "--filter", f"ids:{tmp_path / 'cover.txt'}"]
    )
    assert code == 1
    cert = json.loads((out / "certificate.json").read_text())
    head = f"Partially certified (22/22 scenarios, {len(ids)}/{len(POLICY)} policy cases) on {cert['corpus']}"
    assert cert["scenarios_covered"] == 22 and cert["status"] == "partial" and cert["headline"] == head
    assert cert["corpus_policy_cases"] == len(POLICY) and cert["partial_reasons"]
    html = (out / "certificate.html").read_text()
    assert head in html and 'class="head partial"' in html and "Only part was certified" in html


def test_the_certificate_names_the_full_sha_and_every_spec_file(full_run: Path) -> None:
    cert = json.loads((full_run / "certificate.json").read_text())
    sha = cert["kit"]["git_sha"]
    assert sha is not None and len(sha.removesuffix("-dirty")) == 40
    assert sha in (full_run / "certificate.html").read_text()
    assert {"INTERPRETATION.md", "CASE_FORMAT.md"} <= set(cert["spec_files"])
    assert sum(p.endswith("spec.md") for p in cert["spec_files"]) == 2
    assert all(len(d) == 64 for d in cert["spec_files"].values()) and len(cert["corpus_hash"]) == 16


def test_a_shared_store_keeps_concurrent_requests_apart(tmp_path: Path) -> None:
    port_file = tmp_path / "port"
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    with sut_process(serve_args(port_file, "--store", store), port_file) as url:
        settings = CertifySettings(sut_url=url, out=tmp_path / "out", case_dirs=[ROOT / "cases"], concurrency=8)
        result = certify(POLICY[:40], [], settings)
    assert result.passed, result.summary.conformance.failures[:3]


# --- a SUT that misbehaves ------------------------------------------------------------------------


class BrokenSut(ThreadedApp):
    """A SUT that answers some cases badly (timeout, 500, not JSON, no self_evaluation) and forwards the rest."""

    def __init__(self, real: str, bad: dict[str, str]) -> None:
        super().__init__()
        self.real, self.bad = real, bad

    async def verify(self, request: web.Request) -> web.StreamResponse:
        import aiohttp

        body = await request.json()
        kind = self.bad.get(body["session"]["id"])
        if kind == "timeout":
            await asyncio.sleep(5)
        if kind == "500":
            return web.Response(status=500, text="internal error")
        if kind == "not-json":
            return web.Response(text="<html>oops</html>")
        if kind == "no-evaluation":
            return web.json_response({"result": "ok"})
        async with aiohttp.ClientSession() as session, session.post(self.real + "/verify", json=body) as resp:
            return web.Response(status=resp.status, body=await resp.read(), content_type="application/json")

    async def info(self, _request: web.Request) -> web.Response:
        return web.json_response({"name": "broken", "version": "0"})

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/verify", self.verify)
        app.router.add_get("/info", self.info)


def test_sut_failures_are_errors_for_their_case_and_the_run_finishes(sut_url: str, tmp_path: Path) -> None:
    picked: list[Case] = POLICY[:8]
    bad = {picked[0].session_id: "timeout", picked[1].session_id: "500", picked[2].session_id: "not-json"}
    bad[picked[3].session_id] = "no-evaluation"
    out = tmp_path / "broken"
    with BrokenSut(sut_url, bad) as url:
        ids = tmp_path / "ids.txt"
        ids.write_text("\n".join(c.id for c in picked))
        args = ["certify", "--sut", url, "--cases", str(ROOT / "cases" / "policy"), "--out", str(out)]
        code = main([*args, "--filter", f"ids:{ids}", "--timeout", "1"])
    assert code == 1
    records = {r.case_id: r for r in read_results(out)}
    assert set(records) == {c.id for c in picked}
    errors = {cid: r.error for cid, r in records.items() if r.error}
    assert set(errors) == {c.id for c in picked[:4]}
    assert errors[picked[0].id].startswith("timeout") and errors[picked[1].id].startswith("HTTP 500")
    assert errors[picked[2].id].startswith("not JSON") and "self_evaluation" in errors[picked[3].id]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["conformance"]["policy_passed"] == 4 and summary["errors"] == 4
    log = {json.loads(line)["case_id"]: json.loads(line) for line in (out / "sut-log.jsonl").read_text().splitlines()}
    assert log[picked[2].id]["sut_response"] == "<html>oops</html>" and log[picked[1].id]["http_status"] == 500
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["status"] == "failed" and cert["headline"].startswith("Not certified")
    html = (out / "certificate.html").read_text()
    assert 'class="chip ok"' not in html and 'class="head ok"' not in html


def test_bad_usage_exits_2(sut_url: str, tmp_path: Path) -> None:
    cases = str(ROOT / "cases" / "policy")
    assert (
        main(["certify", "--sut", sut_url, "--cases", cases, "--out", str(tmp_path / "a"), "--filter", "id:nothing-*"])
        == 2
    )
    assert main(["certify", "--sut", "http://127.0.0.1:9", "--cases", cases, "--out", str(tmp_path / "b")]) == 2
    assert main(["certify", "--sut", sut_url, "--cases", str(tmp_path / "none"), "--out", str(tmp_path / "c")]) == 2


def test_quality_cases_go_through_the_sut_with_a_named_model_and_are_scored(sut_url: str, tmp_path: Path) -> None:
    from harness.devtools.local_server import LocalOpenAIServer

    out = tmp_path / "quality"
    ids = tmp_path / "ids.txt"
    quality = [c for c in load_cases([ROOT / "cases" / "quality"]) if c.kind == "quality"][:6]
    ids.write_text("\n".join([c.id for c in quality] + [c.id for c in POLICY[:3]]))
    with LocalOpenAIServer() as model:  # stands in for the real endpoint a user names
        args = [
            "certify",
            "--sut",
            sut_url,
            "--cases",
            str(ROOT / "cases"),
            "--out",
            str(out),
            "--filter",
            f"ids:{ids}",
        ]
        code = main([*args, "--model-base-url", model.base_url, "--model", "local-model"])
        asked = [m for body in model.requests for m in body["messages"]]
    assert code == 1  # partial (filtered): not certified
    summary = json.loads((out / "summary.json").read_text())
    (variant,) = summary["variants"]
    assert variant["name"] == "sut:local-model" and variant["quality_cases"] == 6 and variant["errors"] == 0
    assert 0.0 <= variant["verdict_accuracy"] <= 1.0 and "claim_accuracy" in variant
    assert summary["skipped"]["quality_cases"] == 0 and summary["conformance"]["policy_cases"] == 3
    assert any(quality[0].session.question[:40] in str(m.get("content")) for m in asked)  # the SUT called it


def test_without_a_model_quality_cases_are_listed_as_skipped(sut_url: str, tmp_path: Path) -> None:
    out = tmp_path / "skip"
    scenario = "scenario:pass-verdict-when-all-claims-have-evidence"
    assert (
        main(["certify", "--sut", sut_url, "--cases", str(ROOT / "cases"), "--out", str(out), "--filter", scenario])
        == 1  # filtered: partial
    )
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["skipped"]["quality_cases"] > 0 and len(cert["skipped"]["case_ids"]) == cert["skipped"]["quality_cases"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["skipped"] == cert["skipped"] and summary["variants"] == []
    assert main(["certify", "--sut", sut_url, "--out", str(tmp_path / "x"), "--model", "m"]) == 2
