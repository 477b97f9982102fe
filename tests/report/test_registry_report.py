"""The report reads its metrics from the registry: one `register(...)` of a decidable, grouped, headline metric
puts it in the ship-decision tables, the headline cards, every per-group breakdown and both closing notes,
with no template edit."""

from __future__ import annotations

import json
import shutil
import tarfile
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from harness.report.local_note import closing_note
from harness.report.render import pct, render_run
from harness.score.decide import CaseCounts
from harness.score.intervals import tango_ci
from harness.score.registry import Direction, Format, Frames, MetricSpec, Value, registered
from harness.score.scoring import GateSettings, score_run
from harness.score.stats import binomial_two_sided_half
from harness.score.wording import pp_text as pp

PRE_REGISTRY_RUN = Path(__file__).resolve().parents[1] / "score" / "data" / "pre_registry_run.tar.gz"
"""A reference run (2 epochs, two variants' worth of tags and scenarios) scored before the registry."""

CASES, WON = 100, 12
"""What the new metric's paired comparison counts, whatever the units: 100 cases, 12 only the candidate scores."""
DIFF, DIFF_CI, P = WON / CASES, tango_ci(WON, 0, CASES), binomial_two_sided_half(0, WON)
"""Its figures by the paired rule: Tango's interval and McNemar's exact p of 12 discordant pairs, all one way."""


def share_passed(frames: Frames, with_ci: bool) -> Value:
    """Scored quality results whose effective verdict is PASS."""
    scored = frames.quality[frames.quality["scored"]] if len(frames.quality) else frames.quality
    return Value(float((scored["verdict"] == "PASS").mean()) if len(scored) else None, [0.0, 1.0] if with_ci else None)


def paired_share(paired: pd.DataFrame, gold: dict[str, dict[str, list[str]]]) -> CaseCounts:
    both = (np.arange(CASES) >= 75).astype(float)
    won = (np.arange(CASES) < WON).astype(float)
    return CaseCounts(both, both + won, won, np.zeros(CASES), np.ones(CASES))


PASS_SHARE = MetricSpec(
    "pass_share", "PASS <share>", "results whose verdict is PASS", Direction.LOWER, Format.FRACTION, share_passed,
    has_ci=True, headline=True, grouped=True, notes=True, short="PASS share", paired=paired_share,
)  # fmt: skip


def extracted(folder: Path) -> Path:
    """The pre-registry run, and a copy of it as its baseline: scoring it makes one decision per variant."""
    with tarfile.open(PRE_REGISTRY_RUN) as archive:
        archive.extractall(folder / "run", filter="data")
    shutil.copytree(folder / "run", folder / "baseline")
    return folder / "run"


@dataclass
class Rendered:
    summary: dict[str, Any]
    html: str
    notes: list[str]
    """summary.md, line by line."""
    local: list[str]
    """The local closing note, line by line."""

    def section(self, start: str, end: str) -> str:
        return self.html[self.html.index(start) : self.html.index(end, self.html.index(start))]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    """The run scored against its baseline and reported while the new metric is registered."""
    run = extracted(tmp_path_factory.mktemp("registry-report"))
    with registered(PASS_SHARE):
        summary = score_run(run, GateSettings(baseline=run.parent / "baseline"))
        html = render_run([run], run).read_text(encoding="utf-8")
        notes = (run / "summary.md").read_text(encoding="utf-8").splitlines()
        return Rendered(summary.to_json(), html, notes, closing_note(summary).splitlines())


def test_the_ship_decision_tables_show_every_decidable_metric(rendered: Rendered) -> None:
    (decision,) = rendered.summary["decisions"]
    assert decision["metrics"]["pass_share"]["diff"] == DIFF
    decisions = rendered.section('id="decisions-table"', "</table>")
    assert '<th class="n">PASS share Δ [95% CI]</th><th class="n">p</th>' in decisions
    shown = f"{pp(DIFF)} [{DIFF_CI[0] * 100:+.1f}, {DIFF_CI[1] * 100:+.1f}]"
    assert f'<td class="n">{shown}</td><td class="n">&lt; 0.001</td>' in decisions
    notes = rendered.notes
    header = next(line for line in notes if line.startswith("| candidate | control |"))
    row = notes[notes.index(header) + 2]
    assert "| PASS share Δ [95% CI] | p |" in header and f"| {shown} | < 0.001 |" in row
    assert header.count("|") == row.count("|") == notes[notes.index(header) + 1].count("|")


def test_every_headline_metric_has_its_card(rendered: Rendered) -> None:
    """The fifth built-in headline metric (grounding bAcc) and the new sixth included."""
    cards = rendered.section('<div class="cards">', 'class="figure"')
    labels = [part.split("</div>")[0] for part in cards.split('<div class="l">')[1:]]
    per_card = len(labels) // len(rendered.summary["variants"])
    assert labels[:per_card] == [
        "Verdict accuracy", "Model verdict accuracy", "Claim accuracy", "Unsafe PASS rate", "Grounding bAcc",
        escape("PASS <share>"),
    ]  # fmt: skip
    assert "PASS <share>" not in rendered.html  # the label is text, escaped like everything else


def test_every_per_group_breakdown_shows_every_grouped_metric(rendered: Rendered) -> None:
    variant = rendered.summary["variants"][0]
    for table_id, key in (("per-scenario-table", "per_scenario"), ("per-tag-table", "per_tag")):
        table = rendered.section(f'id="{table_id}"', "</table>")
        group = next(iter(variant[key].values()))
        assert f"PASS share {pct(group['pass_share'])} · {group['cases']} cases" in table
    assert "(model verdict accuracy, claim accuracy, PASS &lt;share&gt; below it)" in rendered.html


def test_the_local_closing_note_takes_its_columns_from_the_registry(rendered: Rendered) -> None:
    local, variant = rendered.local, rendered.summary["variants"][0]
    assert local[2].endswith("| macro-F1 | PASS share | invalid replies | reasons | mean latency |")
    assert local[2].count("|") == local[3].count("|") == local[4].count("|")
    assert f"| {variant['pass_share']:.0%} |" in local[4]


def test_the_report_renders_without_the_metric_once_it_is_unregistered(tmp_path: Path) -> None:
    run = extracted(tmp_path)
    score_run(run, GateSettings(baseline=run.parent / "baseline"))
    html = render_run([run], run).read_text(encoding="utf-8")
    assert "PASS share" not in html and "PASS &lt;share&gt;" not in html
    decisions = json.loads((run / "summary.json").read_text())["decisions"]
    assert decisions and "pass_share" not in decisions[0]["metrics"]
