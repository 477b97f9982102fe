"""`vbench run` ship decisions end to end: a scripted model behind the local server answers by prompt.

21 quality cases (7 hand-computed cases, 3 copies each). The plain prompt gets every case right; the
lenient prompt says PASS with every claim observed, so it is wrong on the 12 copies of q2, q4, q5, q6.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from statistics import NormalDist
from xml.etree import ElementTree as ET

import pytest

from harness.cli import main
from harness.devtools.local_server import LocalOpenAIServer
from tests.run.prompt_models import LENIENT_LINE, OFF_BY_ONE_LINE, prompt_dir, prompt_following_responder, write_copies

MODEL = "openai:local-model"
CONTROL = f"{MODEL}@baseline"
WRONG = sorted(f"{q}-{k}" for q in ("q2", "q4", "q5", "q6") for k in (1, 2, 3))


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-decision-key")
    with LocalOpenAIServer(prompt_following_responder) as srv:
        yield srv


def run(server: LocalOpenAIServer, corpus: Path, out: Path, *extra: str, report: bool = False) -> int:
    args = ["run", "--cases", str(corpus), "--model", MODEL, "--base-url", server.base_url, "--out", str(out)]
    return main([*args, "--no-cache", *([] if report else ["--no-report"]), *extra])


def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def test_a_worse_prompt_is_blocked_with_hand_computed_figures(
    tmp_path: Path, server: LocalOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_copies(tmp_path / "cases")
    lenient = prompt_dir(tmp_path, "lenient", LENIENT_LINE)
    out = tmp_path / "run"
    args = ("--prompt", "baseline", "--prompt", str(lenient), "--control", "@baseline")
    assert run(server, corpus, out, *args, report=True) == 1
    s = summary(out)
    assert [v["name"] for v in s["variants"]] == [CONTROL, f"{MODEL}@lenient"]
    (d,) = s["decisions"]
    assert (d["candidate"], d["control"], d["decision"]) == (f"{MODEL}@lenient", CONTROL, "block")
    assert (d["paired_cases"], d["unpaired_cases"]) == (21, 0)
    v, u, c = (d["metrics"][m] for m in ("verdict_accuracy", "unsafe_pass_rate", "claim_accuracy"))
    assert (v["control"], v["candidate"]) == (1.0, pytest.approx(9 / 21)) and v["diff"] == pytest.approx(-12 / 21)
    assert v["p"] == pytest.approx(2 * 0.5**12)  # exact McNemar: 12 discordant pairs, all the control's
    assert (u["control"], u["candidate"], u["p"]) == (0.0, 1.0, pytest.approx(2 * 0.5**12))  # 12 eligible units
    assert (c["control"], c["candidate"]) == (1.0, pytest.approx(27 / 42))
    assert v["diff_ci"][1] < 0 and 0 < d["mde"] < 0.5 and d["margin"] == 0.05
    assert d["regressed_cases"] == WRONG
    assert d["changed"]["prompt"] == {"control": "baseline", "candidate": "lenient"}
    assert d["changed"]["prompt_path"]["candidate"] == str(lenient)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["prompts"]["lenient"]["path"] == str(lenient)
    printed = capsys.readouterr().out
    assert f"BLOCK {MODEL}@lenient against {CONTROL}: verdict_accuracy: significantly worse" in printed
    assert "regressed cases (12): q2-1, q2-2, q2-3, q4-1, q4-2 … and 7 more" in printed
    md = (out / "summary.md").read_text()
    table_at, regressions_at, headline_at = (
        md.index("| candidate | control |"),
        md.index("12 regressed cases"),
        md.index("| variant | cases |"),
    )
    assert table_at < regressions_at < headline_at  # the decision first, then the regressions, then the rest
    assert "| openai:local-model@lenient | openai:local-model@baseline | -57.1 pp [" in md and "❌ block" in md
    assert (
        "`q2-1` epoch 1: control REJECT \\(right\\), candidate PASS \\(wrong\\); C2: contradicted -\\> direct\\_observation"
        in md
    )
    html = (out / "report.html").read_text()
    assert 'id="decisions-table"' in html and 'id="regressions"' in html and "-57.1 pp" in html
    regressions = html[html.index('id="regressions"') : html.index('id="ran"')]
    assert regressions.count('data-filter="text" data-value="q') == 12
    junit = ET.parse(out / "junit.xml").getroot()
    failing = [t.get("name") for t in junit.iter("testcase") if t.find("failure") is not None]
    assert [n for n in failing if n.startswith("q")] == [f"{cid} [{MODEL}@lenient vs {CONTROL}]" for cid in WRONG]


def test_an_equivalent_prompt_ships_within_a_margin_its_cases_can_show(
    tmp_path: Path, server: LocalOpenAIServer
) -> None:
    """No discordant pair: Tango's bounds are ±z²/(n + z²), 15.5 pp over the 21 cases and 24.2 pp over the 12
    whose gold forbids PASS; a 25-point margin holds both."""
    corpus = write_copies(tmp_path / "cases")
    reworded = prompt_dir(tmp_path, "reworded", version="2")
    out = tmp_path / "run"
    args = ("--prompt", "baseline", "--prompt", str(reworded), "--control", CONTROL, "--margin", "25")
    assert run(server, corpus, out, *args, "--require-ship") == 0
    (d,) = summary(out)["decisions"]
    assert d["decision"] == "ship" and d["regressed_cases"] == [] and d["cases_needed"] is None
    z2 = NormalDist().inv_cdf(0.975) ** 2
    assert d["metrics"]["verdict_accuracy"]["diff_ci"] == pytest.approx([-z2 / (21 + z2), z2 / (21 + z2)])
    assert d["metrics"]["unsafe_pass_rate"]["diff_ci"] == pytest.approx([-z2 / (12 + z2), z2 / (12 + z2)])
    assert {"prompt", "prompt_version", "prompt_hash", "prompt_path"} <= set(d["changed"])
    assert "excerpt_chars" not in d["changed"] and "code_fingerprint" not in d["changed"]


@pytest.mark.slow
def test_inconclusive_passes_unless_ship_is_required(tmp_path: Path, server: LocalOpenAIServer) -> None:
    corpus = write_copies(tmp_path / "cases")
    off = prompt_dir(tmp_path, "off", OFF_BY_ONE_LINE)
    args = ("--prompt", "baseline", "--prompt", str(off), "--control", "@baseline")
    assert run(server, corpus, tmp_path / "a", *args) == 0
    (d,) = summary(tmp_path / "a")["decisions"]
    assert d["decision"] == "inconclusive" and d["regressed_cases"] == ["q2-1", "q2-2", "q2-3"]
    assert d["metrics"]["verdict_accuracy"]["p"] == pytest.approx(0.25)  # 3 discordant pairs: 2 * 0.5**3
    assert run(server, corpus, tmp_path / "b", *args, "--require-ship") == 1
    assert summary(tmp_path / "b")["decisions"][0]["decision"] == "inconclusive"
    # a margin wide enough for a 3-in-21 loss (and 3 in 12 more unsafe PASSes) turns it into a ship
    assert run(server, corpus, tmp_path / "c", *args, "--require-ship", "--margin", "70") == 0
    assert summary(tmp_path / "c")["decisions"][0]["decision"] == "ship"
    # gated on verdict accuracy alone, a 40-point margin is enough: the unsafe-PASS rise no longer decides
    assert run(server, corpus, tmp_path / "d", *args, "--require-ship", "--margin", "40") == 1
    assert (
        run(
            server, corpus, tmp_path / "e", *args, "--require-ship", "--margin", "40", "--decide-on", "verdict_accuracy"
        )
        == 0
    )
    metrics = summary(tmp_path / "e")["decisions"][0]["metrics"]
    assert [m for m in metrics if metrics[m]["gated"]] == ["verdict_accuracy"]


def test_a_finished_run_is_the_control_of_the_same_model(tmp_path: Path, server: LocalOpenAIServer) -> None:
    corpus = write_copies(tmp_path / "cases")
    base = tmp_path / "base"
    assert run(server, corpus, base, "--prompt", "baseline") == 0
    lenient = prompt_dir(tmp_path, "lenient", LENIENT_LINE)
    assert run(server, corpus, tmp_path / "cand", "--prompt", str(lenient), "--baseline", str(base)) == 1
    (d,) = summary(tmp_path / "cand")["decisions"]
    assert d["control"] == CONTROL and d["control_run"].startswith(str(base)) and d["decision"] == "block"
    reworded = prompt_dir(tmp_path, "reworded")
    assert run(server, corpus, tmp_path / "eq", "--prompt", str(reworded), "--baseline", str(base)) == 0
    eq = summary(tmp_path / "eq")["decisions"][0]
    assert eq["decision"] == "inconclusive" and eq["cases_needed"] == 73  # 21 identical cases cannot show 5 points
    # part of the corpus edited since the baseline: decided on the paired cases, and said so
    edited = tmp_path / "edited"
    write_copies(edited)
    for path in sorted(edited.glob("q1-*.yaml")):
        path.write_text(path.read_text().replace("hand-computed case", "edited case"))
    assert run(server, edited, tmp_path / "part", "--prompt", str(reworded), "--baseline", str(base)) == 0
    d = summary(tmp_path / "part")["decisions"][0]
    assert (d["paired_cases"], d["unpaired_cases"]) == (18, 3)
    assert any("18 cases paired, 3 unpaired" in r for r in d["reasons"])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--prompt", "baseline", "--control", "openai:nope@baseline"],
            "no such variant; this run's variants: openai:local-model@baseline",
        ),
        (["--prompt", "baseline", "--control", "@baseline"], "no candidate to judge against it"),
        (
            ["--prompt", "baseline", "--prompt", "strict-evidence", "--control", "@other"],
            "no variant with prompt 'other'",
        ),
    ],
)
def test_nothing_to_pair_exits_2_before_any_request(
    tmp_path: Path, server: LocalOpenAIServer, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    corpus = write_copies(tmp_path / "cases", copies=1)
    assert run(server, corpus, tmp_path / "run", *extra) == 2
    assert message in capsys.readouterr().err.replace("\n", " ")
    assert server.request_count == 0 and not (tmp_path / "run").exists()


def test_a_baseline_that_cannot_pair_exits_2_before_any_request(
    tmp_path: Path, server: LocalOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_copies(tmp_path / "cases", copies=1)
    assert main(["run", "--cases", str(corpus), "--out", str(tmp_path / "ref"), "--no-report"]) == 0
    sent = server.request_count
    # the baseline holds the reference verifier only: no variant of this model to pair with
    assert run(server, corpus, tmp_path / "a", "--prompt", "baseline", "--baseline", str(tmp_path / "ref")) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert "baseline variants of model openai:local-model: none" in err and "the baseline's variants: reference" in err
    # no case in common: the baseline ran on other cases
    other = write_copies(tmp_path / "other", copies=1)
    for path in other.glob("*.yaml"):
        path.write_text(path.read_text().replace("Redis GETs time out.", "Redis GETs are slow."))
    args = ["run", "--cases", str(other), "--out", str(tmp_path / "b"), "--baseline", str(tmp_path / "ref")]
    assert main(args) == 2
    assert "nothing can be paired" in capsys.readouterr().err.replace("\n", " ")
    assert server.request_count == sent


def test_a_prompt_no_model_takes_exits_2_naming_the_models(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = write_copies(tmp_path / "cases", copies=1)
    assert main(["run", "--cases", str(corpus), "--prompt", "strict-evidence", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.replace("\n", " ")
    assert "no model of this run takes one (reference)" in err and not (tmp_path / "r").exists()


STUDY = Path(__file__).resolve().parents[2] / "studies" / "prompt-regression.yaml"


def test_the_shipped_recipe_blocks_a_worse_prompt_and_cannot_tell_an_equivalent_on_21_cases(
    tmp_path: Path, server: LocalOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_copies(tmp_path / "cases")
    recipe = ["run", "--study", str(STUDY), "--cases", str(corpus), "--model", MODEL, "--base-url", server.base_url]
    recipe += ["--no-cache", "--no-report", "--prompt", "baseline", "--prompt"]
    assert main([*recipe, str(prompt_dir(tmp_path, "lenient", LENIENT_LINE)), "--out", str(tmp_path / "a")]) == 1
    assert main([*recipe, str(prompt_dir(tmp_path, "reworded")), "--out", str(tmp_path / "b")]) == 0
    assert [d["decision"] for d in summary(tmp_path / "b")["decisions"]] == ["inconclusive"]
    printed = capsys.readouterr().out.replace("\n", " ")
    assert "INCONCLUSIVE openai:local-model@reworded against openai:local-model@baseline: verdict_accuracy:" in printed
    assert "gate passed ship_decision [openai:local-model@reworded]" in printed


REPO = STUDY.parents[1]
FIVE = ["q-batch-airflow-401-and-exit-code", "q-batch-backfill-slowdown-prose-only",
        "q-batch-backup-auth-removed-diagnosis-summary", "q-batch-cronjob-suspended-negated",
        "q-batch-deadline-exceeded-called-backoff"]  # fmt: skip
"""Five committed quality cases, four of whose gold verdicts forbid PASS."""


def test_the_readme_recipe_on_five_cases_says_it_cannot_tell(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's CI recipe, filtered to five cases, with a candidate prompt the model answers exactly as the
    baseline: no discordant pair, so Tango's bound is z²/(5 + z²) = 43.4 pp, and a 5-point margin needs
    z² · 0.95 / 0.05 = 72.99, so 73 cases. INCONCLUSIVE, exit 0; with --require-ship, exit 1."""
    from harness.corpus.loader import load_cases
    from tests.run.known_model import KnownModel

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-known")
    monkeypatch.chdir(REPO)
    ids = tmp_path / "five.txt"
    ids.write_text("\n".join(FIVE) + "\n")
    candidate = prompt_dir(tmp_path, "candidate")
    with LocalOpenAIServer(KnownModel(load_cases([REPO / "cases" / "quality"]))) as known:
        recipe = ["run", "--study", "studies/prompt-regression.yaml", "--model", MODEL, "--prompt", "baseline",
                  "--prompt", str(candidate), "--base-url", known.base_url, "--filter", f"ids:{ids}", "--no-report"]  # fmt: skip
        assert main([*recipe, "--out", str(tmp_path / "a")]) == 0
        printed = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
        assert main([*recipe, "--out", str(tmp_path / "b"), "--require-ship"]) == 1
    (d,) = summary(tmp_path / "a")["decisions"]
    assert d["decision"] == "inconclusive" and d["paired_cases"] == 5 and d["cases_needed"] == 73
    assert (
        f"INCONCLUSIVE {MODEL}@candidate against {CONTROL}: verdict_accuracy: +0.0 pp, 95% CI [-43.4, +43.4] pp: "
        "5 paired cases cannot rule out a loss of 43.4 pp; about 73 are needed for a 5.0 pp margin" in printed
    )
    gates = {g["gate"]: g for g in summary(tmp_path / "b")["gates"]}
    assert gates["ship_decision"]["passed"] is False and gates["ship_decision"]["value"] == "inconclusive"


