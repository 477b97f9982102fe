"""Settings a case pins in `meta.kit.settings`: the kit sends them, a run applies them, a SUT that ignores them fails."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from harness.cli import main
from harness.corpus.loader import CorpusError, load_cases
from harness.run.conformance import case_check_problems
from tests.kit.helpers import ROOT, serve_args, sut_process
from tests.kit.reencode import Encoding, ReencodingProxy

GUARDED = ROOT / "cases" / "policy" / "fact-check" / "pol-infer-redis-keys-model-pass.yaml"
"""A case whose claim guard turns the model's PASS into LOW_CONFID, and whose tool results exceed 50 characters."""


def pinned_cases(folder: Path) -> list[str]:
    """Two variants of GUARDED: claim guard off (the model's PASS stands) and a 50-character excerpt limit."""
    data = yaml.safe_load(GUARDED.read_text())
    off = {**data, "id": data["id"] + "-guard-off", "meta": {"kit": {"settings": {"claim_guard": False}}}}
    off["expected"] = {**data["expected"], "verdict": "PASS"}
    short = {**data, "id": data["id"] + "-excerpt-50", "meta": {"kit": {"settings": {"excerpt_chars": 50}}}}
    folder.mkdir(parents=True, exist_ok=True)
    for case in (off, short):
        (folder / f"{case['id']}.yaml").write_text(yaml.safe_dump(case, sort_keys=False))
    return [off["id"], short["id"]]


@pytest.fixture(scope="module")
def sut_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port_file = tmp_path_factory.mktemp("sut") / "port"
    with sut_process(serve_args(port_file), port_file) as url:
        yield url


def test_a_run_applies_the_settings_a_case_pins(tmp_path: Path) -> None:
    pinned_cases(tmp_path)
    cases = load_cases([tmp_path])
    assert {c.id: case_check_problems(c) for c in cases} == {c.id: [] for c in cases}
    short = next(c for c in cases if c.id.endswith("-excerpt-50"))
    assert {len(e.result_excerpt) for e in short.trace(2000)} == {50}  # the case's limit, not the run's


def test_a_bad_pinned_setting_names_the_file_and_key(tmp_path: Path) -> None:
    data = yaml.safe_load(GUARDED.read_text())
    data["meta"] = {"kit": {"settings": {"excerpt_chars": 0}}}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(CorpusError, match=r"bad\.yaml.*meta.*excerpt_chars"):
        load_cases([tmp_path])


class IgnoresSettings(ReencodingProxy):
    """A SUT that always runs with the claim guard on and a 2,000-character excerpt, whatever it is sent."""

    async def verify(self, request: web.Request) -> web.Response:
        body: dict[str, Any] = await request.json()
        body["settings"] = {**body["settings"], "claim_guard": True, "excerpt_chars": 2000}
        body["verifier"]["base_url"] = self._model_base(body["verifier"]["base_url"])
        status, raw = await self._forward(self.sut_url + "/verify", json.dumps(body).encode())
        return web.Response(status=status, body=raw, content_type="application/json")


def failures(out: Path) -> dict[str, list[str]]:
    summary = json.loads((out / "summary.json").read_text())
    return {f["case_id"]: f["mismatches"] + f["invariant_violations"] for f in summary["conformance"]["failures"]}


def test_the_kit_sends_pinned_settings_and_catches_a_sut_that_ignores_them(sut_url: str, tmp_path: Path) -> None:
    ids = pinned_cases(tmp_path / "cases")
    args = ["certify", "--cases", str(tmp_path / "cases"), "--force"]
    main([*args, "--sut", sut_url, "--out", str(tmp_path / "ok")])
    assert failures(tmp_path / "ok") == {}
    sent = [json.loads(line)["sut_request"]["settings"] for line in (tmp_path / "ok" / "sut-log.jsonl").open()]
    assert sorted((s["claim_guard"], s["excerpt_chars"]) for s in sent) == [(False, 2000), (True, 50)]
    with IgnoresSettings(sut_url, Encoding()) as deaf:
        main([*args, "--sut", deaf, "--out", str(tmp_path / "deaf")])
    caught = failures(tmp_path / "deaf")
    assert set(caught) == set(ids)
    assert any("verdict" in p for p in caught[ids[0]]) and any("tool_trace_summary" in p for p in caught[ids[1]])
