"""Seeds for the classes a Java stack differs on: null handling, number widths, lenient parsing, pretty printing,
unknown properties, string cutting, ordering and concurrency between sessions (test only).

Each fault is a library default or habit that is wrong for the protocol (Jackson keeping the last of a repeated
key, `ACCEPT_FLOAT_AS_INT`, `FAIL_ON_UNKNOWN_PROPERTIES`, `Include.NON_NULL` on the §7 keys, Gson reading numbers
as `double`, `String.trim()`, a `HashMap` order, a store shared between requests); each correct variant is a
library default that is right (Jackson's `INDENT_OUTPUT` in the answer and the prompt, `NON_NULL` where a key is
optional). Every seed names the requirement id of INTERPRETATION §8 or the registry it breaks or keeps, and
`python -m tests.kit.mutation` runs them with the others.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from typing import Any

from aiohttp import web
from pydantic import ConfigDict, field_validator

from harness.system import gatekeeper, policy, reply, serve, strictjson
from harness.system.models import ClaimCheck, Derivability, EvidenceRef, LegacyFact, VerifierReply
from tests.kit.reencode import Encoding
from tests.kit.seeds import Seed, evaluation_fault, persisted_fault
from tests.kit.variants import answer_text as _answer_text

# --- the verifier reply, read the way a Java JSON binder reads it ---------------------------------


def _reply_model(model: type[VerifierReply]) -> Callable[[], None]:
    return lambda: setattr(reply, "VerifierReply", model)


class _IntegerScoreRefused(VerifierReply):
    """A `double` field bound only from a number token with a fraction (a hand-written reader's `isDouble()`)."""

    @field_validator("groundedness_score", mode="before")
    @classmethod
    def _fraction_only(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            raise ValueError("an integer is not a double")
        return value


class _FloatAsInt(VerifierReply):
    """Jackson's default `ACCEPT_FLOAT_AS_INT`: `2.0` bound to an `int` count."""

    @field_validator("critical_fact_count", mode="before")
    @classmethod
    def _accept_float(cls, value: Any) -> Any:
        return int(value) if isinstance(value, float) and value.is_integer() else value


class _NullDetailCheck(ClaimCheck):
    @field_validator("detail", "evidence_refs", mode="before")
    @classmethod
    def _null_as_default(cls, value: Any, info: Any) -> Any:
        return ("" if info.field_name == "detail" else []) if value is None else value


class _NullDetailAccepted(VerifierReply):
    """A POJO with `String detail = ""`: Jackson binds `null`, and the code reads it back as the default."""

    claim_checks: list[_NullDetailCheck]  # type: ignore[assignment]


class _StrictRef(EvidenceRef):
    model_config = ConfigDict(extra="forbid")


class _StrictCheck(ClaimCheck):
    model_config = ConfigDict(extra="forbid")
    evidence_refs: list[_StrictRef] = []  # type: ignore[assignment]  # noqa: RUF012


class _UnknownPropertiesRefused(VerifierReply):
    """Jackson's default `FAIL_ON_UNKNOWN_PROPERTIES`: a key beyond the six refuses the whole reply."""

    model_config = ConfigDict(extra="forbid")
    claim_checks: list[_StrictCheck]  # type: ignore[assignment]


class _CaseInsensitiveCheck(ClaimCheck):
    @field_validator("verification", mode="before")
    @classmethod
    def _fold(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value


class _CaseInsensitiveEnums(VerifierReply):
    """Jackson's `ACCEPT_CASE_INSENSITIVE_ENUMS`: `DIRECT_OBSERVATION` and `pass` bound to the enum values."""

    claim_checks: list[_CaseInsensitiveCheck]  # type: ignore[assignment]

    @field_validator("verdict", mode="before")
    @classmethod
    def _fold(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value


class _AnyFact(LegacyFact):
    verification: Any = None


class _LegacySetUnchecked(VerifierReply):
    """facts_checked bound as `List<Map<String, Object>>`: its legacy classes never validated."""

    facts_checked: list[_AnyFact]  # type: ignore[assignment]


class _Float32Score(VerifierReply):
    """The score held in a `float` (32 bits): 0.49999999999 becomes 0.5."""

    @field_validator("groundedness_score", mode="after")
    @classmethod
    def _float32(cls, value: float) -> float:
        return struct.unpack("f", struct.pack("f", value))[0]


def _repeated_keys_keep_last() -> None:
    """Jackson's default: the last of a repeated key wins (no `STRICT_DUPLICATE_DETECTION`), in every JSON read."""
    strictjson.DECODER = json.JSONDecoder(parse_constant=strictjson._no_constants)


def _objects_in_arrays_count() -> None:
    """Every object of a top-level array in the text is a reply candidate too (a `findValues` over the tree)."""
    original = reply.json_objects

    def objects(text: str) -> Any:
        yield from original(text)
        for value in reply.prose_json_values(text):
            if isinstance(value, list):
                yield from (item for item in value if isinstance(item, dict))

    reply.json_objects = objects


def _last_valid_reply_wins() -> None:
    """The text scanned from its end (a `lastIndexOf('{')` reader): the last valid object is the reply."""
    original = reply.json_objects
    reply.json_objects = lambda text: iter(list(original(text))[::-1])


# --- the policy and gatekeeper, as a Java team's habits bend them ---------------------------------


def _first_duplicate_kept() -> None:
    """Two checks of one claim: the first kept (a `putIfAbsent`), not the most severe."""
    policy.CHECK_SEVERITY = dict.fromkeys(Derivability, 0)


def _duplicates_persisted() -> None:
    """Every check the model gave is persisted (a `List`, not a `Map` by claim id): two checks of one claim."""
    original = policy.sanitise_claim_checks

    def sanitise(checks: Any, claims: Any, *rest: Any) -> Any:
        result, notes = original(checks, claims, *rest)
        seen: set[str] = set()
        known = {c.claim_id for c in claims}
        for check in checks:
            if check.claim_id in seen and check.claim_id in known:
                result.append(check)
            seen.add(check.claim_id)
        return result, notes

    policy.sanitise_claim_checks = sanitise


def _refs_from_first_binding() -> None:
    """Empty refs completed from the claim's first binding only (`bindings.get(0)`)."""
    original = policy.complete_refs

    def complete(refs: Any, claim: Any, trace: Any) -> Any:
        if not refs and claim.evidence_bindings:
            refs = [EvidenceRef.model_validate(claim.evidence_bindings[0].model_dump())]
        return original(refs, claim, trace)

    policy.complete_refs = complete


def _any_unresolved_binding() -> None:
    """direct_observation made unsupported when any binding does not resolve (§5 step 3 says: when none does)."""
    original = policy.resolving_bindings

    def resolving(claim: Any, *rest: Any) -> Any:
        found = original(claim, *rest)
        return found if len(found) == len(claim.evidence_bindings) else []

    policy.resolving_bindings = resolving


def _statement_trimmed() -> None:
    """`fact` written from `statement.trim()`."""
    original = policy.legacy_facts

    def facts(checks: Any, claims: Any) -> Any:
        return [f.model_copy(update={"fact": f.fact.strip()}) for f in original(checks, claims)]

    policy.legacy_facts = facts


def _schema_version(compare: Callable[[str], str]) -> Callable[[], None]:
    """schema_version compared after `compare` (`trim()`, `equalsIgnoreCase`)."""

    def apply() -> None:
        rule = gatekeeper.RULES["schema.executor_v2"]

        def check(inp: Any) -> Any:
            found = rule.check(inp)
            doc = inp.parsed.structured or {}
            version = doc.get("schema_version")
            if isinstance(version, str) and compare(version) == compare(gatekeeper.SCHEMA_VERSION):
                found = [i for i in found if i.path != "schema_version"]
            return found

        gatekeeper.RULES["schema.executor_v2"] = gatekeeper.Rule(rule.id, rule.severity, check, rule.description)

    return apply


def _failed_invocation_for_any_error() -> None:
    """evidence.failed_invocation raised when any invocation of the session failed, cited or not."""
    rule = gatekeeper.RULES["evidence.failed_invocation"]

    def check(inp: Any) -> Any:
        failed = [i for i, row in inp.invocations.items() if row.status == "error"]
        return rule.check(inp) or [gatekeeper._issue(rule.id, f"{i} ended in error") for i in failed[:1]]

    gatekeeper.RULES[rule.id] = gatekeeper.Rule(rule.id, rule.severity, check, rule.description)


def _trace_in_hash_order(evaluation: dict[str, Any]) -> None:
    """The trace summary from a `HashMap` of invocations by tool name: not in call order."""
    entries = evaluation["tool_trace_summary"]
    evaluation["tool_trace_summary"] = sorted(entries, key=lambda e: (e["tool_name"], e["trace_ref"]))


# --- the answer, as a Java serialiser writes it --------------------------------------------------


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    return [_drop_nulls(v) for v in value] if isinstance(value, list) else value


def _non_null_everywhere(body: dict[str, Any]) -> str:
    """Jackson's `Include.NON_NULL` on the whole answer: the §7 nulls and the siblings' nulls left out."""
    return json.dumps(_drop_nulls(body))


OPTIONAL_HOLDERS = ("errors", "warnings", "evidence_refs")


def _drop_optional_nulls(value: Any, key: str | None = None) -> Any:
    """`NON_NULL` on the objects whose keys are optional (gatekeeper issues, evidence refs), nowhere else."""
    if isinstance(value, list):
        return [_drop_optional_nulls(v, key) for v in value]
    if isinstance(value, dict):
        holder = key in OPTIONAL_HOLDERS
        return {k: _drop_optional_nulls(v, k) for k, v in value.items() if not (holder and v is None)}
    return value


def _non_null_where_optional(body: dict[str, Any]) -> str:
    return json.dumps(_drop_optional_nulls(body))


def _repeated_key_in_answer(body: dict[str, Any]) -> str:
    """The answer written by hand with a key twice (a builder that appends)."""
    inner = json.dumps(body["self_evaluation"])
    return '{"self_evaluation": ' + inner + ', "self_evaluation": ' + inner + "}"


def _siblings(change: Callable[[Any], Any]) -> Callable[[dict[str, Any]], None]:
    def apply(merged: dict[str, Any]) -> None:
        for key in list(merged):
            if key != "verifier_evaluation":
                merged[key] = change(merged[key])

    return apply


def _numbers_as_double(value: Any) -> Any:
    """Gson's `Map<String, Object>`: every number read as a `double`."""
    if isinstance(value, dict):
        return {k: _numbers_as_double(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers_as_double(v) for v in value]
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


SEEN_SIBLINGS: dict[str, Any] = {}
"""The store shared between requests of the faulty SUT below (one process, every session)."""


def _shared_sibling_store(merged: dict[str, Any]) -> None:
    """One store for every request, rows keyed by the session id alone: concurrent sessions' siblings merge."""
    for key, value in list(SEEN_SIBLINGS.items()):
        merged.setdefault(key, value)
    SEEN_SIBLINGS.update({k: v for k, v in merged.items() if k != "verifier_evaluation"})


def _info_version_number() -> None:
    async def info(self: serve.SutServer, _request: web.Request) -> web.Response:
        return web.json_response({"name": self.name, "version": 2, "protocol": "sut_protocol_v1"})

    serve.SutServer._info = info  # type: ignore[method-assign]


FAULTS: list[Seed] = [
    Seed(
        "jackson-case-insensitive-enums",
        "reply.fixed-sets",
        "verdicts and classes read ignoring case",
        _reply_model(_CaseInsensitiveEnums),
    ),
    Seed(
        "reply-legacy-set-unchecked",
        "reply.fixed-sets",
        "facts_checked's legacy classes not validated",
        _reply_model(_LegacySetUnchecked),
    ),
    # lenient parsing
    Seed(
        "jackson-repeated-key-keeps-last",
        "json.repeated-keys",
        "a repeated key keeps its last value (reply and executor output)",
        _repeated_keys_keep_last,
    ),
    Seed(
        "answer-repeats-a-key",
        "json.repeated-keys",
        "the answer repeats self_evaluation",
        _answer_text(_repeated_key_in_answer),
    ),
    Seed(
        "jackson-accept-float-as-int", "reply.contract", "critical_fact_count 2.0 bound to 2", _reply_model(_FloatAsInt)
    ),
    Seed(
        "reply-null-detail-accepted", "reply.contract", '"detail": null read as ""', _reply_model(_NullDetailAccepted)
    ),
    Seed(
        "jackson-fail-on-unknown-properties",
        "reply.contract",
        "a reply with a key beyond the six refused",
        _reply_model(_UnknownPropertiesRefused),
    ),
    Seed(
        "schema-version-trimmed", "gatekeeper.rules", "schema_version compared after trim()", _schema_version(str.strip)
    ),
    Seed(
        "schema-version-ignoring-case",
        "gatekeeper.rules",
        "schema_version compared ignoring case",
        _schema_version(str.lower),
    ),
    Seed(
        "reply-objects-in-arrays-count",
        "reply.found-in-prose",
        "an object inside an array is a reply candidate",
        _objects_in_arrays_count,
    ),
    Seed(
        "reply-last-valid-wins",
        "reply.found-in-prose",
        "the last valid object in the text is the reply",
        _last_valid_reply_wins,
    ),
    # number widths
    Seed(
        "reply-integer-score-refused",
        "reply.contract",
        "groundedness_score 0 or 1 (integers) refused",
        _reply_model(_IntegerScoreRefused),
    ),
    Seed(
        "score-held-as-float32",
        "verdict.groundedness-threshold",
        "groundedness_score held in a 32-bit float",
        _reply_model(_Float32Score),
    ),
    Seed(
        "gson-sibling-numbers-as-double",
        "persist.siblings",
        "sibling numbers read as double (2^53 + 1 rounded)",
        persisted_fault(_siblings(_numbers_as_double)),
    ),
    # null handling
    Seed(
        "jackson-non-null-everywhere",
        "persist.null-written",
        "Include.NON_NULL on the whole answer: model_verdict, groundedness_score and sibling nulls left out",
        _answer_text(_non_null_everywhere),
    ),
    Seed(
        "gson-sibling-nulls-dropped",
        "persist.siblings",
        "nulls inside sibling values dropped (Gson without serializeNulls)",
        persisted_fault(_siblings(_drop_nulls)),
    ),
    # string cutting
    Seed("statement-trimmed", "facts.statement", "fact written from statement.trim()", _statement_trimmed),
    # ordering
    Seed(
        "duplicate-check-first-kept",
        "claims.duplicate-check",
        "of two checks of one claim the first is kept",
        _first_duplicate_kept,
    ),
    Seed(
        "duplicate-checks-both-persisted",
        "claims.one-per-claim",
        "both checks of one claim persisted",
        _duplicates_persisted,
    ),
    Seed(
        "trace-in-hash-order",
        "persist.trace",
        "trace summary entries ordered by tool name",
        evaluation_fault(_trace_in_hash_order),
    ),
    # bindings
    Seed(
        "refs-from-first-binding-only",
        "refs.cover-bindings",
        "empty refs completed from the first binding only",
        _refs_from_first_binding,
    ),
    Seed(
        "any-unresolved-binding-unsupported",
        "claims.sanitised",
        "direct_observation unsupported when any binding does not resolve",
        _any_unresolved_binding,
    ),
    Seed(
        "failed-invocation-warning-uncited",
        "gatekeeper.rules",
        "evidence.failed_invocation for an errored invocation no claim cites",
        _failed_invocation_for_any_error,
    ),
    # concurrency between sessions
    Seed(
        "store-shared-between-sessions",
        "persist.isolation",
        "one store for every request: other sessions' sibling keys in the answer",
        persisted_fault(_shared_sibling_store),
    ),
    # /info
    Seed("info-version-number", "protocol.info", '/info "version": 2, a number', _info_version_number),
]

VARIANTS: list[Seed] = [
    Seed(
        "jackson-indent-output",
        "input.gatekeeper",
        'Jackson INDENT_OUTPUT: answers pretty-printed ("key" : value) and the prompt\'s JSON re-indented',
        encoding=Encoding(indent=2, jackson=True, prompt_indent=True),
    ),
    Seed(
        "jackson-non-null-where-optional",
        "persist.null-written",
        "Include.NON_NULL on gatekeeper issues and evidence refs only",
        _answer_text(_non_null_where_optional),
    ),
]