def test_the_shipped_recipe_without_a_model_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = write_copies(tmp_path / "cases", copies=1)
    base = ["run", "--study", str(STUDY), "--cases", str(corpus), "--out", str(tmp_path / "r")]
    assert main([*base, "--prompt", "strict-evidence"]) == 2  # the reference verifier takes no prompt
    assert "no model of this run takes one (reference)" in capsys.readouterr().err.replace("\n", " ")
    assert main(base) == 2  # no prompt given: still no control to pair with
    assert "no variant with prompt 'baseline' on the model of reference" in capsys.readouterr().err.replace("\n", " ")


def test_the_known_model_answers_every_committed_quality_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test model behind the README's try-it-yourself recipe recognises every case of cases/quality."""
    from harness.corpus.loader import load_cases
    from tests.run.known_model import KnownModel

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-known")
    quality = Path(__file__).resolve().parents[2] / "cases" / "quality"
    with LocalOpenAIServer(KnownModel(load_cases([quality]))) as known:
        args = ["--cases", str(quality), "--prompt", "baseline", "--concurrency", "16"]
        assert run(known, quality, tmp_path / "k", *args[2:]) == 0
    (variant,) = summary(tmp_path / "k")["variants"]
    assert variant["errors"] == 0 and variant["quality_cases"] == 136
    assert variant["claim_accuracy"] > 0.95  # the policy may still overrule a right answer on a few cases


