"""`render_run`: a finished run folder (or several) in, a self-contained report.html and summary.md out.

The page is one file: CSS and JS inline, charts as inline SVG, case data in a
JSON script block written with `|tojson`, and a Content-Security-Policy that
allows no request to any host and only the page's own script (by hash).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import uuid
from collections.abc import Iterator, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import (
    BytecodeCache,
    Environment,
    FileSystemBytecodeCache,
    PackageLoader,
    StrictUndefined,
    select_autoescape,
)
from markupsafe import Markup

from harness.report.analyses import in_sentence
from harness.report.context import build_context
from harness.report.load import (
    LoadedRun,
    ReportError,
    load_runs,
    load_scored,
    write_case_views,
)
from harness.report.prices import PriceTable, load_prices
from harness.report.select import DEFAULT_LIMIT
from harness.run.folder import CASE_VIEWS_FILE, CERTIFICATE_HTML, MARKDOWN_FILE, REPORT_FILE, write_lines, write_text
from harness.run.log import Manifest
from harness.score.certificate import policy_tally
from harness.score.registry import MetricSpec
from harness.score.summary_model import Summary
from harness.score.wording import ci_label, p_text
from harness.score.wording import pp_text as pp


def pct(value: Any, digits: int = 1) -> str:
    return "n/a" if value is None else f"{100 * value:.{digits}f}%"


def num(value: Any, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.{digits}f}"


def ci(value: Any, percent: bool = True) -> str:
    if not value:
        return ""
    low, high = value
    return f"[{100 * low:.1f}, {100 * high:.1f}]" if percent else f"[{low:.3f}, {high:.3f}]"


def pval(value: Any) -> str:
    return p_text(value)


def pp_ci(value: Any) -> str:
    if not value:
        return ""
    return f"[{100 * value[0] + 0.0:+.1f}, {100 * value[1] + 0.0:+.1f}]"


def figure(value: Any, m: MetricSpec) -> str:
    """A metric's value as the report shows it: a percentage for a percent metric, else a number."""
    return pct(value) if m.percent else num(value)


def delta(diff: Mapping[str, Any], m: MetricSpec) -> str:
    """A candidate − control difference and its CI (`diff`, `diff_ci`): points for a percent metric, else numbers."""
    if m.percent:
        return f"{pp(diff.get('diff'))} {pp_ci(diff.get('diff_ci'))}"
    return f"{num(diff.get('diff'))} {ci(diff.get('diff_ci'), False)}"


def short(value: Any, n: int = 12) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= n + 3 else text[:n] + "…"


_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_{}[]()#+!|<>~"})


def md(value: Any) -> str:
    """Text safe inside a markdown table cell: markdown and HTML specials escaped, no line breaks."""
    text = "" if value is None else str(value)
    text = text.replace("&", "&amp;").replace("\r", " ").replace("\n", " ")
    return text.translate(_MD_SPECIAL)


def environment() -> Environment:
    """The report's templates; compiled once per machine, not once per run (`_bytecode_cache`)."""
    env = Environment(
        loader=PackageLoader("harness.report", "templates"),
        bytecode_cache=_bytecode_cache(),
        autoescape=select_autoescape(enabled_extensions=("html", "html.j2"), default_for_string=True, default=False),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        pct=pct,
        num=num,
        ci=ci,
        pval=pval,
        short=short,
        md=md,
        pp=pp,
        pp_ci=pp_ci,
        in_sentence=in_sentence,
        figure=figure,
        delta=delta,
        ci_label=ci_label,
    )
    env.globals["policy_tally"] = policy_tally
    return env


@functools.cache
def _bytecode_cache() -> BytecodeCache | None:
    """jinja2's per-user bytecode cache (a private folder under the temp dir, keyed by the template's source).

    Compiling the report's templates anew was a large part of every `vbench run`'s report; a machine without a
    usable temp dir compiles as before.
    """
    try:
        return FileSystemBytecodeCache()
    except (OSError, RuntimeError):
        return None


def asset(name: str) -> str:
    return resources.files("harness.report").joinpath("templates", name).read_text(encoding="utf-8")


