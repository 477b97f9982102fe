"""`--case-timeout` and `--max-retry-after` (issue 17) through `vbench run`, over real HTTP: a case past its
deadline is recorded as a `case_timeout` error and the run finishes within the bound computed from the settings."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.devtools.local_server import Fault, LocalOpenAIServer
from harness.run.folder import read_manifest, read_results
from tests.run.corpus_builder import write_corpus
from tests.run.test_cli_run import api_key, llm_args  # noqa: F401 - api_key: a fixture
from tests.timing import assert_within

pytestmark = pytest.mark.usefixtures("api_key")  # every run here is an openai: model's, which needs a key


def test_case_timeout_records_every_late_case_as_an_error_within_the_bound(
    tmp_path: Path, openai_server: LocalOpenAIServer
) -> None:
    openai_server.latency_ms = 20_000  # every reply would take 20 s, each attempt may take 5
    corpus = write_corpus(tmp_path / "cases")
    out = tmp_path / "run"
    case_timeout, concurrency, quality_cases = 1.0, 4, 7
    args = llm_args(openai_server, corpus, out, "--no-cache", "--timeout", "5", "--max-attempts", "3")
    args += ["--case-timeout", str(case_timeout), "--concurrency", str(concurrency), "--max-error-rate", "1"]
    started = time.monotonic()
    assert main(args) == 0
    elapsed = time.monotonic() - started
    rounds = math.ceil(quality_cases / concurrency)
    assert_within(elapsed, rounds * case_timeout, broken=rounds * 3 * 5.0)  # without it: 3 attempts x 5 s per case
    records = read_results(out)
    errors = [r.error for r in records if r.kind == "quality"]
    assert len(errors) == quality_cases
    assert all(e is not None and e.startswith("case_timeout: no result within the case timeout of 1 s") for e in errors)
    (variant,) = json.loads((out / "summary.json").read_text())["variants"]
    assert variant["errors_by_reason"] == {"case_timeout": quality_cases}
    assert read_manifest(out).settings["case_timeout"] == case_timeout


def test_a_case_within_its_timeout_is_scored(tmp_path: Path, openai_server: LocalOpenAIServer) -> None:
    corpus = write_corpus(tmp_path / "cases")
    out = tmp_path / "run"
    assert main(llm_args(openai_server, corpus, out, "--no-cache", "--case-timeout", "30")) == 0
    assert all(r.error is None for r in read_results(out))


def test_max_retry_after_from_the_flag_and_from_a_study_file(tmp_path: Path, openai_server: LocalOpenAIServer) -> None:
    corpus = write_corpus(tmp_path / "cases")
    for source in ("flag", "study"):
        openai_server.reset()
        openai_server.script(Fault(kind="rate_limit", retry_after="86400"))
        out = tmp_path / source
        args = llm_args(openai_server, corpus, out, "--no-cache", "--concurrency", "1", "--max-attempts", "2")
        if source == "flag":
            args += ["--max-retry-after", "0.5"]
        else:
            study = tmp_path / "study.toml"
            study.write_text('[model_settings."openai:local-model"]\nmax_retry_after = 0.5\n', encoding="utf-8")
            args += ["--study", str(study)]
        assert main(args) == 0
        records = read_results(out)
        assert all(r.error is None for r in records)
        waited = max(r.latency_ms for r in records) / 1000.0  # the model call's own time, its waits included
        assert waited >= 0.5, waited  # the capped wait was kept
        assert_within(waited, bound=0.5, broken=120.0)  # not 120 s (the default cap), not a day
        (variant,) = read_manifest(out).variants
        assert variant.settings["max_retry_after"] == 0.5


def test_a_perturbed_unit_past_its_deadline_stays_a_perturbed_record(
    tmp_path: Path, openai_server: LocalOpenAIServer
) -> None:
    """Without its perturbation fields a timed-out robustness unit would read as one more headline sample."""
    openai_server.latency_ms = 20_000
    corpus = write_corpus(tmp_path / "cases")
    out = tmp_path / "run"
    args = llm_args(openai_server, corpus, out, "--no-cache", "--timeout", "5", "--max-attempts", "1")
    args += ["--case-timeout", "0.5", "--concurrency", "16", "--max-error-rate", "1", "--perturb", "claim-order"]
    assert main(args) in (0, 1)
    quality = [r for r in read_results(out) if r.kind == "quality"]
    perturbed = [r for r in quality if r.perturbation is not None]
    assert perturbed and all(r.perturbation == "claim-order" and r.error.startswith("case_timeout") for r in perturbed)
    summary = json.loads((out / "summary.json").read_text())
    (variant,) = summary["variants"]
    assert variant["errors_by_reason"] == {"case_timeout": len(quality) - len(perturbed)}  # headline units only
    assert summary["run"]["perturbed_results"] == len(perturbed)
