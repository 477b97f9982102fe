"""Writing a certificate: certificate.json (the data, `harness.score.certificate`) and certificate.html."""

from __future__ import annotations

from pathlib import Path

from harness.corpus.catalogue import DEFAULT_SPEC_DIR
from harness.report.certificate import render_certificate
from harness.run.folder import CERTIFICATE_HTML, write_text
from harness.run.log import Manifest
from harness.run.provenance import spec_files
from harness.score.certificate import build_certificate
from harness.score.certificate_model import Certificate, write_certificate_json
from harness.score.summary_model import Summary
from harness.system.serve import SUT_NAME


def write_certificate(out: Path, certificate: Certificate) -> None:
    """certificate.json through the model's one writer, and certificate.html rendered from the same model."""
    write_certificate_json(out, certificate)
    write_text(out, CERTIFICATE_HTML, render_certificate(certificate))


def write_run_certificate(
    run_dir: Path, manifest: Manifest, summary: Summary, corpus_policy_cases: int | None = None
) -> Certificate:
    """The certificate of a `vbench run`: the bundled system, in process, on the run's policy cases.

    `corpus_policy_cases`: the policy cases in the run's folders before its filters (fewer ran: partial)."""
    certificate = build_certificate(
        sut={"url": "in-process", "name": SUT_NAME, "version": manifest.package_version},
        kit={"name": "verifier-bench", "version": manifest.package_version, "git_sha": manifest.git_sha},
        spec=spec_files(DEFAULT_SPEC_DIR),
        corpus_hash=manifest.corpus_hash,
        conformance=summary.conformance,
        case_dirs=manifest.case_dirs,
        filters=manifest.filters,
        errors=0,
        skipped={"quality_cases": 0, "case_ids": [], "reason": "quality cases ran as measurements, not certification"},
        corpus_policy_cases=corpus_policy_cases,
    )
    write_certificate(run_dir, certificate)
    return certificate
