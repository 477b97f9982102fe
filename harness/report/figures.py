"""Charts as inline SVG: pure functions from analysis rows to SVG text, drawn with the small kit in `svg`.

Labels are class names, verdicts and variant names, written as SVG `<text>`
and escaped (`svg.esc`). Each chart is an `<svg class="chart">` with an
accessible name and no ids, so several live in one page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.report.analyses import PUBLISHED_GROUNDING, headline_metrics
from harness.report.svg import FONT, Axes, Canvas, clip, nice_ticks, text_width

PALETTE = ["#2563eb", "#d97706", "#059669", "#dc2626", "#7c3aed", "#0891b2", "#be185d", "#4d7c0f", "#9a3412", "#475569"]
ROW = 26  # pixels per row of a chart with one row per variant
GREEN, RED, GREY = "#16a34a", "#dc2626", "#64748b"


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def label(text: Any, limit: int = 48) -> str:
    """A chart label: shown as written (escaped when drawn), a long one shortened."""
    return clip(text, limit)


def _label_column(names: Sequence[str]) -> float:
    """The width of a column of row labels, with room for the tick marks."""
    return max([text_width(n, FONT - 1) for n in names] + [30.0]) + 20


def _rows(n: int) -> tuple[float, float]:
    """The y data box of `n` rows, row i at height n - 1 - i (the first on top)."""
    return (-0.6, n - 0.4)


def headline_chart(variants: Sequence[Mapping[str, Any]]) -> str:
    """Each headline metric with its 95% CI, one panel per metric, one row per variant."""
    names = [label(v["name"], 40) for v in variants]
    shown = headline_metrics()
    left = _label_column(names)
    panel, gap = 170.0, 22.0
    top, height = 34.0, ROW * len(names) + 8
    c = Canvas(left + len(shown) * (panel + gap) + 4, top + height + 26, "headline metrics per variant with 95% confidence intervals")  # fmt: skip
    for k, metric in enumerate(shown):
        ax = Axes(c, left + k * (panel + gap), top, panel, height, (0.0, 1.02), _rows(len(names)))
        ticks = nice_ticks(0, 1, 5)
        ax.xgrid(ticks)
        ax.frame()
        ax.xticks(ticks)
        ax.title(label(metric.label) + ("  ↓" if not metric.higher_is_better else ""))
        if k == 0:
            ax.yticks([len(names) - 1 - i for i in range(len(names))], names)
        for i, v in enumerate(variants):
            value, ci = v.get(metric.key), v.get(f"{metric.key}_ci")
            if value is None:
                continue
            y = len(names) - 1 - i
            if ci:
                ax.hspan(y, ci[0], ci[1], color(i), opacity="0.6")
            ax.point(value, y, color(i), 4)
            c.text(ax.sx(value), ax.sy(y) - 10, f"{value:.2f}", anchor="middle", size=FONT - 2)
    return c.render()


def per_class_chart(variants: Sequence[Mapping[str, Any]], classes: Sequence[str]) -> str | None:
    """Precision and recall of each derivability class, bars grouped by variant."""
    if not any(v.get("per_class") for v in variants):
        return None
    names = [c.replace("_", " ") for c in classes]
    legend = [(label(v["name"], 40), color(i)) for i, v in enumerate(variants)]
    legend_w = max(text_width(n, FONT - 1) for n, _ in legend) + 40
    longest = max(text_width(label(n, 20), FONT - 1) for n in names)
    panel, gap, left, top, height = 300.0, 30.0, max(44.0, 0.9 * longest - 20), 30.0, 190.0
    below = longest * 0.45 + 24  # the tick labels are turned 25 degrees
    c = Canvas(left + 2 * panel + gap + legend_w, top + height + below, "per-class precision and recall")
    width = 0.8 / max(1, len(variants))
    ticks = nice_ticks(0, 1, 5)
    for k, key in enumerate(("precision", "recall")):
        ax = Axes(c, left + k * (panel + gap), top, panel, height, (-0.5, len(classes) - 0.5), (0.0, 1.05))
        ax.ygrid(ticks)
        ax.frame()
        if k == 0:
            ax.yticks(ticks)
        ax.xticks(list(range(len(classes))), [label(n, 20) for n in names], rotate=-25)
        ax.title(key)
        for i, v in enumerate(variants):
            per = v.get("per_class") or {}
            for j, cls in enumerate(classes):
                value = (per.get(cls) or {}).get(key, 0.0) or 0.0
                x = j + i * width - 0.4 + width / 2
                ax.vbar(x, 0.0, value, width, color(i), name=f"{legend[i][0]} · {names[j]}: {value:.2f}")
    c.legend(legend, left + 2 * panel + gap + 12, top + 6, columns=1)
    return c.render()


def stability_chart(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """Stable right / flaky / stable wrong cases per variant, stacked."""
    rows = [r for r in rows if r.get("stability")]
    if not rows:
        return None
    parts = (("stable_right", "stable right", GREEN), ("flaky", "flaky", "#f59e0b"), ("stable_wrong", "stable wrong", RED))  # fmt: skip
    names = [label(r["name"], 40) for r in rows]
    left = _label_column(names)
    top, height = 30.0, ROW * len(rows) + 8
    total = max(sum(float(r["stability"][k]) for k, _, _ in parts) for r in rows) or 1.0
    c = Canvas(max(left + 320, 420), top + height + 44, "cases whose verdict was stable or flaky across epochs")
    ax = Axes(c, left, top, c.width - left - 12, height, (0.0, total * 1.04), _rows(len(rows)))
    ticks = nice_ticks(0, total, 5)
    ax.xgrid(ticks)
    for i, r in enumerate(rows):
        y, start = len(rows) - 1 - i, 0.0
        for key, _, col in parts:
            value = float(r["stability"][key])
            ax.hbar(y, start, start + value, 0.6, col)
            start += value
    ax.frame()
    ax.xticks(ticks)
    ax.yticks([len(rows) - 1 - i for i in range(len(rows))], names)
    ax.xlabel("cases")
    c.legend([(name, col) for _, name, col in parts], left, 10)
    return c.render()


def epoch_chart(per_epoch: Mapping[str, Sequence[tuple[int, float, int]]], order: Sequence[str]) -> str | None:
    """Verdict accuracy per epoch, one line per variant (only with several epochs)."""
    if not any(len(v) > 1 for v in per_epoch.values()):
        return None
    epochs = [p[0] for points in per_epoch.values() for p in points]
    shown = [(i, name) for i, name in enumerate(order) if per_epoch.get(name)]
    legend = [(label(name, 40), color(i)) for i, name in shown]
    legend_h = 16 * ((len(legend) + 1) // 2)
    left, top, height = 56.0, 16.0 + legend_h + 8, 170.0
    legend_w = 2 * (max(text_width(n, FONT - 1) for n, _ in legend) + 36)
    c = Canvas(max(440, left + legend_w), top + height + 44, "verdict accuracy per epoch")
    lo, hi = min(epochs), max(epochs)
    ax = Axes(c, left, top, c.width - left - 16, height, (lo - 0.3, hi + 0.3), (0.0, 1.02))
    xticks = (
        [float(e) for e in range(lo, hi + 1)]
        if hi - lo <= 12
        else [t for t in nice_ticks(lo, hi) if float(t).is_integer()]
    )
    yticks = nice_ticks(0, 1, 5)
    ax.xgrid(xticks)
    ax.ygrid(yticks)
    ax.frame()
    ax.xticks(xticks)
    ax.yticks(yticks)
    ax.xlabel("epoch")
    ax.ylabel("verdict accuracy")
    for i, name in shown:
        ax.lines([(p[0], p[1]) for p in per_epoch[name]], color(i))
    c.legend(legend, left, 14, columns=2)
    return c.render()


def latency_chart(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """Median and 95th-percentile verifier latency per variant (cached replies left out)."""
    rows = [r for r in rows if (r.get("latency") or {}).get("p50") is not None]
    if not rows:
        return None
    names = [label(r["name"], 40) for r in rows]
    left = _label_column(names)
    top, height = 30.0, ROW * len(rows) + 8
    most = max(max(float(r["latency"].get("p95") or 0.0), float(r["latency"]["p50"])) for r in rows) or 1.0
    c = Canvas(max(left + 460, 560), top + height + 44, "verifier latency per variant")
    ax = Axes(c, left, top, c.width - left - 16, height, (0.0, most * 1.05), _rows(len(rows)))
    ticks = nice_ticks(0, most, 6)
    ax.xgrid(ticks)
    for i, r in enumerate(rows):
        y = len(rows) - 1 - i
        if r["latency"].get("p95") is not None:
            ax.hbar(y, 0.0, float(r["latency"]["p95"]), 0.6, "#cbd5e1")
        ax.hbar(y, 0.0, float(r["latency"]["p50"]), 0.35, color(i))
    ax.frame()
    ax.xticks(ticks)
    ax.yticks([len(rows) - 1 - i for i in range(len(rows))], names)
    ax.xlabel("latency per result (ms)")
    c.legend([("p95", "#cbd5e1"), ("median", color(0))], left, 10)  # above the axes, never over the bars
    return c.render()


def grounding_chart(grounding: Mapping[str, Any]) -> str | None:
    """Grounding balanced accuracy per variant and data set, beside the published LLM-AggreFact figures."""
    rows, datasets = grounding["rows"], grounding["datasets"]
    bars: list[tuple[str, float, list[float] | None, str]] = []
    for i, row in enumerate(rows):
        for d, cell in zip(datasets, row["datasets"], strict=True):
            if cell["value"] is not None:
                ci = [100 * x for x in cell["ci"]] if cell["ci"] else None
                bars.append((f"{row['name']} · {d}", 100 * cell["value"], ci, color(i)))
    if not bars:
        return None
    published = [(f"{n} (published, LLM-AggreFact)", v, None, "#94a3b8") for n, v in PUBLISHED_GROUNDING]
    items = bars + published
    names = [label(it[0], 60) for it in items]
    left = _label_column(names)
    top, height = 12.0, 22 * len(items) + 8
    c = Canvas(max(left + 440, 560), top + height + 44, "grounding balanced accuracy with published figures for context")  # fmt: skip
    ax = Axes(c, left, top, c.width - left - 16, height, (0.0, 105.0), _rows(len(items)))
    ticks = nice_ticks(0, 100, 5)
    ax.xgrid(ticks)
    for i, (_name, value, ci, col) in enumerate(items):
        y = len(items) - 1 - i
        ax.hbar(y, 0.0, value, 0.6, col)
        if ci:
            ax.hspan(y, ci[0], ci[1], "#0f172a", 1.2)
        c.text(ax.sx(max(value, ci[1] if ci else value) + 0.8), ax.sy(y), f"{value:.1f}", size=FONT - 2)
    ax.vline(50, GREY, dash="2 3")
    ax.frame()
    ax.xticks(ticks)
    ax.yticks([len(items) - 1 - i for i in range(len(items))], names)
    ax.xlabel("balanced accuracy (%) — 50 is chance")
    return c.render()


def comparison_chart(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """Paired differences (A − B) in verdict and claim accuracy with their 95% CIs."""
    rows = [r for r in rows if r.get("cases")]
    if not rows:
        return None
    names = [label(f"{r['a']} vs {r['b']}", 70) for r in rows]
    left = _label_column(names)
    panel, gap, top, height = 260.0, 24.0, 30.0, ROW * len(rows) + 8
    c = Canvas(left + 2 * panel + gap + 8, top + height + 44, "paired differences between variants")
    panels = (("verdict_accuracy_diff", "verdict accuracy A − B"), ("claim_accuracy_diff", "claim accuracy A − B"))
    for k, (key, title) in enumerate(panels):
        reach = [100 * abs(x) for r in rows for x in [r.get(key) or 0, *(r.get(f"{key}_ci") or [])]]
        lim = max([*reach, 1.0]) * 1.15
        ax = Axes(c, left + k * (panel + gap), top, panel, height, (-lim, lim), _rows(len(rows)))
        ticks = nice_ticks(-lim, lim, 5)
        ax.xgrid(ticks)
        ax.vline(0, "#0f172a", 0.8)
        ax.frame()
        ax.xticks(ticks)
        ax.title(title)
        ax.xlabel("percentage points")
        if k == 0:
            ax.yticks([len(rows) - 1 - i for i in range(len(rows))], names)
        for i, r in enumerate(rows):
            value, ci = r.get(key), r.get(f"{key}_ci")
            if value is None:
                continue
            value, ci = 100 * value, [100 * x for x in ci] if ci else None
            sig = ci is not None and (ci[0] > 0 or ci[1] < 0)
            col = GREEN if sig and value > 0 else RED if sig else GREY
            y = len(rows) - 1 - i
            if ci:
                ax.hspan(y, ci[0], ci[1], col, opacity="0.6")
            ax.point(value, y, col, 4)
    return c.render()


def reliability_chart(variants: Sequence[Mapping[str, Any]]) -> str | None:
    """Reliability diagram: per score bin, the mean groundedness score against how often PASS was right."""
    rows = [(i, v) for i, v in enumerate(variants) if (v.get("calibration") or {}).get("bins")]
    if not rows:
        return None
    legend = [("perfectly calibrated", GREY)] + [(label(v["name"], 40), color(i)) for i, v in rows]
    legend_h = 16 * ((len(legend) + 1) // 2)
    left, top, size = 60.0, 16.0 + legend_h + 8, 280.0
    c = Canvas(max(left + size + 20, 2 * (max(text_width(n, FONT - 1) for n, _ in legend) + 40) + left), top + size + 44, "reliability diagram of the groundedness score")  # fmt: skip
    ax = Axes(c, left, top, size, size, (0.0, 1.0), (0.0, 1.02))
    ticks = nice_ticks(0, 1, 5)
    ax.xgrid(ticks)
    ax.ygrid(ticks)
    ax.frame()
    ax.xticks(ticks)
    ax.yticks(ticks)
    c.line(ax.sx(0), ax.sy(0), ax.sx(1), ax.sy(1), GREY, 1.0, stroke_dasharray="2 3")
    for i, v in rows:
        bins = v["calibration"]["bins"]
        ax.lines([(b["mean_score"], b["pass_right"]) for b in bins], color(i), r=2.5)
    ax.xlabel("groundedness score (bin mean)")
    ax.ylabel("share where PASS is the right verdict")
    c.legend(legend, left - 40, 14, columns=2)
    return c.render()
