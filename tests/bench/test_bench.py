"""The benchmark script cannot rot: a tiny run end to end, and the pieces that make its comparison fair.

No timing is asserted here: speed is measured by `nox -s bench`, not by tests.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import httpx
import pytest

from bench import promptfoo, run_bench
from bench.data import read_case_lines, request_bodies, synth_cases, synth_run, write_case_lines
from bench.phases import PHASES
from bench.procs import ServerProcess, host, timed_process
from bench.table import build_targets
from bench.whole import capture_requests, run_raw
from bench.whole import ratios as whole_ratios
from bench.workers import factory_for
from harness.app.phases import CERTIFICATE, LOAD_CASES, REPORT, RUN, SCORE
from harness.cli.run import default_factory
from harness.devtools.local_server import LocalOpenAIServer
from harness.run.folder import _KEY_HEAD, iter_results, read_manifest
from harness.run.plan import build_variants
from harness.run.runner import run_study
from harness.run.study import ModelSettings, Study

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench_cases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    work = tmp_path_factory.mktemp("bench")
    synth_cases(ROOT / "cases" / "quality", 6, work / "cases")
    cases = write_case_lines(work / "cases", work / "cases.jsonl")
    return work, cases


def test_synthetic_cases_are_distinct_quality_cases(bench_cases: tuple[Path, list]) -> None:
    work, cases = bench_cases
    assert len(cases) == 6 and all(c.kind == "quality" for c in cases)
    assert len({c.id for c in cases}) == 6
    assert len({c.session.question for c in cases}) == 6  # distinct requests, distinct cache keys
    assert [c.id for c in read_case_lines(work / "cases.jsonl")] == [c.id for c in cases]


def test_raw_client_sends_the_bodies_the_harness_sends(
    bench_cases: tuple[Path, list], tmp_path: Path, openai_server: LocalOpenAIServer
) -> None:
    """(a) is only a fair limit for (b) if both send the same bytes' worth of request."""
    work, cases = bench_cases
    model = "openai:local-model"
    study = Study(
        cases=[work / "cases"],
        models=[model],
        cache=None,
        model_settings={model: ModelSettings(base_url=openai_server.base_url)},
        report=False,
    )
    run_study(study, cases, tmp_path / "run", factory_for(study))
    sent = sorted(openai_server.requests, key=lambda b: b["messages"][1]["content"])
    bodies = [{**b["params"], **b["extra_body"]} for b in request_bodies(cases)]
    assert sent == sorted(bodies, key=lambda b: b["messages"][1]["content"])


def test_bench_factory_builds_the_cli_verifiers(tmp_path: Path) -> None:
    model = "openai:local-model"
    study = Study(
        models=[model],
        cache=tmp_path / "cache",
        model_settings={model: ModelSettings(base_url="http://127.0.0.1:9/v1", max_tokens=99)},
    )
    for variant in build_variants(study):
        ours, cli = factory_for(study)(variant, 2), default_factory(study)(variant, 2)
        assert type(ours) is type(cli) and type(ours).__name__ == "LLMVerifier"
        assert ours.describe() == cli.describe() and ours.describe()["model"]["settings"]["max_tokens"] == 99


def test_synthetic_run_folder_holds_valid_records(tmp_path: Path, openai_server: LocalOpenAIServer) -> None:
    synth_cases(ROOT / "cases" / "quality", 4, tmp_path / "cases")
    cases = write_case_lines(tmp_path / "cases", tmp_path / "cases.jsonl")
    model = "openai:local-model"
    study = Study(models=[model], cache=None, model_settings={model: ModelSettings(base_url=openai_server.base_url)})
    run_study(study, cases, tmp_path / "template", factory_for(study))
    written = synth_run(tmp_path / "template", tmp_path / "big", 50, models=3, prompts=2)
    records = list(iter_results(tmp_path / "big" / "results.jsonl"))  # validates every line
    assert written == len(records) == 50
    manifest = read_manifest(tmp_path / "big")
    assert len(manifest.variants) == 6 and manifest.epochs == 3  # 4 cases x 6 variants = 24 per epoch
    assert {r.variant for r in records} == {v.name for v in manifest.variants}
    # written as the harness writes a record (compact), so the readers' fast path reads the key off each line
    lines = (tmp_path / "big" / "results.jsonl").read_bytes().splitlines()
    assert [line.decode() for line in lines] == [r.model_dump_json() for r in records]
    assert all(_KEY_HEAD.match(line + b"\n") for line in lines)


