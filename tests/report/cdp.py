"""A small Chrome DevTools Protocol client for the browser tests: Debian's chromium, headless, over a websocket.

Chromium is started with a fresh profile and `--remote-debugging-port=0`; the
port is read from `DevToolsActivePort`, the page target from `/json/list`
(loopback only), and commands go over aiohttp's websocket client.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

from harness.report.browser import chromium_command, find_chromium


class CDPError(RuntimeError):
    pass


class Page:
    """One page target: send commands, evaluate JavaScript, take screenshots."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.console: list[str] = []
        self.exceptions: list[str] = []
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for msg in self._ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                continue
            data = json.loads(msg.data)
            if "id" in data and data["id"] in self._pending:
                self._pending.pop(data["id"]).set_result(data)
            elif data.get("method") == "Runtime.consoleAPICalled":
                args = data["params"].get("args", [])
                self.console.append(" ".join(str(a.get("value", a.get("description", ""))) for a in args))
            elif data.get("method") == "Runtime.exceptionThrown":
                self.exceptions.append(json.dumps(data["params"].get("exceptionDetails", {}))[:500])

    async def send(self, method: str, timeout: float = 60, **params: Any) -> dict[str, Any]:
        msg_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        await self._ws.send_str(json.dumps({"id": msg_id, "method": method, "params": params}))
        reply = await asyncio.wait_for(future, timeout)
        if "error" in reply:
            raise CDPError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    async def evaluate(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise CDPError(f"{expression[:80]}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, timeout: float = 30) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = await self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise CDPError(f"timed out waiting for {expression}")
            await asyncio.sleep(0.1)

    async def screenshot(self, path: Path, width: int = 1400, height: int = 1000, full_page: bool = False) -> Path:
        """A PNG of the viewport (or of the whole page)."""
        if full_page:
            height = int(await self.evaluate("document.documentElement.scrollHeight"))
        await self.send(
            "Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False
        )
        await self.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")  # repainted
        result = await self.send("Page.captureScreenshot", format="png", captureBeyondViewport=full_page)
        path.write_bytes(base64.b64decode(result["data"]))
        return path

    async def close(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        await self._ws.close()


@contextlib.asynccontextmanager
async def open_page(url: str, width: int = 1400, height: int = 1000) -> AsyncIterator[Page]:
    """Start chromium on `url` and yield its page, ready for commands; the browser is killed afterwards."""
    binary = find_chromium()
    if binary is None:
        raise CDPError("no chromium binary")
    with tempfile.TemporaryDirectory(prefix="vbench-cdp-", ignore_cleanup_errors=True) as profile:
        cmd = chromium_command(
            binary, Path(profile), "--remote-debugging-port=0", f"--window-size={width},{height}", url
        )
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            port = await _port(Path(profile) / "DevToolsActivePort", proc)
            async with aiohttp.ClientSession() as http:
                ws_url = await _page_ws(http, port)
                async with http.ws_connect(ws_url, max_msg_size=0) as ws:
                    page = Page(ws)
                    try:
                        await page.send("Runtime.enable")
                        await page.send("Page.enable")
                        yield page
                    finally:
                        await page.close()
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # the browser and its helpers: the group we started
            proc.wait(timeout=30)


async def _port(path: Path, proc: subprocess.Popen[bytes], timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise CDPError(f"chromium exited with {proc.returncode} before opening its debugging port")
        if path.exists():
            first = path.read_text().splitlines()[:1]
            if first and first[0].isdigit():
                return int(first[0])
        await asyncio.sleep(0.05)
    raise CDPError("chromium did not open its debugging port")


async def _page_ws(http: aiohttp.ClientSession, port: int, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        async with http.get(f"http://127.0.0.1:{port}/json/list") as resp:
            targets = await resp.json(content_type=None)
        pages = [t for t in targets if t.get("type") == "page" and t.get("webSocketDebuggerUrl")]
        if pages:
            return str(pages[0]["webSocketDebuggerUrl"])
        await asyncio.sleep(0.05)
    raise CDPError("no page target")