@pytest.mark.browser
def test_the_regressions_view_drills_down_in_a_browser(tmp_path: Path, server: LocalOpenAIServer) -> None:
    """A click on a regressed case lists that case's results for both variants; a click on a row opens it."""
    from harness.report.browser import find_chromium

    if find_chromium() is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the browser tests: no chromium binary on PATH")
        pytest.skip("no chromium binary on PATH")
    corpus = write_copies(tmp_path / "cases", copies=2)
    lenient = prompt_dir(tmp_path, "lenient", LENIENT_LINE)
    out = tmp_path / "run"
    args = ("--prompt", "baseline", "--prompt", str(lenient), "--control", "@baseline")
    assert run(server, corpus, out, *args, report=True) == 1
    asyncio.run(drill_down(out / "report.html"))


async def drill_down(report: Path) -> None:
    from tests.report.cdp import open_page

    async with open_page(report.as_uri()) as page:
        await page.wait_for("document.body && document.body.dataset.ready === '1'")
        assert await page.evaluate("document.querySelectorAll('#decisions-table tbody tr').length") == 1
        assert await page.evaluate("document.querySelector('#decisions-table .badge').textContent") == "block"
        links = await page.evaluate("document.querySelectorAll('.regressions-table a[data-filter]').length")
        assert links == 8  # q2, q4, q5, q6 x 2 copies
        await page.evaluate("document.querySelector('.regressions-table a[data-filter]').click()")
        visible = "Array.from(document.querySelectorAll('#case-rows tr.row:not([hidden])'))"
        await page.wait_for(f"{visible}.length === 2")
        cells = await page.evaluate(
            f"{visible}.map(function (tr) {{ return tr.cells[0].textContent + '|' + tr.cells[1].textContent; }})"
        )
        assert sorted(cells) == [f"q2-1|{CONTROL}", f"q2-1|{MODEL}@lenient"]
        await page.evaluate(f"{visible}[0].click()")
        await page.wait_for("document.querySelectorAll('#case-rows tr.detail').length === 1")
        # the per-case matrix: 14 cases, the 8 the candidate got wrong differ between the variants
        rows = "document.querySelectorAll('#matrix-table tbody tr:not([hidden])').length"
        assert await page.evaluate(rows) == 14
        await page.evaluate("document.getElementById('matrix-differs').click()")
        assert await page.evaluate(rows) == 8
        assert await page.evaluate("document.getElementById('matrix-count').textContent") == "8"