def _figures(
    ratio: float, peer_ratio: float, stages_ms: float, warm: float, render_s: float, rss: float, same: float = 0
) -> dict:
    """Figures as the bench writes them; `ratio`: the whole-process vbench/raw ratio on both servers, `same`: that
    ratio against the raw script on aiohttp (default: as `ratio`)."""
    kinds = {"harness": {"runs": [{"harness_cpu_ms_p50": 1.0}]}, "peer": {"reps": 5}}
    ratios = {"harness/raw": 0.9, "harness/raw_paired": 0.9, "harness/peer": peer_ratio}
    warm_cache = {
        "latency_ms": 200.0,
        "ratio": warm,
        "warm": {"wall_s": 1.0},
        "cold": {"wall_s": 10.0},
        "ratio_no_replay": 0.2,
        "warm_no_replay": {"wall_s": 2.0},
    }
    return {
        "config": {"concurrency": 32, "n": 1000, "whole_reps": 5},
        "whole": {
            "captured_requests": 1000,
            "rows": [_whole_row(k, ratio, same or ratio) for k in ("async", "threaded")],
        },
        "startup": {
            "version": {"command": "vbench --version", "reps": 5, "wall_s": 0.49, "cpu_s": 0.1},
            "validate_one_file": {"command": "vbench cases validate ONE_FILE", "reps": 5, "wall_s": 1.51, "cpu_s": 1.0},
        },
        "latencies": [{"latency_ms": 200.0, "ratios": ratios, "kinds": kinds}],
        "stages": {"total_ms_per_case": stages_ms},
        "warm_cache": warm_cache,
        "report": [{"results": 100_000, "render": {"wall_s": render_s, "peak_rss_mib": rss}}],
    }


def _whole_row(server: str, ratio: float, same: float) -> dict:
    """One server's headline row: vbench at 10 s against each raw transport."""
    run = {"wall_s": 10.0, "cpu_s": 8.0, "user_s": 7.5, "sys_s": 0.5, "peak_rss_mib": 300.0, "failures": 0}
    kinds = {
        "vbench": run | {"wall_s_all": [10.0], "reps": 1},
        "raw-httpx": run | {"wall_s": 10.0 / ratio, "wall_s_all": [10.0 / ratio], "reps": 1},
        "raw-aiohttp": run | {"wall_s": 10.0 / same, "wall_s_all": [10.0 / same], "reps": 1},
    }
    row = {"server": server, "latency_ms": 200.0, "kinds": kinds}
    return row | {"ratios": whole_ratios(row)}


def test_targets_pass_and_miss_at_the_issue_thresholds() -> None:
    """The headline (whole processes, both servers, both raw transports) is judged at 1.25; start-up at 0.5 s
    and 1.5 s; run_study against the in-process raw client is reported only."""
    passing = build_targets(_figures(1.25, 0.5, 4.9, 0.10, 29.0, 1500))
    headline, startup, suite = ["PASS"] * 4, ["PASS", "MISS"], ["INFO"]  # start-up: 0.49 s and 1.51 s
    cpu = ["INFO"]  # the suite's figures carry no CPU per request: not measured, and said so
    assert [r["result"] for r in passing] == headline + cpu + startup + suite + ["PASS"] * 4 + ["INFO"] + ["PASS"] * 2
    assert passing[0]["figure"].startswith("vbench run / raw httpx client, whole processes, async server, 200 ms")
    assert passing[3]["figure"].startswith("vbench run / raw aiohttp client, whole processes, threaded stdlib server")
    assert passing[4]["measured"] == "not measured: not run"
    assert "(5 peer runs)" in passing[8]["figure"]
    missing = build_targets(_figures(1.26, 1.01, 5.0, 0.11, 30.0, 1536))
    assert [r["result"] for r in missing][:4] == ["MISS"] * 4
    assert [r["result"] for r in missing][8:] == ["MISS", "MISS", "PASS", "MISS", "INFO", "MISS", "MISS"]


