"""certificate.json's status and headline, and certificate.html as an auditor reads it."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from harness.report.certificate import render_certificate
from harness.report.context import recorded_corpus_policy_cases
from harness.run.folder import CERTIFICATE_JSON
from harness.score.certificate import build_certificate, certificate_status
from harness.score.certificate_model import Certificate, write_certificate_json
from harness.score.summary_model import Conformance

SHA = "0123456789abcdef0123456789abcdef01234567-dirty"


def conformance(covered: int, failed: int = 0, violations: int = 0, **changes: Any) -> Conformance:
    scenarios = {f"s{i:02d}": {"cases": 2 if i < covered else 0, "passed": 2 if i < covered else 0} for i in range(22)}
    if failed:
        scenarios["s00"]["passed"] = 1
    return Conformance.model_validate(
        {
            "scenarios": scenarios,
            "policy_cases": 10,
            "policy_passed": 10 - failed,
            "invariant_violations": violations,
            "failures": [
                {
                    "case_id": "<b>case</b>",
                    "kind": "policy",
                    "mismatches": ["verdict: <script>x</script>"],
                    "invariant_violations": [],
                }
            ]
            if failed
            else [],
            **changes,
        }
    )


def certificate(conf: dict[str, Any], name: str = "acme <sut>", corpus_policy_cases: int | None = None) -> Certificate:
    return build_certificate(
        sut={"url": "http://127.0.0.1:1", "name": name, "version": "1"},
        kit={"name": "verifier-bench", "version": "0", "git_sha": SHA},
        spec={"INTERPRETATION.md": "ab" * 32},
        corpus_hash="cafe",
        conformance=conf,
        case_dirs=["cases"],
        filters=[],
        errors=0,
        skipped={"quality_cases": 3, "case_ids": [], "reason": "no endpoint"},
        corpus_policy_cases=corpus_policy_cases,
    )


def test_status_and_headline() -> None:
    assert certificate_status(conformance(22), 0) == ("certified", "Certified (22/22 scenarios, 10 policy cases)")
    assert certificate_status(conformance(2), 0) == ("partial", "Partially certified (2/22 scenarios, 10 policy cases)")
    full = certificate_status(conformance(22), 0, [], corpus_policy_cases=10)
    assert full == ("certified", "Certified (22/22 scenarios, 10/10 policy cases)")
    assert certificate_status(conformance(22, failed=1), 0)[0] == "failed"
    assert certificate_status(conformance(22, violations=1), 0)[0] == "failed"
    assert certificate_status(conformance(22), errors=1)[0] == "failed"
    assert certificate_status(conformance(22, policy_cases=0, policy_passed=0), 0)[0] == "failed"


def test_any_filter_or_a_smaller_selection_makes_a_full_coverage_run_partial() -> None:
    """Every scenario covered is not the whole corpus: a filter, or fewer policy cases than given, is partial."""
    assert certificate_status(conformance(22), 0, ["ids:cover.txt"], 114) == (
        "partial",
        "Partially certified (22/22 scenarios, 10/114 policy cases)",
    )
    assert certificate_status(conformance(22), 0, [], 114)[0] == "partial"
    assert certificate_status(conformance(22), 0, ["tag:x"], 10)[0] == "partial"  # a filter that kept everything
    assert certificate_status(conformance(22), 0, ["tag:x"]) == (
        "partial",
        "Partially certified (22/22 scenarios, 10 policy cases, filtered)",
    )
    assert certificate_status(conformance(22, failed=1), 0, ["tag:x"], 114)[0] == "failed"


def test_a_failing_certificate_shows_no_green_and_the_full_dirty_sha() -> None:
    html = render_certificate(certificate(conformance(22, failed=1)))
    assert 'class="head failed"' in html and "chip ok" not in html and "head ok" not in html
    assert SHA in html and "chip neutral" in html


def test_a_partial_certificate_says_how_far() -> None:
    html = render_certificate(certificate(conformance(2)))
    assert "Partially certified (2/22 scenarios, 10 policy cases)" in html and 'class="head partial"' in html
    assert html.count("not covered") == 20


def test_everything_from_a_sut_or_a_case_is_escaped() -> None:
    html = render_certificate(certificate(conformance(22, failed=1)))
    assert "<sut>" not in html and "&lt;sut&gt;" in html
    assert "<script>x" not in html and "<b>case" not in html


def test_the_sign_off_reads_the_corpus_size_only_from_a_certificate_that_reads(tmp_path: Path) -> None:
    """The report takes `corpus_policy_cases` through `read_certificate`: none when the file is missing or is
    not a certificate (here a status outside the three), so a damaged file never narrows or widens a sign-off."""
    run: Any = SimpleNamespace(run_dir=tmp_path)
    assert recorded_corpus_policy_cases(run) is None
    write_certificate_json(tmp_path, certificate(conformance(22), corpus_policy_cases=114))
    assert recorded_corpus_policy_cases(run) == 114
    data = json.loads((tmp_path / CERTIFICATE_JSON).read_text(encoding="utf-8"))
    (tmp_path / CERTIFICATE_JSON).write_text(json.dumps({**data, "status": "approved"}), encoding="utf-8")
    assert recorded_corpus_policy_cases(run) is None