def test_compare_concludes_in_points_and_fails_on_a_regression(
    tmp_path: Path, server: LocalOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_copies(tmp_path / "cases")
    assert run(server, corpus, tmp_path / "a", "--prompt", "baseline") == 0
    assert run(server, corpus, tmp_path / "b", "--prompt", str(prompt_dir(tmp_path, "lenient", LENIENT_LINE))) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json", str(tmp_path / "c.json")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    # the conclusion is the ship decision of B against A, in the words `vbench run --control` prints
    assert f"BLOCK {MODEL}@lenient against {CONTROL}: verdict_accuracy: significantly worse, -57.1 pp (p < 0.001" in out
    assert "-57.1 pp" in out and "settings A → B: prompt: baseline → lenient" in out
    (row,) = json.loads((tmp_path / "c.json").read_text())
    assert row["verdict_accuracy_diff"] == pytest.approx(12 / 21) and row["unpaired_cases"] == 0  # stored as A − B
    assert row["p_adjusted"] == pytest.approx(2 * 0.5**12) and row["decision"] == "block"
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--fail-on-regression"]) == 1
    assert "regression: openai:local-model@lenient significantly worse" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "b"), str(tmp_path / "a"), "--fail-on-regression"]) == 0  # B is better
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "a"), "--fail-on-regression"]) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--alpha", "0.01"]) == 0
    table = capsys.readouterr().out  # both interval columns name the level the pairs were decided at (folded cells)
    assert table.count("[99%") == 2 and "[95%" not in table


