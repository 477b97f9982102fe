"""Where a whole `vbench run` spends its CPU: the CLI run in this process, each of its phases timed.

    python -m bench.phases run --model openai:local-model --cases DIR --out DIR --cache DIR ...

takes `vbench`'s own arguments and prints one JSON line: CPU (process_time) and wall seconds of the
imports `vbench run` needs before its first case, then of each phase the command marks (`harness.app.phases`:
loading the cases, the run itself (the requests and the system), scoring, the certificate, the HTML report, the
console summary) and the rest (preflight, the manifest). `vbench run` finishes in its own process, so the phases
add up to the process's CPU. The interpreter's own start-up is the process's CPU (`os.wait4`) less `cpu_s`. The
headline says how long a user waits; this says what to cut. The phases are watched through the public hook
(`harness.app.phases.watching`); nothing in the harness changes.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from typing import Any

from harness.app.phases import CERTIFICATE, CONSOLE, LOAD_CASES, REPORT, RUN, SCORE

PHASES = {
    LOAD_CASES: "load cases (YAML, validation, content hashes)",
    RUN: "run_study (requests, system, store, cache, log; each record's outcome and findings)",
    SCORE: "score_run (summary.json)",
    CERTIFICATE: "certificate",
    REPORT: "HTML report (imports, charts, page)",
    CONSOLE: "console summary",
}
"""Each phase `vbench run` marks, as the table names it."""


def main(argv: list[str]) -> dict[str, Any]:
    cpu0, wall0 = time.process_time(), time.perf_counter()
    import harness.cli.run  # noqa: F401 - what `vbench run` imports before its first case
    from harness.app.phases import watching

    spent: dict[str, list[float]] = {"imports before the first case": [time.process_time() - cpu0, 0.0]}
    spent["imports before the first case"][1] = time.perf_counter() - wall0

    def add(name: str, cpu: float, wall: float) -> None:
        total = spent.setdefault(PHASES.get(name, name), [0.0, 0.0])
        total[0] += cpu
        total[1] += wall

    from harness.cli import main as vbench

    with watching(add):
        try:
            with contextlib.redirect_stdout(sys.stderr):  # stdout carries only this module's JSON line
                code = vbench(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    phases = {name: {"cpu_s": c, "wall_s": w} for name, (c, w) in spent.items()}
    rest_cpu = cpu - sum(p["cpu_s"] for p in phases.values())
    rest_wall = wall - sum(p["wall_s"] for p in phases.values())
    phases["the rest (preflight, manifest)"] = {"cpu_s": rest_cpu, "wall_s": rest_wall}
    return {"exit_code": code, "cpu_s": cpu, "wall_s": wall, "phases": phases}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])), flush=True)