def _with_new_targets(figures: dict, slow_ratio: float, report_s: float, harness_cpu_ms: float) -> dict:
    """The figures with the slow-latency headline, `vbench report`'s time and the suite's CPU per request."""
    slow = _whole_row("async", slow_ratio, slow_ratio) | {"latency_ms": 2000.0}
    del slow["kinds"]["raw-aiohttp"]
    slow["ratios"] = whole_ratios(slow)
    figures["config"] |= {"slow_latency_ms": 2000.0}
    figures["slow"] = slow
    figures["report_time"] = {"reps": 5, "wall_s": report_s, "cpu_s": report_s, "peak_rss_mib": 90.0, "results": 1000}
    figures["report_time"]["yardstick_s"] = 0.15
    kinds = figures["latencies"][0]["kinds"]
    kinds["harness"]["cpu_ms_per_request"], kinds["raw"] = harness_cpu_ms, {"cpu_ms_per_request": 3.5}
    return figures


def test_slow_latency_report_time_and_cpu_per_request_are_judged() -> None:
    """The whole process at 2 s is judged at 1.03, `vbench report` of 1,000 results at 0.7 s, and the harness's
    client CPU per request at 1.2 times the raw client's; each just inside passes and just outside misses."""

    def results(slow: float, report_s: float, cpu_ms: float) -> dict[str, str]:
        rows = build_targets(_with_new_targets(_figures(1.0, 0.5, 1.0, 0.05, 1.0, 100), slow, report_s, cpu_ms))
        picked = {"2000 ms": "slow", "`vbench report`": "report", "harness CPU per request": "cpu"}
        return {name: r["result"] for r in rows for key, name in picked.items() if key in r["figure"]}

    assert results(1.03, 0.70, 4.2) == {"slow": "PASS", "report": "PASS", "cpu": "PASS"}
    assert results(1.031, 0.71, 4.21) == {"slow": "MISS", "report": "MISS", "cpu": "MISS"}
    rows = build_targets(_with_new_targets(_figures(1.0, 0.5, 1.0, 0.05, 1.0, 100), 1.02, 0.5, 4.0))
    (report,) = [r for r in rows if "`vbench report`" in r["figure"]]
    assert "yardstick 0.150 s" in report["measured"] and "1,000 results" in report["figure"]
    (cpu,) = [r for r in rows if "harness CPU per request" in r["figure"]]
    assert cpu["measured"] == "1.143 (4.00 ms / 3.50 ms)"


def test_a_slow_headline_that_could_not_run_is_said_so() -> None:
    figures = _figures(1.0, 0.5, 1.0, 0.05, 1.0, 100)
    figures["config"]["slow_latency_ms"] = 2000.0
    figures["slow"] = {"error": "no captured requests (the headline's warm-up failed)"}
    (row,) = [r for r in build_targets(figures) if "2000 ms" in r["figure"]]
    assert row["result"] == "INFO" and row["measured"].startswith("not measured: no captured requests")


def test_the_ratio_target_holds_against_the_raw_client_on_the_harness_transport_too() -> None:
    """Switching the harness to a faster transport must not pass the target by itself: the raw script on aiohttp
    (the harness's transport) is judged as well, on each server."""
    rows = build_targets(_figures(1.05, 0.5, 1.0, 0.05, 1.0, 100, same=1.28))
    assert [(r["figure"].split(" client")[0], r["result"]) for r in rows[:4]] == [
        ("vbench run / raw httpx", "PASS"),
        ("vbench run / raw aiohttp", "MISS"),
        ("vbench run / raw httpx", "PASS"),
        ("vbench run / raw aiohttp", "MISS"),
    ]
    assert "(paired 1.280; 10.00 s / 7.81 s; CPU 8.00 s / 8.00 s)" in rows[1]["measured"]


