"""The response cache: a rerun costs zero requests; errors are never cached; the key covers what matters."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from harness.devtools.local_server import LocalOpenAIServer
from harness.llm.cache import CACHE_FILE, CachingChatModel, cache_key, model_identity
from harness.llm.entries import flush_writes
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
    flush_writes()
    assert _entries(tmp_path) and len(_entries(tmp_path)) == 25
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
    model._entries.put(model.key(req), '{"response": {"text": ')
    flush_writes()
    reply = await model.generate(req)
    assert reply.text == "fresh" and not reply.cached and len(fake.requests) == 1
    flush_writes()
    assert json.loads(_entries(tmp_path)[model.key(req)])["response"]["text"] == "fresh"


async def test_cache_files_hold_no_key(openai_server: LocalOpenAIServer, tmp_path: Path) -> None:
    async with model_for(openai_server) as inner:
        model = CachingChatModel(inner, tmp_path)
        await model.generate(request(schema=SCHEMA))
        assert SECRET_KEY not in json.dumps(model.describe())
        await model.aclose()  # closing waits for the background writer
    stored = (tmp_path / CACHE_FILE).read_bytes()
    assert len(_entries(tmp_path)) == 1 and SECRET_KEY.encode() not in stored


def _entries(folder: Path) -> dict[str, str]:
    """What the cache file holds, read with plain sqlite3."""
    with contextlib.closing(sqlite3.connect(folder / CACHE_FILE)) as conn:
        return dict(conn.execute("SELECT key, text FROM entries").fetchall())


async def test_a_reply_not_yet_committed_is_read_back_and_flush_commits_it(tmp_path: Path) -> None:
    gate = threading.Event()
    fake = FakeChatModel("kept")
    model = CachingChatModel(fake, tmp_path)
    real = type(model._entries).write_many

    def held(self: Any, rows: list[tuple[str, str]]) -> None:
        gate.wait(10)
        real(self, rows)

    type(model._entries).write_many = held  # type: ignore[method-assign]
    try:
        await model.generate(request("q"))
        assert not (tmp_path / CACHE_FILE).exists()  # still queued
        again = await CachingChatModel(fake, tmp_path).generate(request("q"))  # another instance, same folder
        assert again.cached and again.text == "kept" and len(fake.requests) == 1
        gate.set()
        flush_writes()
    finally:
        gate.set()
        type(model._entries).write_many = real  # type: ignore[method-assign]
    assert [json.loads(t)["response"]["text"] for t in _entries(tmp_path).values()] == ["kept"]


async def test_a_cache_that_cannot_be_written_is_reported_once_and_replies_still_come(
    tmp_path: Path, caplog: Any
) -> None:
    (tmp_path / CACHE_FILE).write_text("this is not an SQLite database, it is a text file" * 100)
    fake = FakeChatModel("answer")
    model = CachingChatModel(fake, tmp_path)
    replies = [await model.generate(request(f"q{i}")) for i in range(3)]
    flush_writes()
    assert [r.text for r in replies] == ["answer"] * 3 and model.write_error is not None
    assert "DatabaseError" in model.write_error
    assert sum("cannot write" in r.getMessage() for r in caplog.records) == 1
    assert [r.cached for r in [await model.generate(request("q0"))]] == [False]  # unreadable: a miss
