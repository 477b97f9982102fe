"""The alert rule's false-alarm rate and detection delay, measured with the judge of known skill.

Each simulated run on main is one draw of the skill judge per case (`validity.simulate.simulate_run`, the
draw the HTTP responder makes, scored through the pipeline's outcome table), on the 469 quality cases. A chain
is `reference_runs` reference runs and then `horizon` looks:

- **equivalent**: every run at the control skill; any alarm is a false alarm;
- **regression**: from look `change` on, runs at the skill whose exact unsafe-PASS rate is `rise` (5 points)
  above the control's; the delay is the number of looks from the change to the alarm, counting the change's own.

Rates carry Clopper–Pearson intervals (exact). Run: `python -m harness.history.alert_study` (writes
reports/history/alert-<date>.md and .json).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from harness.corpus.loader import load_cases
from harness.history.alert import AlertSettings, detect
from harness.validity.simulate import clopper_pearson, eligible, simulate_run
from harness.validity.truth import CaseTable, case_table, expected_metrics

CONTROL_SKILL = 0.9
CHANGES = (1, 10, 25, 40)
"""Looks (1-based, after the reference) at which a regression starts."""


@dataclass(frozen=True)
class Settings:
    chains: int = 1000
    regression_chains: int = 250
    """Per change look."""
    seed: int = 37
    rise: float = 0.05
    alert: AlertSettings = field(default_factory=AlertSettings)


def skill_for_unsafe_rise(tables: Sequence[CaseTable], control_skill: float, rise: float) -> float:
    """The skill whose exact unsafe-PASS rate is `rise` above the control's (the rate falls as skill rises)."""
    target = (expected_metrics(tables, control_skill)["unsafe_pass_rate"] or 0.0) + rise
    low, high = 0.0, control_skill
    for _ in range(40):
        mid = (low + high) / 2
        rate = expected_metrics(tables, mid)["unsafe_pass_rate"] or 0.0
        low, high = (mid, high) if rate > target else (low, mid)
    return round((low + high) / 2, 4)


def unsafe_count(tables: Sequence[CaseTable], skill: float, seed: int) -> tuple[int, int]:
    keep = eligible(tables)
    run = simulate_run(tables, skill, seed)
    return int(run.unsafe_pass[keep].sum()), int(keep.sum())


def chain(tables: Sequence[CaseTable], skills: Sequence[float], seed: int) -> list[tuple[int, int]]:
    return [unsafe_count(tables, skill, seed * 1_000 + i) for i, skill in enumerate(skills)]


def run_study(tables: Sequence[CaseTable], s: Settings) -> dict[str, Any]:
    a = s.alert
    worse = skill_for_unsafe_rise(tables, CONTROL_SKILL, s.rise)
    false_alarms, alarm_looks = 0, []
    for c in range(s.chains):
        result = detect(chain(tables, [CONTROL_SKILL] * (a.reference_runs + a.horizon), s.seed + c), a)
        if result.first_alarm is not None:
            false_alarms += 1
            alarm_looks.append(result.first_alarm - a.reference_runs + 1)
    lo, hi = clopper_pearson(false_alarms, s.chains)
    regression = []
    for change in CHANGES:
        delays: list[float] = []
        early = 0
        for c in range(s.regression_chains):
            skills = [CONTROL_SKILL] * (a.reference_runs + change - 1)
            skills += [worse] * (a.reference_runs + a.horizon - len(skills))
            result = detect(chain(tables, skills, 10_000_000 + s.seed * 10_000 + change * 1_000 + c), a)
            first = result.first_alarm
            look = None if first is None else first - a.reference_runs + 1
            if look is not None and look < change:
                early += 1
            delays.append(np.inf if look is None or look < change else look - change + 1)
        found = [d for d in delays if np.isfinite(d)]
        regression.append(
            {
                "change_look": change,
                "chains": s.regression_chains,
                "median_delay_looks": statistics.median(delays),
                "p90_delay_looks": float(np.percentile(delays, 90)),
                "detected_within_horizon": len(found),
                "alarmed_before_change": early,
            }
        )
    rates = {
        k: expected_metrics(tables, v)["unsafe_pass_rate"] for k, v in (("control", CONTROL_SKILL), ("worse", worse))
    }
    return {
        "cases": len(tables),
        "unsafe_eligible": int(eligible(tables).sum()),
        "control_skill": CONTROL_SKILL,
        "regressed_skill": worse,
        "exact_unsafe_pass_rate": rates,
        "settings": {
            "chains": s.chains,
            "regression_chains": s.regression_chains,
            "seed": s.seed,
            "rise": s.rise,
            "alert": a.model_dump(),
        },
        "equivalent": {
            "chains": s.chains,
            "false_alarms": false_alarms,
            "rate": false_alarms / s.chains,
            "ci95": [lo, hi],
            "first_alarm_looks": alarm_looks,
        },
        "regression": regression,
    }


