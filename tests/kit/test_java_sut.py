"""The Java implementation of the spec (sut-java/): it builds with javac, certifies over the protocol, and answers
every policy case, under every setting the protocol lets the kit vary, with the outcome the Python system gives.

Without a JDK or Debian's Gson/sqlite-jdbc jars these tests skip, saying what is missing; with
`VBENCH_REQUIRE_JAVA=1` (set by `.ci/run`, which installs them) they fail instead, so CI cannot pass by skipping.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import typing
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.corpus.loader import load_cases
from harness.devtools.java_sut import SUT_DIR, JavaSutError, build, certify_java, missing_prerequisites, serving
from harness.devtools.local_server import FaultKind, LocalOpenAIServer
from harness.kit.requests import request_for, scripted_reply
from harness.kit.sut import answer_deadline
from tests.kit.helpers import ROOT, serve_args, sut_process

POLICY = [c for c in load_cases([ROOT / "cases" / "policy"]) if c.kind == "policy"]
ASTRAL = "\U0001f600x\u00e9"
"""A result prefix whose first character is outside the BMP: two UTF-16 units, one character (code point)."""


def require_java() -> None:
    missing = missing_prerequisites()
    if not missing:
        return
    message = f"the Java SUT cannot be built here: missing {', '.join(missing)}"
    if os.environ.get("VBENCH_REQUIRE_JAVA") == "1":
        pytest.fail(message + " (VBENCH_REQUIRE_JAVA=1)")
    pytest.skip(message)


@pytest.fixture(scope="module")
def java_jar() -> Path:
    require_java()
    return build()


def test_the_java_sut_compiles(java_jar: Path) -> None:
    listing = subprocess.run(["jar", "--list", "--file", str(java_jar)], capture_output=True, text=True, check=True)
    assert "vbench/sut/SutServer.class" in listing.stdout
    assert "vbench/sut/verifier-system.txt" in listing.stdout


def test_a_broken_java_source_fails_the_build_with_the_compiler_message(tmp_path: Path) -> None:
    require_java()
    copy_dir = tmp_path / "sut-java"
    shutil.copytree(SUT_DIR, copy_dir, ignore=shutil.ignore_patterns("build"))
    source = copy_dir / "src" / "vbench" / "sut" / "Policy.java"
    source.write_text(source.read_text(encoding="utf-8").replace("return out;", "return out", 1), encoding="utf-8")
    with pytest.raises(JavaSutError, match=r"Policy\.java"):
        build(copy_dir)


@pytest.mark.slow
def test_the_java_sut_is_certified_over_the_protocol(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_java()
    out = tmp_path / "certify-java"
    assert certify_java(out) == 0
    cert = json.loads((out / "certificate.json").read_text(encoding="utf-8"))
    assert cert["status"] == "certified"
    assert cert["sut"]["name"] == "verifier-bench Java SUT" and cert["sut"]["protocol"] == "sut_protocol_v1"
    assert cert["mode"] == "certification" and not cert["partial_reasons"]
    assert cert["policy_passed"] == cert["policy_cases"] == len(POLICY)
    printed = capsys.readouterr().out
    headline = f"Certified ({cert['scenarios_total']}/{cert['scenarios_total']} scenarios, {len(POLICY)}/{len(POLICY)}"
    assert headline in printed and cert["corpus_hash"][:12] in printed


@pytest.mark.slow
def test_certify_java_exits_1_when_the_certificate_is_not_certified(tmp_path: Path) -> None:
    """A corpus holding a case the SUT gets wrong yields a failed certificate, and the session fails on it."""
    require_java()
    corpus = tmp_path / "cases"
    shutil.copytree(ROOT / "cases" / "policy", corpus)
    victim = next(p for p in sorted(corpus.rglob("*.yaml")) if "verdict: PASS" in p.read_text(encoding="utf-8"))
    text = victim.read_text(encoding="utf-8")
    victim.write_text(text.replace("verdict: PASS", "verdict: REJECT", 1), encoding="utf-8")
    assert certify_java(tmp_path / "out", cases=corpus) == 1


# --- the Jackson variant (sut-java/jackson/), in the configurations a team runs it with --------------------------

BOUNDARIES = ROOT / "cases" / "policy" / "boundaries"


def require_jackson() -> None:
    require_java()
    missing = missing_prerequisites(jackson=True)
    if missing:
        message = f"the Jackson SUT cannot be built here: missing {', '.join(missing)}"
        if os.environ.get("VBENCH_REQUIRE_JAVA") == "1":
            pytest.fail(message + " (VBENCH_REQUIRE_JAVA=1)")
        pytest.skip(message)


def jackson_failures(tmp_path: Path, config: str) -> tuple[str, dict[str, str], str]:
    """Certify the Jackson SUT in `config` on the boundary cases: (status, first problem per failed case, /info name)."""
    out = tmp_path / config.replace(",", "-")
    certify_java(out, cases=BOUNDARIES, jackson=config)
    cert = json.loads((out / "certificate.json").read_text(encoding="utf-8"))
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    failed = {
        f["case_id"]: "; ".join(f["mismatches"] + f["invariant_violations"]) for f in summary["conformance"]["failures"]
    }
    return cert["status"], failed, cert["sut"]["name"]


@pytest.mark.slow
@pytest.mark.parametrize("config", ["defaults", "defaults,indent"])
def test_the_jackson_sut_certifies_in_its_common_configurations(tmp_path: Path, config: str) -> None:
    """Trailing-token and duplicate checks on, with and without INDENT_OUTPUT (a pretty-printed prompt included)."""
    require_jackson()
    status, failed, name = jackson_failures(tmp_path, config)
    assert failed == {} and status == "partial"  # every boundary case agreed; partial: the folder is a subset
    assert name.endswith(f"(Jackson: {config.replace(',', ', ')})")


@pytest.mark.slow
def test_the_jackson_sut_with_non_null_everywhere_is_refused_naming_the_fix(tmp_path: Path) -> None:
    require_jackson()
    status, failed, _name = jackson_failures(tmp_path, "defaults,non-null")
    assert status == "failed"
    assert 'write "model_verdict": null' in failed["req-reply.contract-null-detail"]
    assert "a serialiser that omits nulls drops it" in failed["req-persist.siblings-null-and-integer-beyond-2-53"]


@pytest.mark.slow
def test_the_jackson_sut_keeping_the_last_repeated_key_is_refused(tmp_path: Path) -> None:
    require_jackson()
    status, failed, _name = jackson_failures(tmp_path, "keep-last-duplicates")
    assert status == "failed"
    assert set(failed) == {
        "req-json.repeated-keys-verdict-twice-in-reply",
        "req-json.repeated-keys-schema-version-twice-in-output",
    }


# --- the two implementations side by side --------------------------------------------------------------------


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        url + "/verify", data=json.dumps(body).encode("utf-8"), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())["self_evaluation"]


def outcome(self_evaluation: dict[str, Any]) -> dict[str, Any]:
    """What the spec fixes in a persisted evaluation, as meaning: numbers by value, free-order lists sorted by key."""
    ev = self_evaluation["verifier_evaluation"]
    gk = ev["gatekeeper_result"]

    def issues(items: list[dict[str, Any]]) -> list[tuple[str, str]]:
        return sorted((i["rule"], i.get("claim_id") or "") for i in items)

    def refs(check: dict[str, Any]) -> list[tuple[str, str, tuple[str, ...]]]:
        return sorted(
            (r.get("trace_ref") or "", r.get("tool_name") or "", tuple(r.get("source_invocation_ids") or []))
            for r in check["evidence_refs"]
        )

    score = ev["groundedness_score"]
    return {
        "verdict": ev["verdict"],
        "model_verdict": ev["model_verdict"],
        "groundedness_score": None if score is None else float(score),
        "critical_fact_count": ev["critical_fact_count"],
        "parse_status": ev["executor_output_parse_status"]["status"],
        "gatekeeper": (gk["status"], gk["failed_rules"], issues(gk["errors"]), issues(gk["warnings"])),
        "claim_checks": sorted((c["claim_id"], c["verification"], refs(c)) for c in ev["claim_checks"]),
        "facts_checked": sorted((f["claim_id"], f["fact"], f["verification"]) for f in ev["facts_checked"]),
        "trace": [
            (t["trace_ref"], t["tool_name"], t["source_invocation_ids"], t["status"], t["result_excerpt"])
            for t in ev["tool_trace_summary"]
        ],
        "adjustments": len(ev["adjustments"]),
        "siblings": {k: v for k, v in self_evaluation.items() if k != "verifier_evaluation"},
    }


def variants(body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The case's request under the settings the protocol lets the kit vary, and a result cut inside astral text."""
    for name, settings in {
        "default": {},
        "claim guard off": {"claim_guard": False},
        "excerpt 7": {"excerpt_chars": 7},
        "excerpt 1": {"excerpt_chars": 1},
    }.items():
        varied = copy.deepcopy(body)
        varied["settings"].update(settings)
        yield name, varied
    astral = copy.deepcopy(body)
    for row in astral["session"]["tool_invocations"]:
        row["result"] = ASTRAL * 3 + row["result"]
    astral["settings"]["excerpt_chars"] = 4
    yield "astral excerpt 4", astral


