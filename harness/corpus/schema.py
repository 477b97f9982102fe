"""The case file contract (CASE_FORMAT.md) as strict pydantic models.

Unknown keys are errors everywhere in the contract. The executor's structured
output and the scripted verifier reply inside a case are data under test and
are not validated here.
"""

from __future__ import annotations

import hashlib
import json
from difflib import get_close_matches
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from harness.system.gatekeeper import RULES
from harness.system.models import (
    Claim,
    Derivability,
    ExecutorEmission,
    ExecutorOutput,
    GatekeeperStatus,
    ParsedExecutorOutput,
    ParseStatusValue,
    ToolInvocation,
    TraceEntry,
    Verdict,
)
from harness.system.parser import executor_output, parse_structured_output
from harness.system.store_names import KEY_LENGTH
from harness.system.trace import session_trace_summary

CaseKind = Literal["policy", "quality"]
ADVERSARIAL_PREFIX = "adv-"
ADVERSARIAL_CATEGORIES: dict[str, str] = {
    "adv-number": "near-miss numbers and units",
    "adv-entity": "swapped entities (pod, service, instance, region)",
    "adv-time": "wrong times or windows",
    "adv-negation": "negation",
    "adv-error-code": "fabricated error codes",
    "adv-overstated": "overstated scope or causality",
    "adv-external": "external facts",
    "adv-injection": "prompt injection inside tool output",
    "adv-prose-only": "prose claims the structured output does not make",
    "adv-excerpt-cutoff": "evidence cut off by the excerpt limit",
    "adv-failed-tool": "failed tool calls",
    "adv-long-evidence": "very long evidence",
}
"""The adversarial categories a tag `adv-*` may name (a tag outside them is a validation error)."""
MAX_LABELS = 2
"""At most two acceptable labels per claim (cases/README.md: never list two to avoid deciding, never more)."""
STORE_NAMESPACE_LENGTH = 15
"""Room for the prefix a runner puts on each session id in the store (`harness.run.schedule.store_namespace`)."""
MAX_SESSION_ID = KEY_LENGTH - STORE_NAMESPACE_LENGTH
"""A session id (the case's or an other session's) that fits every backend with its namespace: 185 characters."""
FAIL_RULES = sorted(r.id for r in RULES.values() if r.severity == "fail")
WARN_RULES = sorted(r.id for r in RULES.values() if r.severity == "warn")


