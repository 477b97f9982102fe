"""The report's charts are SVG written by hand: well-formed, every label escaped, every mark where its figure puts it.

Positions are checked against the chart's own tick labels (where "0" and "1" are drawn), so a test reads the chart
as a person would: a bar of 0.5 reaches half way from the 0 tick to the 1 tick.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from harness.report import figures
from harness.report.svg import nice_ticks
from harness.score.frames import CLASSES

NS = "{http://www.w3.org/2000/svg}"
HOSTILE = '<b onmouseover="x()">&amp; "q" \'s</b>'


def parse(svg: str | None) -> ET.Element:
    assert svg is not None
    root = ET.fromstring(svg)  # a malformed chart (an unescaped < or &) does not parse
    assert root.tag == f"{NS}svg" and root.get("class") == "chart" and root.get("role") == "img"
    assert root.get("aria-label")
    assert not [e for e in root.iter() if e.get("id")]  # several charts share one page
    return root


def texts(root: ET.Element) -> list[ET.Element]:
    return list(root.iter(f"{NS}text"))


def tick_x(root: ET.Element, label: str) -> float:
    """Where the first x tick label `label` is drawn (its centre)."""
    xs = [float(t.get("x", "nan")) for t in texts(root) if t.text == label and t.get("text-anchor") == "middle"]
    assert xs, f"no tick {label!r}"
    return xs[0]


def bars(root: ET.Element) -> list[ET.Element]:
    """The chart's bars (not its legend's 14 × 10 swatches)."""
    return [r for r in root.iter(f"{NS}rect") if (r.get("width"), r.get("height")) != ("14", "10")]


def variants(names: list[str]) -> list[dict[str, object]]:
    return [{"name": n} for n in names]


def test_escaped_names_are_text_and_never_markup() -> None:
    rows = [{"name": HOSTILE, "stability": {"stable_right": 3, "flaky": 1, "stable_wrong": 2}}]
    svg = figures.stability_chart(rows)
    root = parse(svg)
    assert HOSTILE in [t.text for t in texts(root)]  # the name exactly, as text
    assert not list(root.iter("b")) and not list(root.iter(f"{NS}b"))
    assert svg is not None and "<b " not in svg


def test_headline_dots_sit_at_their_values_and_are_labelled() -> None:
    rows = [
        {"name": "low", "verdict_accuracy": 0.25, "verdict_accuracy_ci": [0.1, 0.4]},
        {"name": "high", "verdict_accuracy": 0.75, "verdict_accuracy_ci": [0.6, 0.9]},
    ]
    root = parse(figures.headline_chart(rows))
    dots = [float(c.get("cx", "nan")) for c in root.iter(f"{NS}circle")]
    zero, one = tick_x(root, "0"), tick_x(root, "1")
    assert dots == pytest.approx([zero + 0.25 * (one - zero), zero + 0.75 * (one - zero)], abs=0.02)
    shown = [t.text for t in texts(root)]
    assert "0.25" in shown and "0.75" in shown and "low" in shown and "high" in shown


def test_per_class_bars_are_as_tall_as_their_figure() -> None:
    per_class = {c: {"precision": 0.5, "recall": 1.0} for c in CLASSES}
    root = parse(figures.per_class_chart([{"name": "v", "per_class": per_class}], CLASSES))
    bars = {r.find(f"{NS}title").text: float(r.get("height", "nan")) for r in root.iter(f"{NS}rect") if r.find(f"{NS}title") is not None}  # type: ignore[union-attr]  # fmt: skip
    first = CLASSES[0].replace("_", " ")
    half, full = bars[f"v · {first}: 0.50"], bars[f"v · {first}: 1.00"]
    assert half > 0 and full == pytest.approx(2 * half, abs=0.02)
    assert len(bars) == 2 * len(CLASSES)


def test_latency_bars_are_as_long_as_their_figure() -> None:
    rows = [{"name": "a", "latency": {"p50": 100.0, "p95": 400.0}}, {"name": "b", "latency": {"p50": 250.0, "p95": None}}]  # fmt: skip
    root = parse(figures.latency_chart(rows))
    zero = tick_x(root, "0")
    per_hundred = tick_x(root, "100") - zero
    widths = sorted(float(r.get("width", "nan")) for r in bars(root) if r.get("x") == f"{zero:g}")
    assert widths == pytest.approx([per_hundred, 2.5 * per_hundred, 4 * per_hundred], abs=0.05)


def test_stability_stacks_add_up_to_the_cases() -> None:
    root = parse(figures.stability_chart([{"name": "v", "stability": {"stable_right": 10, "flaky": 5, "stable_wrong": 5}}]))  # fmt: skip
    zero, ten = tick_x(root, "0"), tick_x(root, "10")
    stack = bars(root)
    assert [float(r.get("width", "nan")) for r in stack] == pytest.approx([ten - zero, (ten - zero) / 2, (ten - zero) / 2], abs=0.05)  # fmt: skip
    assert float(stack[1].get("x", "nan")) == pytest.approx(ten, abs=0.05)


def test_a_significant_gain_is_green_and_a_null_difference_grey() -> None:
    rows = [
        {"a": "A", "b": "B", "cases": 9, "verdict_accuracy_diff": 0.1, "verdict_accuracy_diff_ci": [0.02, 0.2]},
        {"a": "C", "b": "B", "cases": 9, "verdict_accuracy_diff": 0.0, "verdict_accuracy_diff_ci": [-0.1, 0.1]},
    ]
    root = parse(figures.comparison_chart(rows))
    assert [c.get("fill") for c in root.iter(f"{NS}circle")] == [figures.GREEN, figures.GREY]
    assert "A vs B" in [t.text for t in texts(root)]


def test_every_chart_is_well_formed_or_absent_without_data() -> None:
    rows = variants(["a & b", "<c>"])
    for i, v in enumerate(rows):
        v["calibration"] = {
            "bins": [{"mean_score": 0.2, "pass_right": 0.1 * i}, {"mean_score": 0.8, "pass_right": 0.9}]
        }
    parse(figures.reliability_chart(rows))
    parse(figures.epoch_chart({"a & b": [(1, 0.5, 3), (2, 0.75, 3)]}, ["a & b", "<c>"]))
    grounding = {"rows": [{"name": "<c>", "datasets": [{"value": 0.7, "ci": [0.6, 0.8]}]}], "datasets": ["d&d"]}
    parse(figures.grounding_chart(grounding))
    assert figures.reliability_chart(variants(["x"])) is None
    assert figures.epoch_chart({"x": [(1, 0.5, 3)]}, ["x"]) is None
    assert figures.grounding_chart({"rows": [], "datasets": []}) is None
    assert figures.per_class_chart(variants(["x"]), CLASSES) is None


def test_ticks_are_round_and_cover_the_range() -> None:
    assert nice_ticks(0, 1, 5) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(0, 400, 6) == [0, 100, 200, 300, 400]
    assert nice_ticks(-23.0, 23.0, 5) == [-20, -10, 0, 10, 20]


def test_the_epoch_chart_of_a_long_run_labels_whole_epochs() -> None:
    """Past twelve epochs the ticks are round numbers: whole epochs only (a tick from an int step is an int)."""
    from harness.report.figures import epoch_chart

    svg = epoch_chart({"v": [(e, 0.8, 10) for e in range(1, 21)]}, ["v"])
    assert svg is not None and ">20<" in svg and ">2.5<" not in svg
