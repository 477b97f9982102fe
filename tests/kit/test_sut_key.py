"""The bundled SUT's model key: only the dedicated VBENCH_SUT_API_KEY, never the user's OPENAI_API_KEY.

A request names the model endpoint (`verifier.base_url`), so anyone who reaches the SUT can point it at a
server of their own and read the Authorization header it receives. These tests play that server.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path

from harness.corpus.loader import load_cases
from harness.devtools.local_server import LocalOpenAIServer
from harness.kit.requests import request_for, scripted_reply
from tests.kit.helpers import ROOT, serve_args, sut_process

USER_KEY = "sk-user-openai-key-must-not-leave-4242"
SUT_KEY = "sk-dedicated-sut-key-7171"
CASE = next(c for c in load_cases([ROOT / "cases" / "policy"]) if c.kind == "policy")


def sut_env(**keys: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "VBENCH_SUT_API_KEY")}
    return {**env, **keys}


def verify_against_echo(tmp_path: Path, env: dict[str, str]) -> tuple[list[str | None], str]:
    """One /verify naming an endpoint the test controls; (Authorization headers it received, the SUT's answer)."""
    port_file = tmp_path / "port"
    with (
        LocalOpenAIServer(lambda _body: scripted_reply(CASE), model="echo") as echo,
        sut_process(serve_args(port_file), port_file, env=env) as url,
    ):
        body = json.dumps(request_for(CASE, echo.base_url, model="echo").model_dump(mode="json")).encode()
        req = urllib.request.Request(f"{url}/verify", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            answer = resp.read().decode()
        return list(echo.authorizations), answer


def test_a_request_naming_another_server_never_receives_openai_api_key(tmp_path: Path) -> None:
    headers, answer = verify_against_echo(tmp_path, sut_env(OPENAI_API_KEY=USER_KEY))
    assert headers, "the SUT never called the endpoint the request named"
    assert all(USER_KEY not in (h or "") for h in headers), headers
    assert USER_KEY not in answer and "verifier_evaluation" in answer


def test_the_dedicated_key_is_the_one_sent(tmp_path: Path) -> None:
    headers, answer = verify_against_echo(tmp_path, sut_env(OPENAI_API_KEY=USER_KEY, VBENCH_SUT_API_KEY=SUT_KEY))
    assert headers and all(h == f"Bearer {SUT_KEY}" for h in headers), headers
    assert SUT_KEY not in answer


def serve_output(tmp_path: Path, host: str, env: dict[str, str]) -> str:
    """Start `vbench sut serve --host HOST`, wait until it listens, stop it; everything it printed."""
    port_file = tmp_path / f"{host}.port"
    proc = subprocess.Popen(
        [*serve_args(port_file), "--host", host], cwd=ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert port_file.exists(), "the SUT never listened"
    finally:
        proc.terminate()
        _out, err = proc.communicate(timeout=10)
    return err.decode()


def test_a_non_loopback_listener_with_a_key_warns_on_stderr(tmp_path: Path) -> None:
    err = serve_output(tmp_path, "0.0.0.0", sut_env(VBENCH_SUT_API_KEY=SUT_KEY))
    assert "warning: listening on 0.0.0.0, not loopback, with VBENCH_SUT_API_KEY set" in err, err
    assert SUT_KEY not in err


def test_no_warning_on_loopback_or_without_a_key(tmp_path: Path) -> None:
    assert "warning" not in serve_output(tmp_path, "127.0.0.1", sut_env(VBENCH_SUT_API_KEY=SUT_KEY))
    assert "warning" not in serve_output(tmp_path, "0.0.0.0", sut_env(OPENAI_API_KEY=USER_KEY))
