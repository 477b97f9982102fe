"""`certificate.json`: what was certified, by which code, against which spec, and how far.

Status: `certified` when every policy case agreed, no invariant broke, no case errored, and every
scenario of the catalogue was covered; `partial` when all that ran agreed but some scenarios were not
covered (a filtered run); `failed` otherwise. The full git sha, with `-dirty`, is kept as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

CERTIFICATE_JSON, CERTIFICATE_HTML = "certificate.json", "certificate.html"
SHOW_FAILURES, SHOW_PROBLEMS = 100, 5
Status = Literal["certified", "partial", "failed"]


def certificate_status(conformance: Mapping[str, Any], errors: int) -> tuple[Status, str]:
    """(status, headline) from a conformance block; a headline never claims more than was covered."""
    scenarios = conformance["scenarios"]
    total = len(scenarios)
    covered = sum(1 for v in scenarios.values() if v["cases"] > 0)
    cases, passed = conformance["policy_cases"], conformance["policy_passed"]
    violations = conformance["invariant_violations"]
    quality = conformance.get("quality_expectation_mismatches") or 0
    if cases == 0 or passed < cases or violations or errors or quality:
        parts = [f"{cases - passed} of {cases} policy cases failed"]
        if violations:
            parts.append(f"{violations} invariant violations")
        if quality:
            parts.append(f"{quality} quality results off their deterministic expectations")
        if errors:
            parts.append(f"{errors} SUT errors")
        return "failed", "Not certified: " + ", ".join(parts)
    if covered < total:
        return "partial", f"Partially certified ({covered}/{total} scenarios)"
    return "certified", f"Certified ({covered}/{total} scenarios)"


def build_certificate(
    *,
    sut: Mapping[str, Any],
    kit: Mapping[str, Any],
    spec: Mapping[str, str],
    corpus_hash: str,
    conformance: Mapping[str, Any],
    case_dirs: Sequence[str],
    filters: Sequence[str],
    errors: int,
    skipped: Mapping[str, Any],
) -> dict[str, Any]:
    status, headline = certificate_status(conformance, errors)
    scenarios = {sid: dict(v) for sid, v in sorted(conformance["scenarios"].items())}
    return {
        "schema_version": "certificate_v1",
        "status": status,
        "headline": headline,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "sut": dict(sut),
        "kit": {**kit, "dirty": bool(kit.get("git_sha") and str(kit["git_sha"]).endswith("-dirty"))},
        "spec_files": dict(spec),
        "corpus_hash": corpus_hash,
        "case_dirs": list(case_dirs),
        "filters": list(filters),
        "policy_cases": conformance["policy_cases"],
        "policy_passed": conformance["policy_passed"],
        "invariant_violations": conformance["invariant_violations"],
        "errors": errors,
        "scenarios_total": len(scenarios),
        "scenarios_covered": sum(1 for v in scenarios.values() if v["cases"] > 0),
        "scenarios": scenarios,
        "uncovered_scenarios": sorted(sid for sid, v in scenarios.items() if v["cases"] == 0),
        "failed_cases": sorted({f["case_id"] for f in conformance.get("failures", []) if f["kind"] == "policy"}),
        "failures": [
            {"case_id": f["case_id"], "problems": [*f["mismatches"], *f["invariant_violations"]][:SHOW_PROBLEMS]}
            for f in conformance.get("failures", [])[:SHOW_FAILURES]
        ],
        "skipped": dict(skipped),
    }
