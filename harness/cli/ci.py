"""`vbench ci`: the prompt gate or certify as a CI step (what `action.yml` and the GitLab recipe run).

It runs the command, then hands the CI what it shows: `summary.md` to the job summary
($GITHUB_STEP_SUMMARY), a pull-request comment body (the decision first, then the regressed cases) to a
file, and the run folder, the comment file and the command's exit code to the step's outputs
($GITHUB_OUTPUT). It exits as the command did; outside GitHub (no such variables) it only writes the files.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import UsageError
from harness.score.certificate import policy_tally

if TYPE_CHECKING:
    from harness.score.summary_model import Decision, Summary

COMMENT_FILE = "comment.md"
COMMENT_MARKER = "<!-- verifier-bench -->"
"""The comment's first line: the action edits its own earlier comment instead of adding one per push."""
SHOWN_CASES = 20
DECISION_MARK = {"ship": "✅", "inconclusive": "⚠️", "block": "❌"}
CERT_MARK = {"certified": "✅", "partial": "⚠️", "failed": "❌"}


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    ci = sub.add_parser(
        "ci",
        help="the prompt gate or certify as a CI step: job summary, pull-request comment body, step outputs",
        description="Runs `vbench run` (prompt-gate: the control prompt and the candidate on one model, paired) or "
        "`vbench certify`, then writes summary.md to $GITHUB_STEP_SUMMARY, a comment body to OUT/comment.md and "
        "run-dir, comment-file, decision and exit-code to $GITHUB_OUTPUT. Exits as the command did.",
    )
    ci.add_argument("mode", choices=["prompt-gate", "certify"])
    ci.add_argument("--out", type=Path, required=True, help="the run folder (uploaded as the artifact)")
    ci.add_argument("--model", help="prompt-gate: the model both prompts run on, e.g. openai:gpt-4o-mini")
    ci.add_argument("--candidate-prompt", help="prompt-gate: the prompt under review (a prompt folder)")
    ci.add_argument(
        "--control-prompt",
        default="baseline",
        help="prompt-gate: the prompt it must not fall behind (default baseline)",
    )
    ci.add_argument("--study", help="prompt-gate: a study file (default: vbench.toml when present)")
    ci.add_argument("--sut", help="certify: the SUT's base URL")
    ci.add_argument("--cases", action="append", help="case folder (repeatable)")
    ci.add_argument(
        "--args",
        default="",
        metavar="'ARG ...'",
        help="more arguments for vbench run / vbench certify, in one string (--args='--base-url URL --no-cache')",
    )
    ci.set_defaults(handler=cmd_ci)


def command_for(args: argparse.Namespace) -> list[str] | str:
    """The vbench command line this mode runs, or what is missing (bad usage)."""
    extra = shlex.split(args.args)
    cases = [arg for c in args.cases or [] for arg in ("--cases", c)]
    if args.mode == "certify":
        if not args.sut:
            return "certify needs --sut URL"
        return ["certify", "--sut", args.sut, "--out", str(args.out), *cases, *extra]
    if not args.model or not args.candidate_prompt:
        return "prompt-gate needs --model and --candidate-prompt"
    control = control_name(args.control_prompt)
    if control == control_name(args.candidate_prompt):
        return f"the control prompt and the candidate are both named {control!r}: put one in a folder of another name"
    study = ["--study", args.study] if args.study else []
    prompts = ["--prompt", args.control_prompt, "--prompt", args.candidate_prompt, "--control", f"@{control}"]
    return ["run", *study, "--model", args.model, *prompts, "--out", str(args.out), *cases, *extra]


def control_name(prompt: str) -> str:
    """A prompt's variant name: a packaged prompt's own, a prompt folder's name (`harness.system.prompts`)."""
    return Path(prompt).name if ("/" in prompt or os.sep in prompt or Path(prompt).is_dir()) else prompt


def cmd_ci(args: argparse.Namespace) -> int:
    command = command_for(args)
    if isinstance(command, str):
        raise UsageError(f"vbench ci {args.mode}: {command}")
    print("vbench " + " ".join(command), file=sys.stderr, flush=True)
    code = subprocess.call([sys.executable, "-m", "harness.cli", *command])
    publish(args.mode, args.out, code, os.environ)
    return code


