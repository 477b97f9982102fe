"""Seeded faults in what a SUT persists and what it shows its model, each tagged with the requirement it breaks.

Each `Seed.apply` patches the bundled SUT inside its own process (tests/kit/faulty_sut.py) as another
team's implementation plausibly gets it wrong: one field of the persisted answer, or the prompt (test only).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from harness.system.models import VerifierInput
from harness.system.verifiers.llm import LLMVerifier
from tests.kit.seeds import Seed, evaluation_fault, persisted_fault

# --- the answer, as persisted -----------------------------------------------------------------


def _each(key: str, change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def apply(evaluation: dict[str, Any]) -> None:
        for item in evaluation.get(key) or []:
            change(item)

    return apply


def _each_ref(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    return _each("claim_checks", lambda check: [change(ref) for ref in check.get("evidence_refs") or []])


def _score(change: Callable[[float], Any]) -> Callable[[dict[str, Any]], None]:
    def apply(evaluation: dict[str, Any]) -> None:
        if evaluation.get("groundedness_score") is not None:
            evaluation["groundedness_score"] = change(evaluation["groundedness_score"])

    return apply


def _drop_sanitise_notes(evaluation: dict[str, Any]) -> None:
    evaluation["adjustments"] = [a for a in evaluation["adjustments"] if not a["step"].startswith("sanitise.")]


def _first_ref_only(check: dict[str, Any]) -> None:
    check["evidence_refs"] = check.get("evidence_refs", [])[:1]


def _model_verdict_is_effective(evaluation: dict[str, Any]) -> None:
    if evaluation.get("model_verdict") is not None:
        evaluation["model_verdict"] = evaluation["verdict"]


def _facts_twice(evaluation: dict[str, Any]) -> None:
    evaluation["facts_checked"] = evaluation["facts_checked"] + [dict(f) for f in evaluation["facts_checked"]]


def _facts_without_no_evidence(evaluation: dict[str, Any]) -> None:
    evaluation["facts_checked"] = [f for f in evaluation["facts_checked"] if f["verification"] != "no_evidence"]


def _failed_rules_twice(evaluation: dict[str, Any]) -> None:
    result = evaluation["gatekeeper_result"]
    result["failed_rules"] = result["failed_rules"] + result["failed_rules"]


def _trace_zero_based(evaluation: dict[str, Any]) -> None:
    for index, entry in enumerate(evaluation["tool_trace_summary"]):
        entry["trace_ref"] = f"T{index}"


def _crlf_to_lf(evaluation: dict[str, Any]) -> None:
    for entry in evaluation["tool_trace_summary"]:
        entry["result_excerpt"] = entry["result_excerpt"].replace("\r\n", "\n")


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda evaluation: evaluation.__setitem__(key, value)


def _verifier(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    return lambda evaluation: change(evaluation["verifier"])


def _stringify_siblings(merged: dict[str, Any]) -> None:
    for key in merged:
        if key != "verifier_evaluation" and not isinstance(merged[key], str):
            merged[key] = json.dumps(merged[key])


def _string_lists_as_sets(value: Any) -> Any:
    """Every list of strings read into a sorted set (as a Java team's TreeSet<String> would hold it)."""
    if isinstance(value, dict):
        return {k: _string_lists_as_sets(v) for k, v in value.items()}
    if isinstance(value, list) and all(isinstance(i, str) for i in value):
        return sorted(set(value))
    return [_string_lists_as_sets(v) for v in value] if isinstance(value, list) else value


def _sibling_lists_sorted(merged: dict[str, Any]) -> None:
    for key in list(merged):
        if key != "verifier_evaluation":
            merged[key] = _string_lists_as_sets(merged[key])


ANSWER = [
    Seed(
        "trace-crlf-normalised",
        "persist.trace",
        "tool results read line by line, CRLF line ends stored as LF",
        evaluation_fault(_crlf_to_lf),
    ),
    Seed(
        "groundedness-dropped",
        "groundedness.reply",
        "groundedness_score persisted as null",
        evaluation_fault(_set("groundedness_score", None)),
    ),
    Seed(
        "groundedness-one-decimal",
        "groundedness.reply",
        "groundedness_score stored in a one-decimal column (0.85 becomes 0.8)",
        evaluation_fault(_score(lambda s: math.floor(s * 10) / 10)),
    ),
    Seed(
        "groundedness-boolean",
        "groundedness.range",
        "groundedness_score persisted as the boolean score >= 0.5",
        evaluation_fault(_score(lambda s: s >= 0.5)),
    ),
    Seed(
        "groundedness-percent",
        "groundedness.range",
        "groundedness_score persisted as a percentage",
        evaluation_fault(_score(lambda s: s * 100)),
    ),
    Seed(
        "groundedness-string",
        "groundedness.range",
        "groundedness_score persisted as a string",
        evaluation_fault(_score(str)),
    ),
    Seed(
        "sanitise-not-recorded",
        "claims.recorded",
        "sanitised claim checks recorded only when the verdict changed",
        evaluation_fault(_drop_sanitise_notes),
    ),
    Seed(
        "refs-first-only",
        "refs.model",
        "only the first of the model's evidence_refs kept",
        evaluation_fault(_each("claim_checks", _first_ref_only)),
    ),
    Seed(
        "refs-ids-dropped",
        "refs.fields",
        "source_invocation_ids of every ref persisted empty",
        evaluation_fault(_each_ref(lambda r: r.update(source_invocation_ids=[]))),
    ),
    Seed(
        "refs-tool-name-upper",
        "refs.fields",
        "every ref's tool_name upper-cased",
        evaluation_fault(_each_ref(lambda r: r.update(tool_name=str(r.get("tool_name")).upper()))),
    ),
    Seed(
        "refs-trace-ref-dropped",
        "refs.fields",
        "every ref's trace_ref persisted null",
        evaluation_fault(_each_ref(lambda r: r.update(trace_ref=None))),
    ),
    Seed(
        "verifier-block-missing",
        "persist.verifier",
        "no verifier block persisted",
        evaluation_fault(lambda e: e.pop("verifier")),
    ),
    Seed(
        "verifier-model-missing",
        "persist.verifier",
        "verifier.model not persisted",
        evaluation_fault(_verifier(lambda v: v.pop("model"))),
    ),
    Seed(
        "verifier-prompt-version-empty",
        "persist.verifier",
        "verifier.prompt_version an empty string",
        evaluation_fault(_verifier(lambda v: v.update(prompt_version=""))),
    ),
    Seed(
        "verifier-latency-string",
        "persist.verifier",
        "verifier.latency_ms a string with its unit",
        evaluation_fault(_verifier(lambda v: v.update(latency_ms=f"{v['latency_ms']:.0f} ms"))),
    ),
    Seed(
        "verifier-latency-negative",
        "persist.verifier",
        "verifier.latency_ms negative (end minus start swapped)",
        evaluation_fault(_verifier(lambda v: v.update(latency_ms=-1.0 - v["latency_ms"]))),
    ),
    Seed(
        "verifier-usage-text",
        "persist.verifier",
        "verifier.usage persisted as text",
        evaluation_fault(_verifier(lambda v: v.update(usage=str(v["usage"])))),
    ),
    Seed(
        "adjustment-reasons-empty",
        "verdict.adjustment",
        "adjustments persisted with an empty reason",
        evaluation_fault(_each("adjustments", lambda a: a.update(reason=""))),
    ),
    Seed(
        "verdict-lower-case",
        "protocol.fields",
        "verdict persisted in lower case",
        evaluation_fault(lambda e: e.update(verdict=e["verdict"].lower())),
    ),
    Seed(
        "model-verdict-is-effective",
        "verdict.model",
        "model_verdict persisted as the effective verdict",
        evaluation_fault(_model_verdict_is_effective),
    ),
    Seed(
        "parse-status-upper-case",
        "parse.status",
        "parse status persisted in upper case",
        evaluation_fault(
            lambda e: e["executor_output_parse_status"].update(
                status=e["executor_output_parse_status"]["status"].upper()
            )
        ),
    ),
    Seed(
        "failed-rules-twice",
        "gatekeeper.rules",
        "failed_rules not de-duplicated",
        evaluation_fault(_failed_rules_twice),
    ),
    Seed(
        "warnings-dropped",
        "gatekeeper.rules",
        "gatekeeper warnings persisted empty",
        evaluation_fault(lambda e: e["gatekeeper_result"].update(warnings=[])),
    ),
    Seed(
        "trace-reversed",
        "persist.trace",
        "tool_trace_summary persisted newest first",
        evaluation_fault(lambda e: e["tool_trace_summary"].reverse()),
    ),
    Seed("trace-zero-based", "persist.trace", "trace refs numbered from T0", evaluation_fault(_trace_zero_based)),
    Seed("facts-twice", "facts.statement", "facts_checked holds each claim twice", evaluation_fault(_facts_twice)),
    Seed(
        "facts-without-no-evidence",
        "facts.mapping",
        "facts with no evidence left out of facts_checked",
        evaluation_fault(_facts_without_no_evidence),
    ),
    Seed(
        "facts-statement-300",
        "facts.statement",
        "facts_checked[].fact cut to 300 characters (a VARCHAR(300) column)",
        evaluation_fault(_each("facts_checked", lambda f: f.update(fact=f["fact"][:300]))),
    ),
    Seed(
        "critical-count-plus-one",
        "claims.critical-count",
        "critical_fact_count off by one",
        evaluation_fault(lambda e: e.update(critical_fact_count=e["critical_fact_count"] + 1)),
    ),
    Seed(
        "siblings-stringified",
        "persist.siblings",
        "sibling keys re-written as JSON text",
        persisted_fault(_stringify_siblings),
    ),
    Seed(
        "sibling-lists-sorted",
        "persist.siblings",
        "string lists in sibling keys read into a sorted set",
        persisted_fault(_sibling_lists_sorted),
    ),
]


# --- the prompt the model is shown --------------------------------------------------------------


def _prompt(change: Callable[[VerifierInput], VerifierInput]) -> Callable[[], None]:
    def apply() -> None:
        original = LLMVerifier.verify

        async def verify(self: LLMVerifier, inputs: VerifierInput) -> Any:
            return await original(self, change(inputs))

        LLMVerifier.verify = verify  # type: ignore[method-assign]

    return apply


def _excerpts(cut: Callable[[str], str]) -> Callable[[VerifierInput], VerifierInput]:
    def change(inputs: VerifierInput) -> VerifierInput:
        trace = [e.model_copy(update={"result_excerpt": cut(e.result_excerpt)}) for e in inputs.tool_trace_summary]
        return inputs.model_copy(update={"tool_trace_summary": trace})

    return change


def _claims(change: Callable[[dict[str, Any]], dict[str, Any]]) -> Callable[[VerifierInput], VerifierInput]:
    def apply(inputs: VerifierInput) -> VerifierInput:
        claims = [change(dict(c)) if isinstance(c, dict) else c for c in inputs.claims]
        return inputs.model_copy(update={"claims": claims})

    return apply


def _claims_where(keep: Callable[[dict[str, Any]], bool]) -> Callable[[VerifierInput], VerifierInput]:
    def apply(inputs: VerifierInput) -> VerifierInput:
        claims = [c for c in inputs.claims if not isinstance(c, dict) or keep(c)]
        return inputs.model_copy(update={"claims": claims})

    return apply


def _gatekeeper_in_prompt(update: dict[str, Any]) -> Callable[[VerifierInput], VerifierInput]:
    return lambda inputs: inputs.model_copy(
        update={"gatekeeper_result": inputs.gatekeeper_result.model_copy(update=update)}
    )


def _first_line(text: str) -> str:
    return text.strip().split("\n", 1)[0]


PROMPT = [
    Seed(
        "prompt-excerpt-60",
        "input.trace",
        "the model shown 60 characters of each tool result",
        _prompt(_excerpts(lambda t: t[:60])),
    ),
    Seed(
        "prompt-excerpt-first-line",
        "input.trace",
        "the model shown only the first line of each tool result",
        _prompt(_excerpts(_first_line)),
    ),
    Seed(
        "prompt-hypotheses-dropped",
        "input.claims",
        "only confirmed claims shown to the model (hypotheses left out)",
        _prompt(_claims_where(lambda c: c.get("status") != "hypothesis")),
    ),
    Seed(
        "prompt-trace-first-entry",
        "input.trace",
        "the model shown only the first trace entry",
        _prompt(lambda i: i.model_copy(update={"tool_trace_summary": i.tool_trace_summary[:1]})),
    ),
    Seed(
        "prompt-statements-300",
        "input.claims",
        "claim statements cut to 300 characters in the prompt",
        _prompt(_claims(lambda c: {**c, "statement": str(c.get("statement", ""))[:300]})),
    ),
    Seed(
        "prompt-claim-ids-dropped",
        "input.claims",
        "claims shown without their ids",
        _prompt(_claims(lambda c: {k: v for k, v in c.items() if k != "claim_id"})),
    ),
    Seed(
        "prompt-warnings-dropped",
        "input.gatekeeper",
        "gatekeeper warnings not shown to the model",
        _prompt(_gatekeeper_in_prompt({"warnings": []})),
    ),
    Seed(
        "prompt-failed-rules-dropped",
        "input.gatekeeper",
        "failed rules not shown to the model",
        _prompt(_gatekeeper_in_prompt({"failed_rules": [], "errors": []})),
    ),
]

FAULTS: list[Seed] = [*ANSWER, *PROMPT]
