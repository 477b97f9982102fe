"""A small SVG plotting kit for the report's charts: a canvas, axes on a pixel box, marks, ticks and legends.

The charts are few and simple (dots with intervals, bars, lines), so they are
written as SVG text here rather than drawn by a plotting library: the report
then imports nothing heavy. Every piece of text and every attribute value is
escaped (`esc`), so a variant name is shown as text, never read as markup.
Text widths are estimated from the character count (`text_width`), enough to
lay out label columns without a font.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

FONT = 11
CHAR = 0.64  # mean glyph width of a sans-serif face, in font sizes
INK, MUTED, AXIS, GRID = "#334155", "#475569", "#94a3b8", "#e2e8f0"
FONTS = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif"


def esc(value: object) -> str:
    """Text or an attribute value safe inside SVG: `<`, `>`, `&` and both quotes escaped."""
    return escape(str(value), quote=True)


def text_width(text: str, size: float = FONT) -> float:
    return len(text) * size * CHAR


def clip(text: object, limit: int = 48) -> str:
    """A label of at most `limit` characters (a longer one ends in `…`)."""
    value = str(text)
    return value if len(value) <= limit else value[: limit - 1] + "…"


def nice_ticks(low: float, high: float, most: int = 6) -> list[float]:
    """Round tick values covering [low, high]: steps of 1, 2, 2.5 or 5 times a power of ten, at most ~`most`."""
    span = high - low
    if span <= 0 or not math.isfinite(span):
        return [low]
    raw = span / most
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw - 1e-12)
    first = math.ceil(low / step - 1e-9)
    count = math.floor(high / step + 1e-9) - first + 1
    return [round((first + i) * step, 10) for i in range(max(count, 1))]


def tick_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _attrs(attrs: dict[str, object]) -> str:
    return "".join(f' {k.rstrip("_").replace("_", "-")}="{esc(v)}"' for k, v in attrs.items() if v is not None)


def _n(value: float) -> str:
    """A coordinate with two decimals at most (compact, and stable across runs)."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


@dataclass
class Canvas:
    """An SVG document being drawn: its size, its accessible name, and its elements in paint order."""

    width: float
    height: float
    alt: str
    parts: list[str] = field(default_factory=list)

    def element(self, tag: str, body: str | None = None, /, **attrs: object) -> None:
        head = f"<{tag}{_attrs(attrs)}"
        self.parts.append(f"{head}/>" if body is None else f"{head}>{esc(body)}</{tag}>")

    def text(
        self, x: float, y: float, body: str, *, anchor: str = "start", size: float = FONT, color: str = INK,
        weight: str | None = None, rotate: float | None = None, baseline: str = "middle",
    ) -> None:  # fmt: skip
        transform = f"rotate({_n(rotate)} {_n(x)} {_n(y)})" if rotate else None
        self.element(
            "text", body, x=_n(x), y=_n(y), text_anchor=anchor, dominant_baseline=baseline, font_size=_n(size),
            fill=color, font_weight=weight, transform=transform,
        )  # fmt: skip

    def line(
        self, x1: float, y1: float, x2: float, y2: float, color: str, width: float = 1.0, /, **extra: object
    ) -> None:
        self.element("line", x1=_n(x1), y1=_n(y1), x2=_n(x2), y2=_n(y2), stroke=color, stroke_width=_n(width), **extra)

    def rect(self, x: float, y: float, w: float, h: float, color: str, /, **extra: object) -> None:
        self.element("rect", x=_n(x), y=_n(y), width=_n(max(w, 0.0)), height=_n(max(h, 0.0)), fill=color, **extra)

    def circle(self, x: float, y: float, r: float, color: str) -> None:
        self.element("circle", cx=_n(x), cy=_n(y), r=_n(r), fill=color)

    def polyline(
        self, points: Sequence[tuple[float, float]], color: str, width: float = 1.8, /, **extra: object
    ) -> None:
        coords = " ".join(f"{_n(x)},{_n(y)}" for x, y in points)
        self.element("polyline", points=coords, fill="none", stroke=color, stroke_width=_n(width), **extra)

    def legend(self, items: Sequence[tuple[str, str]], x: float, y: float, *, columns: int = 0) -> float:
        """Swatches with their names from (x, y), in rows of `columns` (0: one row); returns the height used."""
        per_row = columns or len(items) or 1
        widths = [22 + text_width(name, FONT - 1) + 14 for name, _ in items]
        col_w = max(widths, default=0.0)
        for i, (name, color) in enumerate(items):
            row, col = divmod(i, per_row)
            left = x + (col * col_w if columns else sum(widths[:i]))
            top = y + row * 16
            self.rect(left, top - 5, 14, 10, color)
            self.text(left + 19, top, name, size=FONT - 1)
        return 16 * math.ceil(len(items) / per_row)

    def render(self) -> str:
        """The SVG element, with no prolog, comment or id: several live in one page and scale with their box."""
        head = (
            f'<svg role="img" aria-label="{esc(self.alt)}" class="chart" xmlns="http://www.w3.org/2000/svg" '
            f'viewBox="0 0 {_n(self.width)} {_n(self.height)}" width="{_n(self.width)}" height="{_n(self.height)}" '
            f'font-family="{esc(FONTS)}" font-size="{FONT}">'
        )
        return head + "".join(self.parts) + "</svg>"