def csp(script: str) -> str:
    """No request to any host; only the page's own inline script (by its hash) runs."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    return (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )


def render_html(context: dict[str, Any]) -> str:
    return "".join(_html_parts(context))


def write_html(context: dict[str, Any], path: Path) -> None:
    """The page written as the template yields it: never held whole in memory."""
    write_lines(path.parent, path.name, _html_parts(context))


def _html_parts(context: dict[str, Any]) -> Iterator[str]:
    """The page as the template yields it, the embedded data (`casedata.EmbeddedJSON`) written piece by piece."""
    data = context["data"]
    mark = f"report-data-{uuid.uuid4().hex}"  # where the block goes; unguessable, so no case or reply can hold it
    for chunk in _template_parts({**context, "data": Markup(mark)}):  # noqa: S704 - our own mark
        if mark in chunk:
            before, after = chunk.split(mark, 1)
            yield before
            yield from data.pieces()
            yield after
        else:
            yield chunk


def _template_parts(context: dict[str, Any]) -> Iterator[str]:
    script = asset("report.js")
    if "</script" in script.lower():
        raise ValueError("report.js must not contain a closing script tag")
    env = environment()
    template = env.get_template("report.html.j2")
    figures: dict[str, Any] = {k: (Markup(v) if isinstance(v, str) else v) for k, v in context["figures"].items()}  # noqa: S704
    return template.generate(
        **{**context, "figures": figures},
        css=Markup(asset("report.css")),  # noqa: S704 - our own stylesheet
        js=Markup(script),  # noqa: S704 - our own script
        csp=csp(script),
    )


def render_markdown(context: dict[str, Any]) -> str:
    return environment().get_template("summary.md.j2").render(**context)


def render_run(
    run_dirs: Sequence[Path],
    out_dir: Path,
    *,
    prices: PriceTable | None = None,
    limit: int = DEFAULT_LIMIT,
    rescore: bool = False,
    agreement: dict[str, Any] | None = None,
    estimate: dict[str, Any] | None = None,
) -> Path:
    """Write report.html and summary.md for the given run folders into `out_dir`; return the report's path.
    `agreement`: the agreement section's data (`agreement_view.agreement_section`), shown when given; `estimate`:
    the estimate section's (`estimate_view.estimate_section`), likewise.

    A report that cannot be written is a `ReportError` naming the file, never a silent skip."""
    runs = load_runs([Path(d) for d in run_dirs], limit=limit, rescore=rescore)
    return write_report(runs, out_dir, prices, agreement, estimate)


def render_scored(
    run_dir: Path,
    summary: Summary,
    out_dir: Path | None = None,
    *,
    manifest: Manifest | None = None,
    prices: PriceTable | None = None,
    limit: int = DEFAULT_LIMIT,
    agreement: dict[str, Any] | None = None,
) -> Path:
    """The report of a run just scored, written into `out_dir` (default: the run folder); returns its path.

    `summary` is the scorer's, in memory: summary.json is not read back, nothing is
    scored again, and results.jsonl is read once for the per-result tables and the drill-down. `manifest`: the
    run's, when the caller holds it. The views of the drill-down's cases the page used are kept in the run folder
    (`run.folder.CASE_VIEWS_FILE`) for `vbench report` to use in turn. Errors as `render_run`."""
    run = load_scored(Path(run_dir), summary, manifest, limit)
    try:
        write_case_views(Path(run_dir), run.cases)
    except OSError as exc:
        raise ReportError(f"{Path(run_dir) / CASE_VIEWS_FILE}: could not be written ({exc.strerror or exc})") from exc
    return write_report([run], Path(out_dir) if out_dir is not None else Path(run_dir), prices, agreement)


def write_report(
    runs: Sequence[LoadedRun],
    out_dir: Path,
    prices: PriceTable | None,
    agreement: dict[str, Any] | None,
    estimate: dict[str, Any] | None = None,
) -> Path:
    """report.html and summary.md of the loaded runs in `out_dir`; a file that cannot be written is a `ReportError`."""
    context = build_context(runs, load_prices(None) if prices is None else prices)
    context["agreement"] = agreement
    context["estimate"] = estimate
    out_dir = Path(out_dir)
    report = out_dir / REPORT_FILE
    target = out_dir
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for cert in context["signoff"]["certifications"]:
            page = Path(cert["run_dir"]) / CERTIFICATE_HTML
            cert["certificate_href"] = os.path.relpath(page, out_dir) if page.exists() else None
        target = report
        write_html(context, report)
        target = out_dir / MARKDOWN_FILE
        write_text(out_dir, MARKDOWN_FILE, render_markdown(context))
    except OSError as exc:
        raise ReportError(f"{target}: the report could not be written ({exc.strerror or exc})") from exc
    return report
