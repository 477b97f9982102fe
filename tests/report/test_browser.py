"""The report in a real browser (Debian's chromium, headless, driven over the DevTools protocol).

The key elements are there, filtering by each control shows exactly the rows
the embedded data says, a click opens the drill-down, and markup from case
data, model replies and a model name is shown as text and never runs. The
overview screenshot is kept in the run folder as report-overview.png.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.corpus.catalogue import load_catalogue
from tests.report.builders import (
    HOSTILE_MODEL,
    QUESTION_XSS,
    REPLY_XSS,
    SPEC_MALFORMED,
    SPEC_PASS,
    STATEMENT_XSS,
    TOOL_XSS,
)
from tests.report.cdp import Page, open_page
from tests.report.conftest import MODEL_REPLY_XSS, embedded

pytestmark = pytest.mark.browser
VISIBLE = "document.querySelectorAll('#case-rows tr.row:not([hidden])').length"
PNG = b"\x89PNG\r\n\x1a\n"


def haystack(r: dict[str, Any], cases: dict[str, Any]) -> str:
    """What the page's text filter searches, computed from the same data."""
    case = cases.get(f"{r['run']}::{r['case']}") or {}
    reply = (r.get("raw_reply") or {}).get("text")
    parts = [
        r["case"],
        r.get("title"),
        r["variant"],
        case.get("question"),
        ", ".join(r["tags"]),
        ", ".join(r["spec"]),
        reply,
    ]
    return "\n".join("" if p is None else str(p) for p in parts).lower()


async def select(page: Page, control: str, value: str) -> int:
    await page.evaluate(
        f"(function(){{var s=document.getElementById('f-{control}'); s.value={_js(value)};"
        " s.dispatchEvent(new Event('change', {bubbles: true}));})()"
    )
    shown = await page.evaluate(VISIBLE)
    assert await page.evaluate("document.getElementById('case-count').textContent") == str(shown)
    return int(shown)


async def type_text(page: Page, text: str) -> int:
    await page.evaluate("(function(){var t=document.getElementById('f-text'); t.value=''; t.focus();})()")
    await page.send("Input.insertText", text=text)  # real typing: the input event fires as for a person
    await page.wait_for(f"document.getElementById('case-count').getAttribute('data-text') === {_js(text.lower())}")
    return int(await page.evaluate(VISIBLE))


async def click(page: Page, selector: str) -> None:
    """A real mouse click in the middle of the first element that matches."""
    box = await page.evaluate(
        f"(function(){{var e=document.querySelector({_js(selector)}); e.scrollIntoView({{block:'center'}});"
        " var r=e.getBoundingClientRect(); return [r.left + r.width/2, r.top + r.height/2];})()"
    )
    for kind in ("mousePressed", "mouseReleased"):
        await page.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)


def _js(value: str) -> str:
    import json

    return json.dumps(value)


