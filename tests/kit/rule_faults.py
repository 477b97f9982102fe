"""Seeded faults in how a SUT reads its settings, answers /info, and applies the spec's rules (test only).

Each `Seed.apply` patches the bundled SUT inside its own process (tests/kit/faulty_sut.py): the settings it
takes from the request, its `/info`, or one rule of its parser, gatekeeper or policy, as another team's
implementation plausibly gets it wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from harness.kit.sut import GRACE_SHARE, MIN_GRACE_S
from harness.system import gatekeeper, parser, pipeline, policy, serve, strictjson
from harness.system.models import ParsedExecutorOutput, ParseStatus
from tests.kit.seeds import Seed
from tests.kit.variants import delayed_answers

# --- the settings of the request, and /info -------------------------------------------------------


def _settings(claim_guard: Callable[[bool], bool], excerpt: Callable[[int], int]) -> Callable[[], None]:
    def apply() -> None:
        original = serve.run_pipeline

        async def run(*args: Any, **kwargs: Any) -> Any:
            settings = args[5]
            changed = settings.model_copy(update={"claim_guard": claim_guard(settings.claim_guard)})
            kwargs["excerpt_chars"] = excerpt(kwargs["excerpt_chars"])
            return await original(*args[:5], changed, *args[6:], **kwargs)

        serve.run_pipeline = run  # type: ignore[assignment]

    return apply


def _keep(value: Any) -> Any:
    return value


def _truncate_bytes() -> None:
    """The excerpt cut at the limit in UTF-8 bytes, not characters (a byte buffer of that size)."""
    from harness.system import trace

    original = trace.build_trace_summary

    def build(invocations: Any, excerpt_chars: int = trace.DEFAULT_EXCERPT_CHARS) -> Any:
        entries = original(invocations, excerpt_chars)
        for entry, inv in zip(entries, invocations, strict=True):
            cut = inv.result.encode("utf-8")[:excerpt_chars].decode("utf-8", "ignore")
            entry.result_excerpt, entry.truncated = cut, len(cut) < len(inv.result)
        return entries

    trace.build_trace_summary = build


def _info(body: dict[str, Any]) -> Callable[[], None]:
    def apply() -> None:
        async def info(self: serve.SutServer, _request: web.Request) -> web.Response:
            return web.json_response({"name": self.name, "version": "0.1.0", **body})

        serve.SutServer._info = info  # type: ignore[method-assign]

    return apply


SETTINGS = [
    Seed(
        "answer-after-timeout",
        "protocol.timeout",
        "one answer comes after timeout_s and its grace (the SUT retries the model on a clock of its own)",
        delayed_answers(1.0 + GRACE_SHARE, 1, MIN_GRACE_S + 1.0),
    ),
    Seed(
        "claim-guard-always-on",
        "settings.claim-guard",
        "claim_guard from the request ignored (always on)",
        _settings(lambda _g: True, _keep),
    ),
    Seed(
        "claim-guard-inverted",
        "settings.claim-guard",
        "claim_guard read the wrong way round",
        _settings(lambda g: not g, _keep),
    ),
    Seed(
        "excerpt-limit-ignored",
        "settings.excerpt-chars",
        "excerpt_chars from the request ignored (always 2,000)",
        _settings(_keep, lambda _n: 2000),
    ),
    Seed(
        "excerpt-limit-plus-one",
        "settings.excerpt-chars",
        "excerpt cut at limit + 1 (an inclusive end index)",
        _settings(_keep, lambda n: n + 1),
    ),
    Seed(
        "excerpt-limit-minus-one",
        "settings.excerpt-chars",
        "excerpt cut at limit - 1 (room kept for an ellipsis)",
        _settings(_keep, lambda n: n - 1),
    ),
    Seed(
        "excerpt-limit-bytes",
        "settings.excerpt-chars",
        "excerpt cut at the limit in UTF-8 bytes, not characters",
        _truncate_bytes,
    ),
    Seed(
        "info-protocol-wrong",
        "protocol.info",
        "/info names protocol sut_protocol_v2",
        _info({"protocol": "sut_protocol_v2"}),
    ),
    Seed("info-protocol-missing", "protocol.info", "/info without its protocol", _info({})),
]


# --- rules of the parser, gatekeeper and policy --------------------------------------------------


def _lenient_parser() -> None:
    """The structured output read with a lenient decoder: valid JSON followed by trailing text is accepted."""

    def loads(text: str) -> Any:
        return strictjson.raw_decode(text.strip(), 0)[0]

    parser.strictjson = type("Lenient", (), {"loads": staticmethod(loads)})  # type: ignore[assignment]


def _ids_case_insensitive() -> None:
    original = gatekeeper.cited_row_problem

    def problem(inv_id: str, tool_name: str | None, invocations: Any) -> Any:
        folded = {k.lower(): v for k, v in invocations.items()}
        return original(inv_id.lower(), tool_name, folded)

    gatekeeper.cited_row_problem = problem
    policy.cited_row_problem = problem  # type: ignore[attr-defined]


def _ids_stripped() -> None:
    original = gatekeeper.cited_row_problem

    def problem(inv_id: str, tool_name: str | None, invocations: Any) -> Any:
        return original(inv_id.strip(), tool_name.strip() if tool_name else tool_name, invocations)

    gatekeeper.cited_row_problem = problem
    policy.cited_row_problem = problem  # type: ignore[attr-defined]


def _tool_names_case_insensitive() -> None:
    original = gatekeeper.cited_row_problem

    def problem(inv_id: str, tool_name: str | None, invocations: Any) -> Any:
        row = invocations.get(inv_id)
        if row is not None and tool_name is not None and tool_name.lower() == row.tool_name.lower():
            tool_name = row.tool_name
        return original(inv_id, tool_name, invocations)

    gatekeeper.cited_row_problem = problem
    policy.cited_row_problem = problem  # type: ignore[attr-defined]


def _bindings_only_for_critical() -> None:
    original = gatekeeper._check_claim

    def check(claim: dict[str, Any], path: str) -> Any:
        issues = original(claim, path)
        if claim.get("critical") is False:
            issues = [i for i in issues if "no evidence bindings" not in i.message]
        return issues

    gatekeeper._check_claim = check


def _guard_before_validity() -> None:
    """A contradicted check in an invalid reply still makes REJECT (the claim guard run before step 2)."""
    original = pipeline.conclude_with_reply

    def conclude(prepared: Any, call: Any, settings: Any = policy.PolicySettings()) -> Any:
        evaluation, reply = original(prepared, call, settings)
        if reply is None and call.raw_reply and '"contradicted"' in call.raw_reply:
            evaluation = evaluation.model_copy(update={"verdict": "REJECT"})
        return evaluation, reply

    pipeline.conclude_with_reply = conclude


def _threshold(value: float) -> Callable[[], None]:
    return lambda: setattr(policy, "PASS_THRESHOLD", value)


def _groundedness_coerced() -> None:
    """A boolean or numeric string groundedness_score taken as a number (lenient binding)."""
    from pydantic import Field

    from harness.system import models, reply

    class Lenient(models.VerifierReply):
        groundedness_score: float = Field(ge=0.0, le=1.0)

    reply.VerifierReply = Lenient  # type: ignore[misc]


def _drop_rule(rule_id: str) -> Callable[[], None]:
    return lambda: gatekeeper.RULES.pop(rule_id)


def _reply_whole_text_only() -> None:
    """The reply must be the whole text: JSON with prose or a fence around it is invalid."""
    from harness.system import reply

    def objects(text: str) -> Any:
        try:
            value = strictjson.loads(text.strip())
        except ValueError:
            return
        if isinstance(value, dict):
            yield value

    reply.json_objects = objects


def _missing_is_malformed() -> None:
    original = parser.parse_structured_output

    def parse(raw: str | None) -> ParsedExecutorOutput:
        parsed = original(raw)
        if parsed.parse_status.status == "missing":
            return ParsedExecutorOutput(parse_status=ParseStatus(status="malformed", reason="empty"))
        return parsed

    pipeline.parse_structured_output = parse


def _created_status() -> None:
    """`POST /verify` answered 201 Created (a REST habit for a write) instead of the protocol's 200."""
    original = serve.SutServer._verify

    async def verify(self: serve.SutServer, request: web.Request) -> web.Response:
        response = await original(self, request)
        response.set_status(201 if response.status == 200 else response.status)
        return response

    serve.SutServer._verify = verify  # type: ignore[method-assign]


