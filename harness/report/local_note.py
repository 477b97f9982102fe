"""The closing note of a local llama.cpp run (`nox -s local-llm`): the figures a reader of that run wants first.

Markdown built from the run's summary.json and, when there is one, the llama.cpp server log. Pure; the
devtools (`python -m harness.devtools.local_llm note RUN_DIR`) read the files and write `closing-note.md`.
"""

from __future__ import annotations

import re

from harness.score.registry import MetricSpec, metrics
from harness.score.summary_model import Summary

_PERF = re.compile(r"(prompt eval|\s eval) time =\s*([\d.]+) ms /\s*(\d+) (?:tokens|runs)")


def server_figures(log_text: str) -> dict[str, float]:
    """Throughput from llama.cpp's `llama_perf_context_print` lines, and the HTTP 500s the server answered."""
    totals = {"prompt eval": [0.0, 0], "eval": [0.0, 0]}
    for kind, ms, count in _PERF.findall(log_text):
        entry = totals[kind.strip()]
        entry[0] += float(ms)
        entry[1] += int(count)
    figures: dict[str, float] = {"http_500": float(len(re.findall(r'" 500 ', log_text)))}
    for kind, key in (("prompt eval", "prompt_tok_s"), ("eval", "gen_tok_s")):
        ms, count = totals[kind]
        if ms > 0:
            figures[key] = count / (ms / 1000)
    return figures


def _pct(value: object) -> str:
    return f"{value:.0%}" if isinstance(value, int | float) else "n/a"


def _figure(m: MetricSpec, value: object) -> str:
    if not m.percent:
        return f"{value:.3f}" if isinstance(value, int | float) else "n/a"
    return _pct(value)


def closing_note(summary: Summary, log_text: str = "") -> str:
    """Markdown: every variant's figures side by side (the reference first), invalid-reply reasons, throughput.

    The figures are the registry's closing-note metrics (`notes`): the columns summary.md shows."""
    rows = sorted(summary.variants, key=lambda v: v.model != "reference")
    shown = [m for m in metrics() if m.notes]
    lines = [
        "## Local LLM: closing note",
        "",
        "| variant | cases | errors |" + "".join(f" {m.column} |" for m in shown)
        + " invalid replies | reasons | mean latency |",
        "| --- | ---: | ---: |" + " ---: |" * len(shown) + " ---: | --- | ---: |",
    ]  # fmt: skip
    for v in rows:
        reason_text = ", ".join(f"{k} x{n}" for k, n in sorted(v.invalid_reasons.items()))
        mean_ms = v.latency_ms.get("mean")
        mean_s = "n/a" if not mean_ms else f"{mean_ms / 1000:.1f} s" if mean_ms >= 1000 else f"{mean_ms:.0f} ms"
        cells = "".join(f" {_figure(m, v.figure(m.key))} |" for m in shown)
        lines.append(
            f"| {v.name} | {v.quality_cases} | {v.errors} |{cells}"
            f" {_pct(v.figure('invalid_reply_rate'))} | {reason_text or '-'} | {mean_s} |"
        )
    if log_text:
        figures = server_figures(log_text)
        speed = ", ".join(
            f"{label} {figures[key]:.0f} tok/s"
            for key, label in (("prompt_tok_s", "prompt eval"), ("gen_tok_s", "generation"))
            if key in figures
        )
        lines += ["", f"Server: {speed or 'no timings logged'}; HTTP 500 answers: {int(figures['http_500'])}"]
        lines.append(
            "(llama-cpp-python answers `response_format: json_schema` with HTTP 500; one 500 per run means the"
            " client's step down to `json_object` + schema was remembered, not paid per case.)"
        )
    return "\n".join(lines) + "\n"
