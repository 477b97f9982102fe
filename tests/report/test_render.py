"""The rendered page: self-contained, every piece of case or model text escaped, and the figures it states."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

from harness.report.casedata import REPLY_LIMIT, case_payload, clip, record_payload
from harness.report.figures import headline_chart, label
from harness.report.render import delta, figure, md
from harness.run.folder import read_results
from harness.score.outcome import VERDICT_WRONG
from harness.score.registry import metric
from harness.score.summary_model import ConformanceFailure
from tests.report.builders import HOSTILE_MODEL, QUESTION_XSS, REPLY_XSS, TOOL_XSS, as_dict, record
from tests.report.conftest import MODEL_REPLY_XSS, embedded


def all_strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from all_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from all_strings(v)


RAW_MARKUP = re.compile(r"<(script|img|iframe|svg|b)\b[^>]*(window\.__pwned|onerror|onmouseover)", re.IGNORECASE)


def test_vbench_run_writes_report_and_summary(reference_run: Path) -> None:
    """The page holds one row per record of the run (case, variant, epoch, verdict as written), and summary.md one
    table row per variant with its verdict accuracy as summary.json has it."""
    rows = embedded(reference_run / "report.html")["records"]
    written = read_results(reference_run)
    assert sorted((r["case"], r["variant"], r["epoch"], r["verdict"]) for r in rows) == sorted(
        (r.case_id, r.variant, r.epoch, r.verdict) for r in written
    )
    summary = json.loads((reference_run / "summary.json").read_text())
    markdown = (reference_run / "summary.md").read_text()
    for variant in summary["variants"]:
        row = next(line for line in markdown.splitlines() if line.startswith(f"| {variant['name']} |"))
        assert f"{variant['verdict_accuracy'] * 100:.1f}%" in row, row


def test_no_markup_from_cases_or_models_reaches_the_page_unescaped(llm_run: Path) -> None:
    html = (llm_run / "report.html").read_text(encoding="utf-8")
    assert not RAW_MARKUP.search(html), RAW_MARKUP.search(html)
    # the page's own script and the data block are the only script elements
    assert len(re.findall(r"<script\b", html)) == 2
    # the payloads are there, as data: tojson turned < > & ' into \u escapes
    strings = list(all_strings(embedded(llm_run / "report.html")))
    for payload in (QUESTION_XSS, TOOL_XSS, REPLY_XSS, MODEL_REPLY_XSS):
        assert any(payload in s for s in strings), payload
    assert "\\u003cscript\\u003e" in html and "<script>window" not in html
    # the variant name is markup: escaped in tables, options and the SVG charts
    assert "openai:&lt;img src=x onerror=window.__pwned=&#39;variant&#39;&gt;@baseline" in html


def test_the_page_asks_no_other_host_for_anything(llm_run: Path) -> None:
    html = (llm_run / "report.html").read_text(encoding="utf-8")
    assert not re.search(r"""(?:src|href|action|xlink:href)\s*=\s*["']?\s*(?:https?:)?//""", html, re.IGNORECASE)
    assert not re.search(r"@import|url\(\s*['\"]?(?:https?:)?//", html, re.IGNORECASE)
    assert "<link" not in html and "<iframe" not in html
    csp = unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1))
    assert "default-src 'none'" in csp and "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]
    script = html[html.rindex("<script>") + len("<script>") : html.rindex("</script>")]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"'sha256-{digest}'" in csp  # the page's own script is exactly what the policy allows


def test_the_api_key_never_reaches_the_report(llm_run: Path) -> None:
    for name in ("report.html", "summary.md"):
        assert "sk-report-test-key-never-shown" not in (llm_run / name).read_text(encoding="utf-8")


def test_the_page_states_the_run_and_its_figures(llm_run: Path) -> None:
    html = (llm_run / "report.html").read_text(encoding="utf-8")
    summary = json.loads((llm_run / "summary.json").read_text())
    manifest = json.loads((llm_run / "manifest.json").read_text())
    assert manifest["corpus_hash"] in html and manifest["git_sha"] in html
    for variant in manifest["variants"]:
        if variant["prompt_hash"]:
            assert variant["prompt_hash"] in html  # the full hash, in the sign-off
    ref = next(v for v in summary["variants"] if v["name"] == "reference")
    assert f"{100 * ref['verdict_accuracy']:.1f}%" in html
    low, high = ref["verdict_accuracy_ci"]
    assert f"[{100 * low:.1f}, {100 * high:.1f}]" in html
    assert html.count('<svg role="img"') >= 6  # headline, 2 confusion groups, per class, comparison, grounding ...
    assert "GPT-4" in html and "75.3" in html and "measured on other data" in html
    for section in ("overview", "ran", "metrics", "confusion", "per-class", "comparison", "breakdowns",
                    "stability", "operations", "grounding", "signoff", "cases"):  # fmt: skip
        assert f'<section id="{section}">' in html