async def test_report_in_a_browser(chromium: str, llm_run: Path) -> None:
    report = llm_run / "report.html"
    data = embedded(report)
    records, cases = data["records"], data["cases"]
    async with open_page(report.as_uri()) as page:
        await page.wait_for("document.body && document.body.dataset.ready === '1'")
        title = await page.evaluate("document.title")
        assert title == "verifier-bench · browser-run"

        # key elements
        assert await page.evaluate("document.getElementById('overall-status').textContent") in ("PASSED", "FAILED")
        assert await page.evaluate("document.querySelectorAll('#headline-table tbody tr').length") == 2
        assert await page.evaluate("document.querySelectorAll('#signoff-table tbody tr').length") == len(
            load_catalogue()
        )
        assert await page.evaluate("document.querySelectorAll('svg.chart').length") >= 6
        assert await page.evaluate("document.querySelectorAll('#gates-table tbody tr').length") >= 1
        assert await page.evaluate("document.getElementById('case-count').textContent") == str(len(records))
        assert await page.evaluate(VISIBLE) == len(records)
        await page.screenshot(llm_run / "report-overview.png")

        # filtering: each control, then two at once, then text typed into the search box
        hostile = f"{HOSTILE_MODEL}@baseline"
        assert await select(page, "variant", hostile) == sum(r["variant"] == hostile for r in records) > 0
        assert await select(page, "outcome", "wrong") == sum(r["variant"] == hostile and not r["ok"] for r in records)
        await select(page, "variant", "")
        assert await select(page, "outcome", "right") == sum(r["ok"] for r in records)
        await select(page, "outcome", "")
        assert await select(page, "kind", "policy") == sum(r["kind"] == "policy" for r in records) == 2
        await select(page, "kind", "")
        assert await select(page, "tag", "xss") == sum("xss" in r["tags"] for r in records) > 2
        await select(page, "tag", "")
        assert await select(page, "scenario", SPEC_MALFORMED) == sum(SPEC_MALFORMED in r["spec"] for r in records) == 1
        await select(page, "scenario", "")
        needle = "carts fail to load"
        assert await type_text(page, needle) == sum(needle in haystack(r, cases) for r in records) > 0
        await click(page, "#f-reset")
        assert await page.evaluate(VISIBLE) == len(records)

        # a link in the sign-off filters the case list to its scenario
        await click(page, f"#signoff-table a[data-filter='scenario'][data-value={_js(SPEC_PASS)}]")
        assert await page.evaluate("document.getElementById('f-scenario').value") == SPEC_PASS
        assert await page.evaluate(VISIBLE) == sum(SPEC_PASS in r["spec"] for r in records)

        # drill-down of the hostile case as the hostile model answered it: every payload shown as text
        await click(page, "#f-reset")
        assert await type_text(page, "xss-quality") > 0
        await select(page, "variant", hostile)
        await click(page, "#case-rows tr.row:not([hidden])")
        detail = await page.evaluate("document.querySelector('#case-rows tr.detail').innerText")
        for payload in (QUESTION_XSS, TOOL_XSS, MODEL_REPLY_XSS, STATEMENT_XSS):
            assert payload in detail, payload
        assert "Tool evidence" in detail and "Gatekeeper result" in detail and "Policy adjustments" in detail
        await page.evaluate("document.querySelector('#case-rows tr.row.open').scrollIntoView({block: 'start'})")
        await page.screenshot(llm_run / "report-drilldown.png")

        # the policy case whose scripted reply is markup
        await click(page, "#f-reset")
        await type_text(page, "xss-policy-raw-reply")
        await click(page, "#case-rows tr.row:not([hidden])")
        assert REPLY_XSS in await page.evaluate("document.querySelector('#case-rows tr.detail').innerText")

        # the model name is markup too: shown as text in tables, options and charts
        assert HOSTILE_MODEL in await page.evaluate("document.getElementById('variants-table').innerText")
        assert hostile in await page.evaluate(
            "[...document.getElementById('f-variant').options].map(o => o.text).join('|')"
        )
        assert HOSTILE_MODEL in await page.evaluate(
            "[...document.querySelectorAll('svg.chart text')].map(t => t.textContent).join('|')"
        )

        # nothing ran: no injected element exists, no handler fired, the title is the page's own
        assert await page.evaluate("typeof window.__pwned") == "undefined"
        assert await page.evaluate("document.title") == title
        assert await page.evaluate("document.querySelectorAll('img, iframe').length") == 0
        assert await page.evaluate("document.querySelectorAll('script').length") == 2
        assert await page.evaluate("document.querySelectorAll('[onerror],[onmouseover],[onload]').length") == 0
        assert page.exceptions == []
    png = (llm_run / "report-overview.png").read_bytes()
    assert png.startswith(PNG) and len(png) > 20_000


def test_vbench_report_screenshot(chromium: str, reference_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(reference_run, run)
    assert main(["report", str(run), "--screenshot"]) == 0
    png = (run / "report-overview.png").read_bytes()
    assert png.startswith(PNG) and len(png) > 20_000
