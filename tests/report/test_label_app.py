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


def _page_token(html: str) -> str:
    return re.search(r'name="token" value="([^"]+)"', html).group(1)  # type: ignore[union-attr]


def test_an_answer_resent_with_its_request_id_is_written_once_and_the_token_outlives_a_restart(
    folder: Path, tmp_path: Path
) -> None:
    case_id = sorted(p.stem for p in folder.glob("*.yaml"))[0]
    with label_server(folder, "ann", tmp_path) as server:
        token = _page_token(httpx.get(f"{server.url}/case/{case_id}").text)
        body = {"case_id": case_id, "claim_id": "C1", "label": "overstated", "annotator": "ann",
                "request": "req-0123456789ab"}  # fmt: skip
        first = httpx.post(f"{server.url}/api/answer", json=body, headers={"X-Label-Token": token})
        again = httpx.post(f"{server.url}/api/answer", json=body, headers={"X-Label-Token": token})
        assert first.status_code == again.status_code == 200
        assert first.json()["written"] is True and again.json()["written"] is False and again.json()["done"] == 1
        server.restart()
        assert _page_token(httpx.get(f"{server.url}/case/{case_id}").text) == token  # an open tab's token still holds
        again = httpx.post(f"{server.url}/api/answer", json=body, headers={"X-Label-Token": token})
        assert again.status_code == 200 and again.json()["written"] is False
        stale = httpx.post(f"{server.url}/api/answer", json=body, headers={"X-Label-Token": "old"})
        assert stale.status_code == 403 and stale.json()["reload"] is True
        other = httpx.post(
            f"{server.url}/api/answer", json={**body, "annotator": "bob"}, headers={"X-Label-Token": token}
        )
        assert other.status_code == 409
        bad = httpx.post(f"{server.url}/api/answer", json={**body, "request": "x"}, headers={"X-Label-Token": token})
        assert bad.status_code == 400
    assert len((folder / "labels" / "ann.jsonl").read_text().splitlines()) == 1
    assert (folder / "labels" / ".token").stat().st_mode & 0o077 == 0


def test_the_last_claim_moves_on_and_no_key_relabels_it(folder: Path, tmp_path: Path) -> None:
    from harness.corpus.sessions import load_imported

    cases = load_imported(folder)
    first, second = cases[0], cases[1]
    ids = [c.claim_id for c in first.prepared().claims]
    with label_server(folder, "ann", tmp_path) as server:
        token = _page_token(httpx.get(f"{server.url}/case/{first.id}").text)
        for claim_id in ids:
            answer = httpx.post(f"{server.url}/case/{first.id}/label",
                                data={"token": token, "claim_id": claim_id, "label": "unsupported"})  # fmt: skip
        assert answer.status_code == 303 and answer.headers["location"] == f"/case/{second.id}"
        page = httpx.get(f"{server.url}/case/{first.id}?after={ids[-1]}").text
        assert 'section class="claim current' not in page and 'id="case-finished" class="finished">' in page
        assert f'data-following="/case/{second.id}"' in page


def test_the_page_shows_every_tool_call_uncited_ones_too(folder: Path, tmp_path: Path) -> None:
    from harness.corpus.sessions import load_imported

    case = load_imported(folder)[0]
    with label_server(folder, "ann", tmp_path) as server:
        page = httpx.get(f"{server.url}/case/{case.id}").text
    for inv in case.session.tool_invocations:
        assert f'id="call-{inv.id}"' in page
    assert page.count('class="call') == len(case.session.tool_invocations)
    assert RESULT not in page  # the whole result is escaped there too


def test_a_busy_port_is_one_line_and_exit_2(folder: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.report.label_server import REPO

    with label_server(folder, "ann", tmp_path) as server:
        cmd = [sys.executable, "-m", "harness.cli", "label", "serve", str(folder), "--annotator", "bob",
               "--port", str(server.port)]  # fmt: skip
        done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: port {server.port} on 127.0.0.1 is in use (another `vbench label serve`?): pass --port N, "
        "or --port 0 for a free one"
    ]


def test_several_annotators_sign_in_and_each_sees_their_share(folder: Path, tmp_path: Path) -> None:
    with label_server(folder, "", tmp_path, "--annotators", "alice,bob", "--overlap", "0.34") as server:
        first = httpx.get(server.url + "/")
        assert first.status_code == 303 and first.headers["location"].startswith("/who")
        token = _page_token(httpx.get(server.url + "/who").text)
        refused = httpx.post(server.url + "/who", data={"token": token, "annotator": "mallory"})
        assert refused.status_code == 400
        for elsewhere in ("//evil.example/", "/\\evil.example/", "https://evil.example/"):
            away = httpx.post(server.url + "/who", data={"token": token, "annotator": "bob", "then": elsewhere})
            assert away.headers["location"] == "/"
        seen = {}
        for name in ("alice", "bob"):
            signed = httpx.post(server.url + "/who", data={"token": token, "annotator": name, "then": "/"})
            assert signed.status_code == 303 and "samesite=strict" in signed.headers["set-cookie"].lower()
            index = httpx.get(server.url + "/", cookies={"vbench_annotator": name}).text
            seen[name] = set(re.findall(r'data-case="([^"]+)"', index))
    assert len(seen["alice"] & seen["bob"]) == 1 and len(seen["alice"] | seen["bob"]) == 3


def test_a_damaged_label_file_is_named_and_a_strange_token_is_refused(folder: Path, tmp_path: Path) -> None:
    case_id = sorted(p.stem for p in folder.glob("*.yaml"))[0]
    with label_server(folder, "ann", tmp_path) as server:
        token = _page_token(httpx.get(f"{server.url}/case/{case_id}").text)
        weird = httpx.post(f"{server.url}/case/{case_id}/label",
                           data={"token": "tökén", "claim_id": "C1", "label": "overstated"})  # fmt: skip
        assert weird.status_code == 403
        body = {"case_id": case_id, "claim_id": "C1", "label": "overstated", "annotator": "ann"}
        assert httpx.post(f"{server.url}/api/answer", json=body, headers={"X-Label-Token": token}).status_code == 200
        path = folder / "labels" / "ann.jsonl"
        path.write_text("not json\n" + path.read_text())  # a damaged line in the middle: not a torn tail
        page = httpx.get(f"{server.url}/case/{case_id}")
        assert page.status_code == 500 and f"{path}:1: not a label line" in page.text
        api = httpx.post(f"{server.url}/api/answer", json=body, headers={"X-Label-Token": token})
        assert api.status_code == 500 and f"{path}:1: not a label line" in api.json()["error"]