def test_summary_md_has_headline_gates_and_conformance_with_markup_escaped(llm_run: Path) -> None:
    text = (llm_run / "summary.md").read_text(encoding="utf-8")
    summary = json.loads((llm_run / "summary.json").read_text())
    conf = summary["conformance"]
    assert f"{conf['policy_passed']}/{conf['policy_cases']} policy cases" in text
    assert "| variant | cases | errors | verdict acc" in text
    assert "**Gates:**" in text and "**policy\\_conformance** [all]" in text
    assert not re.search(r"(?<!\\)<", text)  # every < is escaped, so no renderer reads markup
    assert "openai:\\<img src=x onerror=window.\\_\\_pwned='variant'\\>@baseline" in text
    assert md("a|b <i>`x`</i>\nnext") == "a\\|b \\<i\\>\\`x\\`\\</i\\> next"


def test_chart_labels_are_escaped_and_never_mathtext() -> None:
    svg = headline_chart(
        [{"name": "<script>alert(1)</script> $x$", "verdict_accuracy": 0.5, "verdict_accuracy_ci": [0.4, 0.6]}]
    )
    assert "<script>" not in svg and "&lt;script&gt;alert(1)&lt;/script&gt;" in svg
    assert "$x$" in svg  # shown literally, not typeset
    assert label("a$b") == "a$b" and label("x" * 100, 10) == "x" * 9 + "…"
    assert "<?xml" not in svg and "<!--" not in svg


def test_record_payload_explains_a_failure_and_clips_long_text() -> None:
    rec = as_dict(
        record("c9", "v", 1, verdict="PASS", gold_verdict=["REJECT"], claims_got={"C1": "direct_observation"},
               gold_claims={"C1": ["contradicted"]}, raw_reply="x" * (REPLY_LIMIT + 5))
    )  # fmt: skip
    conformance = ConformanceFailure(
        case_id="c9", kind="quality", mismatches=["gatekeeper.status: expected fail, got pass"]
    )
    payload = record_payload(3, "r1", rec, VERDICT_WRONG, conformance, None)
    assert payload["ok"] is False and payload["cat"] == "verdict wrong"
    assert payload["why"] == [
        "conformance: gatekeeper.status: expected fail, got pass",
        'verdict: expected ["REJECT"], got PASS',
        'claims.C1: expected ["contradicted"], got direct_observation',
    ]
    assert payload["claims"][0] | {"refs": []} == {
        "id": "C1", "gold": ["contradicted"], "pred": "direct_observation", "ok": False, "critical": True, "detail": None, "refs": [],
    }  # fmt: skip
    assert payload["raw_reply"] == {"text": "x" * REPLY_LIMIT, "more": 5}
    assert clip(None, 3) == {"text": None, "more": 0}


def test_case_payload_reads_broken_structured_output_as_text() -> None:
    case = {
        "id": "c", "title": "t", "session": {"question": "q", "tool_invocations": [{"id": "i1", "tool_name": "t1", "result": "r"}]},
        "executor": {"final_answer": "a", "structured_output_raw": '{"claims": [{"claim_'},
    }  # fmt: skip
    payload = case_payload(case)
    assert payload["structured"]["text"] == '{"claims": [{"claim_'
    assert payload["claims"] == {}
    assert payload["tools"][0] == {
        "id": "i1",
        "tool": "t1",
        "status": "success",
        "args": "{}",
        "result": {"text": "r", "more": 0},
    }


def test_embedded_records_hold_what_the_drill_down_shows(llm_run: Path) -> None:
    data = embedded(llm_run / "report.html")
    hostile = [r for r in data["records"] if r["case"] == "xss-quality" and r["variant"].startswith("openai:")]
    assert hostile and MODEL_REPLY_XSS in hostile[0]["raw_reply"]["text"]
    case = data["cases"][f"{hostile[0]['run']}::xss-quality"]
    assert case["question"] == QUESTION_XSS and case["tools"][0]["result"]["text"] == TOOL_XSS
    policy = next(r for r in data["records"] if r["case"] == "xss-policy-raw-reply")
    assert policy["raw_reply"]["text"] == REPLY_XSS and policy["reply_status"] == "invalid"
    assert policy["variant"] == "policy" and policy["verdict"] == "LOW_CONFID"
    assert {r["variant"] for r in data["records"]} == {"policy", "reference", f"{HOSTILE_MODEL}@baseline"}


def test_a_summary_written_before_the_newer_figures_still_renders(llm_run: Path, tmp_path: Path) -> None:
    """A run folder scored by an older vbench (no decisions, Holm, MDE, consistency, calibration) still reports."""
    import shutil

    from harness.cli import main

    old = tmp_path / "old-run"
    shutil.copytree(llm_run, old)
    summary = json.loads((old / "summary.json").read_text())
    summary.pop("decisions", None)
    for v in summary["variants"]:
        for key in ("consistency", "calibration", "robustness"):
            v.pop(key, None)
    for c in summary["comparisons"]:
        for key in ("p_adjusted", "claim_accuracy_diff_p_adjusted", "mde", "unpaired_cases"):
            c.pop(key, None)
    (old / "summary.json").write_text(json.dumps(summary))
    assert main(["report", str(old)]) == 0
    html = (old / "report.html").read_text()
    assert 'id="calibration-table"' in html and 'id="comparison-table"' in html


