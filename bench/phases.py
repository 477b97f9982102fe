"""Where a whole `vbench run` spends its CPU: the CLI run in this process, each phase timed around its call.

    python -m bench.phases run --model openai:local-model --cases DIR --out DIR --cache DIR ...

takes `vbench`'s own arguments and prints one JSON line: CPU (process_time) and wall seconds of the
imports `vbench run` needs before its first case, loading the cases, `run_study` (the requests and the
system), `score_run`, the HTML report, the console summary and the rest (preflight, the manifest). Where
`vbench run` scores and reports in its forked finishing child (`FinishApart`), the child's `score_run` and report
are timed there and sent back through a file, and this process's wait for the child is a phase of its own: the
child's phases overlap nothing of the parent's but that wait. The interpreter's own start-up is the process's CPU
(`os.wait4`) less `cpu_s`. The headline says how long a user waits; this says what to cut. The phases are found by
name in `harness.cli.run` and timed from outside; nothing in the harness changes.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PHASES = {
    "load_case_refs": "load cases (YAML, validation, content hashes)",
    "run_study": "run_study (requests, system, store, cache, log; the finishing child imports and scores meanwhile)",
    "score_run": "score_run (summary.json)",
    "_render_report": "HTML report (imports, charts, page)",
    "print_summary": "console summary",
}
WAIT = "waiting for the finishing child (its scoring and report, timed in the child, are the phases it names)"
IN_CHILD = " (in the finishing child)"


def timed(
    fn: Callable[..., Any], spent: dict[str, list[float]], name: str, child_log: Path | None = None
) -> Callable[..., Any]:
    """`fn`, adding the CPU and wall seconds of each call to `spent[name]`; a call in a forked child (another
    process than the one that wrapped it) appends them to `child_log` instead, where the parent reads them."""
    parent = os.getpid()

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            took = [time.process_time() - cpu, time.perf_counter() - wall]
            if os.getpid() == parent:
                total = spent.setdefault(name, [0.0, 0.0])
                total[0] += took[0]
                total[1] += took[1]
            elif child_log is not None:
                with child_log.open("a") as out:
                    out.write(json.dumps([name + IN_CHILD, *took]) + "\n")

    return wrapper


def main(argv: list[str]) -> dict[str, Any]:
    cpu0, wall0 = time.process_time(), time.perf_counter()
    import harness.cli.run as run

    spent: dict[str, list[float]] = {"imports before the first case": [time.process_time() - cpu0, 0.0]}
    spent["imports before the first case"][1] = time.perf_counter() - wall0
    with tempfile.TemporaryDirectory() as scratch:
        child_log = Path(scratch) / "child-phases.jsonl"
        for name in PHASES:
            setattr(run, name, timed(getattr(run, name), spent, PHASES[name], child_log))
        run.FinishApart.finished = timed(run.FinishApart.finished, spent, WAIT)  # type: ignore[method-assign]
        from harness.cli import main as vbench

        try:
            with contextlib.redirect_stdout(sys.stderr):  # stdout carries only this module's JSON line
                code = vbench(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        in_child = [json.loads(line) for line in child_log.read_text().splitlines()] if child_log.exists() else []
    phases = {name: {"cpu_s": c, "wall_s": w} for name, (c, w) in spent.items()}
    rest_cpu = cpu - sum(p["cpu_s"] for p in phases.values())
    rest_wall = wall - sum(p["wall_s"] for p in phases.values())
    # without the child, the certificate imports the report's modules (jinja2, the templates) here
    phases["the rest (certificate, preflight, manifest)"] = {"cpu_s": rest_cpu, "wall_s": rest_wall}
    for name, c, w in in_child:  # not in this process's time: inside the wait for the child
        phases[name] = {"cpu_s": c, "wall_s": w}
    return {"exit_code": code, "cpu_s": cpu, "wall_s": wall, "phases": phases}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])), flush=True)
