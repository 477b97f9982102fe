"""Charts as inline SVG (matplotlib, Agg): pure functions from analysis rows to SVG text.

Text is written as SVG `<text>` (matplotlib escapes `<`, `>`, `&`); labels are
class names, verdicts and variant names, with `$` escaped so a name is never
read as mathtext. Element ids are prefixed per figure so several SVGs can
live in one page.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

from harness.report.analyses import PUBLISHED_GROUNDING, headline_metrics

PALETTE = ["#2563eb", "#d97706", "#059669", "#dc2626", "#7c3aed", "#0891b2", "#be185d", "#4d7c0f", "#9a3412", "#475569"]
RC: Any = {
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Liberation Sans", "Arial", "Helvetica"],
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.edgecolor": "#94a3b8",
    "axes.labelcolor": "#334155",
    "xtick.color": "#475569",
    "ytick.color": "#475569",
}
_ROOT = re.compile(r"<svg\b[^>]*>")
_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(url\(#|xlink:href="#|href="#)([^)"]+)')


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def label(text: Any, limit: int = 48) -> str:
    """A label safe for matplotlib: `$` escaped (no mathtext), long names shortened."""
    value = str(text)
    if len(value) > limit:
        value = value[: limit - 1] + "…"
    return value.replace("$", r"\$")


def to_svg(fig: Any, name: str, alt: str) -> str:
    """The figure as inline SVG: no prolog, ids prefixed by `name`, scaling with its container."""
    buf = io.StringIO()
    with plt.rc_context({**RC, "svg.hashsalt": name}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.DOTALL)
    text = _ID.sub(lambda m: f'id="{name}-{m.group(1)}"', text)
    text = _REF.sub(lambda m: f"{m.group(1)}{name}-{m.group(2)}", text)
    root = _ROOT.search(text)
    assert root is not None
    tag = root.group(0).replace("<svg", f'<svg role="img" aria-label="{_attr(alt)}" class="chart"', 1)
    return text[: root.start()] + tag + text[root.end() :]


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def headline_chart(variants: Sequence[Mapping[str, Any]]) -> str:
    """Each headline metric with its 95% CI, one panel per metric, one row per variant."""
    names = [v["name"] for v in variants]
    shown = headline_metrics()
    with plt.rc_context(RC):
        fig, axes = plt.subplots(1, len(shown), figsize=(2.3 * len(shown) + 1.6, 0.42 * len(names) + 1.0), sharey=True)
        for ax, metric in zip(np.atleast_1d(axes), shown, strict=True):
            for i, v in enumerate(variants):
                value, ci = v.get(metric.key), v.get(f"{metric.key}_ci")
                if value is None:
                    continue
                y = len(names) - 1 - i
                if ci:
                    ax.plot(ci, [y, y], color=color(i), lw=2.2, solid_capstyle="round", alpha=0.6)
                ax.plot([value], [y], "o", color=color(i), ms=6)
                ax.annotate(
                    f"{value:.2f}", (value, y), xytext=(0, 6), textcoords="offset points", ha="center", fontsize=7.5
                )
            ax.set_xlim(0, 1.02)
            ax.set_title(label(metric.label) + ("  ↓" if not metric.higher_is_better else ""))
            ax.grid(axis="x", color="#e2e8f0")
            ax.set_ylim(-0.6, len(names) - 0.4)
        first = np.atleast_1d(axes)[0]
        first.set_yticks(range(len(names)), [label(n, 40) for n in reversed(names)])
        fig.tight_layout()
    return to_svg(fig, "headline", "headline metrics per variant with 95% confidence intervals")


def per_class_chart(variants: Sequence[Mapping[str, Any]], classes: Sequence[str]) -> str | None:
    """Precision and recall of each derivability class, bars grouped by variant."""
    if not any(v.get("per_class") for v in variants):
        return None
    x = np.arange(len(classes))
    width = 0.8 / max(1, len(variants))
    with plt.rc_context(RC):
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.2), sharey=True)
        for ax, key in zip(axes, ("precision", "recall"), strict=True):
            for i, v in enumerate(variants):
                per = v.get("per_class") or {}
                values = [(per.get(c) or {}).get(key, 0.0) for c in classes]
                ax.bar(x + i * width - 0.4 + width / 2, values, width, color=color(i), label=label(v["name"], 40))
            ax.set_xticks(x, [label(c.replace("_", " "), 20) for c in classes], rotation=25, ha="right")
            ax.set_ylim(0, 1.05)
            ax.set_title(key)
            ax.grid(axis="y", color="#e2e8f0")
        axes[1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False, fontsize=8)
        fig.tight_layout()
    return to_svg(fig, "perclass", "per-class precision and recall")


def stability_chart(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """Stable right / flaky / stable wrong cases per variant, stacked."""
    rows = [r for r in rows if r.get("stability")]
    if not rows:
        return None
    parts = (
        ("stable_right", "stable right", "#16a34a"),
        ("flaky", "flaky", "#f59e0b"),
        ("stable_wrong", "stable wrong", "#dc2626"),
    )
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(6, 0.45 * len(rows) + 1.1))
        left = np.zeros(len(rows))
        y = np.arange(len(rows))[::-1]
        for key, name, col in parts:
            values = np.array([r["stability"][key] for r in rows], dtype=float)
            ax.barh(y, values, left=left, color=col, label=name, height=0.6)
            left += values
        ax.set_yticks(y, [label(r["name"], 40) for r in rows])
        ax.set_xlabel("cases")
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False)
        fig.tight_layout()
    return to_svg(fig, "stability", "cases whose verdict was stable or flaky across epochs")  # fmt: skip


def epoch_chart(per_epoch: Mapping[str, Sequence[tuple[int, float, int]]], order: Sequence[str]) -> str | None:
    """Verdict accuracy per epoch, one line per variant (only with several epochs)."""
    if not any(len(v) > 1 for v in per_epoch.values()):
        return None
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(6, 2.8))
        for i, name in enumerate(order):
            points = per_epoch.get(name) or []
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], "o-", color=color(i), label=label(name, 40))
        ax.set_xlabel("epoch")
        ax.set_ylabel("verdict accuracy")
        ax.set_ylim(0, 1.02)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(color="#e2e8f0")
        ax.legend(frameon=False, fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2)
        fig.tight_layout()
    return to_svg(fig, "epochs", "verdict accuracy per epoch")


def latency_chart(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """Median and 95th-percentile verifier latency per variant (cached replies left out)."""
    rows = [r for r in rows if (r.get("latency") or {}).get("p50") is not None]
    if not rows:
        return None
    y = np.arange(len(rows))[::-1]
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.0))
        ax.barh(y, [r["latency"]["p95"] for r in rows], color="#cbd5e1", height=0.6, label="p95")
        ax.barh(
            y,
            [r["latency"]["p50"] for r in rows],
            color=[color(i) for i in range(len(rows))],
            height=0.35,
            label="median",
        )
        ax.set_yticks(y, [label(r["name"], 40) for r in rows])
        ax.set_xlabel("latency per result (ms)")
        # above the axes, never over the bars
        ax.legend(frameon=False, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2)
        fig.tight_layout()
    return to_svg(fig, "latency", "verifier latency per variant")  # fmt: skip


def grounding_chart(grounding: Mapping[str, Any]) -> str | None:
    """Grounding balanced accuracy per variant and data set, beside the published LLM-AggreFact figures."""
    rows, datasets = grounding["rows"], grounding["datasets"]
    bars: list[tuple[str, float, list[float] | None, str]] = []
    for i, row in enumerate(rows):
        for d, cell in zip(datasets, row["datasets"], strict=True):
            if cell["value"] is not None:
                bars.append(
                    (
                        f"{row['name']} · {d}",
                        100 * cell["value"],
                        [100 * c for c in cell["ci"]] if cell["ci"] else None,
                        color(i),
                    )
                )
    if not bars:
        return None
    published = [(f"{n} (published, LLM-AggreFact)", v, None, "#94a3b8") for n, v in PUBLISHED_GROUNDING]
    items = bars + published
    y = np.arange(len(items))[::-1]
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(8, 0.36 * len(items) + 1.0))
        for yi, (_name, value, ci, col) in zip(y, items, strict=True):
            ax.barh(yi, value, color=col, height=0.6)
            if ci:
                ax.plot(ci, [yi, yi], color="#0f172a", lw=1.2)
            ax.text(max(value, ci[1] if ci else value) + 0.8, yi, f"{value:.1f}", va="center", fontsize=7.5)
        ax.axvline(50, color="#64748b", ls=":", lw=1)
        ax.set_yticks(y, [label(it[0], 60) for it in items])
        ax.set_xlim(0, 105)
        ax.set_xlabel("balanced accuracy (%) — 50 is chance")
        fig.tight_layout()
    return to_svg(fig, "grounding", "grounding balanced accuracy with published figures for context")  # fmt: skip


def comparison_chart(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """Paired differences (A − B) in verdict and claim accuracy with their 95% CIs."""
    rows = [r for r in rows if r.get("cases")]
    if not rows:
        return None
    y = np.arange(len(rows))[::-1]
    with plt.rc_context(RC):
        fig, axes = plt.subplots(1, 2, figsize=(10, 0.5 * len(rows) + 1.2), sharey=True)
        for ax, key, title in zip(
            axes,
            ("verdict_accuracy_diff", "claim_accuracy_diff"),
            ("verdict accuracy A − B", "claim accuracy A − B"),
            strict=True,
        ):
            for yi, r in zip(y, rows, strict=True):
                value, ci = r.get(key), r.get(f"{key}_ci")
                if value is None:
                    continue
                value, ci = 100 * value, [100 * c for c in ci] if ci else None
                sig = ci is not None and (ci[0] > 0 or ci[1] < 0)
                col = "#16a34a" if sig and value > 0 else "#dc2626" if sig else "#64748b"
                if ci:
                    ax.plot(ci, [yi, yi], color=col, lw=2.2, alpha=0.6)
                ax.plot([value], [yi], "o", color=col)
            reach = [100 * abs(x) for r in rows for x in [r.get(key) or 0, *(r.get(f"{key}_ci") or [])]]
            lim = max([*reach, 1.0]) * 1.15
            ax.set_xlim(-lim, lim)
            ax.axvline(0, color="#0f172a", lw=0.8)
            ax.set_title(title)
            ax.set_xlabel("percentage points")
            ax.grid(axis="x", color="#e2e8f0")
        axes[0].set_yticks(y, [label(f"{r['a']} vs {r['b']}", 70) for r in rows])
        fig.tight_layout()
    return to_svg(fig, "comparison", "paired differences between variants")  # fmt: skip


def reliability_chart(variants: Sequence[Mapping[str, Any]]) -> str | None:
    """Reliability diagram: per score bin, the mean groundedness score against how often PASS was right."""
    rows = [(i, v) for i, v in enumerate(variants) if (v.get("calibration") or {}).get("bins")]
    if not rows:
        return None
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(5, 4))
        ax.plot([0, 1], [0, 1], ls=":", color="#64748b", lw=1, label="perfectly calibrated")
        for i, v in rows:
            bins = v["calibration"]["bins"]
            ax.plot(
                [b["mean_score"] for b in bins], [b["pass_right"] for b in bins], "o-", color=color(i),
                label=label(v["name"], 40), markersize=4,
            )  # fmt: skip
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("groundedness score (bin mean)")
        ax.set_ylabel("share where PASS is the right verdict")
        ax.grid(color="#e2e8f0")
        ax.legend(frameon=False, fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2)
        fig.tight_layout()
    return to_svg(fig, "reliability", "reliability diagram of the groundedness score")
