"""The conformance requirements: each rule the kit checks, with a stable id, the spec line it quotes and its level.

As test262 names a spec anchor per test and Kubernetes lists each conformance test in a registry, every
check the kit makes belongs to one `Requirement` here: its id never changes (cases, seeded faults and the
coverage document name it), `quote` is the normative text it checks (verbatim from the file named in
`source`, whitespace aside; a test holds it to that), and `level` its RFC 2119 keyword. `checks` names the
functions that enforce it. A case names the requirements it exercises in `meta.kit.requirements`.

    python -m harness.kit.requirements --write     # regenerate docs/conformance/REQUIREMENTS.md
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Level = Literal["MUST", "MUST NOT", "SHOULD", "MAY"]

INTERP = "INTERPRETATION.md"
CLAIMS = "openspec/changes/archive/2026-07-07-executor-verifier-claim-checks/specs/chat-verifier-agent/spec.md"
HOOK = "openspec/changes/archive/2026-07-07-executor-gatekeeper-hook/specs/chat-verifier-agent/spec.md"
PROTOCOL = "docs/sut-protocol/PROTOCOL.md"
"""The one source outside the spec folder: the protocol page, at the repository root."""

_CONF = "harness.run.conformance"
_REPLY = "harness.score.reply_checks"
_INPUT = "harness.kit.requests"
_SUT = "harness.kit.sut"


@dataclass(frozen=True)
class Requirement:
    id: str
    level: Level
    source: str
    """The file the quote is from: a path under the spec folder, or `PROTOCOL`."""
    section: str
    quote: str
    checks: tuple[str, ...]
    """`module:function` of every function that enforces it (each must exist)."""
    title: str


def _r(id_: str, level: Level, source: str, section: str, title: str, quote: str, *checks: str) -> Requirement:
    return Requirement(id_, level, source, section, " ".join(quote.split()), tuple(checks), title)


REQUIREMENTS: tuple[Requirement, ...] = (
    # --- the protocol ------------------------------------------------------------------------------
    _r(
        "protocol.info",
        "MUST",
        PROTOCOL,
        "GET <sut>/info",
        "/info names the implementation and the protocol version",
        '`{"name": "...", "version": "...", "protocol": "sut_protocol_v1"}`',
        f"{_SUT}:info_problems",
    ),
    _r(
        "protocol.answer",
        "MUST",
        PROTOCOL,
        "The answer",
        "HTTP 200 with the whole persisted self_evaluation",
        'HTTP 200 with `{"self_evaluation": {...}}`',
        f"{_SUT}:post_verify",
    ),
    _r(
        "protocol.fields",
        "MUST",
        PROTOCOL,
        "The answer",
        "verifier_evaluation uses the §7 names and fixed sets",
        "A value outside a fixed set (a verdict, a derivability class, a legacy class) is a failure.",
        f"{_CONF}:read_evaluation",
    ),
    _r(
        "protocol.extra-keys",
        "MAY",
        PROTOCOL,
        "The answer",
        "keys the SUT adds are ignored, in any order",
        "keys may come in any order, and keys the SUT adds are ignored.",
        f"{_CONF}:read_evaluation",
    ),
    _r(
        "protocol.timeout",
        "MUST",
        PROTOCOL,
        "POST <sut>/verify",
        "the SUT answers within the case's timeout_s",
        "`settings.timeout_s` | how long the SUT may wait for the model",
        f"{_SUT}:post_verify",
    ),
    # --- settings ------------------------------------------------------------------------------
    _r(
        "settings.claim-guard",
        "MUST",
        INTERP,
        "§5 step 5",
        "the claim guard setting is honoured (on and off)",
        "Claim guard (on by default, can be switched off to measure the bare model)",
        f"{_CONF}:policy_case_mismatches",
    ),
    _r(
        "settings.excerpt-chars",
        "MUST",
        INTERP,
        "§7",
        "the excerpt limit setting is honoured",
        "a result excerpt whose length limit is a setting",
        f"{_CONF}:_trace_violations",
    ),
    # --- what the model is given ------------------------------------------------------------------
    _r(
        "input.gatekeeper",
        "MUST",
        HOOK,
        "Verifier SHALL consume explicit verification inputs",
        "the model request carries the gatekeeper result",
        "THEN the payload SHALL include gatekeeper_result",
        f"{_INPUT}:gatekeeper_input_problems",
    ),
    _r(
        "input.claims",
        "MUST",
        CLAIMS,
        "Verifier SHALL fact-check Executor answers",
        "the model request carries every structured claim's id and statement",
        "THEN Verifier SHALL verify each structured claim against tool_trace_summary through claim_checks",
        f"{_INPUT}:claim_input_problems",
    ),
    _r(
        "input.trace",
        "MUST",
        CLAIMS,
        "Verifier SHALL fact-check Executor answers",
        "the model request carries every trace ref and its whole result excerpt",
        "reads structured Executor claims and the tool call history",
        f"{_INPUT}:trace_input_problems",
    ),
    _r(
        "input.verifier-called",
        "MUST",
        INTERP,
        "§5 step 1",
        "the verifier is called for every case",
        "The verifier is still called by default",
        f"{_INPUT}:input_problems",
    ),
    # --- parser and gatekeeper --------------------------------------------------------------------
    _r(
        "parse.status",
        "MUST",
        INTERP,
        "§2",
        "the parse status is the one §2 defines",
        "`valid`: a JSON object with a readable `claims` list.",
        f"{_CONF}:deterministic_mismatches",
    ),
    _r(
        "gatekeeper.rules",
        "MUST",
        INTERP,
        "§3",
        "gatekeeper status, sorted failed_rules and warnings as the spec gives",
        "`failed_rules` is the sorted, de-duplicated list of fail rule ids",
        f"{_CONF}:deterministic_mismatches",
    ),
    _r(
        "gatekeeper.consistent",
        "MUST",
        INTERP,
        "§3",
        "errors name exactly the failed rules; status follows from them",
        "Status is `fail` if any fail rule fires, else `warn` if any warning, else `pass`.",
        f"{_CONF}:_gatekeeper_violations",
    ),
    # --- the verdict ------------------------------------------------------------------------------
    _r(
        "verdict.effective",
        "MUST",
        INTERP,
        "§5",
        "the effective verdict follows the policy",
        "Severity: PASS < LOW_CONFID < REJECT. In order:",
        f"{_CONF}:policy_case_mismatches",
    ),
    _r(
        "verdict.model",
        "MUST",
        INTERP,
        "§5",
        "the model's own verdict is kept",
        "Both the model's own verdict and the effective verdict are kept and scored.",
        f"{_CONF}:policy_case_mismatches",
    ),
    _r(
        "verdict.groundedness-threshold",
        "MUST",
        INTERP,
        "§4",
        "PASS only with groundedness_score >= 0.5",
        "else PASS, provided `groundedness_score >= 0.5` (otherwise LOW_CONFID).",
        f"{_CONF}:policy_case_mismatches",
    ),
    _r(
        "verdict.gatekeeper-downgrade",
        "MUST",
        INTERP,
        "§5 step 4",
        "a gatekeeper fail downgrades a model PASS",
        "Gatekeeper `fail` and model verdict PASS → REJECT when `failed_rules` holds `evidence.invocation_ref`, "
        "else LOW_CONFID.",
        f"{_CONF}:policy_case_mismatches",
    ),
    _r(
        "verdict.not-valid-no-pass",
        "MUST NOT",
        INTERP,
        "§5 step 1",
        "a parse status other than valid never PASSes",
        "Parse status not `valid` → effective LOW_CONFID, whatever the model said",
        f"{_CONF}:invariant_violations",
    ),
    _r(
        "verdict.reply-contract",
        "MUST",
        INTERP,
        "§5 step 2",
        "a reply that is not the contract's JSON gives LOW_CONFID",
        "Verifier reply not valid JSON of the contract → LOW_CONFID.",
        f"{_CONF}:policy_case_mismatches",
    ),
    _r(
        "verdict.adjustment",
        "MUST",
        INTERP,
        "§5",
        "each change of the verdict is recorded as an adjustment",
        "Every step that changed the verdict is recorded as an adjustment with its reason.",
        f"{_REPLY}:adjustment_problems",
    ),
    # --- the verifier reply contract (INTERPRETATION §8) -------------------------------------------
    _r(
        "reply.contract",
        "MUST",
        INTERP,
        "§8",
        "the reply's six keys with their JSON types; booleans and null are not numbers or strings",
        "All six keys MUST be present (`reply.contract`); keys beyond them are ignored. A value of the wrong JSON "
        "type is not coerced",
        f"{_CONF}:policy_case_mismatches",
        f"{_REPLY}:groundedness_problems",
    ),
    _r(
        "reply.fixed-sets",
        "MUST",
        INTERP,
        "§8",
        "a verdict, class or legacy class outside its fixed set makes the reply invalid",
        "A value outside a fixed set (a verdict, a derivability class, a legacy class in `facts_checked`) makes the "
        "reply invalid",
        f"{_CONF}:policy_case_mismatches",
    ),
    _r(
        "reply.found-in-prose",
        "MUST",
        INTERP,
        "§8",
        "the reply is the first valid top-level object; one inside an array is not a candidate",
        "The reply is the first candidate that is an object valid under the table above",
        f"{_CONF}:policy_case_mismatches",
    ),
    _r(
        "json.repeated-keys",
        "MUST",
        INTERP,
        "§8",
        "an object with a repeated key is refused: reply, executor output and the SUT's answer",
        "A JSON object with a repeated key is not JSON the kit or the system accepts, anywhere",
        f"{_CONF}:policy_case_mismatches",
        f"{_SUT}:read_answer",
    ),
    _r(
        "claims.duplicate-check",
        "MUST",
        INTERP,
        "§8",
        "two checks of one claim: the most severe class is kept and recorded",
        "When the reply holds more than one check for a structured claim, the most severe class is kept",
        f"{_CONF}:policy_case_mismatches",
        f"{_REPLY}:adjustment_problems",
    ),
    _r(
        "claims.one-per-claim",
        "MUST",
        INTERP,
        "§8",
        "exactly one claim check and one legacy fact per structured claim",
        "The persisted `claim_checks` then hold exactly one check per structured claim, and `facts_checked` exactly "
        "one item per structured claim",
        f"{_CONF}:one_per_claim_violations",
    ),
    _r(
        "persist.null-written",
        "MUST",
        INTERP,
        "§8",
        "the §7 keys are present, null written; optional keys may be left out",
        "`model_verdict` and `groundedness_score` are `null` when the reply was invalid, never left out.",
        f"{_CONF}:read_evaluation",
        f"{_CONF}:sibling_violations",
    ),
    _r(
        "persist.isolation",
        "MUST NOT",
        INTERP,
        "§8",
        "no key of another session (or one the verifier does not own) in the persisted self_evaluation",
        "The persisted `self_evaluation` holds the session's own sibling keys and `verifier_evaluation`, nothing else",
        f"{_CONF}:sibling_violations",
    ),
    _r(
        "refs.cover-bindings",
        "MUST",
        INTERP,
        "§8",
        "refs completed from the bindings cover every binding, not only the first",
        "its persisted check's refs are completed from *every* evidence binding of the claim (§5 step 3), not only "
        "the first",
        f"{_REPLY}:binding_cover_problems",
    ),
    # --- claim checks -----------------------------------------------------------------------------
    _r(
        "claims.sanitised",
        "MUST",
        INTERP,
        "§5 step 3",
        "claim classes after sanitising are the case's",
        "a structured claim with no check counts as `unsupported` (record it)",
        f"{_CONF}:policy_case_mismatches",
    ),
    _r(
        "claims.unknown-dropped",
        "MUST",
        INTERP,
        "§5 step 3",
        "checks for unknown claim ids are dropped",
        "drop checks for claim ids absent from the structured claims (record them)",
        f"{_CONF}:invariant_violations",
    ),
    _r(
        "claims.recorded",
        "MUST",
        INTERP,
        "§5 step 3",
        "every sanitised claim check is recorded as an adjustment",
        "drop checks for claim ids absent from the structured claims (record them)",
        f"{_REPLY}:adjustment_problems",
    ),
    _r(
        "claims.critical-count",
        "MUST",
        INTERP,
        "§5 step 3",
        "critical_fact_count is counted by the system",
        "the system counts critical claims itself.",
        f"{_CONF}:invariant_violations",
    ),
    _r(
        "refs.completed",
        "MUST",
        INTERP,
        "§5 step 3",
        "empty or partial evidence_refs are completed from bindings",
        "A check whose `evidence_refs` are empty or partial is completed from the claim's bindings (§7)",
        f"{_CONF}:_ref_violations",
    ),
    _r(
        "refs.fields",
        "MUST",
        INTERP,
        "§7",
        "each ref keeps trace_ref, tool_name and source_invocation_ids",
        "every ref keeps the `trace_ref`, `tool_name` and `source_invocation_ids` that are available",
        f"{_CONF}:_ref_violations",
        f"{_REPLY}:filled_ref_problems",
    ),
    _r(
        "refs.model",
        "MUST",
        INTERP,
        "§7",
        "the refs the model gave are kept",
        "filled from the trace summary where the model left them out",
        f"{_REPLY}:model_ref_problems",
    ),
    _r(
        "groundedness.range",
        "MUST",
        CLAIMS,
        "Verifier SHALL output structured JSON",
        "groundedness_score null or a number within [0, 1]",
        "The Verifier SHALL output a JSON object with verdict, groundedness_score, claim_checks array",
        f"{_CONF}:_score_and_adjustment_violations",
    ),
    _r(
        "groundedness.reply",
        "MUST",
        INTERP,
        "§7",
        "the persisted groundedness_score is the model's",
        "`diagnosis_session.self_evaluation.verifier_evaluation` holds: `verdict` (effective), `model_verdict`, "
        "`groundedness_score`",
        f"{_REPLY}:groundedness_problems",
    ),
    # --- facts_checked ----------------------------------------------------------------------------
    _r(
        "facts.mapping",
        "MUST",
        INTERP,
        "§6",
        "facts_checked is the fixed mapping of the sanitised checks",
        "Derived by the system from the sanitised claim checks, never copied from the model",
        f"{_CONF}:_fact_violations",
    ),
    _r(
        "facts.statement",
        "MUST",
        INTERP,
        "§6",
        "one item per claim, fact the claim's statement",
        "One item per claim: `{claim_id, fact (the statement), verification, detail}`.",
        f"{_CONF}:_fact_violations",
    ),
    # --- persistence ------------------------------------------------------------------------------
    _r(
        "persist.siblings",
        "MUST",
        INTERP,
        "§7",
        "sibling keys of self_evaluation are kept unchanged",
        "Writing it merges into `self_evaluation`: sibling keys written by others are kept.",
        f"{_CONF}:invariant_violations",
    ),
    _r(
        "persist.trace",
        "MUST",
        INTERP,
        "§7",
        "the tool trace summary is the session's, in order",
        "The tool trace summary has one entry per invocation of the session, in order, `trace_ref` `T1`, `T2`, ...",
        f"{_CONF}:_trace_violations",
    ),
    _r(
        "persist.verifier",
        "MUST",
        INTERP,
        "§7",
        "the verifier's model, prompt version, latency and token usage",
        "and the verifier's model, prompt version, latency and token usage.",
        f"{_REPLY}:verifier_block_problems",
    ),
)

BY_ID: dict[str, Requirement] = {r.id: r for r in REQUIREMENTS}


def requirement(id_: str) -> Requirement:
    """The requirement of that id; KeyError naming the known ones when there is none."""
    try:
        return BY_ID[id_]
    except KeyError:
        raise KeyError(f"unknown requirement {id_!r}; known: {', '.join(sorted(BY_ID))}") from None


def resolve(check: str) -> Callable[..., Any]:
    """The function a `module:function` check names (ImportError/AttributeError when it is gone)."""
    module, _, name = check.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def case_requirements(meta: dict[str, Any]) -> list[str]:
    """The requirement ids a case's `meta.kit.requirements` names (a string or a list of strings)."""
    kit = meta.get("kit") if isinstance(meta, dict) else None
    named = kit.get("requirements") if isinstance(kit, dict) else None
    if isinstance(named, str):
        return [named]
    return [n for n in named if isinstance(n, str)] if isinstance(named, list) else []


