"""PolicySettings travel as one object: study -> variant -> scheduler -> pipeline, recorded in the manifest."""

from __future__ import annotations

import json
from pathlib import Path

from harness.corpus.loader import load_cases
from harness.run.folder import read_manifest, read_results
from harness.run.log import VariantInfo
from harness.run.runner import run_study
from harness.run.study import Study
from harness.system.models import PolicySettings
from harness.system.store import EVALUATION_KEY
from tests.run.corpus_builder import write_corpus
from tests.run.fakes import FakeVerifier

BASELINE = Path(__file__).resolve().parents[2] / "reports" / "baselines" / "reference"


def test_a_v1_variant_reads_its_flat_claim_guard_as_the_policy() -> None:
    v1 = {"name": "m@p", "model": "openai:m", "prompt": "p", "claim_guard": False, "settings": {}}
    variant = VariantInfo.model_validate(v1)
    assert variant.policy == PolicySettings(claim_guard=False)
    dumped = variant.model_dump(mode="json")
    assert dumped["policy"] == {"claim_guard": False}
    assert dumped["claim_guard"] is False  # readers of v1 manifests still find their key
    assert VariantInfo.model_validate(dumped) == variant


def test_the_committed_baseline_manifest_still_reads() -> None:
    manifest = read_manifest(BASELINE)
    assert [v.policy for v in manifest.variants] == [PolicySettings(claim_guard=True)]


def test_the_studys_policy_reaches_the_pipeline_and_the_manifest(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "cases", ["q1", "q2"], with_policy=False)
    study = Study(cases=[corpus], models=["openai:fake"], prompts=["p1"], cache=None, claim_guard=False)
    assert study.policy == PolicySettings(claim_guard=False)
    out = tmp_path / "run"
    run_study(study, load_cases([corpus]), out, lambda v, e: FakeVerifier())
    manifest = read_manifest(out)
    assert [v.policy for v in manifest.variants] == [study.policy]
    assert manifest.settings.policy == study.policy
    assert json.loads((out / "manifest.json").read_text())["settings"]["policy"] == {"claim_guard": False}
    records = read_results(out)
    assert len(records) == 2
    assert all(r.persisted[EVALUATION_KEY]["claim_guard"] is False for r in records)
