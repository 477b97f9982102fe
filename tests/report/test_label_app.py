"""The labelling app over real HTTP: escaping, the Content-Security-Policy, blind labels, answers saved at once,
forms from elsewhere refused."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from harness.corpus.session_import import import_sessions
from tests.corpus.production import jsonl, rows
from tests.report.label_server import label_server

QUESTION = "<script>alert('q')</script>Why is disk full?"
RESULT = "</pre><img src=x onerror=alert('r')>"
STATEMENT = '<b onmouseover="alert(1)">bold</b>'


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    data = rows()[:3]
    first = data[0]
    first["session"]["question"] = QUESTION
    first["session"]["tool_invocations"][0]["result"] += RESULT
    first["executor"]["structured_output"]["claims"][0]["statement"] = STATEMENT
    report = import_sessions(str(jsonl(tmp_path / "s.jsonl", data)), tmp_path / "imp")
    assert len(report.written) == 3
    return tmp_path / "imp"


def test_pages_escape_and_carry_a_strict_csp(folder: Path, tmp_path: Path) -> None:
    case_id = sorted(p.stem for p in folder.glob("*.yaml"))[0]
    with label_server(folder, "ann", tmp_path) as server:
        index = httpx.get(server.url + "/")
        page = httpx.get(f"{server.url}/case/{case_id}")
        js = httpx.get(server.url + "/static/label.js")
    for response in (index, page, js):
        csp = response.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp
    html = page.text
    assert "<script>alert" not in html and "&lt;script&gt;alert(&#39;q&#39;)&lt;/script&gt;" in html
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(&#39;r&#39;)&gt;" in html
    assert "<b onmouseover" not in html and "&lt;b onmouseover=" in html
    assert re.findall(r"<script[^>]*>", html) == ['<script src="/static/label.js" defer>']  # no inline script
    assert not re.search(r"\son[a-z]+=", html.replace("onerror=alert", "").replace("onmouseover=&#34;", ""))
    assert "http://" not in html and "https://" not in html  # no third-party asset


def test_an_answer_is_on_disk_before_the_page_moves_on(folder: Path, tmp_path: Path) -> None:
    case_id = sorted(p.stem for p in folder.glob("*.yaml"))[0]
    with label_server(folder, "ann", tmp_path) as server:
        page = httpx.get(f"{server.url}/case/{case_id}").text
        token = re.search(r'name="token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        form = {"token": token, "claim_id": "C1", "label": "overstated"}
        answer = httpx.post(f"{server.url}/case/{case_id}/label", data=form)
        assert answer.status_code == 303 and answer.headers["location"] == f"/case/{case_id}?after=C1"
        lines = (folder / "labels" / "ann.jsonl").read_text().splitlines()
        saved = json.loads(lines[-1])
        assert {k: saved[k] for k in ("case_id", "claim_id", "label", "annotator")} == {
            "case_id": case_id, "claim_id": "C1", "label": "overstated", "annotator": "ann"}  # fmt: skip
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", saved["at"])
        # another site's page has no token; a label outside the six classes and an unknown claim are refused
        assert httpx.post(f"{server.url}/case/{case_id}/label", data={**form, "token": "x"}).status_code == 403
        assert httpx.post(f"{server.url}/case/{case_id}/label", data={**form, "label": "maybe"}).status_code == 400
        assert httpx.post(f"{server.url}/case/{case_id}/label", data={**form, "claim_id": "C99"}).status_code == 404
        assert len((folder / "labels" / "ann.jsonl").read_text().splitlines()) == 1
        index = httpx.get(server.url + "/").text
        assert f'data-case="{case_id}">1 / ' in index


def test_the_production_answer_is_hidden_until_asked(folder: Path, tmp_path: Path) -> None:
    case_id = sorted(p.stem for p in folder.glob("*.yaml"))[0]
    with label_server(folder, "ann", tmp_path) as server:
        blind = httpx.get(f"{server.url}/case/{case_id}").text
        shown = httpx.get(f"{server.url}/case/{case_id}?show=production").text
    assert 'id="production"' not in blind and "reference/coverage" not in blind and "production:" not in blind
    assert 'id="production-verdict"' in shown and "production: <b" in shown