def publish(mode: str, run_dir: Path, code: int, env: os._Environ[str] | dict[str, str]) -> Path:
    """The job summary, the comment body and the step outputs of a finished (or refused) command."""
    from harness.score.summary_model import read_summary_or_none

    run_dir.mkdir(parents=True, exist_ok=True)
    summary, certificate = read_summary_or_none(run_dir), read_json(run_dir / "certificate.json")
    body = comment_body(mode, summary, certificate, code)
    comment = run_dir / COMMENT_FILE
    comment.write_text(body, encoding="utf-8")
    summary_md = run_dir / "summary.md"
    if env.get("GITHUB_STEP_SUMMARY"):
        text = summary_md.read_text(encoding="utf-8") if summary_md.exists() else body
        with open(env["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as out:
            out.write(text.rstrip("\n") + "\n")
    if env.get("GITHUB_OUTPUT"):
        decision = decision_word(mode, summary, certificate)
        outputs = {"run-dir": str(run_dir), "comment-file": str(comment), "decision": decision, "exit-code": str(code)}
        with open(env["GITHUB_OUTPUT"], "a", encoding="utf-8") as out:
            out.writelines(f"{key}={value}\n" for key, value in outputs.items())
    return comment


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def decision_word(mode: str, summary: Summary | None, certificate: dict[str, Any] | None) -> str:
    """One word for the step output: the worst decision (prompt-gate) or the certificate's status."""
    if mode == "certify" or summary is None:
        return str((certificate or {}).get("status") or "error")
    return summary.worst_decision() or "none"


def md(value: Any) -> str:
    """The report's Markdown escape (`harness.report.render.md`), imported when a comment is written: the report
    layer loads pandas, which `vbench --help` should not wait for."""
    from harness.report.render import md as escape

    return escape(value)


def comment_body(mode: str, summary: Summary | None, certificate: dict[str, Any] | None, code: int) -> str:
    """The pull-request comment: the decision first, then why, the figures and the regressed cases."""
    title = "prompt gate" if mode == "prompt-gate" else "certification"
    lines = [COMMENT_MARKER]
    if summary is None:
        lines += [f"## ❌ verifier-bench {title}: no result (exit {code})", ""]
        lines.append("The command stopped before it scored anything: its error is in the job log.")
        return "\n".join(lines) + "\n"
    if mode == "prompt-gate":
        lines += _decisions(summary.decisions, code)
    else:
        lines += _certification(certificate, summary, code)
    gates = [g for g in summary.gates if not g.passed and g.gate != "ship_decision"]
    if gates:
        lines += ["", "**Failed gates:** " + "; ".join(md(f"{g.gate}: {g.detail}") for g in gates)]
    lines += ["", f"<sub>verifier-bench · exit code {code} · the run folder is attached to the workflow run</sub>"]
    return "\n".join(lines) + "\n"


def _decisions(decisions: Sequence[Decision], code: int) -> list[str]:
    from harness.score.decide import headline
    from harness.score.wording import ci_label
    from harness.score.wording import pp_text as pp

    if not decisions:
        return [f"## ❌ verifier-bench prompt gate: no decision (exit {code})", "", "No candidate was compared."]
    worst = next(k for k in ("block", "inconclusive", "ship") if k in {d.decision for d in decisions})
    lines = [f"## {DECISION_MARK[worst]} verifier-bench prompt gate: {worst.upper()}"]
    for d in decisions:
        why = headline(d)
        lines += ["", f"**{d.decision.upper()}** {md(d.candidate)} against {md(d.control)}: {md(why)}", ""]
        lines += [f"| metric | control | candidate | Δ [{ci_label(d.alpha)}] | gated |", "|---|---|---|---|---|"]
        for name, m in d.metrics.items():
            ci = m.diff_ci
            diff = pp(m.diff) + (f" [{pp(ci[0])}, {pp(ci[1])}]" if ci else "")
            lines.append(
                f"| {md(name)} | {_num(m.control)} | {_num(m.candidate)} | {diff} | {'yes' if m.gated else 'no'} |"
            )
        regressed = d.regressed_cases
        lines.append("")
        if regressed:
            shown = ", ".join(md(c) for c in regressed[:SHOWN_CASES])
            more = f" and {len(regressed) - SHOWN_CASES} more" if len(regressed) > SHOWN_CASES else ""
            lines.append(
                f"**Regressed cases** ({len(regressed)}, right under the control and wrong now): {shown}{more}"
            )
        else:
            lines.append("**Regressed cases:** none")
        lines += ["", f"<sub>paired on {d.paired_cases} cases ({d.unpaired_cases} unpaired)</sub>"]
    return lines


def _certification(certificate: dict[str, Any] | None, summary: Summary, code: int) -> list[str]:
    if certificate is None:
        return [f"## ❌ verifier-bench certification: no certificate (exit {code})"]
    status = str(certificate.get("status"))
    lines = [f"## {CERT_MARK.get(status, '❌')} verifier-bench certification: {md(certificate.get('headline'))}", ""]
    sut = certificate.get("sut") or {}
    passed, cases = int(certificate.get("policy_passed") or 0), int(certificate.get("policy_cases") or 0)
    lines.append(
        f"{md(sut.get('name'))} {md(sut.get('version'))}: "
        f"{policy_tally(passed, cases)}{' agreed' if cases else ''}, "
        f"{certificate.get('invariant_violations', 0)} invariant violations, {certificate.get('errors', 0)} SUT errors"
    )
    failing = summary.failing_cases()
    if failing:
        shown = ", ".join(md(c) for c in failing[:SHOWN_CASES])
        more = f" and {len(failing) - SHOWN_CASES} more" if len(failing) > SHOWN_CASES else ""
        lines += ["", f"**Failing cases** ({len(failing)}): {shown}{more}"]
    return lines


def _num(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}"


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m harness.cli.ci MODE ...`: the same as `vbench ci`."""
    from harness.cli import main as vbench

    return vbench(["ci", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
