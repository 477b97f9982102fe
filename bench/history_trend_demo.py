"""`python -m bench.history_trend_demo`: a recorded series of real runs on main, its trend page and the alert.

The judge of known skill answers behind the local OpenAI-compatible server (`skill_judge_responder`); each run is
a whole `vbench run --history STORE` of the 469 quality cases, with a new seed (a run on main after an
equivalent change). The first `--equivalent` runs are at skill 0.9, the next `--regressed` at the skill whose
exact unsafe-PASS rate is 5 pp higher. Then `vbench history trend unsafe_pass_rate --html` writes the page and
Chromium screenshots it: reports/history/trend-<date>.{html,png}, and the console table in trend-<date>.txt.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from harness.cli import main as vbench
from harness.corpus.loader import load_cases
from harness.devtools.local_server import LocalOpenAIServer
from harness.devtools.responders import skill_judge_responder
from harness.history.alert_study import CONTROL_SKILL, skill_for_unsafe_rise
from harness.report.browser import screenshot
from harness.validity.judge import model_name
from harness.validity.truth import case_table

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = [ROOT / "cases" / "quality", ROOT / "cases" / "generated"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--equivalent", type=int, default=8)
    parser.add_argument("--regressed", type=int, default=4)
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "history")
    args = parser.parse_args(argv)
    cases = load_cases(FOLDERS)
    worse = skill_for_unsafe_rise([case_table(c) for c in cases if c.kind == "quality"], CONTROL_SKILL, 0.05)
    skills = [CONTROL_SKILL] * args.equivalent + [worse] * args.regressed
    os.environ.setdefault("OPENAI_API_KEY", "sk-local-demo")
    stem = args.out / f"trend-{datetime.now(UTC).strftime('%Y-%m-%d')}"
    args.out.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory(prefix="history-demo-") as tmp,
        LocalOpenAIServer(skill_judge_responder(cases)) as srv,
    ):
        store = Path(tmp) / "history"
        for i, skill in enumerate(skills, start=1):
            run = [
                "run",
                *(a for f in FOLDERS for a in ("--cases", str(f))),
                "--model",
                f"openai:{model_name(skill, i)}",
            ]
            run += ["--base-url", srv.base_url, "--out", str(Path(tmp) / f"run-{i}"), "--no-report", "--no-cache"]
            with contextlib.redirect_stdout(io.StringIO()):
                code = vbench([*run, "--history", str(store)])
            print(f"run {i}: skill {skill} exit {code}")
            if code not in (0, 1):
                return 1
        table = io.StringIO()
        with contextlib.redirect_stdout(table):
            vbench(
                [
                    "history",
                    "trend",
                    "unsafe_pass_rate",
                    "--history",
                    str(store),
                    "--html",
                    str(stem.with_suffix(".html")),
                ]
            )
    stem.with_suffix(".txt").write_text(table.getvalue(), encoding="utf-8")
    print(table.getvalue())
    print(screenshot(stem.with_suffix(".html"), stem.with_suffix(".png"), width=900, height=1100))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
