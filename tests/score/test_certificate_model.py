"""certificate.json is a `Certificate`: what `build_certificate` makes is written and read back unchanged, a
file that is not a certificate is refused naming the file, and no key of the contract is renamed or dropped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.run.folder import CERTIFICATE_JSON, RunFileError
from harness.score.certificate import build_certificate
from harness.score.certificate_model import Certificate, certificate_text, read_certificate, write_certificate_json
from harness.score.summary_model import Conformance

TOP_KEYS = (
    "schema_version", "status", "headline", "created", "sut", "kit", "spec_files", "corpus_hash", "case_dirs",
    "filters", "policy_cases", "policy_passed", "corpus_policy_cases", "partial_reasons", "invariant_violations",
    "errors", "scenarios_total", "scenarios_covered", "scenarios", "uncovered_scenarios", "failed_cases", "failures",
    "skipped",
)  # fmt: skip
"""Every key certificate_v1 has had: a rename or removal fails `test_every_key_of_the_contract_is_written`."""
PART_KEYS = {
    "sut": ("url", "name", "version"),
    "kit": ("name", "version", "git_sha", "dirty"),
    "scenarios.s1": ("cases", "passed"),
    "failures.0": ("case_id", "problems"),
    "skipped": ("quality_cases", "case_ids", "reason"),
}
"""The keys of each nested part (a scenario's tally and a failure by one example)."""
REQUIRED = [*TOP_KEYS, *(f"{part}.{key}" for part, keys in PART_KEYS.items() for key in keys)]


def sample() -> Certificate:
    """A failed, filtered certificate: every list and the optional count non-empty, a dirty sha, an extra SUT key."""
    conformance = Conformance.model_validate(
        {
            "scenarios": {"s2": {"cases": 0, "passed": 0}, "s1": {"cases": 3, "passed": 2}},
            "policy_cases": 3,
            "policy_passed": 2,
            "invariant_violations": 1,
            "failures": [
                {
                    "case_id": "c1",
                    "kind": "policy",
                    "mismatches": ["verdict: pass != fail"],
                    "invariant_violations": ["I3"],
                }
            ],
        }
    )
    return build_certificate(
        sut={"url": "http://127.0.0.1:1", "name": "acme", "version": "1", "protocol": "vbench-sut/1"},
        kit={"name": "verifier-bench", "version": "0.1", "git_sha": "ab" * 20 + "-dirty"},
        spec={"INTERPRETATION.md": "cd" * 32},
        corpus_hash="cafe",
        conformance=conformance,
        case_dirs=["cases/policy"],
        filters=["tag:x"],
        errors=1,
        skipped={"quality_cases": 1, "case_ids": ["q1"], "reason": "no endpoint"},
        corpus_policy_cases=114,
    )


def written(tmp_path: Path) -> dict[str, Any]:
    write_certificate_json(tmp_path, sample())
    data: dict[str, Any] = json.loads((tmp_path / CERTIFICATE_JSON).read_text(encoding="utf-8"))
    return data


def part(data: dict[str, Any], dotted: str) -> tuple[dict[str, Any], str]:
    """(the mapping that holds a dotted key, its last part); a number is a list index."""
    *path, last = dotted.split(".")
    node: Any = data
    for step in path:
        node = node[int(step)] if step.isdigit() else node[step]
    return node, last


def test_a_built_certificate_round_trips_through_the_file_unchanged(tmp_path: Path) -> None:
    cert = sample()
    write_certificate_json(tmp_path, cert)
    text = (tmp_path / CERTIFICATE_JSON).read_text(encoding="utf-8")
    back = read_certificate(tmp_path)
    assert (
        back == cert
        and back.status == "failed"
        and back.kit.dirty
        and back.sut.model_extra == {"protocol": "vbench-sut/1"}
    )
    assert certificate_text(back) == text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


def test_every_key_of_the_contract_is_written(tmp_path: Path) -> None:
    data = written(tmp_path)
    assert set(TOP_KEYS) <= set(data)
    for dotted in REQUIRED:
        node, key = part(data, dotted)
        assert key in node, dotted
    assert data["schema_version"] == "certificate_v1" and data["corpus_policy_cases"] == 114
    assert data["failures"] == [{"case_id": "c1", "problems": ["verdict: pass != fail", "I3"]}]
    assert data["uncovered_scenarios"] == ["s2"] and data["failed_cases"] == ["c1"] and data["partial_reasons"]


@pytest.mark.parametrize("dotted", REQUIRED)
def test_a_certificate_missing_a_key_is_refused_naming_the_file(tmp_path: Path, dotted: str) -> None:
    data = written(tmp_path)
    node, key = part(data, dotted)
    del node[key]
    (tmp_path / CERTIFICATE_JSON).write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(RunFileError) as caught:
        read_certificate(tmp_path)
    assert caught.value.path == tmp_path / CERTIFICATE_JSON
    assert str(caught.value) == f"{tmp_path / CERTIFICATE_JSON}: {dotted}: Field required"


@pytest.mark.parametrize(
    ("dotted", "value"),
    [("status", "approved"), ("schema_version", "certificate_v2"), ("policy_cases", "3"), ("kit.dirty", "no")],
)
def test_a_certificate_with_a_wrong_value_is_refused_naming_the_file(tmp_path: Path, dotted: str, value: Any) -> None:
    data = written(tmp_path)
    node, key = part(data, dotted)
    node[key] = value
    (tmp_path / CERTIFICATE_JSON).write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(RunFileError, match=rf"certificate\.json: {dotted}: "):
        read_certificate(tmp_path)


def test_a_certificate_that_is_not_json_is_refused_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / CERTIFICATE_JSON).write_text('{"status": ', encoding="utf-8")
    with pytest.raises(RunFileError, match=r"certificate\.json: \(top level\): Invalid JSON"):
        read_certificate(tmp_path)
    (tmp_path / CERTIFICATE_JSON).write_bytes(b'{"status": "\xff"}')
    with pytest.raises(RunFileError, match=r"certificate\.json: not UTF-8"):
        read_certificate(tmp_path)


def test_a_key_added_by_a_later_version_reads_and_writes_back(tmp_path: Path) -> None:
    """Keys are only ever added: a newer certificate reads here and its extra keys are kept as they came."""
    data = written(tmp_path)
    data["attested_by"] = {"who": "ci"}
    data["kit"]["build"] = 7
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    (tmp_path / CERTIFICATE_JSON).write_text(text, encoding="utf-8")
    assert certificate_text(read_certificate(tmp_path)) == text
