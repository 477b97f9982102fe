"""The report's estimate section (`vbench report --estimate`): each rate with its PPI++ interval beside the
human-only one, the labels it is worth and still needs, the notes, a biased design flagged; everything escaped;
no section without an estimate. In headless Chromium the section is shown under the page's CSP and kept as
reports/screenshots/estimate-report-section.png."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.report.estimate_view import estimate_section
from harness.score.estimate import Estimate, RateEstimate
from tests.report.cdp import open_page
from tests.report.label_server import REPO
from tests.report.test_browser import PNG

JUDGE = "runs/<script>window.__pwned=1</script>"
NOTE = 'labelled by <img src=x onerror="window.__pwned=1"> & co'
SHOT = REPO / "reports" / "screenshots" / "estimate-report-section.png"
BAR_36 = REPO / "reports" / "estimate" / "bar-36" / "estimate.json"


def estimate_file(path: Path, *, biased: bool = False) -> Path:
    """A small estimate.json written through its model, with markup in the judge's name and a note."""
    rates = [
        RateEstimate(name="verdict_accuracy", estimate=0.470588, ci=[0.261595, 0.690424], human_estimate=0.470588,
                     human_ci=[0.261595, 0.690424], lam=0.0, effective_labels=17.0, labels_needed=36,
                     labels_still_needed=19, label_all=True),
        RateEstimate(name="unsafe_pass_rate", estimate=0.117647, ci=[0.0, 0.318731], human_estimate=0.117647,
                     human_ci=[0.020338, 0.355905], lam=0.343539, effective_labels=18.2, labels_needed=300,
                     labels_still_needed=283),
        RateEstimate(name="claim_accuracy", estimate=0.568673, ci=[0.432761, 0.781527], human_estimate=None,
                     human_ci=None, lam=None, effective_labels=None, labels_needed=None, labels_still_needed=None,
                     strata=["db<x>", "net"]),
    ]  # fmt: skip
    design = "by disagreement (biased)" if biased else "uniformly at random (recorded)"
    report = Estimate(sessions=36, labelled=17, judge=JUDGE, alpha=0.05, half_width=0.02, design=design,
                      rates=rates, notes=[NOTE], biased=biased)  # fmt: skip
    path.write_text(report.model_dump_json(indent=2))
    return path


def section_of(html: str) -> str:
    start = html.index('<section id="estimate">')
    return html[start : html.index("</section>", start)]


def test_the_section_reads_estimate_json_through_its_model(tmp_path: Path) -> None:
    section = estimate_section(estimate_file(tmp_path / "estimate.json"))
    assert [r["title"] for r in section["rates"]] == ["verdict accuracy", "unsafe-PASS rate", "claim accuracy"]
    assert [r["still_text"] for r in section["rates"]] == ["19 (every session)", "283", "n/a (not reachable)"]
    assert [r["effective_text"] for r in section["rates"]] == ["17", "18", "n/a"]
    assert section["level"] == 95 and section["biased"] is False


def test_report_shows_the_section(reference_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    shutil.copytree(reference_run, run)
    path = estimate_file(tmp_path / "estimate.json")
    assert main(["report", str(run), "--estimate", str(path)]) == 0
    html = (run / "report.html").read_text()
    assert '<a href="#estimate">' in html
    section = section_of(html)
    rows = section[section.index('<table id="estimate-rates">') :]
    # each rate: PPI++ estimate [CI], human-only beside it, lambda, worth, still needed
    assert '47.1% <span class="ci">[26.2, 69.0]</span>' in rows
    assert '11.8% <span class="ci">[0.0, 31.9]</span>' in rows
    assert '11.8% <span class="ci">[2.0, 35.6]</span>' in rows
    assert '56.9% <span class="ci">[43.3, 78.2]</span>' in rows
    assert "0.34" in rows and "per stratum" in rows and "db&lt;x&gt;, net" in rows
    assert ">18<" in rows and ">19 (every session)<" in rows and ">283<" in rows and "n/a (not reachable)" in rows
    assert "±2 pp" in rows
    assert "17 of 36 sessions labelled" in section and "uniformly at random (recorded)" in section
    # markup from the file is text
    assert "runs/&lt;script&gt;window.__pwned=1&lt;/script&gt;" in section and "<script" not in section
    assert "labelled by &lt;img src=x onerror=&#34;window.__pwned=1&#34;&gt; &amp; co" in section
    assert "<img" not in section
    assert 'id="estimate-biased"' not in section
    # a biased design is flagged first
    biased = estimate_file(tmp_path / "biased.json", biased=True)
    assert main(["report", str(run), "--estimate", str(biased)]) == 0
    flagged = section_of((run / "report.html").read_text())
    assert flagged.index('id="estimate-biased"') < flagged.index('<table id="estimate-rates">')
    # without --estimate there is no section; a broken file is refused with its name
    assert main(["report", str(run)]) == 0
    plain = (run / "report.html").read_text()
    assert '<section id="estimate">' not in plain and '<a href="#estimate">' not in plain
    capsys.readouterr()
    (tmp_path / "bad.json").write_text('{"sessions": 3}')
    assert main(["report", str(run), "--estimate", str(tmp_path / "bad.json")]) == 2
    err = capsys.readouterr().err
    assert "bad.json: not a readable estimate.json" in err and "Traceback" not in err


@pytest.mark.browser
async def test_the_section_in_a_browser(chromium: str, reference_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(reference_run, run)
    path = estimate_file(tmp_path / "estimate.json", biased=True)
    assert main(["report", str(run), "--estimate", str(path)]) == 0
    async with open_page((run / "report.html").as_uri()) as page:
        await page.wait_for("document.body && document.body.dataset.ready === '1'")
        text = await page.evaluate("document.getElementById('estimate').innerText")
        assert JUDGE in text and NOTE in text and "Biased:" in text
        assert await page.evaluate("document.querySelectorAll('#estimate-rates tbody tr').length") == 3
        assert await page.evaluate("typeof window.__pwned") == "undefined"
        assert await page.evaluate("document.querySelectorAll('img, [onerror]').length") == 0
        assert page.exceptions == []
    # the picture: the 36-session example's estimate.json (reports/estimate/bar-36) as `vbench report` shows it
    assert main(["report", str(run), "--estimate", str(BAR_36)]) == 0
    async with open_page((run / "report.html").as_uri()) as page:
        await page.wait_for("document.body && document.body.dataset.ready === '1'")
        assert "17 of 36 sessions labelled" in await page.evaluate("document.getElementById('estimate').innerText")
        below_nav = "document.querySelector('nav') ? document.querySelector('nav').offsetHeight + 8 : 0"
        await page.evaluate(f"window.scrollTo(0, document.getElementById('estimate').offsetTop - ({below_nav}))")
        SHOT.parent.mkdir(parents=True, exist_ok=True)
        await page.screenshot(SHOT, width=1280, height=560)
        assert page.exceptions == []
    assert SHOT.read_bytes().startswith(PNG)
