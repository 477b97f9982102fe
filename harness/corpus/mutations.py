"""Typed, pure perturbations of a labelled quality case: the mutation generator's vocabulary.

A mutation offers the *sites* where it applies to a seed (every random choice
is made there and recorded in the site's params) and *applies* one site,
returning the mutated session and executor and the gold labels that follow.
A mutation that cannot derive a label mechanically for a seed offers no site.
Nothing here runs the system: the generator runs `prepare` on each mutant to
compute, and to confirm, what the gatekeeper concludes.
"""

from __future__ import annotations

import copy
import random
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict

from harness.corpus.citations import cited_invocations
from harness.corpus.schema import Case
from harness.system.gatekeeper import INVOCATION_REF, SCHEMA
from harness.system.models import Derivability, ParseStatusValue
from harness.system.parser import output_of

D = Derivability
LabelSet = frozenset[Derivability]
SCN = "chat-verifier-agent/"
FABRICATED = SCN + "executor-gatekeeper-shall-validate-deterministic-structured-output-failures/"
FACT_CHECK = SCN + "verifier-shall-fact-check-executor-answers/"
INPUTS = SCN + "verifier-shall-consume-explicit-verification-inputs/"
MAX_SITES = 3
"""At most this many sites of one mutation per seed, so that no seed dominates."""


class Site(BaseModel):
    """One application of a mutation; `params` fully determine the mutant."""

    model_config = ConfigDict(frozen=True)
    params: dict[str, Any]


class Mutant(BaseModel):
    """A mutated case body and how its expectation follows from the seed's."""

    body: dict[str, Any]
    labels: dict[str, LabelSet] | None
    title: str
    parse_status: ParseStatusValue = "valid"
    fail_rule: str | None = None
    warn_rule: str | None = None
    spec: list[str] | None = None
    tags: list[str] = []


@dataclass(frozen=True)
class Seed:
    """A labelled quality case, read once for all mutations."""

    case: Case
    body: dict[str, Any]
    structured: dict[str, Any]
    from_raw: bool
    labels: dict[str, LabelSet]
    bound: dict[str, frozenset[str]]
    """Claim id -> the invocations its evidence resolves to, as the system resolves it (`cited_invocations`)."""
    content_hash: str

    @classmethod
    def of(cls, case: Case) -> Seed | None:
        """None unless the case is a quality case whose output the system reads as `valid`, with gold labels.

        The output is the system's own strict parse (`Case.parsed_output`): text `json.loads` takes but
        the system reads as malformed (NaN, a repeated key) seeds nothing, as its mutants would be labelled from
        a document the system never reads. Such a case is not a seed, like any case without a valid output.
        """
        structured = case.parsed_output.structured
        if case.kind != "quality" or case.parsed_output.parse_status.status != "valid" or structured is None:
            return None
        labels = {cid: frozenset(v) for cid, v in case.expected.acceptable_labels().items()}
        if not labels:
            return None
        dumped = case.model_dump(mode="json", by_alias=True)
        body = {"session": dumped["session"], "executor": dumped["executor"]}
        from_raw = case.executor.structured_output_raw is not None
        return cls(case, body, structured, from_raw, labels, cited_invocations(case), case.content_hash())

    def invocation_ids(self) -> list[str]:
        return [inv.id for inv in self.case.session.tool_invocations]


