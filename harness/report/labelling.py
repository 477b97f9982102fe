"""`vbench label serve`: a small local web app for labelling imported sessions claim by claim.

Server-rendered pages, every value escaped by jinja2's autoescaping, a strict Content-Security-Policy without
'unsafe-inline', no third-party asset, bound to 127.0.0.1. The app's own script (`label.js`) adds the keys: each
key is resolved to its claim when pressed and queued, and the queue sends one answer at a time to `/api/answer`,
each carrying its case, claim and a request id, so keys typed ahead land in order on the claims they were meant
for, and an answer resent after a lost reply (a restarted server) is written once. Without the script the forms
post the same answers. An answer is acknowledged only once `corpus.labels.append_label` has fsynced it.

The token that proves a post came from this app's page is kept in the folder (`labels/.token`), so pages opened
before a restart keep working; a page whose token is stale fetches the current one and goes on.

One server serves several annotators: with `--annotator` it is one person's page; without, each browser says who
labels (a cookie), optionally from a roster that is given sessions by `label_view.assignment` with a shared
`--overlap` for agreement. `/agreement` shows kappa (`score.agreement`), `/adjudicate` settles disagreements into
`labels/adjudicated.jsonl`, the format `vbench label export` reads. The production verifier's answer is hidden
until the person asks for it, so the labels stay blind.
"""

from __future__ import annotations

import asyncio
import errno
import secrets
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from aiohttp import web
from jinja2 import Environment, PackageLoader, select_autoescape
from pydantic import ValidationError

from harness.corpus.durable import write_whole
from harness.corpus.labels import (
    ADJUDICATED,
    ANNOTATOR_PATTERN,
    CLASSES,
    LabelFileError,
    LabelLine,
    append_label,
    label_file,
    labels_dir,
    now,
    read_adjudicated,
    read_answers,
    torn_notes,
)
from harness.corpus.sessions import Imported, load_imported
from harness.report.label_view import assignment, case_view, claim_ids, current_claim, disputes
from harness.score.agreement import agreement_report, alpha_text, figure, kappa_text
from harness.score.label_order import Chooser, Order
from harness.system.models import Derivability
from harness.system.serve import serve_app

HOST = "127.0.0.1"
DEFAULT_PORT = 8765
"""The port `vbench label serve` takes unless told (the report's agreement section links to it)."""
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
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
CLASS_DEFINITIONS = {
    "direct_observation": "A cited tool result states the claim itself; reading it is enough.",
    "reasonable_inference": "The claim is not stated, but follows from the cited results by a step an engineer "
    "would take without hesitation.",
    "overstated": "The cited results support part of it, but the claim goes further: wider scope, more certainty, "
    "or a cause the results do not show.",
    "unsupported": "No cited result bears on the claim (it may be true, but nothing here shows it).",
    "external_unknown": "The claim is about something outside the session (other systems, history, intent) that "
    "no tool here could show.",
    "contradicted": "A cited result says otherwise.",
}
TOKEN_FILE = ".token"
COOKIE = "vbench_annotator"