def test_a_report_never_turns_a_block_into_a_pass(
    tmp_path: Path, server: LocalOpenAIServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A retried unit logged twice does not make the summary look stale; a rescore needs the very same baseline."""
    corpus = write_copies(tmp_path / "cases")
    base = tmp_path / "base"
    assert run(server, corpus, base, "--prompt", "baseline") == 0
    cand = tmp_path / "cand"
    lenient = prompt_dir(tmp_path, "lenient", LENIENT_LINE)
    monkeypatch.chdir(tmp_path)
    assert run(server, corpus, cand, "--prompt", str(lenient), "--baseline", "base") == 1  # a relative path
    results = cand / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    results.write_text("".join([lines[0], *lines]))  # what a retried unit leaves behind
    monkeypatch.chdir(tmp_path.parent)  # the baseline was given relative to another folder
    assert main(["report", str(cand)]) == 0
    after = summary(cand)
    assert after["passed"] is False and after["decisions"][0]["decision"] == "block"  # not re-scored: not stale
    # the baseline regenerated in place since: a rescore refuses rather than re-decide against another control
    (base / "outcomes.jsonl").write_text((base / "outcomes.jsonl").read_text().replace('"epoch": 1', '"epoch": 2', 1))
    assert main(["report", str(cand), "--rescore"]) == 2
    assert "gone or has changed" in capsys.readouterr().err
    assert summary(cand)["decisions"][0]["decision"] == "block"
