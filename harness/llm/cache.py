"""A response cache in front of any chat model: a rerun of the same requests costs no request.

The key is a sha256 over the model's identity (name, base URL, the settings
that change replies), the whole request except its timeout, and an `epoch`
(bump it to force fresh replies). Entries are JSON texts in one SQLite file,
`<cache dir>/replies.sqlite3` (`harness.llm.entries`: written in the background, in
transactions, so concurrent writers never leave a torn entry). Only replies are
cached, never transport errors. A cache that cannot be written is reported once;
the replies still reach the run.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.llm.entries import EntryFile, flush_writes
from harness.llm.types import ChatModel, ChatRequest, ChatResponse

KEY_VERSION = 2
"""2: entries moved from one JSON file per key into `replies.sqlite3` (version 1 folders are not read)."""
CACHE_FILE = "replies.sqlite3"
_TRANSPORT_ONLY = {"max_attempts", "timeout", "backoff_base", "backoff_max", "max_retry_after"}
_VOLATILE = {"structured_mode_in_use", "structured_mode_refusals", "transport_in_use"}


def model_identity(model: ChatModel) -> dict[str, Any]:
    """What about a model changes its replies: `cache_identity()` if it has one, else `describe()`."""
    identity = getattr(model, "cache_identity", None)
    if callable(identity):
        return dict(identity())
    described = {k: v for k, v in model.describe().items() if k not in _VOLATILE}
    settings = described.get("settings")
    if isinstance(settings, dict):
        described["settings"] = {k: v for k, v in settings.items() if k not in _TRANSPORT_ONLY}
    return described


def cache_key(identity: dict[str, Any], request: ChatRequest, epoch: str) -> str:
    """sha256 over the model identity, the request (less its timeout) and the epoch."""
    payload = {
        "v": KEY_VERSION,
        "model": identity,
        "request": request.model_dump(mode="json", exclude={"timeout"}),
        "epoch": epoch,
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CachingChatModel:
    """Wraps `inner`; answers from `cache_dir` when the same request was answered before."""

    def __init__(self, inner: ChatModel, cache_dir: str | Path, epoch: str | int = 0) -> None:
        self.inner = inner
        self.name = inner.name
        self.cache_dir = Path(cache_dir)
        self.epoch = str(epoch)
        self.hits = 0
        self.misses = 0
        self._identity: dict[str, Any] | None = None
        self._entries = EntryFile(self.cache_dir / CACHE_FILE, "response cache", "replies are not cached")

    @property
    def write_error(self) -> str | None:
        """Why the cache could not be written (the replies still reached the run), or None."""
        return self._entries.write_error

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "cache": {"dir": str(self.cache_dir), "epoch": self.epoch}}

    def identity(self) -> dict[str, Any]:
        """What decides this cache's replies: the model's identity, the resolved folder and the epoch."""
        return {"model": model_identity(self.inner), "cache_dir": str(self.cache_dir.resolve()), "epoch": self.epoch}

    def key(self, request: ChatRequest) -> str:
        if self._identity is None:
            self._identity = model_identity(self.inner)
        return cache_key(self._identity, request, self.epoch)

    async def generate(self, request: ChatRequest) -> ChatResponse:
        key = self.key(request)
        hit = self._read(key)
        if hit is not None:
            self.hits += 1
            return hit.model_copy(update={"cached": True})
        self.misses += 1
        response = await self.inner.generate(request)
        if response.error is None:
            self._write(key, response)
        return response

    def _read(self, key: str) -> ChatResponse | None:
        text = self._entries.get(key)
        if text is None:
            return None
        try:
            return ChatResponse.model_validate(json.loads(text)["response"])
        except (ValueError, KeyError, TypeError, ValidationError):
            return None  # absent or unreadable: a miss, overwritten by the next reply

    def _write(self, key: str, response: ChatResponse) -> None:
        """Keep the reply; a cache that cannot be written is reported once and the reply still returned."""
        if self.write_error is None:
            entry = {"key_version": KEY_VERSION, "model": self.name, "response": response.model_dump(mode="json")}
            self._entries.put(key, json.dumps(entry, ensure_ascii=False))

    async def aclose(self) -> None:
        flush_writes()
        closer = getattr(self.inner, "aclose", None)
        if callable(closer):
            await closer()