@pytest.fixture(scope="module")
def both_suts(java_jar: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    port_file = tmp_path_factory.mktemp("python-sut") / "port"
    with sut_process(serve_args(port_file), port_file) as python_url, serving(java_jar) as java_url:
        yield python_url, java_url


@pytest.mark.slow
def test_java_and_python_agree_on_every_policy_case_under_every_setting(both_suts: tuple[str, str]) -> None:
    python_url, java_url = both_suts
    disagreements: list[str] = []
    compared = 0
    for case in POLICY:
        script = scripted_reply(case)
        with LocalOpenAIServer(lambda _body, script=script: script, model="kit-scripted-verifier") as endpoint:
            for name, body in variants(request_for(case, endpoint.base_url).model_dump(mode="json")):
                python, java = outcome(_post(python_url, body)), outcome(_post(java_url, body))
                compared += 1
                if name == "astral excerpt 4":
                    rows = body["session"]["tool_invocations"]
                    if body["session"]["tool_trace_summary"] is None:
                        assert [t[4] for t in java["trace"]] == [r["result"][:4] for r in rows], case.id
                if python != java:
                    diff = {k: (python[k], java[k]) for k in python if python[k] != java[k]}
                    disagreements.append(f"{case.id} [{name}]: {diff}")
    assert compared == 5 * len(POLICY)
    assert not disagreements, "\n".join(disagreements[:20])


@pytest.mark.slow
@pytest.mark.parametrize("where", ["current session", "other session id"])
def test_both_refuse_rows_that_cannot_fit_one_store_with_a_400_naming_the_key(
    both_suts: tuple[str, str], where: str
) -> None:
    """Invocation ids are unique within a session's store (§2), sessions within a request: a request breaking that
    is bad input for either implementation, answered 400 with the key, never a 500 from the store."""
    case = next(c for c in POLICY if c.session.tool_invocations)
    body = request_for(case, "http://127.0.0.1:9/v1").model_dump(mode="json")
    if where == "current session":
        rows = body["session"]["tool_invocations"]
        rows.append({**rows[0], "tool_name": "another_tool"})
        key = rows[0]["id"]
    else:
        body["session"]["other_sessions"].append({"id": body["session"]["id"], "tool_invocations": []})
        key = body["session"]["id"]
    for url in both_suts:
        with pytest.raises(urllib.error.HTTPError) as refused:
            _post(url, body)
        assert refused.value.code == 400, url
        assert key in refused.value.read().decode("utf-8"), url


@pytest.mark.slow
def test_both_keep_timeout_s_for_their_model_and_answer_within_the_kits_deadline(both_suts: tuple[str, str]) -> None:
    """`timeout_s` is all a SUT may spend waiting for its model, retries included (PROTOCOL.md): with a model that
    never answers in time, each SUT answers before the kit's deadline, the reply counted invalid (§5 step 2)."""
    timeout_s = 2.0
    case = next(c for c in POLICY if c.expected.parse_status == "valid")
    endpoint = LocalOpenAIServer(lambda _body: scripted_reply(case), model="kit-scripted-verifier")
    endpoint.latency_ms = 5 * timeout_s * 1000
    with endpoint:
        body = request_for(case, endpoint.base_url, timeout_s=timeout_s).model_dump(mode="json")
        for url in both_suts:
            request = urllib.request.Request(
                url + "/verify", data=json.dumps(body).encode("utf-8"), headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=answer_deadline(timeout_s)) as response:
                evaluation = json.loads(response.read())["self_evaluation"]["verifier_evaluation"]
            assert evaluation["verdict"] == "LOW_CONFID", url
            assert evaluation["model_verdict"] is None, url


@pytest.mark.slow
@pytest.mark.parametrize("kind", typing.get_args(FaultKind))
def test_both_read_every_endpoint_fault_alike_within_the_kits_deadline(both_suts: tuple[str, str], kind: str) -> None:
    """A model endpoint failing once (retried) or twice (given up) ends in the same outcome in both, each answered
    within the kit's deadline: a body trickled past `timeout_s` included."""
    timeout_s = 3.0
    case = next(c for c in POLICY if c.expected.model_verdict == "PASS")
    for faults in ([kind], [kind, kind]):
        seen = []
        for url in both_suts:
            with LocalOpenAIServer(lambda _body: scripted_reply(case), model="kit-scripted-verifier") as endpoint:
                endpoint.script(*faults)
                body = request_for(case, endpoint.base_url, timeout_s=timeout_s).model_dump(mode="json")
                request = urllib.request.Request(
                    url + "/verify", data=json.dumps(body).encode("utf-8"), headers={"Content-Type": "application/json"}
                )
                with urllib.request.urlopen(request, timeout=answer_deadline(timeout_s)) as response:
                    ev = json.loads(response.read())["self_evaluation"]["verifier_evaluation"]
            seen.append((ev["verdict"], ev["model_verdict"], ev["reply_status"]["status"]))
        assert seen[0] == seen[1], (faults, seen)


@pytest.mark.slow
def test_both_read_settings_numbers_by_value(both_suts: tuple[str, str]) -> None:
    """`excerpt_chars` 7, 7.0 and 7e0 are one number: both SUTs cut the same excerpts for any spelling."""
    case = next(c for c in POLICY if c.session.tool_invocations and c.session.tool_trace_summary is None)
    with LocalOpenAIServer(lambda _body: scripted_reply(case), model="kit-scripted-verifier") as endpoint:
        body = request_for(case, endpoint.base_url).model_dump(mode="json")
        results = []
        for spelling in ("7", "7.0", "7e0"):
            text = json.dumps({**body, "settings": {**body["settings"], "excerpt_chars": "@"}}).replace('"@"', spelling)
            for url in both_suts:
                request = urllib.request.Request(
                    url + "/verify", data=text.encode("utf-8"), headers={"Content-Type": "application/json"}
                )
                with urllib.request.urlopen(request, timeout=60) as response:
                    trace = json.loads(response.read())["self_evaluation"]["verifier_evaluation"]["tool_trace_summary"]
                results.append([t["result_excerpt"] for t in trace])
    rows = case.session.tool_invocations
    assert results == [[row.result[:7] for row in rows]] * 6
