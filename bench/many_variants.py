"""The many-variants figure: a study of 200 variants × 136 cases × 3 epochs through `vbench run`.

Every variant is the validity study's judge of known skill (`harness.validity.judge`), served by the local
OpenAI-compatible server over HTTP, so the run's requests, records, scoring and report are the real ones. The
figures are what a user waits for after the work is done: the seconds from the server's last answer to the end of
the `vbench run` process, and the size of the summary.json it wrote (targets: within 60 s, under 5 MB).

`python -m bench.many_variants [--variants 200] [--epochs 3]`; written to reports/bench/many-variants-<date>.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.corpus.loader import load_cases
from harness.devtools.local_server import LocalOpenAIServer
from harness.devtools.responders import skill_judge_responder
from harness.validity.judge import model_name

TARGET_AFTER_S = 60.0
TARGET_SUMMARY_BYTES = 5 * 1024 * 1024


def skills(n: int) -> list[float]:
    """A spread of skills from 0.6 to 0.8, as a sweep of prompt variants would give."""
    return [round(0.6 + 0.2 * i / max(n - 1, 1), 4) for i in range(n)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--cases", type=Path, default=Path("cases/quality"))
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--out", type=Path, default=Path("reports/bench"))
    args = parser.parse_args(argv)
    responder = skill_judge_responder(load_cases([args.cases]))
    last = [0.0]

    def timed(body: dict[str, Any]) -> str:
        reply = responder(body)
        last[0] = time.monotonic()
        return reply

    models = [f"openai:{model_name(skill, seed)}" for seed, skill in enumerate(skills(args.variants))]
    with tempfile.TemporaryDirectory(prefix="many-variants-") as work:
        run_dir = Path(work) / "run"
        with LocalOpenAIServer(responder=timed, record=False) as server:
            command = [
                sys.executable, "-m", "harness.cli", "run", "--cases", str(args.cases), "--epochs", str(args.epochs),
                *(arg for m in models for arg in ("--model", m)), "--base-url", server.base_url,
                "--api-key-env", "MANY_VARIANTS_KEY", "--no-cache", "--concurrency", str(args.concurrency),
                "--control", f"{models[-1]}@baseline", "--out", str(run_dir),
            ]  # fmt: skip
            started = time.monotonic()
            proc = subprocess.run(
                command, env={**os.environ, "MANY_VARIANTS_KEY": "local"}, capture_output=True, text=True, check=False
            )
            ended = time.monotonic()
        summary = run_dir / "summary.json"
        size = summary.stat().st_size if summary.exists() else None
        records = sum(1 for _ in (run_dir / "results.jsonl").open()) if (run_dir / "results.jsonl").exists() else 0
    after = ended - last[0] if last[0] else None
    met = proc.returncode in (0, 1) and after is not None and after <= TARGET_AFTER_S
    met = met and size is not None and size < TARGET_SUMMARY_BYTES
    stamp = datetime.now(UTC).strftime("%Y-%m-%d")
    lines = [
        f"# Many variants ({stamp}): {args.variants} variants × {args.cases} × {args.epochs} epochs",
        "",
        f"Command: `python -m bench.many_variants --variants {args.variants} --epochs {args.epochs}`",
        "",
        "| figure | value | target |",
        "| --- | --- | --- |",
        f"| records | {records:,} | |",
        f"| whole `vbench run` | {ended - started:.1f} s | |",
        f"| after the last request | {after:.1f} s | ≤ {TARGET_AFTER_S:.0f} s |"
        if after is not None
        else "| after the last request | no request | |",
        f"| summary.json | {size / 1e6:.2f} MB | < 5 MB |" if size is not None else "| summary.json | not written | |",
        f"| exit code | {proc.returncode} | 0 or 1 |",
        "",
        f"Targets {'met' if met else 'MISSED'}.",
    ]
    if proc.returncode not in (0, 1):
        lines += ["", "```", proc.stderr[-2000:], "```"]
    text = "\n".join(lines) + "\n"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"many-variants-{stamp}.md").write_text(text, encoding="utf-8")
    print(text)
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