def environment() -> Environment:
    return Environment(
        loader=PackageLoader("harness.report", "templates"),
        autoescape=select_autoescape(enabled_extensions=("html", "html.j2"), default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )


def folder_token(folder: Path) -> str:
    """The folder's form token, made once and kept in `labels/.token` (readable by its owner only), so a page
    opened before a restart still posts."""
    path = labels_dir(folder) / TOKEN_FILE
    if path.is_file() and (token := path.read_text(encoding="utf-8").strip()):
        return token
    token = secrets.token_urlsafe(24)
    write_whole(path, token)  # readable by its owner only
    return token


class LabelApp:
    """The app over one import folder: one annotator (`annotator`), or each browser's own (a roster optional).

    `order`: how the next session is offered (`score.label_order`); any order but the file's draws sessions and
    records each draw for one annotator, so it needs `annotator`.
    """

    def __init__(
        self,
        folder: Path,
        annotator: str | None,
        roster: list[str] | None = None,
        overlap: float = 0.0,
        seed: int = 0,
        order: Order = "file",
        judge: Any = None,
    ) -> None:
        if order != "file" and (annotator is None or roster):
            raise ValueError(
                f"--order {order} draws sessions for one annotator and records each draw: give --annotator NAME "
                "(and no --annotators roster)"
            )
        self.folder = folder
        self.annotator = annotator
        self.roster = roster or []
        self.cases: dict[str, Imported] = {c.id: c for c in load_imported(folder)}
        self.claims = {cid: claim_ids(c) for cid, c in self.cases.items()}
        self.order = list(self.cases)
        self.chooser = (
            Chooser(folder, annotator, list(self.cases.values()), order, judge)
            if order != "file" and annotator
            else None
        )
        if self.chooser is not None:
            self.order = self.chooser.sequence()
        self.assigned = assignment(self.order, self.roster, overlap, seed) if self.roster else {}
        self.shared = set.intersection(*(set(v) for v in self.assigned.values())) if len(self.assigned) > 1 else set()
        self.token = folder_token(folder)
        """Sent with every form and answer and checked: another site's page cannot post to this one."""
        self.env = environment()
        self.lock = asyncio.Lock()
        """One answer written at a time, so the request-id check and the append are one step."""

    # --- who is labelling ----------------------------------------------------------------

    def who(self, request: web.Request) -> str | None:
        if self.annotator is not None:
            return self.annotator
        name = request.cookies.get(COOKIE, "")
        return name if self._allowed(name) else None

    def _allowed(self, name: str) -> bool:
        if self.annotator is not None:
            return name == self.annotator
        if not ANNOTATOR_PATTERN.match(name) or name == ADJUDICATED:
            return False
        return name in self.roster if self.roster else True

    def _mine(self, name: str) -> list[str]:
        """The sessions `name` labels, in the app's order."""
        return self.assigned.get(name, self.order) if self.roster else self.order

    def _answers(self, name: str) -> dict[tuple[str, str], LabelLine]:
        return read_answers(label_file(self.folder, name)).latest

    # --- pages ---------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(middlewares=[_headers], client_max_size=64 * 1024)
        app.router.add_get("/", self.index)
        app.router.add_get("/who", self.who_page)
        app.router.add_post("/who", self.who_post)
        app.router.add_get("/case/{case_id}", self.case)
        app.router.add_post("/case/{case_id}/label", self.label)
        app.router.add_post("/api/answer", self.answer)
        app.router.add_get("/agreement", self.agreement)
        app.router.add_get("/adjudicate", self.adjudicate)
        app.router.add_post("/adjudicate", self.adjudicate_post)
        app.router.add_get("/static/{name}", self.static)
        return app

    def _html(self, template: str, annotator: str | None, **context: Any) -> web.Response:
        body = self.env.get_template(template).render(
            annotator=annotator,
            token=self.token,
            many=self.annotator is None,
            torn=torn_notes(self.folder),
            definitions=[(i + 1, c.value, CLASS_DEFINITIONS[c.value]) for i, c in enumerate(CLASSES)],
            **context,
        )
        return web.Response(text=body, content_type="text/html", charset="utf-8")

    def _signed_in(self, request: web.Request) -> str:
        name = self.who(request)
        if name is None:
            raise web.HTTPSeeOther("/who?" + urlencode({"then": request.path_qs}))
        return name

    async def who_page(self, request: web.Request) -> web.Response:
        return self._html("label_who.html.j2", self.who(request), roster=self.roster, then=_local(request.query))

    async def who_post(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        self._check_token(str(form.get("token", "")))
        name = str(form.get("annotator", "")).strip()
        if not self._allowed(name):
            allowed = f"one of {', '.join(self.roster)}" if self.roster else "1-64 characters of A-Z a-z 0-9 . _ -"
            raise web.HTTPBadRequest(text=f"annotator {name!r}: use {allowed} (not {ADJUDICATED!r})")
        response = web.HTTPSeeOther(_local(form))
        response.set_cookie(COOKIE, name, httponly=True, samesite="Strict", max_age=365 * 24 * 3600)
        raise response

    async def index(self, request: web.Request) -> web.Response:
        name = self._signed_in(request)
        labels = self._answers(name)
        mine = self._mine(name)
        rows: list[dict[str, Any]] = [
            {
                "id": cid,
                "title": self.cases[cid].title,
                "done": sum(1 for k in self.claims[cid] if _labelled(labels, cid, k)),
                "total": len(self.claims[cid]),
                "shared": cid in self.shared,
            }
            for cid in mine
        ]
        done, total = sum(r["done"] for r in rows), sum(r["total"] for r in rows)
        return self._html(
            "label_index.html.j2",
            name,
            rows=rows,
            done=done,
            total=total,
            first=self._next_open(name, labels, None),
            assigned=bool(self.roster),
            sessions=len(self.order),
        )

    async def case(self, request: web.Request) -> web.Response:
        name = self._signed_in(request)
        case_id = request.match_info["case_id"]
        if case_id not in self.cases:
            raise web.HTTPNotFound(text=f"no case {case_id!r} in this folder")
        labels = self._answers(name)
        view = case_view(self.cases[case_id], labels)
        show = request.query.get("show") == "production"
        mine = self._mine(name)
        seq = mine if case_id in mine else self.order
        at = seq.index(case_id)
        following = self._next_open(name, labels, case_id, wrap=False)
        return self._html(
            "label_case.html.j2",
            name,
            case=view,
            current=current_claim(view, request.query.get("after")),
            classes=[(i + 1, c.value, CLASS_HELP[c.value]) for i, c in enumerate(CLASSES)],
            show=show,
            position=at + 1,
            count=len(seq),
            prev=self._link(seq[at - 1], show) if at > 0 else None,
            next=self._link(seq[at + 1], show) if at + 1 < len(seq) else None,
            skip=self._link(nxt, show) if (nxt := self._next_open(name, labels, case_id)) else None,
            following=self._link(following, show) if following else "",
            toggle=self._link(case_id, not show),
        )

    # --- answers -------------------------------------------------------------------------

    def _check_token(self, given: str) -> None:
        if not secrets.compare_digest(given.encode(), self.token.encode()):
            raise web.HTTPForbidden(
                text="this form did not come from this labelling page (or from before its folder's token changed): "
                "reload the page and answer again"
            )

    async def _write(self, line: LabelLine) -> bool:
        """Append `line` unless its request id is already in the file (a resent answer); True when written. Returns
        only once the line is on disk."""
        async with self.lock:
            path = label_file(self.folder, line.annotator)
            if line.request and line.request in read_answers(path).requests:
                return False
            await asyncio.to_thread(append_label, self.folder, line)
            return True

    def _line(self, name: str, data: dict[str, Any]) -> LabelLine:
        """The answer in a form or JSON body as a line; 404 for an unknown case or claim, 400 for a bad value."""
        case_id, claim_id = str(data.get("case_id", "")), str(data.get("claim_id", ""))
        if case_id not in self.cases or claim_id not in self.claims[case_id]:
            raise web.HTTPNotFound(text="no such case or claim")
        label = data.get("label") or None
        if label is not None and label not in {c.value for c in CLASSES}:
            raise web.HTTPBadRequest(text=f"label must be one of {[c.value for c in CLASSES]}")
        try:
            return LabelLine(
                case_id=case_id,
                claim_id=claim_id,
                label=Derivability(label) if label else None,
                annotator=name,
                at=now(),
                unsure=data.get("unsure") in (True, "1", "on", "true"),
                comment=str(data.get("comment") or ""),
                request=data.get("request") or None,
                drawn=self.chooser.drawn_for(case_id) if self.chooser is not None and name == self.annotator else None,
            )
        except ValidationError as exc:
            raise web.HTTPBadRequest(text=f"not an answer: {exc.errors()[0]['msg']}") from None

    async def label(self, request: web.Request) -> web.StreamResponse:
        """The form post (the page without its script): write, then show the next open claim or session."""
        name = self._signed_in(request)
        case_id = request.match_info["case_id"]
        form = await request.post()
        self._check_token(str(form.get("token", "")))
        if "label" not in form:  # a comment or unsure change keeps the label
            given = self._answers(name).get((case_id, str(form.get("claim_id", ""))))
            form = {**form, "label": given.label.value if given and given.label else ""}  # type: ignore[assignment]
        line = self._line(name, {**form, "case_id": case_id})
        await self._write(line)
        show = {"show": "production"} if form.get("show") == "production" else {}
        labels = self._answers(name)
        if all(_labelled(labels, case_id, k) for k in self.claims[case_id]) and "label" in form and form["label"]:
            if nxt := self._next_open(name, labels, case_id, wrap=False):
                raise web.HTTPSeeOther(f"/case/{quote(nxt)}" + (f"?{urlencode(show)}" if show else ""))
        raise web.HTTPSeeOther(f"/case/{quote(case_id)}?{urlencode({'after': line.claim_id} | show)}")

    async def answer(self, request: web.Request) -> web.Response:
        """One answer from the page's queue, as JSON: 200 once it is on disk (or was already), with the case's
        progress; 403 with `reload` when the page's token is stale; 409 when its annotator is not this page's."""
        if not secrets.compare_digest(request.headers.get("X-Label-Token", "").encode(), self.token.encode()):
            return web.json_response({"error": "stale token", "reload": True}, status=403)
        try:
            data = await request.json()
        except ValueError:
            return web.json_response({"error": "not JSON"}, status=400)
        if not isinstance(data, dict):
            return web.json_response({"error": "not a JSON object"}, status=400)
        name = str(data.get("annotator", ""))
        if not self._allowed(name):
            return web.json_response({"error": f"annotator {name!r} does not label here"}, status=409)
        try:
            line = self._line(name, data)
        except web.HTTPException as exc:
            return web.json_response({"error": exc.text}, status=exc.status)
        written = await self._write(line)
        labels = self._answers(name)
        done = sum(1 for k in self.claims[line.case_id] if _labelled(labels, line.case_id, k))
        return web.json_response({"written": written, "done": done, "total": len(self.claims[line.case_id])})

    # --- agreement and adjudication --------------------------------------------------------

    async def agreement(self, request: web.Request) -> web.Response:
        name = self.who(request)
        try:
            report = await asyncio.to_thread(agreement_report, self.folder)
        except ValueError as exc:
            return self._html("label_agreement.html.j2", name, problem=str(exc), rows=[], alpha="", report=None)
        rows = [(f"{p['a']} · {p['b']}", "claims", p["claims"], kappa_text(p), figure(p["percent_agreement"]))
                for p in report.pairs]  # fmt: skip
        rows += [(f"{v['annotator']} · production verifier", "claims", v["claims"], kappa_text(v),
                  figure(v["percent_agreement"])) for v in report.vs_verifier]  # fmt: skip
        rows += [(f"{p['a']} · {p['b']}", "verdicts", p["cases"], kappa_text(p), figure(p["percent_agreement"]))
                 for p in report.verdicts["pairs"]]  # fmt: skip
        rows += [(f"{v['annotator']} · production verifier", "verdicts", v["cases"], kappa_text(v),
                  figure(v["percent_agreement"])) for v in report.verdicts["vs_verifier"]]  # fmt: skip
        return self._html(
            "label_agreement.html.j2", name, rows=rows, alpha=alpha_text(report.krippendorff_alpha), report=report,
            problem=None, shared=len(self.shared), roster=self.roster,
        )  # fmt: skip

    async def adjudicate(self, request: web.Request) -> web.Response:
        name = self.who(request)
        try:
            by_annotator = {
                p.stem: read_answers(p).latest
                for p in sorted(labels_dir(self.folder).glob("*.jsonl"))
                if p.stem != ADJUDICATED
            }
            settled = read_adjudicated(self.folder)
        except LabelFileError as exc:
            raise web.HTTPInternalServerError(text=str(exc)) from None
        found = disputes(self.cases, by_annotator, settled)
        classes = [(i + 1, c.value, CLASS_HELP[c.value]) for i, c in enumerate(CLASSES)]
        return self._html(
            "label_adjudicate.html.j2",
            name,
            disputes=found,
            classes=classes,
            open=sum(1 for d in found if not d.adjudicated),
        )

    async def adjudicate_post(self, request: web.Request) -> web.StreamResponse:
        """One settled claim: a line of `labels/adjudicated.jsonl`, as `vbench label export` reads it."""
        form = await request.post()
        self._check_token(str(form.get("token", "")))
        line = self._line(ADJUDICATED, dict(form))
        await self._write(line)
        raise web.HTTPSeeOther(f"/adjudicate#d-{quote(line.case_id)}-{quote(line.claim_id)}")

    async def static(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in STATIC:
            raise web.HTTPNotFound()
        body = resources.files("harness.report").joinpath("templates", name).read_text(encoding="utf-8")
        return web.Response(text=body, content_type=STATIC[name], charset="utf-8")

    def _link(self, case_id: str, show: bool) -> str:
        return f"/case/{quote(case_id)}" + ("?show=production" if show else "")

    def _next_open(
        self, name: str, labels: dict[tuple[str, str], LabelLine], after: str | None, wrap: bool = True
    ) -> str | None:
        """The next of `name`'s sessions (after `after`, wrapping unless told not to) with a claim they have not
        labelled; with a drawn order, the next one the order offers (a new draw when none is open)."""
        if self.chooser is not None:
            is_open = {cid: any(not _labelled(labels, cid, k) for k in ks) for cid, ks in self.claims.items()}
            found = self.chooser.next_open(is_open, after)
            self.order = self.chooser.sequence()
            return found
        mine = self._mine(name)
        start = mine.index(after) + 1 if after in mine else 0
        for cid in mine[start:] + (mine[:start] if wrap else []):
            if cid != after and any(not _labelled(labels, cid, k) for k in self.claims[cid]):
                return cid
        return None


def _labelled(labels: dict[tuple[str, str], LabelLine], case_id: str, claim_id: str) -> bool:
    line = labels.get((case_id, claim_id))
    return line is not None and line.label is not None


def _local(query: Any) -> str:
    """A same-site path to go back to after signing in (anything else goes to the list)."""
    then = str(query.get("then", "/"))
    return then if then.startswith("/") and not then.startswith(("//", "/\\")) and "\n" not in then else "/"


@web.middleware
async def _headers(request: web.Request, handler: Any) -> web.StreamResponse:
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        response = exc
    except LabelFileError as exc:  # a damaged label file: say which line, on the page and to the queue
        response = web.json_response({"error": str(exc)}, status=500) if request.path.startswith("/api/") else (
            web.HTTPInternalServerError(text=str(exc)))  # fmt: skip
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    if isinstance(response, web.HTTPException) and response.status >= 400:
        raise response
    return response


def port_in_use(exc: OSError, port: int) -> str | None:
    """The one-line message for a port another process holds, or None for any other error."""
    if exc.errno in (errno.EADDRINUSE, errno.EACCES):
        why = "is in use" if exc.errno == errno.EADDRINUSE else "is not allowed"
        return f"port {port} on {HOST} {why} (another `vbench label serve`?): pass --port N, or --port 0 for a free one"
    return None


async def serve(
    folder: Path,
    annotator: str | None,
    port: int = 0,
    port_file: Path | None = None,
    roster: list[str] | None = None,
    overlap: float = 0.0,
    order: Order = "file",
    judge: Any = None,
) -> None:
    """Serve on 127.0.0.1 until cancelled; the bound port goes to `port_file` (the number alone) once accepting.
    A port that cannot be bound is a ValueError with one line saying so."""
    app = LabelApp(folder, annotator, roster, overlap, order=order, judge=judge).app()
    who = f"as {annotator}" if annotator else (f"for {', '.join(roster)}" if roster else "for any annotator")
    try:
        await serve_app(app, HOST, port, port_file, f"labelling {folder} {who} on http://{{host}}:{{port}}/")
    except OSError as exc:
        if (message := port_in_use(exc, port)) is None:
            raise
        raise ValueError(message) from None