def test_the_comparison_tables_name_the_level_their_pairs_were_decided_at(llm_run: Path, tmp_path: Path) -> None:
    import shutil

    from harness.cli import main

    run = tmp_path / "run"
    shutil.copytree(llm_run, run)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["comparisons"]
    for c in summary["comparisons"]:
        c["alpha"] = 0.01
    (run / "summary.json").write_text(json.dumps(summary))
    assert main(["report", str(run)]) == 0
    html, md = (run / "report.html").read_text(), (run / "summary.md").read_text()
    assert "verdict diff A−B [99% CI]" in html and "claim acc diff A−B [99% CI]" in html
    assert "verdict acc A−B [99% CI]" in md and "claim acc A−B [99% CI]" in md


def test_the_first_screen_links_the_certificate_and_the_sign_off_comes_second(reference_run: Path) -> None:
    html = (reference_run / "report.html").read_text(encoding="utf-8")
    cert = json.loads((reference_run / "certificate.json").read_text(encoding="utf-8"))
    assert (reference_run / "certificate.html").exists()
    overview = html[html.index('<section id="overview">') : html.index('<section id="signoff">')]
    assert 'id="certificate-link-1" href="certificate.html"' in overview
    assert cert["headline"] in overview and (cert["kit"]["git_sha"] or "unknown") in overview
    assert html.index('<section id="signoff">') < html.index('<section id="ran">')
    if cert["status"] == "failed":  # no green anywhere in the sign-off of a failed run
        signoff = html[html.index('<section id="signoff">') : html.index('<section id="ran">')]
        assert 'class="badge pass"' not in signoff and 'class="badge certified"' not in signoff


def test_a_failed_run_shows_no_green_in_its_sign_off(tmp_path: Path) -> None:
    from harness.cli import main

    root = Path(__file__).resolve().parents[2] / "cases" / "policy"
    cases = tmp_path / "cases"
    cases.mkdir()
    for name in (
        "gatekeeper/pol-fab-smart-errors-invented-invocation.yaml",
        "fact-check/pol-pass-oomkilled-checkout.yaml",
    ):
        text = (root / name).read_text(encoding="utf-8")
        if "fab-smart" in name:
            text = text.replace("\n  verdict: REJECT\n", "\n  verdict: PASS\n")  # a wrong expectation: this case fails
        (cases / Path(name).name).write_text(text, encoding="utf-8")
    assert main(["run", "--cases", str(cases), "--out", str(tmp_path / "run")]) == 1
    cert = json.loads((tmp_path / "run" / "certificate.json").read_text(encoding="utf-8"))
    assert cert["status"] == "failed" and cert["failed_cases"] == ["pol-fab-smart-errors-invented-invocation"]
    html = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    signoff = html[html.index('<section id="signoff">') : html.index('<section id="ran">')]
    assert "Not certified: 1 of 2 policy cases failed" in signoff
    assert 'class="badge pass"' not in signoff and 'class="badge certified"' not in signoff
    assert 'class="cert fail"' in signoff


def test_a_metric_is_shown_in_its_own_kind_percent_or_number() -> None:
    """The decision tables and breakdowns show a percent metric in % and points, any other as a plain number."""
    accuracy, kappa = metric("verdict_accuracy"), metric("cohen_kappa")
    assert figure(0.5, accuracy) == "50.0%" and figure(0.5, kappa) == "0.500" and figure(None, kappa) == "n/a"
    diff = {"diff": 0.123, "diff_ci": [0.0456, 0.2]}
    assert delta(diff, accuracy) == "+12.3 pp [+4.6, +20.0]"
    assert delta(diff, kappa) == "0.123 [0.046, 0.200]"
    assert delta({}, kappa) == "n/a "


def test_a_just_scored_run_reports_from_its_summary_in_memory(reference_run: Path, tmp_path: Path) -> None:
    """The entry `vbench run` calls after scoring: the summary it is handed is the one shown, summary.json is neither
    read nor written again (nothing is scored twice), and the log's results still fill the drill-down."""
    import shutil

    from harness.report.render import render_scored
    from harness.score.summary_model import Summary, read_summary_file

    run = tmp_path / "just-scored"
    shutil.copytree(reference_run, run)
    scored = read_summary_file(run)  # the scorer's typed summary, as it holds it in memory
    (run / "summary.json").unlink()
    marked = scored.to_json()
    ref = next(v for v in marked["variants"] if v["name"] == "reference")
    ref["verdict_accuracy"] = 0.4321  # a figure no scoring of this log gives
    report = render_scored(run, Summary.model_validate(marked), tmp_path / "out")
    html = report.read_text(encoding="utf-8")
    assert "43.2%" in html
    assert not (run / "summary.json").exists()  # not scored again: scoring writes it
    data = embedded(report)
    assert len(data["records"]) == marked["run"]["results"] and (tmp_path / "out" / "summary.md").exists()

    typed = render_scored(run, scored)  # into the run folder by default
    assert typed == run / "report.html" and f"{100 * scored.to_json()['variants'][0]['verdict_accuracy']:.1f}%" in typed.read_text(encoding="utf-8")  # fmt: skip
    assert not (run / "summary.json").exists()
