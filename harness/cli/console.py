"""What `vbench run` prints when it ends: conformance, the figures, the decisions, every gate, where the report is."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.score.certificate import policy_tally
from harness.score.registry import metrics

if TYPE_CHECKING:
    from harness.score.summary_model import Comparison, Decision, Summary

SHOWN_REGRESSIONS = 5
SHOWN_POLICY_FAILURES = 10
DECISION_STYLE = {"ship": "green", "block": "red", "inconclusive": "yellow"}


def num(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def pp(value: Any, sign: bool = True) -> str:
    from harness.score.wording import pp_text

    return pp_text(value, sign)


def pval(value: Any) -> str:
    from harness.score.wording import p_text

    return p_text(value)


def _ci(value: Any, ci: list[float] | None) -> str:
    return num(value) + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def print_summary(console: Console, summary: Summary, run_dir: Path, resumed: int = 0, report: bool = False) -> None:
    conf = summary.conformance
    console.print(
        f"policy conformance: {policy_tally(conf.policy_passed, conf.policy_cases)} · invariant violations: {conf.invariant_violations}"
        f" · quality expectation mismatches: {conf.quality_expectation_mismatches}"
    )
    failed_policy = summary.failing_cases("policy")
    if failed_policy:
        shown = ", ".join(failed_policy[:SHOWN_POLICY_FAILURES])
        more = (
            f" (+{len(failed_policy) - SHOWN_POLICY_FAILURES} more)"
            if len(failed_policy) > SHOWN_POLICY_FAILURES
            else ""
        )
        console.print(f"[red]failing policy cases[/red] ({len(failed_policy)}): {escape(shown)}{more}", highlight=False)
    columns = [m for m in metrics() if m.console]
    table = Table(title="quality by variant (95% CI)")
    for col in ("variant", "cases", "errors", *(m.column for m in columns)):
        table.add_column(col, overflow="fold")
    for v in summary.variants:
        table.add_row(
            escape(v.name), str(v.quality_cases), str(v.errors),
            *(_ci(v.figure(m.key), v.figure_ci(m.key)) if m.has_ci else num(v.figure(m.key)) for m in columns),
        )  # fmt: skip
    console.print(table)
    for v in summary.variants:
        if v.errors_by_reason:
            listed = ", ".join(f"{reason} {n}" for reason, n in v.errors_by_reason.items())
            console.print(f"errors by reason [{v.name}]: {listed}", markup=False, highlight=False)
    print_robustness(console, summary)
    for decision in summary.decisions:
        print_decision(console, decision)
    if summary.stop_early:
        from harness.score.sequential import stop_sentence  # scipy: only for a run that stopped early

        console.print(stop_sentence(summary.stop_early), markup=False, highlight=False)
    for gate in summary.gates:
        colour = "yellow" if gate.status == "not checked" and gate.passed else "green" if gate.passed else "red"
        mark = f"[{colour}]gate {gate.status}[/{colour}]"
        console.print(
            f"{mark} {escape(gate.gate)} {escape('[' + (gate.variant or 'all') + ']')}: {escape(gate.detail)}",
            highlight=False,
        )
    extra = f" (resumed: {resumed} results were already there)" if resumed else ""
    console.print(f"run folder: {run_dir}{extra}", highlight=False)
    if report:
        console.print(f"report: {run_dir / 'report.html'}", highlight=False)


def print_robustness(console: Console, summary: Summary) -> None:
    """Per variant and perturbation: how often the answer flipped against the unperturbed one (when --perturb ran)."""
    rows = [(v.name, name, r) for v in summary.variants for name, r in (v.robustness or {}).items()]
    if not rows:
        return
    table = Table(title="robustness: answers that flipped under a perturbation (95% CI); accuracy under it")
    for col in ("variant", "perturbation", "cases", "verdict flips", "claim flips", "verdict acc", "claim acc"):
        table.add_column(col, overflow="fold")
    for variant, name, r in rows:
        table.add_row(
            escape(variant), escape(name), str(r.cases), _ci(r.verdict_flip_rate, r.verdict_flip_rate_ci),
            _ci(r.claim_flip_rate, r.claim_flip_rate_ci), num(r.verdict_accuracy), num(r.claim_accuracy),
        )  # fmt: skip
    console.print(table)


def print_decision(console: Console, d: Decision) -> None:
    """The decision with its one line of why, the paired figures in points, and the first regressed cases."""
    from harness.score.decide import decision_line
    from harness.score.wording import ci_label

    style = DECISION_STYLE[d.decision]
    word, _, rest = decision_line(d).partition(" ")
    console.print(f"[bold {style}]{word}[/bold {style}] {escape(rest)}", highlight=False)
    table = Table(
        title=f"paired on {d.paired_cases} cases ({d.unpaired_cases} unpaired); "
        f"margin {pp(d.margin, False)}, alpha {d.alpha:g}"
    )
    for col in ("metric", "control", "candidate", f"Δ [{ci_label(d.alpha)}]", "p", "outcome", "cases needed",
                "detectable (80% power)", "gated"):  # fmt: skip
        table.add_column(col, overflow="fold")
    for name, m in d.metrics.items():
        ci = m.diff_ci
        table.add_row(
            name, num(m.control), num(m.candidate),
            pp(m.diff) + (f" [{pp(ci[0])}, {pp(ci[1])}]" if ci else ""),
            pval(m.p), m.outcome if "outcome" in m.model_fields_set else "n/a",  # older decisions: no outcome
            str(m.cases_needed) if m.cases_needed else "", pp(m.mde, False),
            "yes" if m.gated else "no",
        )  # fmt: skip
    console.print(table)
    if d.tests:
        console.print(escape("intervals and tests: " + "; ".join(d.tests.values())), highlight=False)
    regressed = d.regressed_cases
    if regressed:
        shown = ", ".join(regressed[:SHOWN_REGRESSIONS])
        more = f" … and {len(regressed) - SHOWN_REGRESSIONS} more" if len(regressed) > SHOWN_REGRESSIONS else ""
        console.print(f"regressed cases ({len(regressed)}): {escape(shown)}{more}", highlight=False)
    if d.changed:
        console.print("changed: " + escape(", ".join(sorted(d.changed))), highlight=False)


def print_comparisons(
    console: Console,
    rows: list[Comparison],
    run_a: Path,
    run_b: Path,
    manifest_a: Any,
    manifest_b: Any,
) -> list[str]:
    """`vbench compare`: the table in points, each pair's decision (B against A), the settings diff; returns the
    variants of B that are blocked."""
    from harness.score.compare import conclusion
    from harness.score.decide import what_changed
    from harness.score.wording import ci_label

    table = Table(title=f"{run_a} (A) vs {run_b} (B), paired by case and epoch; differences B − A in percentage points")
    level = ci_label(rows[0].alpha if rows else None)  # the level the pairs were decided at
    for col in ("A variant", "B variant", "paired", "unpaired", "verdict acc A", "verdict acc B", f"Δ verdict [{level}]",
                "p", "Holm p", f"Δ claim acc [{level}]", "claim p (Holm)", "detectable", "decision"):  # fmt: skip
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(
            escape(r.a), escape(r.b), str(r.cases), str(r.unpaired_cases),
            num(r.verdict_accuracy_a), num(r.verdict_accuracy_b),
            _neg_pp(r.verdict_accuracy_diff, r.verdict_accuracy_diff_ci), pval(r.mcnemar_p), pval(r.p_adjusted),
            _neg_pp(r.claim_accuracy_diff, r.claim_accuracy_diff_ci), pval(r.claim_accuracy_diff_p_adjusted),
            pp(r.mde, sign=False), str(r.decision),
        )  # fmt: skip
    console.print(table)
    for r in rows:
        style = DECISION_STYLE[r.decision or "inconclusive"]
        console.print(f"[bold {style}]{escape(conclusion(r))}[/bold {style}]", highlight=False)
        if manifest_a is not None and manifest_b is not None:
            info_a = {v.name: v for v in manifest_a.variants}.get(r.a)
            info_b = {v.name: v for v in manifest_b.variants}.get(r.b)
            if info_a is not None and info_b is not None:
                changed = what_changed(info_b, info_a, manifest_b, manifest_a)
                text = "; ".join(f"{k}: {_short(c['control'])} → {_short(c['candidate'])}" for k, c in changed.items())
                console.print(escape(f"  settings A → B: {text or 'nothing recorded differs'}"), highlight=False)
    if rows:
        r = rows[0]
        console.print(
            f"Each line is the ship decision of B against A (margin {pp(r.margin, False)}, alpha {r.alpha:g}), "
            "made as `vbench run --control` makes it: " + "; ".join(r.tests.values()) + ". 'Holm p' is adjusted "
            "over the pairs shown; 'detectable' is the smallest verdict-accuracy difference the paired cases find "
            "at 80% power.",
            highlight=False,
        )
    return [r.b for r in rows if r.decision == "block"]


def _neg_pp(diff: float | None, ci: list[float] | None) -> str:
    """A − B as stored, shown as B − A (the second run against the first)."""
    if diff is None:
        return "n/a"
    return pp(-diff) + (f" [{pp(-ci[1])}, {pp(-ci[0])}]" if ci else "")


def _short(value: Any, n: int = 24) -> str:
    text = str(value)
    return text if len(text) <= n else text[: n - 1] + "…"