DOC = Path("docs/conformance/REQUIREMENTS.md")


def coverage_markdown(cases_by_requirement: dict[str, list[str]]) -> str:
    """The coverage document: each requirement, its level and quote, the checks that enforce it, its cases."""
    lines = [
        "# Conformance requirements",
        "",
        "Generated by `python -m harness.kit.requirements --write` from `harness/kit/requirements.py` and the",
        "`meta.kit.requirements` of the cases under `cases/`; a test fails when this page is stale.",
        "Levels are RFC 2119 keywords. Every check of `vbench certify` belongs to one requirement.",
        "",
        "| id | level | requirement | source | checks | cases |",
        "|---|---|---|---|---|---|",
    ]
    for r in REQUIREMENTS:
        cases = cases_by_requirement.get(r.id, [])
        lines.append(
            f"| `{r.id}` | {r.level} | {r.title} | {_short(r.source)} {r.section} | {_names(r.checks)} | {len(cases)} |"
        )
    lines += ["", "## Quotes and cases", ""]
    for r in REQUIREMENTS:
        cases = cases_by_requirement.get(r.id, [])
        lines += [
            f"### `{r.id}` ({r.level})",
            "",
            f"> {r.quote}",
            "",
            f"Source: `{r.source}` {r.section}. Checks: {', '.join(f'`{c}`' for c in r.checks)}.",
            "",
            "Cases: " + (", ".join(f"`{c}`" for c in cases) if cases else "none name it yet."),
            "",
        ]
    return "\n".join(lines)


def _names(checks: Sequence[str]) -> str:
    return ", ".join("`" + c.rsplit(":", 1)[1] + "`" for c in checks)


def _short(source: str) -> str:
    return {CLAIMS: "claim-checks spec", HOOK: "gatekeeper-hook spec"}.get(source, source)


def corpus_coverage(case_dirs: Sequence[Path]) -> dict[str, list[str]]:
    """Case ids by the requirement ids their `meta.kit.requirements` name (unknown ids raise KeyError)."""
    from harness.corpus.loader import load_cases

    out: dict[str, list[str]] = {}
    for case in load_cases(list(case_dirs)):
        for rid in case_requirements(case.meta):
            out.setdefault(requirement(rid).id, []).append(case.id)
    return {k: sorted(v) for k, v in out.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the conformance requirements and their coverage document")
    parser.add_argument("--write", action="store_true", help=f"write {DOC}")
    parser.add_argument("--cases", type=Path, action="append", help="case folder (default: cases)")
    args = parser.parse_args(argv)
    text = coverage_markdown(corpus_coverage(args.cases or [Path("cases")]))
    if args.write:
        DOC.parent.mkdir(parents=True, exist_ok=True)
        DOC.write_text(text, encoding="utf-8")
        print(DOC)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
