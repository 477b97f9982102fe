"""The labelling app in headless Chromium (Debian's, over the DevTools protocol), used with the keyboard as a
labeller would: ten label keys typed in a burst land in order on the claims they were meant for, across
sessions; the server killed with SIGKILL in the middle of a burst and started again leaves the open tab going on
without a lost or doubled answer; a torn line is skipped, reported, and the next answer is a line of its own; a
page whose token went stale recovers by itself; undo, unsure, comments, the `?` overlay, the list page's keys and
the adjudication screen. Screenshots go to reports/labelling/."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from harness.corpus.labels import CLASSES, LabelLine, append_label, read_adjudicated, read_labels
from harness.corpus.session_import import import_sessions
from harness.corpus.sessions import load_imported
from tests.corpus.production import jsonl, rows
from tests.report.cdp import CDPError, Page, open_page
from tests.report.label_server import REPO, LabelServer, label_server

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.usefixtures("chromium")]
SHOTS = REPO / "reports" / "labelling"
KEYS = "1462353124"
"""Ten label keys, each a class (1-6)."""


async def settled(page: Page, expression: str, timeout: float = 60) -> object:
    """`expression` once it is truthy, across navigations."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            value = await page.evaluate(f"document.readyState === 'complete' && ({expression})")
            if value:
                return value
        except CDPError:
            pass  # the page was navigating
        if asyncio.get_running_loop().time() > deadline:
            raise CDPError(f"timed out waiting for {expression}")
        await asyncio.sleep(0.05)


async def press(page: Page, key: str) -> None:
    """One key as the keyboard sends it (keyDown with its text, keyUp)."""
    named = {"Enter": (13, "Enter", "\r"), "Escape": (27, "Escape", "")}
    if key in named:
        vk, code, text = named[key]
    else:
        vk, text = (ord(key.upper()) if key.isalnum() else 191), key
        code = f"Digit{key}" if key.isdigit() else (f"Key{key.upper()}" if key.isalpha() else "Slash")
    down = {"type": "keyDown", "key": key, "code": code, "windowsVirtualKeyCode": vk}
    await page.send("Input.dispatchKeyEvent", **down, **({"text": text} if text else {}))
    await page.send("Input.dispatchKeyEvent", type="keyUp", key=key, code=code, windowsVirtualKeyCode=vk)


SAVED = "document.body.dataset.unsaved === '0'"


def lines(folder: Path, who: str = "ann") -> list[dict[str, object]]:
    return [json.loads(x) for x in (folder / "labels" / f"{who}.jsonl").read_text().splitlines()]


def open_claims(folder: Path) -> list[tuple[str, str]]:
    """Every claim in the app's order of sessions: where keys typed from the first session go."""
    return [(c.id, k.claim_id) for c in load_imported(folder) for k in c.prepared().claims]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    report = import_sessions(str(jsonl(tmp_path / "s.jsonl", rows()[:8])), tmp_path / "imp")
    assert len(report.written) == 8
    return tmp_path / "imp"


async def burst_kill_torn(server: LabelServer, folder: Path, first: str) -> dict[str, object]:
    """Two bursts of ten keys (the second with a SIGKILL and restart in its middle), a torn line, a stale token."""
    out: dict[str, object] = {}
    async with open_page(f"{server.url}/case/{first}") as page:
        await settled(page, "document.querySelector('section.claim.current') !== null")
        for key in KEYS:  # a burst: no wait between keys but the key's own delivery
            await press(page, key)
        await settled(page, SAVED)
        out["burst"] = lines(folder)
        await page.evaluate("window.scrollTo(0, 0)")
        await page.screenshot(SHOTS / "label-case.png", width=1280, height=1000)

        for key in KEYS[:4]:
            await press(page, key)
        server.kill()  # mid-burst: the page keeps what the dead server did not acknowledge
        for key in KEYS[4:]:
            await press(page, key)
        await asyncio.sleep(0.5)  # the page retries against the dead port for a while
        out["unsaved_while_down"] = await page.evaluate("Number(document.body.dataset.unsaved)")
        server.start(server.port)  # the same address: the open tab goes on by itself
        await settled(page, SAVED)
        out["after_kill"] = lines(folder)
        out["status"] = await page.evaluate("document.getElementById('status').hidden")

        server.kill()
        path = folder / "labels" / "ann.jsonl"
        with path.open("a", encoding="utf-8") as fh:
            fh.write('{"case_id": "torn", "claim_id": "C1", "la')  # a write a crash cut off
        (folder / "labels" / ".token").unlink()  # and a new token: the tab's one is stale now
        server.start(server.port)
        await page.send("Page.reload")
        await settled(page, "document.querySelector('p.note.torn') !== null")
        out["torn_note"] = await page.evaluate("document.querySelector('p.note.torn').textContent")
        server.restart()  # the token stays what the reload gave the page
        await press(page, "j")
        current = await page.evaluate("document.querySelector('section.claim.current').dataset.claim")
        await press(page, "5")
        await settled(page, SAVED)
        out["after_torn"] = (await page.evaluate("location.pathname"), current)
        (folder / "labels" / ".token").unlink()
        server.restart()  # the page's token is stale: its answer is refused, it fetches the new one and resends
        await press(page, "k")
        await press(page, "3")
        await settled(page, SAVED)
    return out


