"""`vbench history`: record finished runs and read the series back (list, show, tag, trend, diff, bisect).

Every subcommand names its store the same way: `--history STORE` (a folder or a SQLAlchemy URL), else `history`
in vbench.toml. A ref is `history:<run>`, `history:<tag>` or `history:<branch>` (the `history:` may be left off).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.cli import EXIT_GATE, EXIT_OK
from harness.cli.history_flags import costs_of, store_spec

if TYPE_CHECKING:
    from harness.history.record import RecordHead
    from harness.history.store import HistoryStore
# harness.history (pandas) is imported by the subcommand that runs: `vbench --help` stays light


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    hist = sub.add_parser("history", help="the run history: record runs, list, tag, trend, diff and bisect them")
    cmds = hist.add_subparsers(dest="history_command", metavar="SUBCOMMAND", required=True)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        p = cmds.add_parser(name, help=help_text)
        p.add_argument(
            "--history",
            metavar="STORE",
            help="the store: a folder or a SQLAlchemy URL (default: vbench.toml's history)",
        )
        p.add_argument(
            "--study", type=Path, help="the study file whose `history` names the store (default vbench.toml)"
        )
        return p

    p = command("record", "record a finished run folder")
    p.add_argument("run_dir", type=Path, help="a finished run folder (it holds summary.json)")
    p.add_argument("--branch", help="the git branch (default: the working directory's)")
    p.add_argument("--commit", help="the git commit (default: the working directory's HEAD)")
    p.set_defaults(handler=cmd_record)

    p = command("list", "the recorded runs, oldest first")
    p.add_argument("--branch", help="only runs of this branch")
    p.add_argument("--json", action="store_true", help="print the heads as JSON lines")
    p.set_defaults(handler=cmd_list)

    p = command("show", "one recorded run: identity, figures, tokens and cost")
    p.add_argument("ref", help="a record id, tag, run id or branch (its latest run)")
    p.add_argument("--json", action="store_true", help="print the record as JSON")
    p.set_defaults(handler=cmd_show)

    p = command("tag", "name a recorded run (a release, to serve as --anchor history:NAME)")
    p.add_argument("ref", help="the run to tag: a record id, tag, run id or branch (its latest run)")
    p.add_argument("name", help="the tag, e.g. a release (a later tag of the same name moves it)")
    p.set_defaults(handler=cmd_tag)

    p = command("trend", "a metric over the recorded runs, with each run's CI and the alert rule")
    p.add_argument("metric", help="a registered metric, e.g. unsafe_pass_rate")
    p.add_argument("--branch", help="only runs of this branch (e.g. main)")
    p.add_argument("--model", help="the variant of this model (default: each run's only or first variant)")
    p.add_argument("--html", type=Path, metavar="OUT", help="also write the trend page (HTML with an SVG chart)")
    p.add_argument("--reference-runs", type=int, default=5, help="the first N runs are the alert rule's reference")
    p.add_argument("--fail-on-alert", action="store_true", help="exit 1 when the alert rule fires")
    p.set_defaults(handler=cmd_trend)

    p = command("diff", "B against A, paired by case, through the ship decision")
    p.add_argument("a", help="the control: a record id, tag, run id or branch")
    p.add_argument("b", help="the candidate: a record id, tag, run id or branch")
    p.add_argument("--variant", help="B's variant (default: its only one)")
    p.add_argument("--json", type=Path, help="also write the decision as JSON")
    p.set_defaults(handler=cmd_diff)

    p = command("bisect", "the first recorded run where a case's outcome changed")
    p.add_argument("case_id", help="the case whose outcome is followed through the recorded runs")
    p.add_argument("--branch", help="only runs of this branch")
    p.add_argument("--model", help="the variant of this model")
    p.set_defaults(handler=cmd_bisect)


def _store(args: argparse.Namespace) -> HistoryStore:
    from harness.history.store import open_store

    return open_store(store_spec(args.history, None, args.study))


def _heads(store: HistoryStore, branch: str | None) -> list[RecordHead]:
    heads = store.heads()
    return [h for h in heads if h.branch == branch] if branch else heads


def _out() -> Console:
    return Console(width=None if Console().is_terminal else 160, emoji=False, highlight=False)


def cmd_record(args: argparse.Namespace) -> int:
    from harness.history.record import record_run_folder

    store = _store(args)
    record = record_run_folder(args.run_dir, branch=args.branch, commit=args.commit, costs=costs_of(args.run_dir))
    store.add(record)
    print(f"recorded {args.run_dir} in {store.label} as {record.head.id}")
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    store = _store(args)
    heads = _heads(store, args.branch)
    if args.json:
        for h in heads:
            print(h.model_dump_json())
        return EXIT_OK
    tags: dict[str, list[str]] = {}
    for t in store.tags():
        tags.setdefault(t.run, []).append(t.name)
    table = Table(title=f"{len(heads)} recorded runs in {escape(store.label)}")
    for col in ("id", "branch", "commit", "models", "corpus", "passed", "decisions", "tags"):
        table.add_column(col)
    for h in heads:
        table.add_row(*(escape(x) for x in (
            h.id, h.branch or "", (h.commit or "")[:12], ", ".join(h.models), h.corpus_hash[:12],
            "yes" if h.passed else "no", ", ".join(f"{k}: {v}" for k, v in h.decisions.items()),
            ", ".join(tags.get(h.id, [])),
        )))  # fmt: skip
    _out().print(table)
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    from harness.history.refs import latest

    store = _store(args)
    head = latest(store.heads(), store.tags(), args.ref)
    if args.json:
        print(head.model_dump_json(indent=2))
        return EXIT_OK
    out = _out()
    out.print(f"run {escape(head.id)} (run id {escape(head.run_id)}), recorded {escape(head.recorded_at)}")
    out.print(
        f"branch {escape(head.branch or '?')}, commit {escape(head.commit or '?')}, corpus {escape(head.corpus_hash)}"
    )
    out.print(
        f"code {escape(str(head.code_fingerprint))}, package {escape(head.package_version)}, policy {escape(json.dumps(head.policy))}"
    )
    for v in head.variants:
        out.print(
            f"[bold]{escape(v.name)}[/bold] model {escape(v.model)}, prompt {escape(str(v.prompt))} ({escape(str(v.prompt_hash))})"
        )
        for key, fig in v.figures.items():
            ci = f" [{fig.ci[0]:.4f}, {fig.ci[1]:.4f}]" if fig.ci else ""
            out.print(f"  {escape(key)}: {fig.value}{escape(ci)}")
        cost = f", cost {v.cost['total']:.4f} {v.cost['currency']}" if v.cost else ", cost unknown (no price table)"
        out.print(f"  tokens {escape(json.dumps(v.tokens))}{escape(cost)}")
    return EXIT_OK


def cmd_tag(args: argparse.Namespace) -> int:
    from harness.history.refs import latest
    from harness.history.store import Tag, check_tag_name, now_stamp

    store = _store(args)
    head = latest(store.heads(), store.tags(), args.ref)
    store.add_tag(Tag(name=check_tag_name(args.name), run=head.id, tagged_at=now_stamp()))
    print(f"tagged {head.id} as {args.name}")
    return EXIT_OK


def cmd_trend(args: argparse.Namespace) -> int:
    from harness.history.alert import AlertSettings, detect
    from harness.history.ops import ALERTABLE, trend
    from harness.history.record import HistoryError

    store = _store(args)
    points = trend(_heads(store, args.branch), args.metric, args.model)
    if not points or all(p.value is None for p in points):
        raise HistoryError(f"no recorded run holds {args.metric!r}{f' on branch {args.branch}' if args.branch else ''}")
    alert = (
        detect([(p.bad, p.units) for p in points], AlertSettings(reference_runs=args.reference_runs))
        if args.metric in ALERTABLE
        else None
    )
    alarms = {look.index for look in alert.looks if look.alarm} if alert else set()
    table = Table(title=f"{escape(args.metric)}: {len(points)} recorded runs")
    for col in ("#", "run", "branch", "commit", "value", "95% CI", "alert"):
        table.add_column(col)
    for i, p in enumerate(points):
        ci = f"[{p.ci[0]:.4f}, {p.ci[1]:.4f}]" if p.ci else "n/a"
        value = "n/a" if p.value is None else f"{p.value:.4f}"
        table.add_row(str(i + 1), escape(p.run), escape(p.branch or ""), escape((p.commit or "")[:12]), value, ci,
                      "[red]ALARM[/red]" if i in alarms else "")  # fmt: skip
    out = _out()
    out.print(table)
    if alert is None:
        out.print(f"no alert rule for {escape(args.metric)}: it reads {', '.join(ALERTABLE)} only")
    elif alert.first_alarm is not None:
        out.print(f"[red]alert[/red]: the rate rose above the reference from run {alert.first_alarm + 1}")
    else:
        out.print(f"no alert ({escape(alert.note) or 'false alarms at most 5% over 50 looks'})")
    if args.html:
        from harness.report.history_page import write_trend

        print(f"written {write_trend(args.html, points, args.metric, store.label, alert)}")
    return EXIT_GATE if args.fail_on_alert and alert is not None and alert.first_alarm is not None else EXIT_OK


def cmd_diff(args: argparse.Namespace) -> int:
    from harness.cli.console import print_decision
    from harness.history.ops import diff
    from harness.history.refs import latest

    store = _store(args)
    heads, tags = store.heads(), store.tags()
    a, b = (store.load(latest(heads, tags, ref).id) for ref in (args.a, args.b))
    decision = diff(a, b, variant=args.variant)
    print_decision(_out(), decision)
    if args.json:
        args.json.write_text(decision.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return EXIT_OK


def cmd_bisect(args: argparse.Namespace) -> int:
    from harness.history.ops import bisect

    store = _store(args)
    found = bisect(store, _heads(store, args.branch), args.case_id, args.model)
    out = _out()
    for i, o in enumerate(found.history):
        mark = "  <- first change" if i == found.first_change else ""
        right = {True: "right", False: "wrong", None: "unscored"}[o.right]
        out.print(
            f"{escape(o.run)} {escape((o.commit or '?')[:12])}: {escape(', '.join(map(str, o.verdicts)))} ({right}){mark}"
        )
    if found.first_change is None:
        out.print(f"case {escape(args.case_id)}: the same outcome in all {len(found.history)} recorded runs")
    else:
        changed = found.history[found.first_change]
        out.print(
            f"case {escape(args.case_id)} first changed in run {escape(changed.run)} (commit {escape(changed.commit or '?')})"
        )
    return EXIT_OK