class Mutation(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def summary(self) -> str: ...

    def sites(self, seed: Seed, rng: random.Random) -> list[Site]: ...

    def apply(self, seed: Seed, site: Site) -> Mutant: ...


def _bindings(claim: dict[str, Any]) -> list[dict[str, Any]]:
    bindings = claim.get("evidence_bindings")
    return [b for b in bindings if isinstance(b, dict)] if isinstance(bindings, list) else []


def _pick(rng: random.Random, items: list[Any], k: int = MAX_SITES) -> list[Any]:
    """Up to k items in a seeded random order that depends only on `rng` and `items`."""
    return rng.sample(items, min(k, len(items)))


def _with_structured(seed: Seed, structured: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(seed.body)
    body["executor"]["structured_output"] = structured
    body["executor"]["structured_output_raw"] = None
    return body


def failed_citation_labels(labels: LabelSet) -> LabelSet:
    """A claim whose citation fails is judged without it (cases/README.md, "Citations"): only `contradicted`
    (any result of the session may refute a claim) and `external_unknown` (no tool observes it) stand without
    a resolving citation; every other class becomes `unsupported`. One label in gives one label out."""
    keep = (D.CONTRADICTED, D.EXTERNAL_UNKNOWN)
    return frozenset(label if label in keep else D.UNSUPPORTED for label in labels)


# --- citation mutations: the gatekeeper's evidence.invocation_ref and schema rules -------------


@dataclass(frozen=True)
class BindingMutation:
    """Base for mutations of one claim's evidence bindings; labels follow `failed_citation_labels`."""

    name: ClassVar[str]
    summary: ClassVar[str]
    rule: ClassVar[str] = INVOCATION_REF
    scenarios: ClassVar[tuple[str, ...]] = ()

    def candidates(self, seed: Seed) -> list[tuple[str, int]]:
        return [
            (c["claim_id"], bi)
            for c in output_of(seed.structured).claim_objects
            if c["claim_id"] in seed.labels
            for bi, b in enumerate(_bindings(c))
            if isinstance(b.get("source_invocation_ids"), list) and b["source_invocation_ids"]
        ]

    def sites(self, seed: Seed, rng: random.Random) -> list[Site]:
        if seed.from_raw:
            return []
        picked = _pick(rng, self.candidates(seed))
        return [Site(params={"claim_id": cid, "binding": bi, **self.choose(seed, cid, bi, rng)}) for cid, bi in picked]

    def choose(self, seed: Seed, claim_id: str, binding: int, rng: random.Random) -> dict[str, Any]:
        return {}

    def edit(self, seed: Seed, body: dict[str, Any], claim: dict[str, Any], site: Site) -> str:
        raise NotImplementedError

    def apply(self, seed: Seed, site: Site) -> Mutant:
        structured = copy.deepcopy(seed.structured)
        claim = next(c for c in output_of(structured).claim_objects if c["claim_id"] == site.params["claim_id"])
        body = _with_structured(seed, structured)
        what = self.edit(seed, body, claim, site)
        labels = dict(seed.labels)
        labels[claim["claim_id"]] = failed_citation_labels(labels[claim["claim_id"]])
        return Mutant(body=body, labels=labels, title=what, fail_rule=self.rule, spec=[*self.scenarios])


@dataclass(frozen=True)
class MissingInvocation(BindingMutation):
    name: ClassVar[str] = "missing-invocation"
    summary: ClassVar[str] = "a binding cites an invocation id this session never made"
    scenarios: ClassVar[tuple[str, ...]] = (
        FABRICATED + "invocation-rule-rejects-fabricated-invocation-ids",
        FABRICATED + "invocation-reference-failure-downgrades-to-reject",
        FACT_CHECK + "structured-executor-claims-are-verified-first",
    )

    def choose(self, seed: Seed, claim_id: str, binding: int, rng: random.Random) -> dict[str, Any]:
        known = set(seed.invocation_ids()) | {
            i.id for s in seed.case.session.other_sessions for i in s.tool_invocations
        }
        stem = re.sub(r"\d+$", "", seed.invocation_ids()[0]) if seed.invocation_ids() else "inv-"
        while True:
            fake = f"{stem}{rng.randint(100, 9999)}"
            if fake not in known:
                return {"invocation_id": fake}

    def edit(self, seed: Seed, body: dict[str, Any], claim: dict[str, Any], site: Site) -> str:
        binding = _bindings(claim)[site.params["binding"]]
        binding["source_invocation_ids"] = [site.params["invocation_id"]]
        return f"{claim['claim_id']} cites {site.params['invocation_id']}, which this session never ran"


@dataclass(frozen=True)
class ForeignInvocation(MissingInvocation):
    name: ClassVar[str] = "foreign-invocation"
    summary: ClassVar[str] = "a binding cites an invocation of another session"

    def choose(self, seed: Seed, claim_id: str, binding: int, rng: random.Random) -> dict[str, Any]:
        return {**super().choose(seed, claim_id, binding, rng), "other_session": f"s-other-{rng.randint(10, 99)}"}

    def edit(self, seed: Seed, body: dict[str, Any], claim: dict[str, Any], site: Site) -> str:
        binding = _bindings(claim)[site.params["binding"]]
        original = next(
            (i for i in body["session"]["tool_invocations"] if i["id"] in binding["source_invocation_ids"]), None
        )
        row = dict(original or {"tool_name": binding.get("tool_name") or "unknown", "result": ""})
        row["id"] = site.params["invocation_id"]
        body["session"].setdefault("other_sessions", []).append(
            {"id": site.params["other_session"], "tool_invocations": [row]}
        )
        binding["source_invocation_ids"] = [site.params["invocation_id"]]
        return (
            f"{claim['claim_id']} cites {site.params['invocation_id']}, "
            f"an invocation of another session ({site.params['other_session']})"
        )


@dataclass(frozen=True)
class RenameTool(BindingMutation):
    name: ClassVar[str] = "rename-tool"
    summary: ClassVar[str] = "a binding names another tool than the cited invocation's"
    scenarios: ClassVar[tuple[str, ...]] = (
        FABRICATED + "invocation-rule-rejects-tool-name-mismatch",
        FABRICATED + "invocation-reference-failure-downgrades-to-reject",
    )
    OTHER_TOOLS: ClassVar[tuple[str, ...]] = (
        "search_logs",
        "query_metrics",
        "query_prometheus",
        "query_prometheus_alerts",
        "kubectl_get_events",
        "kubectl_describe",
        "search_runbooks",
        "query_slow_log",
    )

    def choose(self, seed: Seed, claim_id: str, binding: int, rng: random.Random) -> dict[str, Any]:
        claim = next(c for c in output_of(seed.structured).claim_objects if c["claim_id"] == claim_id)
        current = _bindings(claim)[binding].get("tool_name")
        used = sorted({i.tool_name for i in seed.case.session.tool_invocations} - {current})
        pool = used or [t for t in self.OTHER_TOOLS if t != current]
        return {"tool_name": rng.choice(pool)}

    def edit(self, seed: Seed, body: dict[str, Any], claim: dict[str, Any], site: Site) -> str:
        binding = _bindings(claim)[site.params["binding"]]
        before = binding.get("tool_name")
        binding["tool_name"] = site.params["tool_name"]
        return f"{claim['claim_id']}'s binding calls the {before} invocation a {site.params['tool_name']} call"


@dataclass(frozen=True)
class DropBindings(BindingMutation):
    name: ClassVar[str] = "drop-bindings"
    summary: ClassVar[str] = "a confirmed claim loses all its evidence bindings"
    rule: ClassVar[str] = SCHEMA
    scenarios: ClassVar[tuple[str, ...]] = (
        FABRICATED + "schema-rule-rejects-missing-evidence-bindings",
        FABRICATED + "gatekeeper-fail-prevents-pass",
    )

    def candidates(self, seed: Seed) -> list[tuple[str, int]]:
        return [
            (c["claim_id"], 0)
            for c in output_of(seed.structured).claim_objects
            if c["claim_id"] in seed.labels and c.get("status") == "confirmed" and _bindings(c)
        ]

    def edit(self, seed: Seed, body: dict[str, Any], claim: dict[str, Any], site: Site) -> str:
        claim["evidence_bindings"] = []
        return f"confirmed claim {claim['claim_id']} has no evidence bindings"


# --- whole-output mutations -------------------------------------------------------------------

UNPARSEABLE = [FACT_CHECK + "malformed-structured-output-cannot-pass-through-natural-language-fallback",
               INPUTS + "malformed-structured-output-cannot-pass-through-natural-language-fallback"]  # fmt: skip


@dataclass(frozen=True)
class DropOutput:
    name: ClassVar[str] = "drop-output"
    summary: ClassVar[str] = "the executor emits prose only, no structured output"

    def sites(self, seed: Seed, rng: random.Random) -> list[Site]:
        return [Site(params={})]

    def apply(self, seed: Seed, site: Site) -> Mutant:
        body = copy.deepcopy(seed.body)
        body["executor"]["structured_output"] = None
        body["executor"]["structured_output_raw"] = None
        title = "no structured output at all, only the prose answer"
        return Mutant(body=body, labels=None, title=title, parse_status="missing", fail_rule=SCHEMA, spec=UNPARSEABLE)


@dataclass(frozen=True)
class TruncateOutput:
    name: ClassVar[str] = "truncate-output"
    summary: ClassVar[str] = "the structured output is cut off mid-way"

    def sites(self, seed: Seed, rng: random.Random) -> list[Site]:
        raw = seed.case.executor.emission().structured_output_raw or ""
        cuts = sorted({int(len(raw) * rng.uniform(0.2, 0.9)) for _ in range(2)})
        return [Site(params={"keep_chars": cut, "of_chars": len(raw)}) for cut in cuts if cut > 0]

    def apply(self, seed: Seed, site: Site) -> Mutant:
        body = copy.deepcopy(seed.body)
        raw = seed.case.executor.emission().structured_output_raw or ""
        body["executor"]["structured_output"] = None
        body["executor"]["structured_output_raw"] = raw[: site.params["keep_chars"]]
        title = f"structured output cut off after {site.params['keep_chars']} of {len(raw)} characters"
        return Mutant(body=body, labels=None, title=title, parse_status="malformed", fail_rule=SCHEMA, spec=UNPARSEABLE)


@dataclass(frozen=True)
class AddV1Field:
    name: ClassVar[str] = "add-v1-field"
    summary: ClassVar[str] = "the output carries a field V2 removed"

    def sites(self, seed: Seed, rng: random.Random) -> list[Site]:
        return (
            [] if seed.from_raw else [Site(params={"field": rng.choice(["diagnosis_summary", "user_facing_answer"])})]
        )

    def apply(self, seed: Seed, site: Site) -> Mutant:
        structured = copy.deepcopy(seed.structured)
        structured[site.params["field"]] = seed.case.executor.final_answer.strip() or "see claims"
        return Mutant(
            body=_with_structured(seed, structured),
            labels=dict(seed.labels),
            title=f"the output carries the removed V1 field {site.params['field']}",
            fail_rule=SCHEMA,
            spec=[FABRICATED + "schema-rule-rejects-removed-fields", FABRICATED + "gatekeeper-fail-prevents-pass"],
        )


@dataclass(frozen=True)
class WrongSchemaVersion:
    name: ClassVar[str] = "wrong-schema-version"
    summary: ClassVar[str] = "schema_version is not executor_evidence_v2"

    def sites(self, seed: Seed, rng: random.Random) -> list[Site]:
        return [] if seed.from_raw else [Site(params={"schema_version": rng.choice(["executor_evidence_v1", "2"])})]

    def apply(self, seed: Seed, site: Site) -> Mutant:
        structured = copy.deepcopy(seed.structured)
        structured["schema_version"] = site.params["schema_version"]
        return Mutant(
            body=_with_structured(seed, structured),
            labels=dict(seed.labels),
            title=f"schema_version is {site.params['schema_version']!r}",
            fail_rule=SCHEMA,
            spec=[FABRICATED + "gatekeeper-fail-prevents-pass"],
        )


@dataclass(frozen=True)
class UnknownField:
    name: ClassVar[str] = "unknown-field"
    summary: ClassVar[str] = "a claim carries a field the schema does not know (a warning only)"
    FIELDS: ClassVar[tuple[tuple[str, Any], ...]] = (("confidence", 0.92), ("severity", "high"), ("source", "executor"))

    def sites(self, seed: Seed, rng: random.Random) -> list[Site]:
        if seed.from_raw:
            return []
        ids = [c["claim_id"] for c in output_of(seed.structured).claim_objects]
        return [Site(params={"claim_id": cid, "field": rng.randrange(len(self.FIELDS))}) for cid in _pick(rng, ids, 1)]

    def apply(self, seed: Seed, site: Site) -> Mutant:
        structured = copy.deepcopy(seed.structured)
        key, value = self.FIELDS[site.params["field"]]
        next(c for c in output_of(structured).claim_objects if c["claim_id"] == site.params["claim_id"])[key] = value
        return Mutant(
            body=_with_structured(seed, structured),
            labels=dict(seed.labels),
            title=f"{site.params['claim_id']} carries an unknown field {key}; a warning, labels unchanged",
            warn_rule="schema.unknown_field",
            spec=[INPUTS + "gatekeeper-result-available-to-verifier"],
        )