def test_keys_typed_ahead_land_in_order_through_a_kill_and_a_torn_line(folder: Path, tmp_path: Path) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    order = open_claims(folder)
    with label_server(folder, "ann", tmp_path) as server:
        out = asyncio.run(burst_kill_torn(server, folder, order[0][0]))
    expected = [(c, k, CLASSES[int(key) - 1].value) for (c, k), key in zip(order, KEYS + KEYS, strict=False)]
    burst = out["burst"]
    assert [(x["case_id"], x["claim_id"], x["label"]) for x in burst] == expected[:10]  # type: ignore[union-attr]
    after_kill = out["after_kill"]
    got = [(x["case_id"], x["claim_id"], x["label"]) for x in after_kill]  # type: ignore[union-attr]
    assert got == expected  # nothing lost, nothing twice, in order, on the intended claims
    assert len({x["request"] for x in after_kill}) == 20  # type: ignore[union-attr]
    assert out["unsaved_while_down"] and out["status"] is True
    assert "cut off mid-write" in str(out["torn_note"]) and "ann.jsonl:21" in str(out["torn_note"])
    text = (folder / "labels" / "ann.jsonl").read_text()
    assert text.endswith("\n") and "torn" not in text
    assert (folder / "labels" / "ann.jsonl.torn").read_text() == '{"case_id": "torn", "claim_id": "C1", "la\n'
    final = lines(folder)
    assert len(final) == 22
    page_path, current = out["after_torn"]  # type: ignore[misc]
    assert (final[20]["claim_id"], final[20]["label"]) == (current, CLASSES[4].value)
    assert final[20]["case_id"] == page_path.rsplit("/", 1)[1]
    assert final[21]["label"] == CLASSES[2].value  # the answer sent with a stale token was resent and saved
    assert read_labels(folder)["ann"]  # every line reads again


