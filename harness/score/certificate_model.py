"""`certificate.json` as a versioned pydantic model: built (`build_certificate`), written and read only through it.

The file is a contract an auditor's tooling reads: keys are added, never renamed or removed. Every key the
certificate has is required (a certificate missing one, or with a status outside the three, is refused, not
guessed at), and every model allows extra keys, so a certificate written by a later version that added one
still reads and writes back as it came. A certificate written before `corpus_policy_cases` and
`partial_reasons` existed lacks them and is refused; the one reader (the report's sign-off) then does
without, as it did when those keys were absent. Keys added later (`mode`, `corpus`, `protocol_problems`,
`kit.source_sha256`) have defaults, so the certificates written before them still read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.run.folder import CERTIFICATE_JSON, RunFileError, first_problem, read_text, write_text

CERTIFICATE_SCHEMA: Literal["certificate_v1"] = "certificate_v1"
"""Unchanged since keys are only ever added."""
Status = Literal["certified", "partial", "failed"]
Mode = Literal["default", "certification"]


class CertificatePart(BaseModel):
    model_config = ConfigDict(extra="allow")


class CertifiedSystem(CertificatePart):
    """The system under test: where it was reached and its `GET /info` answer (its extra keys kept)."""

    url: str
    name: str
    version: str


class KitInfo(CertificatePart):
    """The kit that certified: its version and the full git sha of its source, `dirty` when that differs."""

    name: str
    version: str
    git_sha: str | None
    """None when the package is not tracked in a git work tree (an installed copy)."""
    dirty: bool
    source_sha256: str | None = None
    """The sha256 of the kit's own source files (`harness/`), whether or not git tracks them; None: not recorded
    (a certificate from before it was)."""


class ScenarioTally(CertificatePart):
    """One spec scenario: its policy cases that ran and how many agreed."""

    cases: int
    passed: int


class CertificateFailure(CertificatePart):
    """One failed case and its first problems (mismatches, then invariant violations)."""

    case_id: str
    problems: list[str]


class SkippedCases(CertificatePart):
    """The cases a certification did not run (quality cases without a model endpoint), and why."""

    quality_cases: int
    case_ids: list[str]
    reason: str


class Certificate(CertificatePart):
    """The whole certificate.json: what was certified, by which code, against which spec, and how far."""

    schema_version: Literal["certificate_v1"]
    status: Status
    headline: str
    """Says exactly what `status` says, never more than was covered."""
    created: str
    sut: CertifiedSystem
    kit: KitInfo
    spec_files: dict[str, str]
    """Spec file path -> sha256."""
    corpus_hash: str
    case_dirs: list[str]
    filters: list[str]
    policy_cases: int
    policy_passed: int
    corpus_policy_cases: int | None
    """The policy cases in the folders given, before any filter (None: not known)."""
    partial_reasons: list[str]
    invariant_violations: int
    errors: int
    """Cases the system under test answered with an error."""
    scenarios_total: int
    scenarios_covered: int
    scenarios: dict[str, ScenarioTally]
    uncovered_scenarios: list[str]
    failed_cases: list[str]
    failures: list[CertificateFailure]
    """The first failures (`SHOW_FAILURES`), each with its first problems (`SHOW_PROBLEMS`)."""
    skipped: SkippedCases
    mode: Mode = "default"
    """`certification`: no filter and no skip was allowed (`vbench certify --mode certification`)."""
    corpus: str = ""
    """The corpus certified on, as the headline names it (its folders); empty in certificates before it was kept."""
    protocol_problems: list[str] = []
    """What the SUT's `GET /info` got wrong (any one fails the certificate)."""


def certificate_text(certificate: Certificate) -> str:
    """certificate.json's text: the JSON values with sorted keys, 2-space indent, as it has always been written."""
    return json.dumps(certificate.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"


def write_certificate_json(run_dir: Path, certificate: Certificate) -> Path:
    """Write certificate.json whole (see `certificate_text`); return its path."""
    return write_text(run_dir, CERTIFICATE_JSON, certificate_text(certificate))


def read_certificate(run_dir: Path) -> Certificate:
    """A folder's certificate.json through the model; FileNotFoundError when it has none, `RunFileError` naming the
    file and the first bad key when it is not a certificate (not JSON, a key missing, a value of the wrong type).

    Strict: a value of the wrong JSON type is refused, not coerced, so what reads writes back the same."""
    path = run_dir / CERTIFICATE_JSON
    try:
        return Certificate.model_validate_json(read_text(run_dir, CERTIFICATE_JSON), strict=True)
    except UnicodeDecodeError as exc:
        raise RunFileError(path, f"not UTF-8 text: {exc.reason}") from None
    except ValidationError as exc:
        raise RunFileError(path, first_problem(exc)) from None