def test_the_floor_adds_the_after_run_phases_to_the_raw_client() -> None:
    """The floor rows follow the headline: the raw wall plus scoring and the report (then the loading too) over the
    raw wall, from the phase profile of the same bench; without a phase profile there is no floor to state."""
    figures = _figures(1.25, 0.5, 1.0, 0.05, 1.0, 100)
    assert not any(r["figure"].startswith("floor") for r in build_targets(figures))
    figures["phases"] = {
        "phases": {
            PHASES[SCORE]: {"cpu_s": 0.6, "wall_s": 0.6},
            PHASES[REPORT]: {"cpu_s": 1.0, "wall_s": 1.0},
            PHASES[LOAD_CASES]: {"cpu_s": 0.8, "wall_s": 0.8},
        }
    }
    rows = build_targets(figures)
    assert [r["figure"].split(":")[0] for r in rows[4:6]] == ["floor", "floor with the loading of the cases"]
    assert rows[4]["measured"] == "1.200 (8.00 s + 1.60 s)" and rows[4]["result"] == "INFO"  # raw: 10 s / 1.25
    assert rows[5]["measured"] == "1.300 (+ 0.80 s)"
    figures["phases"]["phases"][PHASES[CERTIFICATE]] = {"cpu_s": 0.4, "wall_s": 0.4}  # the certificate counts too
    assert build_targets(figures)[4]["measured"] == "1.250 (8.00 s + 2.00 s)"


def test_a_headline_that_could_not_run_is_said_so() -> None:
    figures = _figures(1.0, 0.5, 1.0, 0.05, 1.0, 100)
    figures["whole"] = {"error": "vbench run exited 2: bad flag", "rows": []}
    (row,) = [r for r in build_targets(figures) if r["figure"].startswith("vbench run / raw")]
    assert row["result"] == "INFO" and row["measured"] == "not measured: vbench run exited 2: bad flag"


def test_the_machine_is_recorded_with_a_yardstick_of_its_speed() -> None:
    """Figures from two machines differ by the machine: the CPU's name and a fixed loop's time say by how much."""
    machine = host()
    assert machine["nproc"] >= 1 and isinstance(machine["cpu"], str) and machine["cpu"]
    assert 0 < machine["yardstick_s"] < 60


def test_timed_process_charges_the_child_its_cpu() -> None:
    """Whole-process CPU comes from the kernel (os.wait4): a child that spins 0.3 s is charged about that."""
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\nprint('{}')"
    result = timed_process([sys.executable, "-c", spin])
    assert result["returncode"] == 0 and result["output"].strip() == "{}"
    assert 0.25 <= result["cpu_s"] <= result["wall_s"] + 0.05
    assert result["user_s"] > 0 and result["peak_rss_mib"] > 1


def test_threaded_server_answers_and_captures_what_the_raw_client_sends(tmp_path: Path) -> None:
    """The plain stdlib server gives each request a valid verifier reply and writes the body it got to the capture
    file; the raw script (a whole process) sends every body it is given, create() keys and extra_body keys alike."""
    bodies = [
        {"model": "local-model", "messages": [{"role": "user", "content": f'"claim_id": "c{i}"'}], "seed": i}
        for i in range(5)
    ]
    bodies[0]["top_k"] = 3  # not a create() argument: it travels in extra_body, at the top level of the JSON
    given = tmp_path / "bodies.jsonl"
    given.write_text("".join(json.dumps(b) + "\n" for b in bodies))
    capture = tmp_path / "capture.jsonl"
    with ServerProcess(0.0, "threaded", capture=capture) as server:
        result = run_raw(server.url, given, 2, "httpx")
        reply = httpx.post(f"{server.url}/chat/completions", json=bodies[1], timeout=10).json()
    assert (result["requests"], result["failures"], result["returncode"]) == (5, 0, 0)
    assert result["cpu_s"] > 0
    sent = [json.loads(line) for line in capture.read_text().splitlines()]
    assert sorted(sent[:5], key=lambda b: b["seed"]) == bodies and sent[5] == bodies[1]
    content = json.loads(reply["choices"][0]["message"]["content"])
    assert content["verdict"] == "PASS" and [c["claim_id"] for c in content["claim_checks"]] == ["c1"]


