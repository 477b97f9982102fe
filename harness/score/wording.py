"""How fractions and p-values are shown to people: one wording for console, reports and decisions."""

from __future__ import annotations


def pp_text(value: float | None, sign: bool = True) -> str:
    """A fraction shown in percentage points, the unit of every difference a person reads ('+5.0 pp')."""
    if value is None:
        return "n/a"
    return f"{value * 100 + 0.0:+.1f} pp" if sign else f"{value * 100 + 0.0:.1f} pp"


def p_text(p: float | None) -> str:
    """p as every display shows it (console, report, markdown): three decimals, '< 0.001' below (never '0.0')."""
    if p is None:
        return "n/a"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def format_p(p: float | None) -> str:
    """'p' followed by this: '= 0.042' or '< 0.001'."""
    text = p_text(p)
    return text if text.startswith("<") or text == "n/a" else f"= {text}"


def ci_label(alpha: float | None) -> str:
    """An interval's name from the level it was made at: "95% CI" at alpha 0.05, "96.1% CI" at a stop-early run's
    last-look level 0.039."""
    return f"{100 * (1 - (0.05 if alpha is None else alpha)):.3g}% CI"
