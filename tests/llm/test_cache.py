"""The response cache: a rerun costs zero requests; errors are never cached; the key covers what matters."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import threading
from pathlib import Path
from typing import Any

from harness.devtools.local_server import LocalOpenAIServer
from harness.llm import cache as cache_module
from harness.llm.cache import CachingChatModel, cache_key, model_identity, write_atomic
from harness.llm.fake import FakeChatModel
from harness.llm.types import ChatRequest, ChatResponse
from tests.llm.helpers import SCHEMA, SECRET_KEY, claims_message, model_for, request


async def test_a_rerun_of_the_same_requests_sends_zero_requests(
    openai_server: LocalOpenAIServer, tmp_path: Path
) -> None:
    requests = [request(claims_message(f"C{i}"), schema=SCHEMA, temperature=0.0, seed=1) for i in range(5)]
    async with model_for(openai_server) as inner:
        cold_model = CachingChatModel(inner, tmp_path, epoch=1)
        cold = [await cold_model.generate(r) for r in requests]
        assert openai_server.request_count == 5
        warm_model = CachingChatModel(inner, tmp_path, epoch=1)  # a new run over the same directory
        warm = [await warm_model.generate(r) for r in requests]
    assert openai_server.request_count == 5  # nothing new reached the server
    assert [r.cached for r in cold] == [False] * 5 and [r.cached for r in warm] == [True] * 5
    assert [r.text for r in warm] == [r.text for r in cold]
    assert [r.usage for r in warm] == [r.usage for r in cold]
    assert (warm_model.hits, warm_model.misses) == (5, 0)


async def test_transport_errors_are_not_cached(openai_server: LocalOpenAIServer, tmp_path: Path) -> None:
    openai_server.script(*["server_error"] * 2)
    async with model_for(openai_server, max_attempts=2) as inner:
        model = CachingChatModel(inner, tmp_path)
        failed = await model.generate(request())
        retried = await model.generate(request())
    assert failed.error == "server_error"
    assert retried.error is None and retried.cached is False
    assert openai_server.request_count == 3


async def test_a_reply_that_came_is_cached_even_when_it_is_a_refusal(
    openai_server: LocalOpenAIServer, tmp_path: Path
) -> None:
    openai_server.script("refusal")
    async with model_for(openai_server) as inner:
        model = CachingChatModel(inner, tmp_path)
        first = await model.generate(request())
        second = await model.generate(request())
    assert first.refusal and second.refusal == first.refusal and second.cached
    assert openai_server.request_count == 1


async def test_epoch_parameters_schema_and_messages_are_all_in_the_key(tmp_path: Path) -> None:
    fake = FakeChatModel(lambda req: f"reply {len(fake.requests)}")
    base = request("q", schema=SCHEMA, temperature=0.0, seed=1, max_tokens=100)
    variants = [
        base,
        base.model_copy(update={"temperature": 0.5}),
        base.model_copy(update={"seed": 2}),
        base.model_copy(update={"max_tokens": 101}),
        base.model_copy(update={"response_schema": {"type": "object"}}),
        base.model_copy(update={"extra_body": {"top_k": 1}}),
        request("q2", schema=SCHEMA, temperature=0.0, seed=1, max_tokens=100),
    ]
    model = CachingChatModel(fake, tmp_path, epoch="a")
    for req in variants:
        await model.generate(req)
    assert model.misses == len(variants) and model.hits == 0
    await CachingChatModel(fake, tmp_path, epoch="b").generate(base)
    assert len(fake.requests) == len(variants) + 1  # a new epoch asks again
    timeout_only = await model.generate(base.model_copy(update={"timeout": 3.0}))
    assert timeout_only.cached  # the timeout does not change the reply


def test_the_key_covers_the_model_name_and_base_url_but_not_retry_settings(openai_server: LocalOpenAIServer) -> None:
    req = request("q")
    key = cache_key(model_identity(model_for(openai_server)), req, "0")
    assert key == cache_key(model_identity(model_for(openai_server, max_attempts=9, timeout=1.0)), req, "0")
    assert key != cache_key(model_identity(model_for(openai_server, name="other")), req, "0")
    assert key != cache_key(model_identity(model_for(openai_server, extra_body={"top_k": 3})), req, "0")
    other_server = model_for(openai_server)
    other_server.base_url = "http://127.0.0.1:1/v1"
    assert key != cache_key(model_identity(other_server), req, "0")


class _YieldingModel:
    """Answers after yielding to the loop, so that concurrent calls really interleave."""

    name = "yielding"

    def __init__(self) -> None:
        self.calls = 0

    async def generate(self, req: ChatRequest) -> ChatResponse:
        self.calls += 1
        await asyncio.sleep(0.001)
        return ChatResponse(text=req.messages[0].content.upper() * 500, finish_reason="stop")

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


async def test_concurrent_writers_leave_only_complete_entries(tmp_path: Path) -> None:
    inner = _YieldingModel()
    writers = [CachingChatModel(inner, tmp_path) for _ in range(4)]
    reqs = [request(f"q{i}") for i in range(25)]
    await asyncio.gather(*(w.generate(r) for w in writers for r in reqs))
    files = sorted(tmp_path.rglob("*.json"))
    assert len(files) == 25 and not list(tmp_path.rglob("*.tmp"))
    reader = CachingChatModel(inner, tmp_path)
    calls = inner.calls
    replies = [await reader.generate(r) for r in reqs]
    assert inner.calls == calls and all(r.cached for r in replies)
    assert [r.text for r in replies] == [r.messages[0].content.upper() * 500 for r in reqs]


def test_threads_writing_and_reading_one_key_never_see_a_torn_entry(tmp_path: Path) -> None:
    model = CachingChatModel(_YieldingModel(), tmp_path)
    key = model.key(request("q"))
    torn: list[str] = []

    def write(i: int) -> None:
        for _ in range(30):
            model._write(key, ChatResponse(text=str(i) * 20_000, finish_reason="stop"))

    def read() -> None:
        for _ in range(300):
            hit = model._read(key)
            if hit is not None and len(set(hit.text or "")) != 1:
                torn.append(hit.text or "")

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)] + [threading.Thread(target=read)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert torn == [] and model._read(key) is not None


async def test_an_unreadable_entry_is_a_miss_and_is_rewritten(tmp_path: Path) -> None:
    fake = FakeChatModel("fresh")
    model = CachingChatModel(fake, tmp_path)
    req = request("q")
    path = tmp_path / model.key(req)[:2] / f"{model.key(req)}.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"response": {"text": ')
    reply = await model.generate(req)
    assert reply.text == "fresh" and not reply.cached and len(fake.requests) == 1
    assert json.loads(path.read_text())["response"]["text"] == "fresh"


async def test_cache_files_hold_no_key(openai_server: LocalOpenAIServer, tmp_path: Path) -> None:
    async with model_for(openai_server) as inner:
        model = CachingChatModel(inner, tmp_path)
        await model.generate(request(schema=SCHEMA))
        assert SECRET_KEY not in json.dumps(model.describe())
    assert all(SECRET_KEY not in p.read_text() for p in tmp_path.rglob("*.json"))


def test_write_atomic_writes_whole_files_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "ab" / "abcdef.json"
    write_atomic(target, "first é")
    write_atomic(target, "second")
    assert target.read_text(encoding="utf-8") == "second"
    assert [p.name for p in target.parent.iterdir()] == ["abcdef.json"]
    assert target.stat().st_mode & 0o777 == 0o600  # as mkstemp made it


def test_write_atomic_survives_a_removed_folder_and_a_taken_temp_name(tmp_path: Path) -> None:
    """The remembered folder may be deleted mid-run, and another process may hold the next temp name."""
    target = tmp_path / "cd" / "cdef.json"
    write_atomic(target, "one")
    shutil.rmtree(target.parent)
    write_atomic(target, "two")  # the folder is made again
    assert target.read_text() == "two"
    following = int(repr(cache_module._temp_names)[len("count(") : -1])
    taken = target.parent / f".cdef.{os.getpid()}.{following}.tmp"
    taken.write_text("someone else's")
    write_atomic(target, "three")  # falls back to a fresh mkstemp name
    assert target.read_text() == "three" and taken.read_text() == "someone else's"
    assert sorted(p.name for p in target.parent.iterdir()) == sorted(["cdef.json", taken.name])
