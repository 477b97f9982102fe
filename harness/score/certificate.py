"""`certificate.json`: what was certified, by which code, against which spec, and how far.

Status: `certified` when every policy case agreed, no invariant broke, no case errored, every scenario
of the catalogue was covered and the whole policy corpus given ran; `partial` when all that ran agreed
but the run was narrowed (any `--filter`, fewer policy cases than the corpus given, or a scenario not
covered); `failed` otherwise. The full git sha, with `-dirty`, is kept as it is. The certificate is a
`Certificate` (`harness.score.certificate_model`), written and read only through that model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from harness.score.certificate_model import (
    CERTIFICATE_SCHEMA,
    Certificate,
    CertificateFailure,
    CertifiedSystem,
    KitInfo,
    Mode,
    ScenarioTally,
    SkippedCases,
    Status,
)
from harness.score.summary_model import Conformance

SHOW_FAILURES, SHOW_PROBLEMS = 100, 5
NO_POLICY_CASES = "No policy cases in this run: nothing certified"
"""The headline of a run in which no policy case ran (`--filter kind:quality`, a quality-only corpus)."""


def policy_tally(passed: int, cases: int) -> str:
    """`12/12 policy cases`, or, when none ran, that none did (never `0/0`): what every gate line shows."""
    return f"{passed}/{cases} policy cases" if cases else "no policy cases in this run"


def partial_reasons(
    conformance: Conformance, filters: Sequence[str] = (), corpus_policy_cases: int | None = None
) -> list[str]:
    """Why a run that agreed everywhere still certifies only part of the spec or the corpus (empty: none)."""
    scenarios = conformance.scenarios
    uncovered = sum(1 for v in scenarios.values() if v.cases == 0)
    cases = conformance.policy_cases
    out: list[str] = []
    if filters:
        out.append(f"the cases were filtered ({' '.join(filters)})")
    if corpus_policy_cases is not None and cases < corpus_policy_cases:
        out.append(f"{cases} of the {corpus_policy_cases} policy cases given ran")
    if uncovered:
        out.append(f"{uncovered} of {len(scenarios)} spec scenarios had no policy case")
    return out


def certificate_status(
    conformance: Conformance,
    errors: int,
    filters: Sequence[str] = (),
    corpus_policy_cases: int | None = None,
    protocol_problems: Sequence[str] = (),
    corpus: str = "",
) -> tuple[Status, str]:
    """(status, headline) from a conformance block; a headline never claims more than was covered.

    `filters` and `corpus_policy_cases` (the policy cases in the folders given, before any filter) say
    how much of the corpus ran: a narrowed run is at best `partial`, whatever its scenario coverage.
    """
    scenarios = conformance.scenarios
    total = len(scenarios)
    covered = sum(1 for v in scenarios.values() if v.cases > 0)
    cases, passed = conformance.policy_cases, conformance.policy_passed
    violations = conformance.invariant_violations
    quality = conformance.quality_expectation_mismatches
    on = f" on {corpus}" if corpus else ""
    if cases == 0:
        return "failed", NO_POLICY_CASES
    if passed < cases or violations or errors or quality or protocol_problems:
        parts = [f"{cases - passed} of {cases} policy cases failed"]
        if protocol_problems:
            parts.append(f"{len(protocol_problems)} protocol problems")
        if violations:
            parts.append(f"{violations} invariant violations")
        if quality:
            parts.append(f"{quality} quality results off their deterministic expectations")
        if errors:
            parts.append(f"{errors} SUT errors")
        return "failed", "Not certified: " + ", ".join(parts) + on
    corpus = f"{cases}/{corpus_policy_cases}" if corpus_policy_cases is not None else f"{cases}"
    counts = f"{covered}/{total} scenarios, {corpus} policy cases" + (
        ", filtered" if filters and corpus_policy_cases is None else ""
    )
    if partial_reasons(conformance, filters, corpus_policy_cases):
        return "partial", f"Partially certified ({counts}){on}"
    return "certified", f"Certified ({counts}){on}"


def build_certificate(
    *,
    sut: Mapping[str, Any],
    kit: Mapping[str, Any],
    spec: Mapping[str, str],
    corpus_hash: str,
    conformance: Conformance,
    case_dirs: Sequence[str],
    filters: Sequence[str],
    errors: int,
    skipped: Mapping[str, Any],
    corpus_policy_cases: int | None = None,
    protocol_problems: Sequence[str] = (),
    mode: Mode = "default",
) -> Certificate:
    """The certificate of a conformance block: its status and headline, provenance and per-scenario coverage.

    `sut` (its URL and `GET /info` answer) and `kit` (name, version, git_sha) keep any extra keys given."""
    corpus = corpus_label(case_dirs, corpus_hash)
    status, headline = certificate_status(conformance, errors, filters, corpus_policy_cases, protocol_problems, corpus)
    scenarios = {sid: ScenarioTally(cases=v.cases, passed=v.passed) for sid, v in sorted(conformance.scenarios.items())}
    failures = conformance.failures
    git_sha = kit.get("git_sha")
    return Certificate(
        schema_version=CERTIFICATE_SCHEMA,
        status=status,
        headline=headline,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        sut=CertifiedSystem.model_validate(dict(sut)),
        kit=KitInfo.model_validate({**kit, "dirty": bool(git_sha and str(git_sha).endswith("-dirty"))}),
        spec_files=dict(spec),
        corpus_hash=corpus_hash,
        case_dirs=list(case_dirs),
        filters=list(filters),
        policy_cases=conformance.policy_cases,
        policy_passed=conformance.policy_passed,
        corpus_policy_cases=corpus_policy_cases,
        partial_reasons=partial_reasons(conformance, filters, corpus_policy_cases),
        invariant_violations=conformance.invariant_violations,
        errors=errors,
        scenarios_total=len(scenarios),
        scenarios_covered=sum(1 for v in scenarios.values() if v.cases > 0),
        scenarios=scenarios,
        uncovered_scenarios=sorted(sid for sid, v in scenarios.items() if v.cases == 0),
        failed_cases=sorted({f.case_id for f in failures if f.kind == "policy"}),
        failures=[
            CertificateFailure(case_id=f.case_id, problems=[*f.mismatches, *f.invariant_violations][:SHOW_PROBLEMS])
            for f in failures[:SHOW_FAILURES]
        ],
        skipped=SkippedCases.model_validate(dict(skipped)),
        mode=mode,
        corpus=corpus,
        protocol_problems=list(protocol_problems),
    )


def corpus_label(case_dirs: Sequence[str], corpus_hash: str) -> str:
    """The corpus as a headline names it: its folders and the first 12 hex digits of its hash."""
    dirs = " + ".join(str(d) for d in case_dirs) or "(no folder)"
    return f"{dirs} (corpus {corpus_hash[:12]})" if corpus_hash else dirs
