"""`vbench certify` as a new user meets it: clear errors, a retry that works, certification mode, replay, deadlines."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from harness.cli import main
from harness.corpus.loader import load_cases
from harness.kit.requests import scripted_reply
from harness.kit.sut import answer_deadline
from tests.kit.helpers import ROOT, ThreadedApp, serve_args, sut_process
from tests.kit.reencode import Encoding, ReencodingProxy

POLICY_DIR = str(ROOT / "cases" / "policy")
ONE = "id:pol-fab-id-from-yesterdays-session"


@pytest.fixture(scope="module")
def sut_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port_file = tmp_path_factory.mktemp("sut") / "port"
    with sut_process(serve_args(port_file), port_file) as url:
        yield url


def test_a_url_without_a_scheme_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["certify", "--sut", "127.0.0.1:8080", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "--sut '127.0.0.1:8080' is not an http:// or https:// URL" in err and "NonHttpUrl" not in err


def test_a_missing_cases_folder_says_so(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    args = ["certify", "--sut", "http://127.0.0.1:9", "--cases", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]
    assert main(args) == 2
    assert f"--cases {tmp_path / 'nope'}: no such folder" in capsys.readouterr().err


def test_a_failed_start_leaves_out_free_and_a_rerun_needs_force(
    sut_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    assert main(["certify", "--sut", "http://127.0.0.1:9", "--cases", POLICY_DIR, "--out", str(out)]) == 2
    assert "nothing was written" in capsys.readouterr().err and not any(out.glob("*"))
    args = ["certify", "--sut", sut_url, "--cases", POLICY_DIR, "--out", str(out), "--filter", ONE]
    assert main(args) == 1  # the retry runs (filtered: partial, exit 1)
    capsys.readouterr()
    assert main(args) == 2
    assert "already holds a finished certify run; pass --force" in capsys.readouterr().err
    assert main([*args, "--force"]) == 1
    assert len((out / "results.jsonl").read_text().splitlines()) == 1  # replaced, not appended


def test_certification_mode_refuses_filters_and_skips(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    base = ["certify", "--sut", "http://127.0.0.1:9", "--out", str(tmp_path / "o"), "--mode", "certification"]
    assert main([*base, "--cases", POLICY_DIR, "--filter", ONE]) == 2
    assert "refuses --filter" in capsys.readouterr().err
    assert main([*base, "--cases", str(ROOT / "cases")]) == 2
    assert "refuses to skip" in capsys.readouterr().err


def test_certification_mode_certifies_the_whole_policy_corpus(sut_url: str, tmp_path: Path) -> None:
    out = tmp_path / "o"
    assert main(["certify", "--sut", sut_url, "--cases", POLICY_DIR, "--out", str(out), "--mode", "certification"]) == 0
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["mode"] == "certification" and cert["status"] == "certified"


class DropsGroundedness(ReencodingProxy):
    """A SUT that persists no groundedness_score (as one of the issue's implementations did)."""

    async def verify(self, request: web.Request) -> web.Response:
        response = await super().verify(request)
        body = json.loads(response.body)  # type: ignore[arg-type]
        body["self_evaluation"]["verifier_evaluation"]["groundedness_score"] = None
        return self._json(json.dumps(body))


def test_replay_resends_one_recorded_case(sut_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "o"
    with DropsGroundedness(sut_url, Encoding()) as faulty:
        assert main(["certify", "--sut", faulty, "--cases", POLICY_DIR, "--out", str(out), "--filter", ONE]) == 1
        capsys.readouterr()
        assert main(["certify", "--replay", ONE[3:], "--out", str(out)]) == 1  # to the SUT the certificate names
        said = capsys.readouterr().out
        assert "groundedness_score is null" in said and said.rstrip().endswith("fails")
    assert main(["certify", "--replay", ONE[3:], "--out", str(out), "--sut", sut_url]) == 0  # the fixed SUT
    assert capsys.readouterr().out.rstrip().endswith("passes")
    assert main(["certify", "--replay", "no-such-case", "--out", str(out)]) == 2
    assert "was not certified in this run" in capsys.readouterr().err


class HangingSut(ThreadedApp):
    """A SUT that never answers /verify; it records the bodies it was sent."""

    def __init__(self) -> None:
        super().__init__()
        self.bodies: list[dict[str, Any]] = []

    async def verify(self, request: web.Request) -> web.Response:
        self.bodies.append(await request.json())
        await asyncio.sleep(3600)
        return web.Response(status=500)

    async def info(self, _request: web.Request) -> web.Response:
        return web.json_response({"name": "hangs", "version": "0", "protocol": "sut_protocol_v1"})

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/verify", self.verify)
        app.router.add_get("/info", self.info)


def test_the_kit_gives_the_sut_its_timeout_and_waits_that_long_and_no_longer(tmp_path: Path) -> None:
    timeout_s = 1.0
    out = tmp_path / "o"
    sut = HangingSut()
    with sut as url:
        code = main(
            [
                "certify",
                "--sut",
                url,
                "--cases",
                POLICY_DIR,
                "--out",
                str(out),
                "--filter",
                ONE,
                "--timeout",
                str(timeout_s),
            ]
        )
    assert code == 1
    assert [b["settings"]["timeout_s"] for b in sut.bodies] == [timeout_s]
    entry = json.loads((out / "sut-log.jsonl").read_text())
    waited_s = entry["elapsed_ms"] / 1000
    assert entry["error"].startswith("timeout") and 0.95 * answer_deadline(timeout_s) <= waited_s
    case = next(c for c in load_cases([Path(POLICY_DIR)]) if c.id == ONE.removeprefix("id:"))
    assert entry["model_reply"] == scripted_reply(case)  # the reply the kit served, for a reader of the log alone
    assert waited_s <= answer_deadline(timeout_s) * 1.5  # proportional slack over the configured deadline


def test_a_signed_certificate_verifies_until_it_is_changed(
    sut_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    key = ed25519.Ed25519PrivateKey.generate()
    private, public = tmp_path / "key.pem", tmp_path / "key.pub"
    private.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    public.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    out = tmp_path / "o"
    args = ["certify", "--sut", sut_url, "--cases", POLICY_DIR, "--out", str(out), "--filter", ONE]
    assert main([*args, "--sign-key", str(private)]) == 1  # partial, and signed
    assert (out / "certificate.json.sig").exists()
    assert main(["certify", "verify", "--out", str(out), "--public-key", str(public)]) == 0
    cert = out / "certificate.json"
    cert.write_text(cert.read_text().replace('"partial"', '"certified"'))
    assert main(["certify", "verify", "--out", str(out), "--public-key", str(public)]) == 1
    assert "signature INVALID" in capsys.readouterr().out
    assert main(["certify", "verify", "--out", str(tmp_path), "--public-key", str(public)]) == 2  # nothing signed