async def team_features(server: LabelServer) -> dict[str, object]:
    out: dict[str, object] = {}
    async with open_page(f"{server.url}/") as page:
        await settled(page, "document.querySelector('h1') !== null && location.pathname === '/who'")
        await page.evaluate("document.querySelector('button[value=\"alice\"]').click()")
        await settled(page, "location.pathname === '/' && document.querySelector('tr.row.current') !== null")
        out["rows"] = await page.evaluate("document.querySelectorAll('tr.row').length")
        await press(page, "j")
        await press(page, "Enter")  # the second session of the list
        await settled(page, "document.querySelector('section.claim.current') !== null")
        out["opened"] = await page.evaluate("document.getElementById('case-id').textContent")
        await press(page, "2")  # the first claim; the second is highlighted next
        await press(page, "u")  # unsure about the second, before its label
        await press(page, "4")
        await press(page, "1")  # the third claim ...
        await press(page, "z")  # ... undone: open again, and highlighted
        await press(page, "c")
        await page.send("Input.insertText", text="the df output is from <another> host")
        await press(page, "Enter")
        await settled(page, SAVED)
        out["tools"] = await page.evaluate("document.querySelectorAll('#tools .call').length")
        await press(page, "t")
        out["tools_open"] = await page.evaluate("document.getElementById('tools').open")
        await press(page, "t")
        await press(page, "?")
        out["overlay"] = await page.evaluate("!document.getElementById('help').hidden")
        out["definitions"] = await page.evaluate("document.querySelectorAll('#help dt').length")
        await page.screenshot(SHOTS / "label-help-overlay.png", width=1280, height=900)
        await press(page, "Escape")
        out["overlay_closed"] = await page.evaluate("document.getElementById('help').hidden")
        opened = json.dumps(out["opened"])
        await press(page, "n")  # the next session, on the same page
        await settled(page, f"document.getElementById('case-id').textContent !== {opened}")
        out["next"] = await page.evaluate("document.getElementById('case-id').textContent")
        await press(page, "p")
        await settled(page, f"document.getElementById('case-id').textContent === {opened}")
        out["back"] = await page.evaluate("location.pathname")

        await page.send("Page.navigate", url=f"{server.url}/adjudicate")
        await settled(page, "document.querySelector('section.dispute') !== null")
        out["disputes"] = await page.evaluate("document.querySelectorAll('section.dispute').length")
        await page.screenshot(SHOTS / "label-adjudicate.png", width=1280, height=1000)
        await press(page, "6")  # settle the first dispute: a form post, the page comes back
        await settled(page, "document.querySelector('section.dispute.labelled') !== null")
        await page.send("Page.navigate", url=f"{server.url}/agreement")
        await settled(page, "document.getElementById('agreement-table') !== null")
        out["kappas"] = await page.evaluate(
            "Array.from(document.querySelectorAll('td.kappa')).map(td => td.textContent)"
        )
        await page.screenshot(SHOTS / "label-agreement.png", width=1280, height=700)
    return out


def test_a_team_server_with_undo_unsure_comments_help_adjudication_and_agreement(folder: Path, tmp_path: Path) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    imported = load_imported(folder)
    for c in imported[:3]:  # bob says "overstated" to everything; carol too, except "unsupported" on first claims
        for i, k in enumerate(c.prepared().claims):
            for who, value in (("bob", "overstated"), ("carol", "unsupported" if i == 0 else "overstated")):
                append_label(folder, LabelLine(case_id=c.id, claim_id=k.claim_id, label=value, annotator=who, at="t"))
    with label_server(folder, "", tmp_path, "--annotators", "alice,bob", "--overlap", "0.5") as server:
        out = asyncio.run(team_features(server))
    assert out["rows"] == 6  # half the 8 sessions shared, the other four dealt two each
    alice = [
        (x["claim_id"], x.get("label"), x.get("unsure", False), x.get("comment", "")) for x in lines(folder, "alice")
    ]
    opened = out["opened"]
    first, second, third = [k.claim_id for c in imported if c.id == opened for k in c.prepared().claims][:3]
    assert alice == [
        (first, "reasonable_inference", False, ""),
        (second, None, True, ""),
        (second, "unsupported", True, ""),
        (third, "direct_observation", False, ""),
        (third, None, False, ""),
        (third, None, False, "the df output is from <another> host"),
    ]
    assert out["tools"] and out["tools_open"] is True
    assert out["next"] != opened and out["back"] == f"/case/{opened}"
    assert out["overlay"] is True and out["definitions"] == 6 and out["overlay_closed"] is True
    assert out["disputes"] == 3 + 1  # bob and carol differ on three first claims; alice is unsure of one
    settled_claims = read_adjudicated(folder)
    assert list(settled_claims.values()) == ["contradicted"] and len(settled_claims) == 1
    adjudicated = (folder / "labels" / "adjudicated.jsonl").read_text().splitlines()
    assert set(json.loads(adjudicated[0])) == {"case_id", "claim_id", "label", "annotator", "at"}
    kappas = out["kappas"]
    assert "undefined: bob used one class (overstated), so agreement beyond chance cannot be measured" in kappas  # type: ignore[operator]
    assert "0.000 [0.000, 0.000]" not in kappas  # type: ignore[operator]
    for name in ("label-case.png", "label-help-overlay.png", "label-adjudicate.png", "label-agreement.png"):
        assert (SHOTS / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
