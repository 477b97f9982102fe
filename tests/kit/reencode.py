"""Equivalent re-encodings of protocol JSON, and a proxy that applies them between the kit and a real SUT (test only).

What a correct implementation in another language may do differently without changing meaning:
string escaping (Python's default, `ensure_ascii`, Gson's HTML-safe `\\u003c`/`\\u003d`/`\\u0027`, PHP's
`\\/`), key order, whitespace, number spelling (`1`, `1.0`, `1e0`), and the order of lists the spec sets no
order in. The proxy re-encodes the kit's request to the SUT, the SUT's answers, and the prompt text the SUT
sends its model (as a SUT that embeds JSON with Gson would write it).
"""

from __future__ import annotations

import base64
import json
import random
import re
from dataclasses import dataclass
from typing import Any, Literal

import aiohttp
from aiohttp import web

from harness.system.reply import prose_json_spans
from tests.kit.helpers import ThreadedApp

Escape = Literal["python", "ascii", "gson", "php"]
KeyOrder = Literal["as-is", "reversed", "sorted"]
Numbers = Literal["as-is", "float", "exp"]

FREE_ORDER = frozenset({"facts_checked", "claim_checks", "adjustments", "errors", "warnings"})
"""Lists of the answer the spec and protocol give no order (failed_rules is sorted; the trace is in order)."""
_TOOL_OUTPUT = re.compile(r"(<tool_result\b.*?</tool_result>)", re.DOTALL)
"""A tool's output block in the bundled prompt (kept whole when the prompt's own JSON is re-laid)."""
_GSON = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "=": "\\u003d", "'": "\\u0027"}


@dataclass(frozen=True)
class Encoding:
    escape: Escape = "python"
    key_order: KeyOrder = "as-is"
    indent: int | None = None
    numbers: Numbers = "as-is"
    shuffle_seed: int | None = None
    """Shuffle the free-order lists of an answer with this seed (None: keep their order)."""
    jackson: bool = False
    """Jackson's DefaultPrettyPrinter layout (with `indent`): `"key" : value`, arrays on one line `[ 1, 2 ]`."""
    prompt_indent: bool = False
    """Re-lay every JSON value embedded in the prompt text in this encoding (a SUT that pretty-prints its input)."""

    def dumps(self, value: Any, answer: bool = False) -> str:
        """`value` as JSON in this encoding (`answer`: free-order lists may be shuffled)."""
        return self._value(value, 0, answer, None)

    def _value(self, value: Any, depth: int, answer: bool, key: str | None) -> str:
        if isinstance(value, dict):
            items = list(value.items())
            if self.key_order == "reversed":
                items.reverse()
            elif self.key_order == "sorted":
                items.sort()
            sep = " : " if self.jackson else ":" + (" " if self.indent else "")
            parts = [f"{self._string(str(k))}{sep}{self._value(v, depth + 1, answer, k)}" for k, v in items]
            return self._join("{", parts, "}", depth)
        if isinstance(value, list):
            items = list(value)
            if answer and key in FREE_ORDER and self.shuffle_seed is not None:
                random.Random(f"{self.shuffle_seed}:{key}:{len(items)}").shuffle(items)
            parts = [self._value(v, depth + 1, answer, None) for v in items]
            if self.jackson:
                return "[ " + ", ".join(parts) + " ]" if parts else "[ ]"
            return self._join("[", parts, "]", depth)
        if isinstance(value, str):
            return self._string(value)
        if isinstance(value, bool) or value is None:
            return json.dumps(value)
        if isinstance(value, int):
            return {"as-is": str(value), "float": f"{value}.0", "exp": f"{value}e0"}[self.numbers]
        if isinstance(value, float):
            text = repr(value)
            return f"{text}e0" if self.numbers == "exp" and "e" not in text else text
        raise TypeError(type(value))

    def _join(self, open_: str, parts: list[str], close: str, depth: int) -> str:
        if not parts:
            return f"{open_} {close}" if self.jackson else open_ + close
        if self.indent is None:
            return open_ + ",".join(parts) + close
        pad, inner = " " * self.indent * depth, " " * self.indent * (depth + 1)
        return open_ + "\n" + ",\n".join(inner + p for p in parts) + "\n" + pad + close

    def _string(self, text: str) -> str:
        return escape_string(text, self.escape)

    def prompt(self, text: str) -> str:
        """Prompt text as a SUT embedding JSON in this encoding would write it: its JSON values re-laid when
        `prompt_indent`, then its characters escaped."""
        if self.prompt_indent:
            text = self._relaid(text)
        return escape_string(text, self.escape)[1:-1] if self.escape != "python" else text

    def _relaid(self, text: str) -> str:
        """The SUT's own JSON (gatekeeper result, claims) re-laid; tool output, which is data, left as it is."""
        parts = _TOOL_OUTPUT.split(text)
        return "".join(part if index % 2 else self._relaid_part(part) for index, part in enumerate(parts))

    def _relaid_part(self, text: str) -> str:
        out, last = [], 0
        for start, end, value in prose_json_spans(text):
            out += [text[last:start], self.dumps(value)]
            last = end
        return "".join([*out, text[last:]])


