"""A long log's later units are checked against their cases in a forked child while this process scores the rest:
the summary is the one scoring gives in one process, failures from both parts included (each run in a fresh
interpreter, which has no other thread and so may fork)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harness.cli import main
from harness.run.folder import RESULTS_FILE

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, os, sys
from pathlib import Path
from harness.run.merge import without_timings
from harness.score import scoring

run, marks = Path(sys.argv[1]), Path(sys.argv[2])
check_units = scoring.check_units

def marked(log, start):
    marks.write_text(str(os.getpid()))  # the child that checks from `start`
    return check_units(log, start)

scoring.check_units = marked
scoring.CHECK_APART_FROM = 2
apart = scoring.score_run(run, scoring.GateSettings())
scoring.CHECK_APART_FROM = 10**9
here = scoring.score_run(run, scoring.GateSettings())
failures = [f.case_id + "/" + str(f.epoch) for f in here.conformance.failures]
child = int(marks.read_text()) if marks.exists() else None
print(json.dumps({"same": without_timings(apart.to_json()) == without_timings(here.to_json()), "failures": failures,
                  "child": child is not None and child != os.getpid()}))
"""


def test_the_later_units_checked_in_a_child_give_the_same_summary(tmp_path: Path) -> None:
    run = tmp_path / "run"
    args = ["run", "--cases", str(ROOT / "cases" / "quality"), "--filter", "id:q-batch-*", "--epochs", "2"]
    assert main([*args, "--out", str(run), "--no-report", "--no-cache"]) in (0, 1)
    lines = (run / RESULTS_FILE).read_text(encoding="utf-8").splitlines()
    tampered = []
    for i, line in enumerate(lines):  # every third record breaks an invariant: failures in both halves
        record = json.loads(line)
        if i % 3 == 0 and record.get("persisted"):
            record["persisted"]["verifier_evaluation"]["critical_fact_count"] = 99
            line = json.dumps(record)
        tampered.append(line)
    (run / RESULTS_FILE).write_text("\n".join(tampered) + "\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(run), str(tmp_path / "marks")],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["child"]  # the child did check
    assert found["same"]
    assert len(found["failures"]) >= len(lines) // 3 - 1  # in both parts


CANCEL_PROBE = """
import json, os, sys
from pathlib import Path
from harness.run.folder import RunFileError
from harness.score import scoring

scoring.CHECK_APART_FROM = 2
try:
    scoring.score_run(Path(sys.argv[1]), scoring.GateSettings())
    raised = None
except RunFileError as exc:
    raised = str(exc)
try:
    os.waitpid(-1, os.WNOHANG)
    left = True
except ChildProcessError:
    left = False  # no child of this process is left, running or unreaped
print(json.dumps({"raised": raised, "child_left": left}))
"""


def test_a_scoring_that_fails_before_the_childs_part_stops_the_child(tmp_path: Path) -> None:
    run = tmp_path / "run"
    args = ["run", "--cases", str(ROOT / "cases" / "quality"), "--filter", "id:q-batch-*", "--epochs", "2"]
    assert main([*args, "--out", str(run), "--no-report", "--no-cache"]) in (0, 1)
    records = [json.loads(line) for line in (run / RESULTS_FILE).read_text(encoding="utf-8").splitlines()]
    first = min(range(len(records)), key=lambda i: (records[i]["case_id"], records[i]["variant"], records[i]["epoch"]))
    records[first]["verdict"] = 12  # the first unit in key order, before the child's part: no record any more
    (run / RESULTS_FILE).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", CANCEL_PROBE, str(run)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["raised"] is not None and found["child_left"] is False
