"""The local OpenAI-compatible server itself: endpoints, recording, scripting, lifecycles, CLI."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import httpx

from harness.devtools.local_server import Fault, LocalOpenAIServer
from tests.llm.helpers import claims_message, model_for, request


def test_models_endpoint_and_chat_over_plain_http(openai_server: LocalOpenAIServer) -> None:
    with httpx.Client(base_url=openai_server.base_url) as client:
        models = client.get("/models").json()
        reply = client.post(
            "/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": claims_message("C7")}]},
        )
    assert [m["id"] for m in models["data"]] == ["local-model"]
    body = reply.json()
    assert body["object"] == "chat.completion" and body["choices"][0]["finish_reason"] == "stop"
    assert json.loads(body["choices"][0]["message"]["content"])["claim_checks"][0]["claim_id"] == "C7"
    assert openai_server.request_count == 1


def test_a_request_body_that_is_not_json_is_a_400(openai_server: LocalOpenAIServer) -> None:
    reply = httpx.post(f"{openai_server.base_url}/chat/completions", content=b"{not json")
    assert reply.status_code == 400 and "not JSON" in reply.json()["error"]["message"]


def test_format_refusal_looks_like_llama_cpp(openai_server: LocalOpenAIServer) -> None:
    openai_server.refuse_formats = {"json_schema"}
    body = {"model": "m", "messages": [], "response_format": {"type": "json_schema", "json_schema": {"schema": {}}}}
    reply = httpx.post(f"{openai_server.base_url}/chat/completions", json=body)
    assert reply.status_code == 500
    assert "response_format" in reply.json()["error"]["message"]
    assert openai_server.response_formats() == ["json_schema"]


def test_faults_apply_one_per_request_in_order_then_normal_replies(openai_server: LocalOpenAIServer) -> None:
    openai_server.script(Fault(kind="rate_limit", retry_after="4"), "empty")
    url = f"{openai_server.base_url}/chat/completions"
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    with httpx.Client() as client:
        limited, empty, normal = (client.post(url, json=body) for _ in range(3))
    assert limited.status_code == 429 and limited.headers["retry-after"] == "4"
    assert empty.json()["choices"][0]["message"]["content"] == ""
    assert normal.status_code == 200 and openai_server.pending_faults == 0
    assert openai_server.faults_applied == ["rate_limit", "empty"]


async def test_the_server_runs_inside_a_running_loop_too() -> None:
    async with LocalOpenAIServer(latency_ms=1) as server, model_for(server) as model:
        reply = await model.generate(request(claims_message("C1")))
    assert reply.error is None and server.request_count == 1


def test_a_custom_responder_sees_the_request_body() -> None:
    with LocalOpenAIServer(lambda body: f"model={body['model']} n={len(body['messages'])}") as server:
        reply = httpx.post(
            f"{server.base_url}/chat/completions", json={"model": "abc", "messages": [{"role": "user", "content": "x"}]}
        )
    assert reply.json()["choices"][0]["message"]["content"] == "model=abc n=1"


def test_runs_as_a_module_with_port_and_latency() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.devtools.local_server", "--port", "0", "--latency-ms", "5"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        assert httpx.get(f"{base_url}/models", timeout=10).status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=20)
    assert code == 0