@dataclass
class Axes:
    """A plot area of `canvas`: the pixel box (left, top, width, height) showing the data box `x` × `y`."""

    canvas: Canvas
    left: float
    top: float
    width: float
    height: float
    x: tuple[float, float]
    y: tuple[float, float]

    def sx(self, value: float) -> float:
        lo, hi = self.x
        return self.left + (value - lo) / ((hi - lo) or 1.0) * self.width

    def sy(self, value: float) -> float:
        lo, hi = self.y
        return self.top + self.height - (value - lo) / ((hi - lo) or 1.0) * self.height

    @property
    def bottom(self) -> float:
        return self.top + self.height

    def frame(self) -> None:
        """The left and bottom spines (the top and right are left open)."""
        c = self.canvas
        c.line(self.left, self.top, self.left, self.bottom, AXIS)
        c.line(self.left, self.bottom, self.left + self.width, self.bottom, AXIS)

    def xgrid(self, ticks: Sequence[float]) -> None:
        for t in ticks:
            self.canvas.line(self.sx(t), self.top, self.sx(t), self.bottom, GRID)

    def ygrid(self, ticks: Sequence[float]) -> None:
        for t in ticks:
            self.canvas.line(self.left, self.sy(t), self.left + self.width, self.sy(t), GRID)

    def xticks(self, ticks: Sequence[float], labels: Sequence[str] | None = None, rotate: float = 0) -> None:
        names = labels if labels is not None else [tick_text(t) for t in ticks]
        for t, name in zip(ticks, names, strict=True):
            x = self.sx(t)
            self.canvas.line(x, self.bottom, x, self.bottom + 4, AXIS)
            if rotate:
                self.canvas.text(x + 3, self.bottom + 10, name, anchor="end", color=MUTED, rotate=rotate, size=FONT - 1)
            else:
                self.canvas.text(x, self.bottom + 14, name, anchor="middle", color=MUTED, size=FONT - 1)

    def yticks(self, ticks: Sequence[float], labels: Sequence[str] | None = None) -> None:
        names = labels if labels is not None else [tick_text(t) for t in ticks]
        for t, name in zip(ticks, names, strict=True):
            y = self.sy(t)
            self.canvas.line(self.left - 4, y, self.left, y, AXIS)
            self.canvas.text(self.left - 7, y, name, anchor="end", color=MUTED, size=FONT - 1)

    def title(self, text: str) -> None:
        self.canvas.text(self.left + self.width / 2, self.top - 12, text, anchor="middle", weight="bold", size=FONT + 1)

    def xlabel(self, text: str, below: float = 32) -> None:
        self.canvas.text(self.left + self.width / 2, self.bottom + below, text, anchor="middle")

    def ylabel(self, text: str) -> None:
        x, y = self.left - 40, self.top + self.height / 2
        self.canvas.text(x, y, text, anchor="middle", rotate=-90)

    def point(self, x: float, y: float, color: str, r: float = 3.5) -> None:
        self.canvas.circle(self.sx(x), self.sy(y), r, color)

    def hspan(self, y: float, x0: float, x1: float, color: str, width: float = 2.4, /, **extra: object) -> None:
        """A horizontal segment at data height `y` (an interval)."""
        self.canvas.line(
            self.sx(x0), self.sy(y), self.sx(x1), self.sy(y), color, width, stroke_linecap="round", **extra
        )

    def vline(self, x: float, color: str, width: float = 1.0, dash: str | None = None) -> None:
        self.canvas.line(self.sx(x), self.top, self.sx(x), self.bottom, color, width, stroke_dasharray=dash)

    def hbar(self, y: float, x0: float, x1: float, thickness: float, color: str) -> None:
        """A horizontal bar from x0 to x1 centred on `y`, `thickness` in data units of y."""
        half = abs(self.sy(0) - self.sy(thickness)) / 2
        self.canvas.rect(self.sx(min(x0, x1)), self.sy(y) - half, abs(self.sx(x1) - self.sx(x0)), 2 * half, color)

    def vbar(self, x: float, y0: float, y1: float, thickness: float, color: str, name: str | None = None) -> None:
        """A vertical bar from y0 to y1 centred on `x`, `thickness` in data units of x; `name` its tooltip."""
        half = abs(self.sx(thickness) - self.sx(0)) / 2
        top, bottom = self.sy(max(y0, y1)), self.sy(min(y0, y1))
        before = len(self.canvas.parts)
        self.canvas.rect(self.sx(x) - half, top, 2 * half, bottom - top, color)
        if name is not None:  # <rect ...><title>name</title></rect>
            rect = self.canvas.parts[before]
            self.canvas.parts[before] = rect[:-2] + f"><title>{esc(name)}</title></rect>"

    def lines(self, points: Sequence[tuple[float, float]], color: str, r: float = 3.0, **extra: object) -> None:
        """A line through the points, each marked with a dot."""
        self.canvas.polyline([(self.sx(x), self.sy(y)) for x, y in points], color, **extra)
        for x, y in points:
            self.point(x, y, color, r)