def escape_string(text: str, escape: Escape) -> str:
    """A JSON string literal of `text` in the named escaping."""
    literal = json.dumps(text, ensure_ascii=escape in ("ascii", "gson"))
    if escape == "gson":
        for char, code in _GSON.items():
            literal = literal.replace(char, code)
    if escape == "php":
        literal = literal.replace("/", "\\/")
    return literal


class ReencodingProxy(ThreadedApp):
    """An HTTP proxy on 127.0.0.1 in front of a SUT that re-encodes everything as `encoding` says.

    `/verify` and `/info` go to the SUT; the request's `verifier.base_url` is pointed at the proxy's own
    `/model/<b64>/...`, which re-encodes the prompt text the SUT sends before the kit's endpoint sees it."""

    def __init__(self, sut_url: str, encoding: Encoding) -> None:
        super().__init__()
        self.sut_url, self.encoding = sut_url, encoding

    def _model_base(self, base_url: str) -> str:
        token = base64.urlsafe_b64encode(base_url.encode()).decode()
        return f"http://127.0.0.1:{self.port}/model/{token}"

    async def _forward(self, url: str, data: bytes | None) -> tuple[int, bytes]:
        async with aiohttp.ClientSession() as session:
            if data is None:
                async with session.get(url) as resp:
                    return resp.status, await resp.read()
            async with session.post(url, data=data, headers={"Content-Type": "application/json"}) as resp:
                return resp.status, await resp.read()

    async def verify(self, request: web.Request) -> web.Response:
        body = await request.json()
        body["verifier"]["base_url"] = self._model_base(body["verifier"]["base_url"])
        status, raw = await self._forward(self.sut_url + "/verify", self.encoding.dumps(body).encode())
        if status != 200:
            return web.Response(status=status, body=raw)
        return self._json(self.encoding.dumps(json.loads(raw), answer=True))

    async def info(self, _request: web.Request) -> web.Response:
        _status, raw = await self._forward(self.sut_url + "/info", None)
        return self._json(self.encoding.dumps(json.loads(raw)))

    async def model(self, request: web.Request) -> web.Response:
        target = base64.urlsafe_b64decode(request.match_info["token"]).decode()
        body = await request.json()
        for message in body.get("messages", []):
            if isinstance(message.get("content"), str):
                message["content"] = self.encoding.prompt(message["content"])
        status, raw = await self._forward(f"{target}/{request.match_info['rest']}", json.dumps(body).encode())
        return web.Response(status=status, body=raw, content_type="application/json")

    @staticmethod
    def _json(text: str) -> web.Response:
        return web.Response(body=text.encode("utf-8"), content_type="application/json")

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/verify", self.verify)
        app.router.add_get("/info", self.info)
        app.router.add_post("/model/{token}/{rest:.*}", self.model)
