"""`vbench run` against history end to end: the recorded control is not re-run, and an anchor stops creep.

A scripted model behind the local server answers every case right except those its prompt lists; each step of a
chain of prompts loses two more cases (about 1 pp of 210), too little for its own paired test against the step
before, which ships. Against the anchor (the first run, tagged) the losses add up, and the anchor stops the chain
before its cumulative loss passes the 5 pp margin.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.devtools.local_server import LocalOpenAIServer
from tests.history.conftest import corpus, losable_ids, losing_prompt, summary, vbench_run

COPIES = 30  # 210 quality cases
STEP = 2  # cases each prompt loses beyond the one before: 0.95 pp


@pytest.mark.slow  # five whole runs of 210 cases
def test_history_control_is_not_rerun_and_the_anchor_stops_a_chain_of_small_losses(
    tmp_path: Path, work_tree: Path, server: LocalOpenAIServer
) -> None:
    cases, store = corpus(tmp_path / "cases", COPIES), str(tmp_path / "history")
    n = COPIES * 7
    first = tmp_path / "run-0"
    assert vbench_run(server, cases, losing_prompt(tmp_path, "p0", []), first, "--history", store) == 0
    assert server.request_count == n
    assert main(["history", "tag", "history:main", "v1", "--history", store]) == 0
    lose = losable_ids(COPIES)
    stopped = None
    for step in range(1, 12):
        server.reset()
        out = tmp_path / f"run-{step}"
        prompt = losing_prompt(tmp_path, f"p{step}", lose[: step * STEP])
        code = vbench_run(
            server, cases, prompt, out, "--control", "history:main", "--anchor", "history:v1", "--history", store
        )
        assert server.request_count == n  # the candidate's requests only: the control came from the history
        (d,) = summary(out)["decisions"]
        assert d["control_decision"] == "ship"  # two more lost cases: the moving control alone ships every step
        assert d["metrics"]["verdict_accuracy"]["diff"] == -STEP / n
        assert d["anchor"]["metrics"]["verdict_accuracy"]["diff"] == -step * STEP / n
        if d["decision"] != "ship":
            stopped = (step, d, code)
            break
        assert d["decided_by"] == "control" and code == 0
    assert stopped is not None, "the anchor never stopped the chain"
    step, d, code = stopped
    print(f"stopped at step {step}: cumulative loss {step * STEP / n:.2%}, {d['decision']} by {d['decided_by']}")
    assert d["decided_by"] == "anchor" and d["anchor"]["decision"] == d["decision"]
    assert step * STEP / n < 0.05  # stopped before the cumulative loss passed the margin
    assert "anchor" in d["reasons"][-1]
    # the recorded chain: every run on main, the stopped one too (recorded as what it was)
    assert main(["history", "list", "--history", store, "--branch", "main"]) == 0


def test_a_history_control_of_another_corpus_is_refused_unless_pair_common(
    tmp_path: Path, work_tree: Path, server: LocalOpenAIServer, capsys
) -> None:
    store = str(tmp_path / "history")
    small, large = corpus(tmp_path / "small", 2), corpus(tmp_path / "large", 3)
    p0 = losing_prompt(tmp_path, "p0", [])
    assert vbench_run(server, small, p0, tmp_path / "a", "--history", store) == 0
    server.reset()
    capsys.readouterr()
    code = vbench_run(server, large, p0, tmp_path / "b", "--control", "history:main", "--history", store)
    assert code == 2 and server.request_count == 0
    err = capsys.readouterr().err
    assert "no recorded run of the same model and corpus" in err and "--pair-common" in err
    assert "Traceback" not in err
    code = vbench_run(
        server, large, p0, tmp_path / "c", "--control", "history:main", "--history", store, "--pair-common"
    )
    (d,) = summary(tmp_path / "c")["decisions"]
    assert code == 0 and d["paired_cases"] == 14 and d["unpaired_cases"] == 7


def test_a_store_that_is_down_loses_nothing_and_names_the_command(
    tmp_path: Path, work_tree: Path, server: LocalOpenAIServer, capsys
) -> None:
    cases, out = corpus(tmp_path / "cases", 1), tmp_path / "run"
    down = "postgresql://nobody:s3cret-pw@127.0.0.1:1/none"
    assert vbench_run(server, cases, losing_prompt(tmp_path, "p0", []), out, "--history", down) == 2
    err = capsys.readouterr().err
    assert "the run was not recorded in the history" in err and "Traceback" not in err
    assert f"vbench history record {out} --history postgresql://nobody:***@127.0.0.1:1/none" in err.replace("\n", "")
    assert "s3cret-pw" not in err
    assert (out / "summary.json").is_file()  # the finished run is whole: record it once the store answers
    assert main(["history", "record", str(out), "--history", str(tmp_path / "h")]) == 0


def test_history_in_vbench_toml_records_the_run(tmp_path: Path, work_tree: Path, server: LocalOpenAIServer) -> None:
    store = tmp_path / "from-toml"
    (work_tree / "vbench.toml").write_text(f'history = "{store}"\n')
    assert vbench_run(server, corpus(tmp_path / "cases", 1), losing_prompt(tmp_path, "p0", []), tmp_path / "r") == 0
    (head,) = (store / "heads").glob("*.json")
    assert '"branch":"main"' in head.read_text()
