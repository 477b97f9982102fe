"""`python -m harness.cli.validity`: the validity study (`nox -s validity`), written to reports/validity/<date>.

The decisions, early stopping and per-variant coverage are measured in process (`harness.validity`),
over draws of the same judge the local test server serves. A sample of conditions also goes through real
`vbench run` subprocesses against that server over HTTP (the `openai:` model and client, the runner, the
scorer and the decision of the run): every case's outcome and the run's decision must equal the in-process
model's, or the study fails.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.cli import Exit
from harness.corpus.loader import load_cases
from harness.devtools.local_server import LocalOpenAIServer
from harness.devtools.responders import skill_judge_responder
from harness.run.plan import variant_name
from harness.run.runlog import RunLog
from harness.score.outcome import record_outcome
from harness.score.summary_model import read_summary_file
from harness.validity.family import family_bands_met, family_markdown, run_family_study
from harness.validity.judge import model_name
from harness.validity.report import markdown, meets_bands
from harness.validity.simulate import decide_pair, simulate_run
from harness.validity.study import StudySettings, run_condition, run_study, skill_for_loss, subset
from harness.validity.truth import case_table

HTTP_CHECKS = ((20, 0.6, 11, 12), (20, 0.8, 13, 14), (136, 0.7, 15, 16))
"""(cases, candidate skill, control seed, candidate seed) of the conditions also run over HTTP."""


def http_check(
    cases_dir: Path, tables: list, size: int, skill: float, seeds: tuple[int, int], s: StudySettings, work: Path
) -> dict[str, Any]:
    """Run control and candidate through `vbench run` against the judge server; compare with the model."""
    chosen = subset(tables, size, s.seed)
    ids = work / f"ids-{size}-{skill}.txt"
    ids.write_text("".join(f"{t.judged.case_id}\n" for t in chosen), encoding="utf-8")
    control, candidate = model_name(s.control_skill, seeds[0]), model_name(skill, seeds[1])
    out = work / f"run-{size}-{skill}"
    with LocalOpenAIServer(responder=skill_judge_responder(load_cases([cases_dir])), record=False) as server:
        env = {**os.environ, "VALIDITY_KEY": "local-test-server"}
        command = [
            sys.executable, "-m", "harness.cli", "run", "--cases", str(cases_dir), "--filter", f"ids:{ids}",
            "--model", f"openai:{control}", "--model", f"openai:{candidate}", "--base-url", server.base_url,
            "--api-key-env", "VALIDITY_KEY", "--no-cache", "--no-report", "--out", str(out),
            "--control", variant_name(f"openai:{control}", "baseline"),
        ]  # fmt: skip
        proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800, check=False)
    records = list(RunLog.read(out).records())
    summary = read_summary_file(out)
    runs = {control: simulate_run(chosen, s.control_skill, seeds[0]), candidate: simulate_run(chosen, skill, seeds[1])}
    index = {t.judged.case_id: i for i, t in enumerate(chosen)}
    mismatches = []
    for r in records:
        model = next((m for m in runs if m in r.variant), None)
        if model is None or r.case_id not in index:
            mismatches.append(f"{r.variant} {r.case_id}: not a case or variant of the check")
            continue
        got, want, i = record_outcome(r), runs[model], index[r.case_id]
        seen = (float(got.verdict_correct), float(got.unsafe_pass), float(got.claims_right))
        expected = (want.verdict_correct[i], want.unsafe_pass[i], want.claims_right[i])
        if seen != expected:
            mismatches.append(f"{model} {r.case_id}: HTTP {seen}, in process {expected}")
    decided = [d.decision for d in summary.decisions]
    model_decision = decide_pair(chosen, runs[control], runs[candidate], s.gated, s.margin, s.alpha)
    return {
        "cases": len(chosen), "candidate_skill": skill, "seeds": list(seeds), "exit_code": proc.returncode,
        "records": len(records), "expected_records": 2 * len(chosen), "outcome_mismatches": mismatches,
        "run_decision": decided[0] if decided else None, "model_decision": model_decision,
        "agrees": not mismatches and len(records) == 2 * len(chosen) and decided == [model_decision],
    }  # fmt: skip


def family_main(args: argparse.Namespace) -> int:
    """The family study (`harness.validity.family`), written to reports/validity/family-<date>.{md,json}."""
    started = time.monotonic()
    tables = [case_table(c) for c in load_cases([args.cases])]
    rows = [c.as_dict() for c in run_family_study(tables, args.replications, args.seed)]
    command = f"python -m harness.cli.validity --family --replications {args.replications} --seed {args.seed}"
    text = family_markdown(rows, command) + f"\nSeconds: {time.monotonic() - started:.0f}.\n"
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / ("family-" + datetime.now(UTC).strftime("%Y-%m-%d"))
    stem.with_suffix(".json").write_text(json.dumps({"command": command, "rows": rows}, indent=2) + "\n")
    stem.with_suffix(".md").write_text(text, encoding="utf-8")
    print(text)
    print(f"written {stem}.md and {stem}.json")
    return 0 if family_bands_met(rows) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The validity study of the ship decision and the per-variant CIs.")
    parser.add_argument("--cases", type=Path, default=Path("cases/quality"))
    parser.add_argument("--out", type=Path, default=Path("reports/validity"))
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--look-size", type=int, default=StudySettings.look_size)
    parser.add_argument("--no-http", action="store_true", help="skip the HTTP check (it is then reported as not run)")
    parser.add_argument(
        "--family", action="store_true", help="only the family study: Hsu's MCB ranking of many variants"
    )
    parser.add_argument("--replications", type=int, default=400, help="with --family: draws per condition")
    args = parser.parse_args(argv)
    if args.family:
        return family_main(args)
    started = time.monotonic()
    tables = [case_table(c) for c in load_cases([args.cases])]
    s = StudySettings(pairs=args.pairs, seed=args.seed, look_size=args.look_size)
    conditions = run_study(tables, s)
    full = max(s.sizes)
    power_skill = skill_for_loss(subset(tables, full, s.seed), s.control_skill, 0.16)
    power = run_condition(tables, full, power_skill, s)
    in_process = time.monotonic() - started
    checks: list[dict[str, Any]] = []
    if not args.no_http:
        with tempfile.TemporaryDirectory(prefix="validity-") as work:
            for size, skill, *seeds in HTTP_CHECKS:
                checks.append(http_check(args.cases, tables, size, skill, (seeds[0], seeds[1]), s, Path(work)))
    data = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "settings": {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(s).items()},
        "corpus": {"cases": len(tables), "path": str(args.cases)},
        "conditions": [c.as_dict() for c in conditions],
        "power_condition": power.as_dict(),
        "http_checks": checks,
        "seconds": {"in_process": round(in_process, 1), "total": round(time.monotonic() - started, 1)},
    }
    bands = meets_bands(data)
    data["bands"] = bands
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / datetime.now(UTC).strftime("%Y-%m-%d")
    stem.with_suffix(".json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    stem.with_suffix(".md").write_text(markdown(data), encoding="utf-8")
    print(markdown(data))
    print(f"written {stem}.md and {stem}.json")
    ok = all(b["met"] for b in bands) and all(c["agrees"] for c in checks)
    if args.no_http:
        print("the HTTP check was not run (--no-http): the in-process model of the pipeline is unchecked")
    return Exit.OK if ok and not args.no_http else Exit.GATE  # a band missed, or the HTTP check left out


if __name__ == "__main__":
    raise SystemExit(main())
