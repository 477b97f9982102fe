"""A plain threaded stdlib OpenAI-compatible server: the second server of the bench's headline (issue 14, item 8).

`http.server.ThreadingHTTPServer`, one thread per connection (HTTP/1.1 keep-alive), a handler that
sleeps the latency and answers `/v1/chat/completions` with a chat completion whose content is the
local server's valid verifier reply. No asyncio, no aiohttp: the kind of server the issue measured
on, so the headline does not depend on the project's own async server.

    python -m bench.threaded_server --latency-ms 200 [--capture bodies.jsonl]

prints its base URL on the first line and serves until SIGTERM. `--capture FILE` appends every
request body as one JSON line (the bench captures a harness run's requests and replays them raw).
"""

from __future__ import annotations

import argparse
import itertools
import json
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import IO, Any

from harness.devtools.responders import verifier_responder


def completion(body: dict[str, Any], text: str, number: int) -> dict[str, Any]:
    """The chat completion JSON for `body` with content `text` (token counts: characters / 4)."""
    prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages") or [] if isinstance(m, dict))
    prompt_tokens, completion_tokens = prompt_chars // 4, len(text) // 4
    return {
        "id": f"chatcmpl-threaded-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "local-model"),
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text, "refusal": None}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


class Server(ThreadingHTTPServer):
    """The stdlib server with the bench's settings: latency, an optional capture file, a deep listen queue."""

    daemon_threads = True
    request_queue_size = 256  # 32+ clients connect at once; the default 5 makes some wait on SYN retries

    def __init__(self, address: tuple[str, int], latency_s: float, capture: IO[str] | None) -> None:
        super().__init__(address, Handler)
        self.latency_s = latency_s
        self.capture = capture
        self.capture_lock = threading.Lock()
        self.ids = itertools.count(1)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server

    def do_POST(self) -> None:
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
            return
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError as exc:
            self._send(400, {"error": {"message": f"request body is not JSON: {exc}", "type": "invalid_request_error"}})
            return
        if self.server.capture is not None:
            with self.server.capture_lock:
                self.server.capture.write(raw.decode("utf-8") + "\n")
        time.sleep(self.server.latency_s)
        self._send(200, completion(body, verifier_responder(body), next(self.server.ids)))

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: a line per request on stderr would cost the shared CPU."""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--capture", default=None, help="append every request body here as a JSON line")
    args = parser.parse_args(argv)
    capture = open(args.capture, "a", encoding="utf-8", buffering=1 << 20) if args.capture else None
    server = Server(("127.0.0.1", args.port), args.latency_ms / 1000.0, capture)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        server.server_close()
        if capture is not None:
            capture.close()
    sys.exit(0)


if __name__ == "__main__":
    main()
