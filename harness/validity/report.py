"""The validity study's bands and its Markdown page (reports/validity/<date>.md)."""

from __future__ import annotations

from typing import Any

from harness.score.sequential import METHOD

FALSE_SHIP_MAX, FALSE_SHIP_UPPER_MAX = 0.025, 0.05
FALSE_BLOCK_MAX = 0.06
POWER_MIN = 0.80
COVERAGE_MIN, COVERAGE_FROM = 0.93, 10


def bands_of(conditions: list[dict[str, Any]], power: dict[str, Any], early: bool) -> list[dict[str, Any]]:
    """Every band of the study, met or not, read from the conditions' figures (early: the early-stopping ones)."""

    def decisions(c: dict[str, Any]) -> dict[str, Any]:
        return c["stop_early"]["decisions"] if early else c["decisions"]

    tag = "stop-early " if early else ""
    out = []
    for c in conditions:
        where = f"{c['cases']} cases, candidate {c['candidate_skill']}"
        ship = decisions(c)["ship"]
        if c["truly_worse"]:
            met = ship["rate"] <= FALSE_SHIP_MAX and ship["ci"][1] <= FALSE_SHIP_UPPER_MAX
            out.append({"band": f"{tag}false ship <= 2.5%, CP upper <= 5%", "where": where, "value": ship, "met": met})
        if c["equivalent"]:
            block = decisions(c)["block"]
            out.append(
                {
                    "band": f"{tag}false block <= 6%",
                    "where": where,
                    "value": block,
                    "met": block["rate"] <= FALSE_BLOCK_MAX,
                }
            )
        if not early and c["cases"] >= COVERAGE_FROM:
            for name, cov in c["coverage"].items():
                out.append(
                    {
                        "band": f"coverage {name} >= 93%",
                        "where": where,
                        "value": cov,
                        "met": cov["rate"] >= COVERAGE_MIN,
                    }
                )
    block = decisions(power)["block"]
    where = f"{power['cases']} cases, candidate {power['candidate_skill']} (16 pp worse in verdict accuracy)"
    out.append({"band": f"{tag}power >= 80%", "where": where, "value": block, "met": block["rate"] >= POWER_MIN})
    return out


def meets_bands(data: dict[str, Any]) -> list[dict[str, Any]]:
    conditions, power = data["conditions"], data["power_condition"]
    return bands_of(conditions, power, early=False) + bands_of(conditions, power, early=True)


def _rate(r: dict[str, Any]) -> str:
    return f"{r['rate'] * 100:.1f}% [{r['ci'][0] * 100:.1f}, {r['ci'][1] * 100:.1f}] ({r['k']}/{r['n']})"


def table(data: dict[str, Any]) -> str:
    """The study's table: one row per condition, every rate with its Clopper–Pearson 95% interval."""
    rows = [
        "| cases | candidate skill | true Δ verdict acc. | truly worse | ship | block | inconclusive | stop-early ship | stop-early block | requests saved, median (mean) | coverage verdict / claim / unsafe-PASS (mean width) |",
        "|---:|---:|---:|:--|:--|:--|:--|:--|:--|---:|:--|",
    ]
    for c in [*data["conditions"], data["power_condition"]]:
        t = c["truth"]
        delta = (t["candidate"]["verdict_accuracy"] - t["control"]["verdict_accuracy"]) * 100
        d, e = c["decisions"], c["stop_early"]["decisions"]
        cov = " / ".join(f"{v['rate'] * 100:.1f}% ({v['mean_width'] * 100:.0f} pp)" for v in c["coverage"].values())
        kind = "yes" if c["truly_worse"] else "equivalent" if c["equivalent"] else "no"
        saved, mean = c["stop_early"]["median_share_saved"], c["stop_early"]["mean_share_saved"]
        futile = c["stop_early"].get("stop_reasons", {}).get("futility", 0)
        rows.append(
            f"| {c['cases']} | {c['candidate_skill']} | {delta:+.1f} pp | {kind} | {_rate(d['ship'])} | {_rate(d['block'])} | "
            f"{_rate(d['inconclusive'])} | {_rate(e['ship'])} | {_rate(e['block'])} | {saved * 100:.0f}% ({mean * 100:.1f}%), {futile} futility | {cov} |"
        )
    return "\n".join(rows)


def markdown(data: dict[str, Any]) -> str:
    s = data["settings"]
    failed = [b for b in data["bands"] if not b["met"]]
    lines = [
        f"# Validity study, {data['date']}",
        "",
        f"Control skill {s['control_skill']} against candidates {', '.join(map(str, s['candidate_skills']))} on "
        f"{', '.join(map(str, s['sizes']))} of the {data['corpus']['cases']} quality cases, {s['pairs']} seed pairs each; "
        f"margin {s['margin'] * 100:g} pp, alpha {s['alpha']}, gated on {', '.join(s['gated'])}; early stopping in looks of "
        f"{s['look_size']} cases. Rates: k/n with Clopper–Pearson 95% intervals. Truth: exact expectation over the "
        "judge's draws on the same cases.",
        "",
        f"Early stopping (`vbench run --stop-early`): {METHOD}. Requests saved: the share of the planned cases not "
        "sent, per pair; 'futility': pairs stopped for futility (outcome inconclusive).",
        "",
        table(data),
        "",
        "## Bands",
        "",
        f"{len(data['bands']) - len(failed)} of {len(data['bands'])} bands met.",
        "",
        *[f"- NOT MET: {b['band']} at {b['where']}: {_rate(b['value'])}" for b in failed],
        "",
        "## HTTP check",
        "",
    ]
    if not data["http_checks"]:
        lines.append("Not run: the in-process model of the pipeline was not checked against `vbench run` this time.")
    for c in data["http_checks"]:
        lines.append(
            f"- {c['cases']} cases, candidate {c['candidate_skill']}, seeds {c['seeds']}: {c['records']}/{c['expected_records']} "
            f"records, {len(c['outcome_mismatches'])} outcome mismatches, run decision {c['run_decision']}, in-process "
            f"{c['model_decision']}: {'agrees' if c['agrees'] else 'DISAGREES'} (exit {c['exit_code']})"
        )
    lines += ["", f"Time: {data['seconds']['in_process']} s in process, {data['seconds']['total']} s in all.", ""]
    return "\n".join(lines)
