"""A local stand-in for GitHub's issue-comments REST API (127.0.0.1), for `vbench ci comment` and the workflow test.

It keeps the comments of each pull request, pages them as GitHub does (`per_page`, `page`), checks the bearer
token, and with `read_only` answers 403 to every write, as GitHub does to a fork's pull-request token.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

TOKEN = "ghs-test-token"


class GitHubAPI:
    def __init__(self, repo: str = "team/verifier", read_only: bool = False) -> None:
        self.repo = repo
        self.read_only = read_only
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.calls: list[tuple[str, str]] = []
        self._ids = itertools.count(1001)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def add(self, pr: int, body: str, user: str = "someone") -> int:
        comment = {"id": next(self._ids), "body": body, "user": {"login": user}}
        self.comments.setdefault(pr, []).append(comment)
        return comment["id"]

    def __enter__(self) -> GitHubAPI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _route(self, method: str) -> None:
                url = urlparse(self.path)
                api.calls.append((method, url.path))
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    return self._send(401, {"message": "Bad credentials"})
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                listing = re.fullmatch(rf"/repos/{api.repo}/issues/(\d+)/comments", url.path)
                single = re.fullmatch(rf"/repos/{api.repo}/issues/comments/(\d+)", url.path)
                if method != "GET" and api.read_only:
                    return self._send(403, {"message": "Resource not accessible by integration"})
                if listing and method == "GET":
                    query = parse_qs(url.query)
                    per_page, page = int(query.get("per_page", ["30"])[0]), int(query.get("page", ["1"])[0])
                    rows = api.comments.get(int(listing.group(1)), [])
                    return self._send(200, rows[(page - 1) * per_page : page * per_page])
                if listing and method == "POST":
                    pr = int(listing.group(1))
                    new_id = api.add(pr, body["body"], user="github-actions[bot]")
                    return self._send(201, {"id": new_id})
                if single and method == "PATCH":
                    for rows in api.comments.values():
                        for comment in rows:
                            if comment["id"] == int(single.group(1)):
                                comment["body"] = body["body"]
                                return self._send(200, comment)
                return self._send(404, {"message": "Not Found"})

            def do_GET(self) -> None:
                self._route("GET")

            def do_POST(self) -> None:
                self._route("POST")

            def do_PATCH(self) -> None:
                self._route("PATCH")

        return Handler
