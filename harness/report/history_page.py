"""The trend page of a metric over recorded runs: one point per run with its CI, the alert rule's alarms marked,
as a self-contained HTML page with an inline SVG chart.

Every value (commit, branch, variant and run names come from users' repositories) is escaped: by jinja2's
autoescaping in the page and by `svg.esc` in the chart. The page runs no script and loads nothing: its
Content-Security-Policy allows inline styles only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.history.alert import AlertResult
from harness.history.ops import Point
from harness.report.render import environment
from harness.report.svg import MUTED, Axes, Canvas, nice_ticks, tick_text

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; base-uri 'none'; form-action 'none'"
LINE, ALARM, BAND = "#2563eb", "#dc2626", "#93c5fd"


def chart(points: Sequence[Point], metric: str, alarms: set[int]) -> str:
    """Value and CI per recorded run, in order; runs where the alert rule fired drawn in red."""
    shown = [(i, p.value, p.ci) for i, p in enumerate(points) if p.value is not None]
    lows = [ci[0] if ci else value for _, value, ci in shown] or [0.0]
    highs = [ci[1] if ci else value for _, value, ci in shown] or [1.0]
    ticks = nice_ticks(min(lows), max(highs))
    canvas = Canvas(760, 360, f"{metric} over {len(points)} recorded runs, with 95% intervals")
    y_range = (min(ticks[0], min(lows)), max(ticks[-1], max(highs)))  # every interval inside the plot
    ax = Axes(canvas, 70, 40, 660, 250, (-0.5, max(len(points) - 0.5, 0.5)), y_range)
    ax.ygrid(ticks)
    ax.frame()
    ax.yticks(ticks, [tick_text(t) for t in ticks])
    step = max(1, len(points) // 12)
    xs = list(range(0, len(points), step))
    ax.xticks([float(x) for x in xs], [str(x + 1) for x in xs])
    ax.title(f"{metric} by recorded run")
    ax.xlabel("recorded run (oldest first)")
    for i, _, ci in shown:
        if ci:
            canvas.line(ax.sx(i), ax.sy(ci[0]), ax.sx(i), ax.sy(ci[1]), BAND, 3, stroke_linecap="round")
    canvas.polyline([(ax.sx(i), ax.sy(value)) for i, value, _ in shown], LINE, 1.5)
    for i, value, _ in shown:
        ax.point(i, value, ALARM if i in alarms else LINE)
    canvas.legend([("value", LINE), ("95% CI", BAND), ("alert", ALARM)], 70, 340)
    canvas.text(730, 340, f"{len(points)} runs", anchor="end", color=MUTED)
    return canvas.render()


def render_trend(points: Sequence[Point], metric: str, store: str, alert: AlertResult | None) -> str:
    alarms = {look.index for look in alert.looks if look.alarm} if alert else set()
    return environment().get_template("history_trend.html.j2").render(
        csp=CSP, metric=metric, store=store, points=list(enumerate(points)), chart=chart(points, metric, alarms),
        alert=alert, alarms=alarms,
    )  # fmt: skip


def write_trend(path: Path, points: Sequence[Point], metric: str, store: str, alert: AlertResult | None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_trend(points, metric, store, alert), encoding="utf-8")
    return path