def _no_model_call_on_gatekeeper_fail() -> None:
    """The model not called when the gatekeeper fails (an optimisation: the verdict cannot be PASS anyway)."""
    from harness.system.models import VerifierCall
    from harness.system.verifiers.llm import LLMVerifier

    original = LLMVerifier.verify

    async def verify(self: LLMVerifier, inputs: Any) -> Any:
        if inputs.gatekeeper_result.status == "fail":
            return VerifierCall(raw_reply=None, model=self.name, error="skipped: gatekeeper failed")
        return await original(self, inputs)

    LLMVerifier.verify = verify  # type: ignore[method-assign]


RULES = [
    Seed("answer-201-created", "protocol.answer", "POST /verify answers 201 Created, not 200", _created_status),
    Seed(
        "no-model-call-on-gatekeeper-fail",
        "input.verifier-called",
        "the model is not called when the gatekeeper fails",
        _no_model_call_on_gatekeeper_fail,
    ),
    Seed(
        "trailing-text-accepted",
        "parse.status",
        "structured output: valid JSON followed by trailing text read as valid",
        _lenient_parser,
    ),
    Seed(
        "missing-read-as-malformed",
        "parse.status",
        "no structured output classed malformed, not missing",
        _missing_is_malformed,
    ),
    Seed(
        "invocation-ids-case-insensitive",
        "gatekeeper.rules",
        "invocation ids matched ignoring case",
        _ids_case_insensitive,
    ),
    Seed(
        "invocation-ids-trimmed",
        "gatekeeper.rules",
        "invocation ids and tool names matched after trimming whitespace",
        _ids_stripped,
    ),
    Seed(
        "tool-names-case-insensitive",
        "gatekeeper.rules",
        "tool names matched ignoring case",
        _tool_names_case_insensitive,
    ),
    Seed(
        "bindings-only-for-critical",
        "gatekeeper.rules",
        "a non-critical confirmed claim allowed without bindings",
        _bindings_only_for_critical,
    ),
    Seed(
        "guard-before-reply-validity",
        "verdict.reply-contract",
        "an invalid reply's contradicted check makes REJECT",
        _guard_before_validity,
    ),
    Seed(
        "groundedness-threshold-0.45", "verdict.groundedness-threshold", "PASS from groundedness 0.45", _threshold(0.45)
    ),
    Seed(
        "groundedness-threshold-exclusive",
        "verdict.groundedness-threshold",
        "PASS only above 0.5 (> instead of >=)",
        _threshold(0.5000001),
    ),
    Seed(
        "groundedness-coerced",
        "verdict.reply-contract",
        "a boolean or string groundedness_score coerced to a number",
        _groundedness_coerced,
    ),
    Seed(
        "reply-whole-text-only",
        "verdict.reply-contract",
        "a reply in a code fence or prose is not read",
        _reply_whole_text_only,
    ),
    Seed(
        "failed-invocation-warning-missing",
        "gatekeeper.rules",
        "evidence.failed_invocation warning not implemented",
        _drop_rule("evidence.failed_invocation"),
    ),
    Seed(
        "no-critical-warning-missing",
        "gatekeeper.rules",
        "claims.no_critical warning not implemented",
        _drop_rule("claims.no_critical"),
    ),
    Seed(
        "unknown-field-warning-missing",
        "gatekeeper.rules",
        "schema.unknown_field warning not implemented",
        _drop_rule("schema.unknown_field"),
    ),
]

FAULTS: list[Seed] = [*SETTINGS, *RULES]
