"""A `--stop-early` run's rule: the sequential design (`score.sequential`) read from the run's own records.

After each look the run's records so far are scored as at the end (`scoring.read_log_frames`) and every
candidate decided against its control by the one engine (`regression.make_decisions`), at the look's level;
the run stops sending when every candidate has stopped (to block, to ship, or for futility).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.run.looks import EarlyStop
from harness.run.runlog import RunLog
from harness.score.decide import Decision
from harness.score.registry import metric
from harness.score.regression import load_control_run, make_decisions
from harness.score.sequential import METHOD, DecideAt, Design, Look, at_look, design, look_order


def final_level(cases: int, look_size: int, alpha: float) -> float:
    """The level a sequential run's decisions are made at on the cases it ran (its design's last look)."""
    return design(cases, look_size, alpha).levels[-1]


def run_rule(
    run_dir: Path,
    quality_ids: Sequence[str],
    *,
    look_size: int,
    seed: int,
    control: str | None,
    baseline: Path | None,
    gated: tuple[str, ...],
    margin: float,
    alpha: float,
) -> EarlyStop:
    """The order the quality cases go in (a seeded permutation of their sorted ids), the looks, and the check."""
    from harness.score.scoring import read_log_frames  # scoring imports pandas frames: only when a run checks

    ids = sorted(set(quality_ids))
    order = [ids[i] for i in look_order(len(ids), seed)]
    plan = design(len(ids), look_size, alpha)
    control_run = load_control_run(baseline) if baseline is not None else None
    lower = {name: not metric(name).higher_is_better for name in gated}

    def check(k: int) -> dict[str, Any]:
        run_log = RunLog.read(run_dir)
        manifest = run_log.manifest
        log = read_log_frames(run_log, keep_for_robustness=False)
        cache: dict[float, list[Decision]] = {}

        def decisions(level: float) -> list[Decision]:
            if level not in cache:
                cache[level] = make_decisions(
                    manifest, log.gold, log.outcomes, control, control_run, gated=gated, margin=margin, alpha=level
                )
            return cache[level]

        def for_candidate(i: int) -> DecideAt:
            return lambda level: _gated(decisions(level)[i], gated)

        looks = {
            d.candidate: at_look(plan, k, for_candidate(i), lower, margin)
            for i, d in enumerate(decisions(plan.levels[k - 1]))
        }
        return look_record(plan, k, looks)

    return EarlyStop(order=order, marks=plan.marks, check=check)


def _gated(decision: Decision, gated: tuple[str, ...]) -> dict[str, Any]:
    return {name: decision.metrics.get(name) for name in gated}


def look_record(plan: Design, k: int, looks: dict[str, Look]) -> dict[str, Any]:
    """What the run records of look k: stop once every candidate has stopped; the reason is theirs when they
    agree (else "mixed"), with each candidate's look."""
    reasons = {look.reason for look in looks.values()}
    stop = bool(looks) and all(look.stop for look in looks.values())
    reason = (reasons.pop() if len(reasons) == 1 else "mixed") if stop else None
    texts = [look.text if len(looks) == 1 else f"{name}: {look.text}" for name, look in looks.items()]
    return {
        "method": METHOD,
        "look": k,
        "looks": len(plan.marks),
        "look_size": plan.look_size,
        "levels": plan.levels,
        "stop": stop,
        "reason": reason,
        "cases_run": plan.marks[k - 1],
        "cases_planned": plan.cases,
        "text": "; ".join(texts),
        "candidates": {name: look.model_dump(mode="json") for name, look in looks.items()},
    }
