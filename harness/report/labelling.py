"""`vbench label serve`: a small local web app for labelling imported sessions claim by claim.

Server-rendered pages with plain forms (a few lines of JavaScript from the app itself add the keys 1-6, n, s,
j and k), every value escaped by jinja2's autoescaping, a strict Content-Security-Policy without
'unsafe-inline', no third-party asset, bound to 127.0.0.1. Each answer is appended and fsynced
(`corpus.labels.append_label`) before the page moves on. The production verifier's answer is hidden until
the person asks for it, so the labels stay blind.
"""

from __future__ import annotations

import asyncio
import secrets
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from aiohttp import web
from jinja2 import Environment, PackageLoader, select_autoescape

from harness.corpus.labels import CLASSES, LabelLine, append_label, label_file, now, read_label_file
from harness.corpus.sessions import Imported, load_imported
from harness.report.label_view import case_view, claim_ids, current_claim
from harness.score.label_order import Chooser, Order
from harness.system.models import Derivability
from harness.system.serve import serve_app

HOST = "127.0.0.1"
DEFAULT_PORT = 8765
"""The port `vbench label serve` takes unless told (the report's agreement section links to it)."""
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
STATIC = {"label.js": "text/javascript", "label.css": "text/css"}
CLASS_HELP = {
    "direct_observation": "the cited result states it",
    "reasonable_inference": "follows from the cited results",
    "overstated": "goes beyond them in scope, certainty or cause",
    "unsupported": "nothing cited bears on it",
    "external_unknown": "about things outside the session",
    "contradicted": "the cited results say otherwise",
}


def environment() -> Environment:
    return Environment(
        loader=PackageLoader("harness.report", "templates"),
        autoescape=select_autoescape(enabled_extensions=("html", "html.j2"), default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )


class LabelApp:
    """The app over one import folder and one annotator."""

    def __init__(self, folder: Path, annotator: str, order: Order = "file", judge: Any = None) -> None:
        self.folder = folder
        self.annotator = annotator
        self.path = label_file(folder, annotator)
        self.cases: dict[str, Imported] = {c.id: c for c in load_imported(folder)}
        self.claims = {cid: claim_ids(c) for cid, c in self.cases.items()}
        self.chooser = Chooser(folder, annotator, list(self.cases.values()), order, judge)
        self.order = self.chooser.sequence()
        self.token = secrets.token_urlsafe(24)
        """Sent with every form and checked on every answer: another site's page cannot post to this one."""
        self.env = environment()

    def labels(self) -> dict[tuple[str, str], Any]:
        return read_label_file(self.path) if self.path.is_file() else {}

    def app(self) -> web.Application:
        app = web.Application(middlewares=[_headers], client_max_size=64 * 1024)
        app.router.add_get("/", self.index)
        app.router.add_get("/case/{case_id}", self.case)
        app.router.add_post("/case/{case_id}/label", self.label)
        app.router.add_get("/static/{name}", self.static)
        return app

    def _html(self, template: str, **context: Any) -> web.Response:
        body = self.env.get_template(template).render(annotator=self.annotator, **context)
        return web.Response(text=body, content_type="text/html", charset="utf-8")

    async def index(self, request: web.Request) -> web.Response:
        labels = self.labels()
        rows: list[dict[str, Any]] = [
            {
                "id": cid,
                "title": self.cases[cid].title,
                "done": sum(1 for k in self.claims[cid] if (cid, k) in labels),
                "total": len(self.claims[cid]),
            }
            for cid in self.order
        ]
        done, total = sum(r["done"] for r in rows), sum(r["total"] for r in rows)
        return self._html("label_index.html.j2", rows=rows, done=done, total=total, first=self._next_open(labels, None))

    async def case(self, request: web.Request) -> web.Response:
        case_id = request.match_info["case_id"]
        if case_id not in self.cases:
            raise web.HTTPNotFound(text=f"no case {case_id!r} in this folder")
        labels = self.labels()
        view = case_view(self.cases[case_id], labels)
        show = request.query.get("show") == "production"
        at = self.order.index(case_id)
        return self._html(
            "label_case.html.j2",
            case=view,
            current=current_claim(view, request.query.get("after")),
            classes=[(i + 1, c.value, CLASS_HELP[c.value]) for i, c in enumerate(CLASSES)],
            show=show,
            token=self.token,
            position=at + 1,
            count=len(self.order),
            prev=self._link(self.order[at - 1], show) if at > 0 else None,
            next=self._link(self.order[at + 1], show) if at + 1 < len(self.order) else None,
            skip=self._link(nxt, show) if (nxt := self._next_open(labels, case_id)) else None,
            toggle=self._link(case_id, not show),
        )

    async def label(self, request: web.Request) -> web.StreamResponse:
        case_id = request.match_info["case_id"]
        form = await request.post()
        if not secrets.compare_digest(str(form.get("token", "")), self.token):
            raise web.HTTPForbidden(text="this form did not come from this labelling page")
        claim_id, label = str(form.get("claim_id", "")), str(form.get("label", ""))
        if case_id not in self.cases or claim_id not in self.claims[case_id]:
            raise web.HTTPNotFound(text="no such case or claim")
        if label not in {c.value for c in CLASSES}:
            raise web.HTTPBadRequest(text=f"label must be one of {[c.value for c in CLASSES]}")
        line = LabelLine(
            case_id=case_id,
            claim_id=claim_id,
            label=Derivability(label),
            annotator=self.annotator,
            at=now(),
            drawn=self.chooser.drawn_for(case_id),
        )
        await asyncio.to_thread(append_label, self.folder, line)
        query = {"after": claim_id} | ({"show": "production"} if form.get("show") == "production" else {})
        raise web.HTTPSeeOther(f"/case/{quote(case_id)}?{urlencode(query)}")

    async def static(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in STATIC:
            raise web.HTTPNotFound()
        body = resources.files("harness.report").joinpath("templates", name).read_text(encoding="utf-8")
        return web.Response(text=body, content_type=STATIC[name], charset="utf-8")

    def _link(self, case_id: str, show: bool) -> str:
        return f"/case/{quote(case_id)}" + ("?show=production" if show else "")

    def _next_open(self, labels: dict[tuple[str, str], Any], after: str | None) -> str | None:
        """The next case with a claim this annotator has not labelled, as the chosen order offers it."""
        is_open = {cid: any((cid, k) not in labels for k in ks) for cid, ks in self.claims.items()}
        found = self.chooser.next_open(is_open, after)
        self.order = self.chooser.sequence()
        return found


@web.middleware
async def _headers(request: web.Request, handler: Any) -> web.StreamResponse:
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        response = exc
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    if isinstance(response, web.HTTPException) and response.status >= 400:
        raise response
    return response


async def serve(
    folder: Path, annotator: str, port: int = 0, port_file: Path | None = None, order: Order = "file", judge: Any = None
) -> None:
    """Serve on 127.0.0.1 until cancelled; the bound port goes to `port_file` (the number alone) once accepting."""
    app = LabelApp(folder, annotator, order, judge).app()
    await serve_app(app, HOST, port, port_file, f"labelling {folder} as {annotator} on http://{{host}}:{{port}}/")