class Contract(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def _repeated(ids: list[str]) -> list[str]:
    return sorted({i for i in ids if ids.count(i) > 1})


class OtherSession(Contract):
    id: str = Field(min_length=1)
    tool_invocations: list[ToolInvocation] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_invocation_ids(self) -> OtherSession:
        if dupes := _repeated([inv.id for inv in self.tool_invocations]):
            raise ValueError(f"tool_invocations repeat ids {dupes}")
        return self


class CaseSession(Contract):
    id: str | None = None
    question: str
    tool_invocations: list[ToolInvocation] = Field(default_factory=list)
    other_sessions: list[OtherSession] = Field(default_factory=list)
    tool_trace_summary: list[TraceEntry] | None = None
    self_evaluation: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _unique_ids(self) -> CaseSession:
        if dupes := _repeated([inv.id for inv in self.tool_invocations]):
            raise ValueError(f"tool_invocations repeat ids {dupes}")
        return self


class CaseExecutor(Contract):
    final_answer: str = ""
    structured_output: dict[str, Any] | None = None
    structured_output_raw: str | None = None

    @model_validator(mode="after")
    def _one_form(self) -> CaseExecutor:
        if self.structured_output is not None and self.structured_output_raw is not None:
            raise ValueError("give structured_output or structured_output_raw, not both")
        return self

    def emission(self) -> ExecutorEmission:
        """What the executor emitted, as the system receives it."""
        raw = self.structured_output_raw
        if self.structured_output is not None:
            raw = json.dumps(self.structured_output, ensure_ascii=False)
        return ExecutorEmission(final_answer=self.final_answer, structured_output_raw=raw)


class VerifierResponse(Contract):
    json_: dict[str, Any] | None = Field(default=None, alias="json")
    raw: str | None = None

    @model_validator(mode="after")
    def _one_form(self) -> VerifierResponse:
        if (self.json_ is None) == (self.raw is None):
            raise ValueError("give exactly one of json or raw")
        return self


class ExpectedGatekeeper(Contract):
    status: GatekeeperStatus
    failed_rules: list[Literal[tuple(FAIL_RULES)]] = Field(default_factory=list)  # type: ignore[valid-type]
    warnings: list[Literal[tuple(WARN_RULES)]] | None = None  # type: ignore[valid-type]


Labels = Derivability | Annotated[list[Derivability], Field(min_length=1, max_length=MAX_LABELS)]
Verdicts = Verdict | list[Verdict]


class Expected(Contract):
    parse_status: ParseStatusValue
    gatekeeper: ExpectedGatekeeper
    claims: dict[str, Labels] | None = None
    verdict: Verdicts
    model_verdict: Verdicts | None = None

    def acceptable_labels(self) -> dict[str, set[Derivability]]:
        return {cid: set(_as_list(v)) for cid, v in (self.claims or {}).items()}

    def acceptable_verdicts(self) -> set[Verdict]:
        return set(_as_list(self.verdict))

    def acceptable_model_verdicts(self) -> set[Verdict] | None:
        return None if self.model_verdict is None else set(_as_list(self.model_verdict))


class CaseSettings(Contract):
    """`meta.kit.settings`: protocol settings this case pins (INTERPRETATION §5 step 5 and §7 make them settings).

    Unset keys take the run's or the kit's value. A case that pins a setting is judged at it by every layer:
    the kit sends it, a run applies it, and the spec trace is built at its excerpt limit."""

    claim_guard: bool | None = None
    excerpt_chars: int | None = Field(default=None, ge=1)


def kit_section(meta: dict[str, Any]) -> dict[str, Any]:
    """`meta.kit` (empty when absent); a `meta.kit` that is not a mapping is an error."""
    kit = meta.get("kit", {})
    if not isinstance(kit, dict):
        raise ValueError(f"meta.kit must be a mapping, not {type(kit).__name__}")
    return kit


class Case(Contract):
    id: str = Field(pattern=r"^[a-z0-9._-]+$")
    title: str = Field(min_length=1)
    spec: list[str] = Field(min_length=1)
    tags: list[str] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)
    session: CaseSession
    executor: CaseExecutor
    verifier_response: VerifierResponse | None = None
    expected: Expected
    _parsed: tuple[CaseExecutor, ExecutorOutput] | None = PrivateAttr(default=None)
    _trace: tuple[CaseSession, dict[str, Any], int, list[TraceEntry], list[dict[str, Any]]] | None = PrivateAttr(
        default=None
    )

    def _kept(self, name: str) -> Any:
        """A private attribute, read from pydantic's dict of them: `self._trace` goes through BaseModel.__getattr__,
        a Python call per read, and scoring restores every result's trace through `_traced`."""
        return (self.__pydantic_private__ or {}).get(name)

    @field_validator("meta")
    @classmethod
    def _kit_settings_valid(cls, meta: dict[str, Any]) -> dict[str, Any]:
        """`meta` is free, but its `kit.settings` is read by the kit: a wrong key or value is named at load."""
        CaseSettings.model_validate(kit_section(meta).get("settings") or {})
        return meta

    @property
    def settings(self) -> CaseSettings:
        """The protocol settings the case pins (`meta.kit.settings`); unset ones are None."""
        return CaseSettings.model_validate(kit_section(self.meta).get("settings") or {})

    def excerpt_limit(self, default: int) -> int:
        """The excerpt limit this case runs at: its own `meta.kit.settings.excerpt_chars`, else `default`."""
        return self.settings.excerpt_chars or default

    def _traced(self, excerpt_chars: int, keep: bool = True) -> tuple[list[TraceEntry], list[dict[str, Any]]]:
        # kept with the session and meta (whose settings may set the limit) it was made from, for the limit asked
        kept = self._kept("_trace")
        if kept is not None and kept[0] is self.session and kept[1] is self.meta and kept[2] == excerpt_chars:
            return kept[3], kept[4]
        limit = self.excerpt_limit(excerpt_chars)
        entries = session_trace_summary(self.session.tool_trace_summary, self.session.tool_invocations, limit)
        built = (self.session, self.meta, excerpt_chars, entries, [e.model_dump(mode="json") for e in entries])
        if keep:
            self._trace = built
        return built[3], built[4]

    def trace(self, excerpt_chars: int) -> list[TraceEntry]:
        """The trace summary the spec defines for the case at an excerpt limit (§7), built once per limit."""
        return list(self._traced(excerpt_chars)[0])

    def trace_json(self, excerpt_chars: int, keep: bool = True) -> list[dict[str, Any]]:
        """`trace` as persisted JSON (what a record's elided trace is restored to). Do not mutate it.

        `keep=False` builds it without keeping it on the case: a run holds every case, and the excerpts it would
        keep (up to the excerpt limit per invocation) are as large as the case's own results.
        """
        return self._traced(excerpt_chars, keep)[1]

    def _parse(self) -> ExecutorOutput:
        # kept with the executor object it was made from: a copy with another executor parses again
        kept = self._kept("_parsed")
        if kept is None or kept[0] is not self.executor:
            parsed = parse_structured_output(self.executor.emission().structured_output_raw)
            kept = self._parsed = (self.executor, executor_output(parsed))
        return kept[1]

    def adopt_executor_output(self, output: ExecutorOutput) -> None:
        """Keep the system's reading of this case's executor output (the same parser over the same bytes, made while
        the case ran), so a later reader of the case does not parse it again."""
        if self._kept("_parsed") is None:
            self._parsed = (self.executor, output)

    @property
    def executor_output(self) -> ExecutorOutput:
        """The executor output as the system's parser reads it (status, claims items, the policy's claims), read
        once per case: every layer reads this instead of parsing again; do not mutate the executor in place
        after reading it."""
        return self._parse()

    @property
    def parsed_output(self) -> ParsedExecutorOutput:
        """The parse status and the decoded object (`executor_output.parsed`)."""
        return self._parse().parsed

    @property
    def executor_claims(self) -> list[Claim]:
        """The executor's structured claims as the policy reads them (`executor_output.claims`)."""
        return self._parse().claims

    @field_validator("tags")
    @classmethod
    def _known_adversarial_tags(cls, tags: list[str]) -> list[str]:
        for tag in tags:
            if tag.startswith(ADVERSARIAL_PREFIX) and tag not in ADVERSARIAL_CATEGORIES:
                raise ValueError(f"unknown adversarial tag {tag!r}{did_you_mean(tag, ADVERSARIAL_CATEGORIES)}")
        return tags

    @property
    def kind(self) -> CaseKind:
        return "policy" if self.verifier_response is not None else "quality"

    @property
    def session_id(self) -> str:
        return self.session.id or self.id

    @model_validator(mode="before")
    @classmethod
    def _no_nul(cls, data: Any, info: ValidationInfo) -> Any:
        """PostgreSQL's text cannot hold a NUL character, so no case may carry one (a case that validates runs
        on every backend). Not looked for again in a validated case's own JSON (`VALIDATED_BEFORE`)."""
        if info.context is VALIDATED_BEFORE:
            return data
        if _may_hold_nul(data) and (where := _nul_path(data, "")) is not None:
            raise ValueError(f"{where or '<root>'} holds a NUL character (\\0), which PostgreSQL cannot store")
        return data

    @model_validator(mode="after")
    def _fits_the_store(self) -> Case:
        """Ids and tool names within the store's column lengths on every backend (SQLite would not check)."""
        too_long: list[str] = []
        sessions = [("session", self.session_id, self.session.tool_invocations)]
        sessions += [
            (f"session.other_sessions[{i}]", o.id, o.tool_invocations)
            for i, o in enumerate(self.session.other_sessions)
        ]
        for path, session_id, invocations in sessions:
            if len(session_id) > MAX_SESSION_ID:
                name = "id" if path != "session" or self.session.id else "id (the case id, used as the session id)"
                too_long.append(f"{path}.{name} is {len(session_id)} characters (at most {MAX_SESSION_ID})")
            for j, inv in enumerate(invocations):
                for key in ("id", "tool_name"):
                    value = getattr(inv, key)
                    if len(value) > KEY_LENGTH:
                        too_long.append(
                            f"{path}.tool_invocations[{j}].{key} is {len(value)} characters (at most {KEY_LENGTH})"
                        )
        if too_long:
            raise ValueError("; ".join(too_long) + ": the store's columns hold no more on PostgreSQL")
        return self

    def content_hash(self) -> str:
        """A stable hash of the case content, so a changed case is never matched to old results."""
        blob = json.dumps(self.model_dump(mode="json", by_alias=True), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def contract_keys() -> set[str]:
    """Every key the case contract knows, at any depth (for "did you mean" on an unknown key)."""
    models: list[type[BaseModel]] = [*Contract.__subclasses__(), ToolInvocation, TraceEntry]
    return {f.alias or name for model in models for name, f in model.model_fields.items()}


def did_you_mean(word: str, known: Any) -> str:
    """` (did you mean 'x'?)` for the closest known word, or `; known: ...` when none is close."""
    options = sorted(str(k) for k in known)
    close = get_close_matches(word, options, n=1, cutoff=0.6)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f"; known: {', '.join(options)}" if len(options) <= 15 else ""


VALIDATED_BEFORE: dict[str, bool] = {"validated_before": True}
"""The validation context of a case's JSON made from a validated `Case` (a run's `CaseRef`): the whole-case NUL
walk, which serialises the case, is not made again for each unit that runs it."""


def _may_hold_nul(value: Any) -> bool:
    """False when no string (or key) in `value` can hold a NUL: JSON always escapes one as `\\u0000`.

    The fast check of `_no_nul`, which runs on every validation of every case: serialising in C is several
    times cheaper than walking the case in Python and naming each key path on the way. A `\\u0000` written
    as text, or a value JSON cannot encode, only sends the case to the exact walk.
    """
    try:
        return "\\u0000" in json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return True


def _nul_path(value: Any, path: str) -> str | None:
    """The key path of the first string (or key) holding a NUL character, or None."""
    if isinstance(value, str):
        return path if "\x00" in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and "\x00" in key:
                return where
            if (found := _nul_path(item, where)) is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if (found := _nul_path(item, f"{path}[{i}]")) is not None:
                return found
    return None


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def case_json_schema() -> dict[str, Any]:
    """JSON Schema for case files, for editors that autocomplete YAML."""
    schema = Case.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "verifier-bench case"
    return schema