@pytest.mark.slow
def test_the_raw_client_replays_exactly_what_vbench_run_sent(bench_cases: tuple[Path, list], tmp_path: Path) -> None:
    """The headline's fairness: the raw process sends the very request bodies the whole `vbench run` sent (the
    capture of the warm-up run), nothing rendered differently and nothing easier."""
    work, cases = bench_cases
    shutil.copytree(work / "cases", tmp_path / "cases")
    captured, warm = capture_requests(tmp_path, 0.0, 4)
    assert "error" not in warm and warm["results"] == len(cases) and warm["report"]
    again = tmp_path / "again.jsonl"
    with ServerProcess(0.0, "threaded", capture=again) as server:
        raw = run_raw(server.url, captured, 4, "aiohttp")
    assert raw["failures"] == 0
    first, second = captured.read_text(), again.read_text()
    assert len(first.splitlines()) == len(cases)
    assert sorted(map(json.loads, first.splitlines()), key=json.dumps) == sorted(
        map(json.loads, second.splitlines()), key=json.dumps
    )
    bodies = [{**b["params"], **b["extra_body"]} for b in request_bodies(cases)]
    assert sorted(bodies, key=json.dumps) == sorted(map(json.loads, first.splitlines()), key=json.dumps)


@pytest.mark.slow
def test_quick_bench_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every section runs at tiny N and lands in the JSON and the markdown table."""
    assert run_bench.main(["--quick", "--out", str(tmp_path)]) == 0
    (json_file,) = tmp_path.glob("*-quick.json")
    figures = json.loads(json_file.read_text())
    assert figures["machine"]["nproc"] and figures["machine"]["packages"]["openai"]
    for row in figures["latencies"]:
        for kind in ("raw", "raw-aiohttp", "lean", "harness"):
            assert row["kinds"][kind]["reps"] == 1 and row["kinds"][kind]["failures"] == 0, (row["latency_ms"], kind)
        assert {"harness/raw", "harness/raw-aiohttp", "harness/best-raw"} <= set(row["ratios"])
    n, warm = figures["config"]["n"], figures["warm_cache"]
    assert (warm["cold"]["cached"], warm["cold"]["replayed"]) == (0, 0)
    assert (warm["warm"]["cached"], warm["warm"]["replayed"]) == (n, n)
    assert (warm["warm_no_replay"]["cached"], warm["warm_no_replay"]["replayed"]) == (n, 0)
    assert warm["ratio"] > 0 and warm["ratio_no_replay"] > 0
    assert figures["stages"]["cases"] == figures["config"]["n"] and figures["stages"]["total_ms_per_case"] > 0
    assert figures["reference"]["tasks"] == figures["reference"]["cases"] > 0
    assert figures["cli"]["wall_s"] > 0
    whole = figures["whole"]
    assert whole["captured_requests"] == n
    assert [row["server"] for row in whole["rows"]] == ["async", "threaded"]
    for row in whole["rows"]:
        for kind in ("vbench", "raw-httpx"):
            got = row["kinds"][kind]
            assert got["reps"] == 1 and got["failures"] == 0 and got["cpu_s"] > 0, (row["server"], kind)
        assert row["ratios"]["vbench/raw-httpx"] > 0
    assert {k: v["reps"] for k, v in figures["startup"].items()} == {"version": 1, "validate_one_file": 1}
    slow = figures["slow"]
    assert slow["latency_ms"] == 40.0 and slow["kinds"]["vbench"]["failures"] == 0
    assert slow["ratios"]["vbench/raw-httpx"] > 0
    assert figures["report_time"]["reps"] == 1 and figures["report_time"]["results"] == n
    assert (
        "| `vbench report` of the 24 results of the headline run (median of 1) |"
        in (tmp_path / json_file.name.replace(".json", ".md")).read_text()
    )
    phases = figures["phases"]
    assert phases["exit_code"] == 0 and phases["phases"][PHASES[RUN]]["cpu_s"] > 0
    assert sum(p["cpu_s"] for p in phases["phases"].values()) == pytest.approx(phases["cpu_s"])
    assert phases["phases"][PHASES[SCORE]]["wall_s"] > 0
    (size,) = figures["report"]
    assert size["results"] == 300 and "wall_s" in size["score"]
    table = (tmp_path / json_file.name.replace(".json", ".md")).read_text()
    assert "| (b)/(a) at 20 ms" in table and "harness CPU per case" in table
    assert "| vbench run / raw httpx client, whole processes, threaded stdlib server, 20 ms" in table
    assert "| `vbench --version` start to exit (median of 1) |" in table
    assert "| HTML report (imports, charts, page)" in table
    assert table in capsys.readouterr().out


def test_each_peer_gets_its_rows_and_the_whole_process_ratio() -> None:
    """(d) and (p) each judged ≤ 1.0; at the headline the whole `vbench run` process against each peer too."""
    figures = _figures(1.0, 0.5, 1.0, 0.05, 1.0, 100)
    row = figures["latencies"][0]
    row["kinds"]["peer"] |= {"wall_s": 10.0}
    row["kinds"]["promptfoo"] = {"reps": 5, "wall_s": 8.0}
    row["ratios"]["harness/promptfoo"] = 1.2
    figures["cli"] = {"wall_s": 9.0, "latency_ms": 200.0}
    rows = {r["figure"].split(" at ")[0]: r for r in build_targets(figures)}
    assert rows["(b)/(d) Inspect AI"]["result"] == "PASS"
    assert rows["(b)/(p) promptfoo"]["result"] == "MISS" and rows["(b)/(p) promptfoo"]["measured"] == "1.200"
    assert rows["vbench run (whole process) / (d) Inspect AI"]["result"] == "PASS"  # 9 s / 10 s
    assert rows["vbench run (whole process) / (p) promptfoo"]["result"] == "MISS"  # 9 s / 8 s
    row["kinds"]["promptfoo"] = {"error": "npm is not installed"}
    del row["ratios"]["harness/promptfoo"]
    rows = {r["figure"].split(" at ")[0]: r for r in build_targets(figures)}
    assert rows["(b)/(p) promptfoo"]["measured"] == "not measured: npm is not installed"


def test_promptfoo_config_carries_the_harness_requests(bench_cases: tuple[Path, list], tmp_path: Path) -> None:
    _work, cases = bench_cases
    bodies = [{**b["params"], **b["extra_body"]} for b in request_bodies(cases)]
    path = promptfoo.write_config(bodies, bodies[0], "http://127.0.0.1:9/v1", tmp_path)
    config = json.loads(path.read_text())
    assert [t["vars"]["messages"] for t in config["tests"]] == [b["messages"] for b in bodies]
    (provider,) = config["providers"]
    assert provider["id"] == "openai:chat:local-model" and provider["config"]["apiBaseUrl"] == "http://127.0.0.1:9/v1"
    for key in ("temperature", "max_tokens", "seed"):
        assert provider["config"][key] == bodies[0][key]
    assert provider["config"]["response_format"] == "file://response_format.json"
    assert json.loads((tmp_path / "response_format.json").read_text()) == bodies[0]["response_format"]


@pytest.mark.slow
@pytest.mark.skipif(
    not promptfoo.binary().exists(), reason="promptfoo is not installed here (nox -s bench installs it with npm)"
)
def test_promptfoo_sends_the_requests_the_harness_sends(
    bench_cases: tuple[Path, list], tmp_path: Path, openai_server: LocalOpenAIServer
) -> None:
    """(p) is a fair peer only if promptfoo sends what the harness sends: the same messages and settings."""
    _work, cases = bench_cases
    bodies = [{**b["params"], **b["extra_body"]} for b in request_bodies(cases)]
    config = promptfoo.write_config(bodies, bodies[0], openai_server.base_url, tmp_path / "pf")
    result = promptfoo.run_eval(config, 4, tmp_path / "pf" / "results.json")
    assert result.get("results") == len(bodies) and result["failures"] == 0, result
    sent = sorted(openai_server.requests, key=lambda b: b["messages"][1]["content"])
    assert len(sent) == len(bodies)
    for got, want in zip(sent, sorted(bodies, key=lambda b: b["messages"][1]["content"]), strict=True):
        for key in ("model", "messages", "temperature", "max_tokens", "seed", "response_format"):
            assert got.get(key) == want.get(key), key
