"""junit.xml: one test per policy case and one per gate, for CI systems that show test results."""

from __future__ import annotations

from collections.abc import Sequence
from xml.etree import ElementTree as ET

from harness.score.summary_model import Decision, Regression, Summary


def junit_xml(summary: Summary, policy_case_ids: Sequence[str]) -> str:
    """The JUnit XML text; failure messages say what differed. Each regressed case is a failing test."""
    root = ET.Element("testsuites", name="verifier-bench")
    failures_by_case = {f.case_id: f for f in summary.conformance.failures if f.kind == "policy"}
    suite = ET.SubElement(
        root,
        "testsuite",
        name="policy-conformance",
        tests=str(len(policy_case_ids)),
        failures=str(len(failures_by_case)),
    )
    for case_id in policy_case_ids:
        test = ET.SubElement(suite, "testcase", classname="policy", name=case_id)
        failure = failures_by_case.get(case_id)
        if failure:
            problems = failure.mismatches + failure.invariant_violations
            node = ET.SubElement(test, "failure", message=problems[0] if problems else "failed")
            node.text = "\n".join(problems)
    gates = summary.gates
    failed_gates = [g for g in gates if not g.passed]
    gate_suite = ET.SubElement(root, "testsuite", name="gates", tests=str(len(gates)), failures=str(len(failed_gates)))
    for gate in gates:
        test = ET.SubElement(gate_suite, "testcase", classname="gates", name=f"{gate.gate} [{gate.variant or 'all'}]")
        if not gate.passed:
            ET.SubElement(test, "failure", message=gate.detail).text = gate.detail
        elif not gate.checked:  # left out by the user's filter: it holds, having checked nothing
            ET.SubElement(test, "skipped", message=gate.detail)
    for decision in summary.decisions:
        _regressions_suite(root, decision)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _regressions_suite(root: ET.Element, decision: Decision) -> None:
    """One failing testcase per case the control got right and the candidate got wrong."""
    pair = f"{decision.candidate} vs {decision.control}"
    by_case: dict[str, list[Regression]] = {}
    for regression in decision.regressions:
        by_case.setdefault(regression.case_id, []).append(regression)
    suite = ET.SubElement(
        root, "testsuite", name=f"regressions: {pair}", tests=str(len(by_case)), failures=str(len(by_case))
    )
    for case_id, units in by_case.items():
        test = ET.SubElement(suite, "testcase", classname="regressions", name=f"{case_id} [{pair}]")
        lines = [regression_line(u) for u in units]
        ET.SubElement(test, "failure", message=lines[0]).text = "\n".join(lines)


def regression_line(unit: Regression) -> str:
    """What changed on one regressed unit, in words: verdicts and claim labels (gold in brackets)."""
    claims = "; ".join(
        f"{c.claim_id}: {c.control} -> {c.candidate} (gold {' or '.join(c.gold)})" for c in unit.claim_changes
    )
    return f"epoch {unit.epoch}: control {unit.control_verdict} (right), candidate {unit.candidate_verdict} (wrong)" + (
        f"; {claims}" if claims else ""
    )
