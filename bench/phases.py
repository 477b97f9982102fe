"""Where a whole `vbench run` spends its CPU: the CLI run in this process, each phase timed around its call.

    python -m bench.phases run --model openai:local-model --cases DIR --out DIR --cache DIR ...

takes `vbench`'s own arguments and prints one JSON line: CPU (process_time) and wall seconds of the
imports `vbench run` needs before its first case, loading the cases, `run_study` (the requests and the
system), `score_run`, the HTML report, the console summary and the rest (the certificate, which imports
the report's modules). The interpreter's own start-up is the process's CPU (`os.wait4`) less `cpu_s`. The headline says how long a user waits; this says what to cut. The phases are found by name
in `harness.cli.run` and timed from outside; nothing in the harness changes.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sys
import time
from collections.abc import Callable
from typing import Any

PHASES = {
    "load_case_refs": "load cases (YAML, validation, content hashes)",
    "run_study": "run_study (requests, system, store, cache, log; scoring and report imports on a thread meanwhile)",
    "score_run": "score_run (summary.json)",
    "_render_report": "HTML report (imports, charts, page)",
    "print_summary": "console summary",
}


def timed(fn: Callable[..., Any], spent: dict[str, list[float]], name: str) -> Callable[..., Any]:
    """`fn`, adding the CPU and wall seconds of each call to `spent[name]`."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            total = spent.setdefault(name, [0.0, 0.0])
            total[0] += time.process_time() - cpu
            total[1] += time.perf_counter() - wall

    return wrapper


def main(argv: list[str]) -> dict[str, Any]:
    cpu0, wall0 = time.process_time(), time.perf_counter()
    import harness.cli.run as run

    spent: dict[str, list[float]] = {"imports before the first case": [time.process_time() - cpu0, 0.0]}
    spent["imports before the first case"][1] = time.perf_counter() - wall0
    for name in PHASES:
        setattr(run, name, timed(getattr(run, name), spent, PHASES[name]))
    from harness.cli import main as vbench

    try:
        with contextlib.redirect_stdout(sys.stderr):  # stdout carries only this module's JSON line
            code = vbench(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    phases = {name: {"cpu_s": c, "wall_s": w} for name, (c, w) in spent.items()}
    rest_cpu = cpu - sum(p["cpu_s"] for p in phases.values())
    rest_wall = wall - sum(p["wall_s"] for p in phases.values())
    # the certificate imports the report's modules (jinja2, the templates), so they land here, not in the report
    phases["the rest (certificate with the report's imports, preflight, manifest)"] = {
        "cpu_s": rest_cpu,
        "wall_s": rest_wall,
    }
    return {"exit_code": code, "cpu_s": cpu, "wall_s": wall, "phases": phases}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])), flush=True)
