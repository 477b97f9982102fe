"""`vbench run --stop-early` end to end over real HTTP: the skill judge of the project's test server answers
each claim right with the model name's probability, so how a pair of runs should go is known in process.

The run's stop (look, reason) is checked against the same sequential rule run in process on the same draws
(`validity`), and its saved requests against the requests the server saw.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main
from harness.corpus.loader import load_cases
from harness.devtools.local_server import LocalOpenAIServer
from harness.devtools.responders import skill_judge_responder
from harness.report.render import render_run
from harness.run.plan import variant_name
from harness.run.study import DEFAULT_DECIDE_ON
from harness.score.paired import DEFAULT_MARGIN
from harness.score.sequential import design
from harness.validity.judge import model_name
from harness.validity.sequential import Stopped, look_order, sequential
from harness.validity.simulate import decide_pair, eligible, metric_units, simulate_run
from harness.validity.truth import CaseTable, case_table

CASES_DIR = Path("cases/quality")
CONTROL_SKILL = 0.8


@cache
def tables() -> list[CaseTable]:
    """The quality cases in sorted-id order: the order a run's seeded permutation starts from."""
    return sorted((case_table(c) for c in load_cases([CASES_DIR])), key=lambda t: t.judged.case_id)


def in_process(control_seed: int, skill: float, seed: int) -> tuple[Stopped, str]:
    """The sequential rule's stop, and the fixed-n decision at the design's last level, on the same draws."""
    ts = tables()
    ctl, cand = simulate_run(ts, CONTROL_SKILL, control_seed), simulate_run(ts, skill, seed)
    unit_case = {
        n: np.flatnonzero(eligible(ts)) if n == "unsafe_pass_rate" else np.arange(len(ts)) for n in DEFAULT_DECIDE_ON
    }
    stopped = sequential(
        {n: metric_units(ts, ctl, n) for n in DEFAULT_DECIDE_ON}, {n: metric_units(ts, cand, n) for n in DEFAULT_DECIDE_ON},
        look_order(len(ts), 0), unit_case=unit_case,
    )  # fmt: skip
    final = design(len(ts)).levels[-1]
    return stopped, decide_pair(ts, ctl, cand, DEFAULT_DECIDE_ON, DEFAULT_MARGIN, final)


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("JUDGE_KEY", "local-test-server")
    with LocalOpenAIServer(responder=skill_judge_responder(load_cases([CASES_DIR]))) as server:
        yield server


def run(server: LocalOpenAIServer, out: Path, control: str, candidate: str, *extra: str) -> int:
    return main([
        "run", "--cases", str(CASES_DIR), "--model", f"openai:{control}", "--model", f"openai:{candidate}",
        "--base-url", server.base_url, "--api-key-env", "JUDGE_KEY", "--no-cache", "--no-report", "--out", str(out),
        "--control", variant_name(f"openai:{control}", "baseline"), "--stop-early", *extra,
    ])  # fmt: skip


def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def test_a_clearly_worse_candidate_stops_early_blocked_and_saves_requests(
    tmp_path: Path, judge: LocalOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    expected, _ = in_process(1, 0.4, 2)
    assert expected.outcome == "block" and expected.cases_run < len(tables())
    out = tmp_path / "worse"
    assert run(judge, out, model_name(CONTROL_SKILL, 1), model_name(0.4, 2)) == 1
    s = summary(out)
    stop = s["stop_early"]
    assert (stop["reason"], stop["cases_run"], stop["look"]) == ("block", expected.cases_run, expected.looks)
    assert stop["cases_planned"] == len(tables())
    assert stop["requests_sent"] == 2 * stop["cases_run"] == judge.request_count
    assert stop["requests_saved"] == 2 * (len(tables()) - stop["cases_run"]) > 0
    (d,) = s["decisions"]
    assert d["decision"] == "block" and d["paired_cases"] == stop["cases_run"]
    assert d["alpha"] == pytest.approx(stop["levels"][-1])
    for v in s["variants"]:  # the cases not sent are neither errors nor missing results
        assert (v["quality_cases"], v["errors"]) == (stop["cases_run"], 0)
    printed = capsys.readouterr().out
    assert f"{stop['requests_saved']} saved" in printed and "stopped to block" in printed
    assert f"Δ [{100 * (1 - d['alpha']):.3g}% CI]" in printed  # the interval shown is the one decided at
    render_run([out], out)
    assert f"{stop['requests_saved']} saved" in (out / "summary.md").read_text()
    level = f"Δ [{100 * (1 - d['alpha']):.3g}% CI]"  # the report's tables name the level decided at, not 95%
    assert level != "Δ [95% CI]" and level in (out / "summary.md").read_text()
    assert level in (out / "report.html").read_text()

    # resuming the stopped run replays its looks from the records and sends nothing more
    assert run(judge, out, model_name(CONTROL_SKILL, 1), model_name(0.4, 2), "--resume") == 1
    assert judge.request_count == stop["requests_sent"]
    assert summary(out)["stop_early"]["cases_run"] == stop["cases_run"]


def _runs_to_the_end() -> tuple[int, int]:
    """Seeds of an equivalent candidate (same skill) that the in-process rule sends every case for."""
    for seed in range(3, 60, 2):
        stopped, _ = in_process(seed, CONTROL_SKILL, seed + 1)
        if stopped.reason == "final":
            return seed, seed + 1
    raise AssertionError("no seed pair of an equivalent candidate runs to the last look")


def test_an_equivalent_candidate_runs_on_and_is_judged_as_the_fixed_n_rule(
    tmp_path: Path, judge: LocalOpenAIServer
) -> None:
    control_seed, seed = _runs_to_the_end()
    _, fixed = in_process(control_seed, CONTROL_SKILL, seed)
    out = tmp_path / "equivalent"
    code = run(judge, out, model_name(CONTROL_SKILL, control_seed), model_name(CONTROL_SKILL, seed))
    s = summary(out)
    stop = s["stop_early"]
    assert (stop["reason"], stop["cases_run"], stop["requests_saved"]) == ("final", len(tables()), 0)
    assert judge.request_count == 2 * len(tables())
    (d,) = s["decisions"]
    assert d["decision"] == fixed and code == (1 if fixed == "block" else 0)


@pytest.mark.parametrize(
    "extra",
    [
        ["--model", "openai:skill-judge-p0.8-s1", "--model", "openai:skill-judge-p0.7-s2"],  # two variants, no control
        [],  # the offline reference alone
    ],
)
def test_stop_early_without_a_decision_exits_2(
    tmp_path: Path, extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--cases", str(CASES_DIR), "--no-report", "--out", str(tmp_path / "r"), "--stop-early", *extra])
    assert code == 2
    assert "stop_early (--stop-early) stops on a ship decision" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_the_study_key_needs_a_decision_too_and_a_look_size_needs_stop_early(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    study = tmp_path / "study.toml"
    study.write_text('stop_early = true\nlook_size = 10\nmodels = ["openai:skill-judge-p0.8-s1"]\n')
    assert main(["run", "--study", str(study), "--cases", str(CASES_DIR), "--out", str(tmp_path / "a")]) == 2
    assert "stop_early (--stop-early) stops on a ship decision" in capsys.readouterr().err
    code = main(["run", "--cases", str(CASES_DIR), "--look-size", "10", "--out", str(tmp_path / "b")])
    assert code == 2
    assert "look_size given, but not stop_early" in capsys.readouterr().err
