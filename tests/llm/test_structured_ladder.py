"""The structured-output ladder over real HTTP: json_schema → json_object (schema attached) → plain,
remembered per endpoint so that a refusal is not paid once per case."""

from __future__ import annotations

import asyncio

import pytest

from harness.devtools.local_server import Fault, LocalOpenAIServer
from harness.llm import modes
from tests.llm.helpers import SCHEMA, claims_message, model_for, request

pytestmark = pytest.mark.usefixtures("transport")  # the ladder on both transports of the openai client


async def test_json_schema_is_sent_first_with_the_schema(openai_server: LocalOpenAIServer) -> None:
    async with model_for(openai_server) as model:
        reply = await model.generate(request(schema=SCHEMA, schema_name="verifier_reply"))
    assert reply.structured_mode == "json_schema" and reply.attempts == 1
    sent = openai_server.requests[0]["response_format"]
    assert sent == {"type": "json_schema", "json_schema": {"name": "verifier_reply", "schema": SCHEMA, "strict": False}}


async def test_a_refused_json_schema_falls_back_to_json_object_once_per_endpoint(
    openai_server: LocalOpenAIServer,
) -> None:
    openai_server.refuse_formats = {"json_schema"}  # like llama.cpp: HTTP 500 with a validation message
    async with model_for(openai_server) as model:
        first = await model.generate(request(claims_message("C1"), schema=SCHEMA))
        second = await model.generate(request(claims_message("C2"), schema=SCHEMA))
    assert first.error is None and first.structured_mode == "json_object" and first.attempts == 2
    assert second.error is None and second.structured_mode == "json_object" and second.attempts == 1
    assert openai_server.response_formats() == ["json_schema", "json_object", "json_object"]
    assert openai_server.requests[1]["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert modes.refusals(model.endpoint) == ["json_schema"]


async def test_the_remembered_mode_holds_for_a_new_client_of_the_same_endpoint(
    openai_server: LocalOpenAIServer,
) -> None:
    openai_server.refuse_formats = {"json_schema"}
    async with model_for(openai_server) as model:
        await model.generate(request(schema=SCHEMA))
    async with model_for(openai_server) as again:
        reply = await again.generate(request(schema=SCHEMA))
        assert again.describe()["structured_mode_in_use"] == "json_object"
    assert reply.attempts == 1
    assert openai_server.response_formats().count("json_schema") == 1


async def test_another_model_name_at_the_same_server_probes_for_itself(openai_server: LocalOpenAIServer) -> None:
    openai_server.refuse_formats = {"json_schema"}
    async with model_for(openai_server, name="a") as a, model_for(openai_server, name="b") as b:
        await a.generate(request(schema=SCHEMA))
        await b.generate(request(schema=SCHEMA))
    assert openai_server.response_formats() == ["json_schema", "json_object", "json_schema", "json_object"]


async def test_a_server_refusing_both_modes_ends_in_plain_prompting(openai_server: LocalOpenAIServer) -> None:
    openai_server.refuse_formats = {"json_schema", "json_object"}
    async with model_for(openai_server) as model:
        first = await model.generate(request(claims_message("C1"), schema=SCHEMA))
        second = await model.generate(request(claims_message("C1"), schema=SCHEMA))
    assert (first.structured_mode, first.attempts, first.error) == ("plain", 3, None)
    assert (second.structured_mode, second.attempts) == ("plain", 1)
    assert openai_server.response_formats() == ["json_schema", "json_object", None, None]
    assert first.text and '"claim_id": "C1"' in first.text


async def test_concurrent_first_calls_go_out_together_at_an_endpoint_that_accepts_the_mode(
    openai_server: LocalOpenAIServer,
) -> None:
    openai_server.latency_ms = 150
    async with model_for(openai_server) as model:
        replies = await asyncio.gather(
            *(model.generate(request(claims_message(f"C{i}"), schema=SCHEMA)) for i in range(12))
        )
    assert all(r.error is None and r.structured_mode == "json_schema" and r.attempts == 1 for r in replies)
    # nobody waited for a first reply to learn the mode: all twelve were at the server at once
    assert openai_server.max_in_flight == 12


async def test_concurrent_first_calls_each_step_down_once_and_later_calls_start_weaker(
    openai_server: LocalOpenAIServer,
) -> None:
    openai_server.refuse_formats = {"json_schema"}
    openai_server.latency_ms = 150
    async with model_for(openai_server) as model:
        first = await asyncio.gather(
            *(model.generate(request(claims_message(f"C{i}"), schema=SCHEMA)) for i in range(6))
        )
        later = await asyncio.gather(
            *(model.generate(request(claims_message(f"D{i}"), schema=SCHEMA)) for i in range(6))
        )
    assert all(r.error is None and r.structured_mode == "json_object" for r in first + later)
    assert [r.attempts for r in first] == [2] * 6 and [r.attempts for r in later] == [1] * 6
    assert openai_server.response_formats().count("json_schema") == 6
    assert modes.refusals(model.endpoint) == ["json_schema"]  # the manifest names the refused mode once


async def test_the_starting_mode_is_a_per_model_setting(openai_server: LocalOpenAIServer) -> None:
    async with model_for(openai_server, structured_mode="json_object") as model:
        await model.generate(request(schema=SCHEMA))
    async with model_for(openai_server, name="other", structured_mode="plain") as plain:
        await plain.generate(request(schema=SCHEMA))
    assert openai_server.response_formats() == ["json_object", None]


async def test_a_request_without_schema_sends_no_response_format_and_does_not_probe(
    openai_server: LocalOpenAIServer,
) -> None:
    openai_server.refuse_formats = {"json_schema"}
    async with model_for(openai_server) as model:
        reply = await model.generate(request())
    assert openai_server.response_formats() == [None] and reply.structured_mode == "plain"
    assert modes.refusals(model.endpoint) == []


async def test_a_bare_400_on_the_first_call_steps_down_but_not_once_the_mode_is_confirmed(
    openai_server: LocalOpenAIServer,
) -> None:
    openai_server.script(Fault(kind="server_error", status=400))
    async with model_for(openai_server) as model:
        first = await model.generate(request(schema=SCHEMA))
        openai_server.script(Fault(kind="server_error", status=400))
        second = await model.generate(request(schema=SCHEMA))
    assert (first.structured_mode, first.error) == ("json_object", None)
    assert (second.error, second.attempts, second.structured_mode) == ("client_error", 1, "json_object")
    assert openai_server.response_formats() == ["json_schema", "json_object", "json_object"]


async def test_a_500_after_the_mode_is_confirmed_is_a_server_error_not_a_refusal(
    openai_server: LocalOpenAIServer,
) -> None:
    async with model_for(openai_server) as model:
        await model.generate(request(schema=SCHEMA))
        openai_server.script("server_error")
        reply = await model.generate(request(schema=SCHEMA))
    assert (reply.structured_mode, reply.attempts, reply.error) == ("json_schema", 2, None)
    assert openai_server.response_formats() == ["json_schema"] * 3


async def test_a_request_refused_in_every_mode_for_another_reason_does_not_degrade_the_run(
    openai_server: LocalOpenAIServer,
) -> None:
    """A first case too long for the context gets 400 in every mode; the next case still starts at json_schema."""
    openai_server.script(*[Fault(kind="server_error", status=400)] * 3)
    async with model_for(openai_server) as model:
        first = await model.generate(request(schema=SCHEMA))
        second = await model.generate(request(schema=SCHEMA))
    assert (first.error, first.attempts) == ("client_error", 3)
    assert (second.error, second.structured_mode, second.attempts) == (None, "json_schema", 1)
    assert openai_server.response_formats() == ["json_schema", "json_object", None, "json_schema"]
    assert modes.refusals(model.endpoint) == []
