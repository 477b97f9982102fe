"""The labelling page in headless Chromium (Debian's, over the DevTools protocol): a person labels a session
with the keys 1-6, reloads and sees the labels; the server is killed with SIGKILL and restarted, and every
answer is still there. The page's screenshot is kept as reports/screenshots/label-case.png."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from harness.corpus.labels import CLASSES
from harness.corpus.session_import import import_sessions
from tests.corpus.production import jsonl, rows
from tests.report.cdp import CDPError, Page, open_page
from tests.report.label_server import REPO, label_server
from tests.report.test_browser import chromium  # noqa: F401 - the shared fixture

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("chromium")]
SCREENSHOT = REPO / "reports" / "screenshots" / "label-case.png"


async def settled(page: Page, expression: str, timeout: float = 30) -> object:
    """`expression` once it is truthy, across the navigations a form post makes."""
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
        await asyncio.sleep(0.1)


async def press(page: Page, key: str) -> None:
    code = f"Digit{key}" if key.isdigit() else f"Key{key.upper()}"
    vk = ord(key.upper())
    await page.send("Input.dispatchKeyEvent", type="keyDown", key=key, code=code, text=key, windowsVirtualKeyCode=vk)
    await page.send("Input.dispatchKeyEvent", type="keyUp", key=key, code=code, windowsVirtualKeyCode=vk)


LABELS_SHOWN = "JSON.stringify(Array.from(document.querySelectorAll('section.claim')).map(s => s.dataset.label))"


async def label_with_keys(url: str, keys: list[str], restart: object) -> tuple[list[str], list[str], list[str]]:
    async with open_page(url) as page:
        await settled(page, "document.querySelector('section.claim.current') !== null")
        for i, key in enumerate(keys):
            await press(page, key)
            value = CLASSES[int(key) - 1].value
            await settled(
                page, f"document.querySelectorAll('section.claim')[{i}].dataset.label === {json.dumps(value)}"
            )
        await page.send("Page.reload")
        await settled(page, "document.querySelectorAll('section.claim').length > 0")
        after_reload = json.loads(await page.evaluate(LABELS_SHOWN))
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        await page.evaluate(
            "document.querySelectorAll('section.claim').forEach(s => s.classList.remove('current'));"
            "document.querySelector('section.claim').classList.add('current'); window.scrollTo(0, 0)"
        )
        await page.screenshot(SCREENSHOT, width=1280, height=1000)
        new_url = restart()  # SIGKILL the server, start it again
        await page.send("Page.navigate", url=f"{new_url}/case/{url.rsplit('/', 1)[1]}")
        await settled(
            page,
            f"location.href.startsWith({json.dumps(new_url)}) && document.querySelectorAll('section.claim').length > 0",
        )
        after_kill = json.loads(await page.evaluate(LABELS_SHOWN))
        await press(page, "n")
        await settled(page, "!location.href.endsWith(" + json.dumps(url.rsplit("/", 1)[1]) + ")")
        moved = [await page.evaluate("document.getElementById('case-id').textContent")]
        return after_reload, after_kill, moved


def test_label_with_the_keyboard_reload_and_survive_a_kill(tmp_path: Path) -> None:
    report = import_sessions(str(jsonl(tmp_path / "s.jsonl", rows()[:2])), tmp_path / "imp")
    folder = tmp_path / "imp"
    case_id = sorted(report.written)[0]
    with label_server(folder, "ann", tmp_path) as server:
        page_html = (folder / f"{case_id}.yaml").read_text()
        assert "claims" in page_html
        from harness.corpus.sessions import read_imported

        n = len(read_imported(folder / f"{case_id}.yaml").prepared().claims)
        keys = [str(k) for k in [1, 4, 6, 2, 3, 5, 1, 1][:n]]

        def restart() -> str:
            server.kill()
            return server.start()

        after_reload, after_kill, moved = asyncio.run(label_with_keys(f"{server.url}/case/{case_id}", keys, restart))
    expected = [CLASSES[int(k) - 1].value for k in keys]
    assert after_reload == expected
    assert after_kill == expected
    lines = [json.loads(x) for x in (folder / "labels" / "ann.jsonl").read_text().splitlines()]
    assert [x["label"] for x in lines] == expected
    assert moved[0] != case_id  # n went on to the next session
    assert SCREENSHOT.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
