"""The trend page: every point with its CI drawn in an inline SVG, alarms marked, everything from a repository
escaped, and a CSP that runs no script; rendered in headless Chromium."""

from __future__ import annotations

import asyncio
from pathlib import Path

from harness.history.alert import AlertSettings, detect
from harness.history.ops import Point
from harness.report.history_page import render_trend, write_trend
from tests.report.cdp import open_page

XSS = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>'


def points(n: int = 12, jump: int = 8) -> list[Point]:
    out = []
    for i in range(n):
        bad = 4 if i < jump else 40
        value = bad / 400
        point = Point(
            run=f"run-{i}", run_id=f"r{i}", recorded_at=f"2026-12-0{1 + i % 9}", commit=f"{i:040x}",
            branch=XSS if i == 3 else "main", variant=XSS if i == 5 else "m@p", value=value,
            ci=[max(0.0, value - 0.01), value + 0.01], bad=bad, units=400,
        )  # fmt: skip
        out.append(point)
    return out


def test_the_page_escapes_what_it_shows() -> None:
    pts = points()
    html = render_trend(pts, "unsafe_pass_rate", "<store>", detect([(p.bad, p.units) for p in pts], AlertSettings()))
    assert "<script>window" not in html and "<img src=x" not in html
    assert "&lt;script&gt;" in html and "&lt;store&gt;" in html
    assert "script-src" not in html and "default-src &#39;none&#39;" in html  # autoescaped in the attribute


def test_the_trend_page_in_chromium(chromium: str, tmp_path: Path) -> None:
    pts = points()
    alert = detect([(p.bad, p.units) for p in pts], AlertSettings())
    assert alert.first_alarm == 8
    page_path = write_trend(tmp_path / "trend.html", pts, "unsafe_pass_rate", "history/", alert)

    async def look() -> dict:
        async with open_page(page_path.as_uri()) as page:
            await page.wait_for("document.readyState === 'complete'")
            found = await page.evaluate(
                """({
                  pwned: window.__pwned === 1,
                  circles: document.querySelectorAll('#chart svg circle').length,
                  red: [...document.querySelectorAll('#chart svg circle')].filter(c => c.getAttribute('fill') === '#dc2626').length,
                  intervals: document.querySelectorAll('#chart svg line[stroke="#93c5fd"]').length,
                  rows: document.querySelectorAll('#points tbody tr').length,
                  alarmRows: document.querySelectorAll('#points tbody tr.alarm').length,
                  branch: document.querySelectorAll('#points tbody tr')[3].children[2].textContent,
                  alert: document.getElementById('alert').textContent,
                  width: document.querySelector('#chart svg').getBoundingClientRect().width,
                })"""
            )
            await page.screenshot(tmp_path / "trend.png", full_page=True)
            found["exceptions"] = page.exceptions
            return found

    seen = asyncio.run(look())
    assert not seen["pwned"] and not seen["exceptions"]
    assert seen["circles"] == 12 and seen["intervals"] == 12 and seen["rows"] == 12
    assert seen["red"] == seen["alarmRows"] == 4  # runs 9 to 12 alarm
    assert seen["branch"] == XSS  # shown as text
    assert "alarm from run 9" in seen["alert"] and seen["width"] > 500
    assert (tmp_path / "trend.png").stat().st_size > 10_000


def test_every_interval_is_inside_the_plot() -> None:
    import re

    from harness.report.history_page import BAND, chart

    wide = [p.model_copy(update={"ci": [0.0021, 0.1459]}) if i == 2 else p for i, p in enumerate(points())]
    svg = chart(wide, "unsafe_pass_rate", set())
    bands = re.findall(rf'<line x1="[^"]+" y1="([^"]+)" x2="[^"]+" y2="([^"]+)" stroke="{BAND}"', svg)
    assert len(bands) == 12
    assert all(40 <= float(y) <= 290 for pair in bands for y in pair)