def markdown(data: dict[str, Any], command: str) -> str:
    eq, a = data["equivalent"], data["settings"]["alert"]
    rates = data["exact_unsafe_pass_rate"]
    rows = "\n".join(
        f"| {r['change_look']} | {r['chains']} | {r['median_delay_looks']:g} | {r['p90_delay_looks']:g} | "
        f"{r['detected_within_horizon']} | {r['alarmed_before_change']} |"
        for r in data["regression"]
    )
    med = max(r["median_delay_looks"] for r in data["regression"])
    return f"""# Alert rule on the trend of main: false alarms and detection delay

Date: {data["date"]}. Command: `{command}` ({data["seconds"]} s).

The rule (`harness/history/alert.py`): an e-detector (Shin, Ramdas & Rinaldo 2023, *E-detectors: a nonparametric
framework for sequential change detection*), a CUSUM of mixture e-values against the upper bound of the
reference runs' unsafe-PASS rate; the bound is proven to keep false alarms at or below alpha = {a["alpha"]} over
{a["horizon"]} looks (Ville's inequality, a union over the look a change could start at, and alpha/2 for the
reference's bound). Reference: the first {a["reference_runs"]} runs of the chain, pooled.

Simulation: the judge of known skill (`harness/validity/`) on {data["cases"]} quality cases
({data["unsafe_eligible"]} whose gold forbids PASS); control skill {data["control_skill"]} (exact unsafe-PASS rate
{rates["control"]:.4f}); the regression runs at skill {data["regressed_skill"]} (exact rate {rates["worse"]:.4f},
{(rates["worse"] - rates["control"]) * 100:+.1f} pp).

## Equivalent runs ({a["horizon"]} looks each)

| chains | false alarms | rate | 95% CI (Clopper–Pearson) |
|---|---|---|---|
| {eq["chains"]} | {eq["false_alarms"]} | {eq["rate"]:.4f} | [{eq["ci95"][0]:.4f}, {eq["ci95"][1]:.4f}] |

Target: at most 0.05 — **{"met" if eq["ci95"][1] <= 0.05 or eq["rate"] <= 0.05 else "NOT met"}**
(upper CI bound {eq["ci95"][1]:.4f}).

## A 5 pp unsafe-PASS regression

Delay: looks from the first regressed run to the alarm, counting that run (1 = flagged on the first bad run).

| change at look | chains | median delay | 90th percentile | detected in horizon | alarmed before the change |
|---|---|---|---|---|---|
{rows}

Target: median within 3 looks — **{"met" if med <= 3 else "NOT met"}** (worst median {med:g}).

Reproduce: `{command}` or `nox -s alert-study`.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="False-alarm rate and detection delay of the history alert rule.")
    parser.add_argument(
        "--cases", type=Path, action="append", help="case folders (default cases/quality, cases/generated)"
    )
    parser.add_argument("--out", type=Path, default=Path("reports/history"))
    parser.add_argument("--chains", type=int, default=Settings.chains)
    parser.add_argument("--regression-chains", type=int, default=Settings.regression_chains)
    parser.add_argument("--seed", type=int, default=Settings.seed)
    args = parser.parse_args(argv)
    started = time.monotonic()
    folders = args.cases or [Path("cases/quality"), Path("cases/generated")]
    tables = [case_table(c) for c in load_cases(folders) if c.kind == "quality"]
    data = run_study(tables, Settings(chains=args.chains, regression_chains=args.regression_chains, seed=args.seed))
    data["date"] = datetime.now(UTC).isoformat(timespec="seconds")
    data["seconds"] = round(time.monotonic() - started, 1)
    command = "python -m harness.history.alert_study " + " ".join(argv if argv is not None else [])
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"alert-{datetime.now(UTC).strftime('%Y-%m-%d')}"
    stem.with_suffix(".json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    text = markdown(data, command.strip())
    stem.with_suffix(".md").write_text(text, encoding="utf-8")
    print(text)
    print(f"written {stem}.md and {stem}.json")
    eq = data["equivalent"]
    return 0 if eq["rate"] <= 0.05 and all(r["median_delay_looks"] <= 3 for r in data["regression"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
