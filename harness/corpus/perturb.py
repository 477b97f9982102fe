"""Metamorphic perturbations: changes to a quality case that must not change a correct verifier's answer.

Each perturbation is a pure, seeded function registered by name (as the gatekeeper's `@rule`s are). It
returns the perturbed case, or None when it does not apply to the case (no structured claims, a malformed
output, nothing it could change). The gold labels are kept by construction: only the order of claims or
tool calls, an irrelevant extra call, whitespace, layout or claim names change, never what the evidence
says. `claim-ids` renames claims, so it also returns the new -> old id map to read the answers back.

A perturbation's seed derives from the run's seed, the case id and the perturbation's name
(`perturbation_seed`), so a rerun or a resumed run perturbs every case the same way.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness import UsageError
from harness.corpus.citations import cited_invocations
from harness.corpus.schema import Case
from harness.system.models import ExecutorOutput
from harness.system.parser import output_of
from harness.system.trace import DEFAULT_EXCERPT_CHARS, build_trace_summary, trace_ref

DEFAULT_PERTURB_SEED = 20261202
MAX_BLANK_LINES = 3
_TRIES = 20


@dataclass(frozen=True)
class PerturbContext:
    """What a perturbation may read besides the case: the other cases (for distractors) and the excerpt limit."""

    pool: Sequence[Case] = ()
    excerpt_chars: int = DEFAULT_EXCERPT_CHARS


@dataclass(frozen=True)
class Perturbed:
    """A perturbed case with what it takes to reproduce it and to read its answers back."""

    case: Case
    name: str
    seed: int
    claim_id_map: dict[str, str] | None = None
    """new claim id -> the original's (claim-ids only)."""


Body = dict[str, Any]
Change = tuple[Body, dict[str, str] | None]
PerturbFn = Callable[[Body, random.Random, PerturbContext], Change | None]


@dataclass(frozen=True)
class Perturbation:
    name: str
    description: str
    fn: PerturbFn = field(repr=False)


PERTURBATIONS: dict[str, Perturbation] = {}


def perturbation(name: str, description: str) -> Callable[[PerturbFn], PerturbFn]:
    """Register a perturbation under `name`."""

    def register(fn: PerturbFn) -> PerturbFn:
        PERTURBATIONS[name] = Perturbation(name, description, fn)
        return fn

    return register


class PerturbError(UsageError):
    """An unknown perturbation name (exit code 2)."""


def parse_perturbations(names: Sequence[str]) -> list[str]:
    """Validate names (comma lists allowed) against the registry; order kept, repeats dropped."""
    out: list[str] = []
    for item in names:
        for name in (n.strip() for n in item.split(",")):
            if not name:
                continue
            if name not in PERTURBATIONS:
                raise PerturbError(f"unknown perturbation {name!r}: choose from {', '.join(PERTURBATIONS)}")
            if name not in out:
                out.append(name)
    return out


def perturbation_seed(run_seed: int, case_id: str, name: str) -> int:
    """A stable seed per run seed, case and perturbation (not Python's salted hash)."""
    digest = hashlib.sha256(f"{run_seed}:{case_id}:{name}".encode()).hexdigest()
    return int(digest[:12], 16)


def perturb(case: Case, name: str, run_seed: int, context: PerturbContext = PerturbContext()) -> Perturbed | None:
    """Apply the perturbation `name` to a quality case; None when it does not apply."""
    if case.kind != "quality":
        return None
    seed = perturbation_seed(run_seed, case.id, name)
    body = case.model_dump(mode="json", by_alias=True)
    change = PERTURBATIONS[name].fn(body, random.Random(seed), context)
    if change is None:
        return None
    new_body, id_map = change
    new = Case.model_validate(new_body)
    if new == case:
        return None
    return Perturbed(case=new, name=name, seed=seed, claim_id_map=id_map)


# --- helpers ------------------------------------------------------------------------


def _output(body: Body) -> ExecutorOutput | None:
    """The parser's reading of the body's structured output (None for raw or malformed output); its items are
    the body's own, so a perturbation edits them in place."""
    output = output_of(body["executor"].get("structured_output"))
    return output if output.valid else None


def _claims(body: Body) -> list[Any] | None:
    """The body's own claims list (None for raw or malformed output)."""
    output = _output(body)
    return output.parsed.structured["claims"] if output is not None and output.parsed.structured else None


def _bindings(body: Body) -> list[dict[str, Any]]:
    """Every binding object given in a list, in claim order."""
    output = _output(body)
    entries = output.entries if output is not None else []
    return [b.raw for e in entries for b in e.bindings if b.path]  # path "": a single object, not in a list


def _reordered(items: list[Any], rng: random.Random) -> list[int] | None:
    """A seeded order of `items` whose list differs from the original; None when every order is the same."""
    n = len(items)
    if n < 2 or all(item == items[0] for item in items):
        return None
    for _ in range(_TRIES):
        order = rng.sample(range(n), n)
        if [items[i] for i in order] != items:
            return order
    j = next(k for k in range(n - 1) if items[k] != items[k + 1])  # swapping two unequal neighbours differs
    order = list(range(n))
    order[j], order[j + 1] = j + 1, j
    return order


def _explicit_trace(body: Body) -> bool:
    return body["session"].get("tool_trace_summary") is not None


# --- the perturbations --------------------------------------------------------------


@perturbation("claim-order", "the structured claims in another seeded order")
def claim_order(body: Body, rng: random.Random, ctx: PerturbContext) -> Change | None:
    claims = _claims(body)
    order = _reordered(claims, rng) if claims is not None else None
    if claims is None or order is None:
        return None
    claims[:] = [claims[i] for i in order]
    return body, None


@perturbation("invocation-order", "the tool invocations shuffled; bindings' trace refs renumbered to match")
def invocation_order(body: Body, rng: random.Random, ctx: PerturbContext) -> Change | None:
    session = body["session"]
    invocations = session["tool_invocations"]
    order = _reordered(invocations, rng)
    if order is None:
        return None
    session["tool_invocations"] = [invocations[i] for i in order]
    if _explicit_trace(body):  # the case names its refs: they move with their entries, unchanged
        trace = session["tool_trace_summary"]
        trace_order = _reordered(trace, rng)
        if trace_order is not None:
            session["tool_trace_summary"] = [trace[i] for i in trace_order]
        return body, None
    # build_trace_summary numbers invocations in order (trace_ref): invocation old i is now at order.index(i)
    renumber = {trace_ref(old + 1): trace_ref(new + 1) for new, old in enumerate(order)}
    for binding in _bindings(body):
        ref = binding.get("trace_ref")
        if isinstance(ref, str) and ref in renumber:
            binding["trace_ref"] = renumber[ref]
    return body, None


def incident_of(case: Case) -> str:
    """The incident a case belongs to: its `incident-*` tag, else the second part of its id (q-<incident>-...)."""
    for tag in case.tags:
        if tag.startswith("incident-"):
            return tag.removeprefix("incident-")
    parts = case.id.split("-")
    return parts[1] if len(parts) > 2 else case.id


@perturbation("distractor", "one invocation from another incident's case appended under a fresh id")
def distractor(body: Body, rng: random.Random, ctx: PerturbContext) -> Change | None:
    own = Case.model_validate(body)
    donors = sorted(
        (
            c
            for c in ctx.pool
            if c.kind == "quality" and incident_of(c) != incident_of(own) and c.session.tool_invocations
        ),
        key=lambda c: c.id,
    )
    if not donors:
        return None
    session = body["session"]
    taken = {inv["id"] for inv in session["tool_invocations"]}
    taken |= {inv.id for other in own.session.other_sessions for inv in other.tool_invocations}
    donor = rng.choice(donors).session.tool_invocations
    picked = donor[rng.randrange(len(donor))]
    new_id = picked.id
    while new_id in taken:
        new_id = f"{picked.id}-d{rng.randrange(10_000)}"
    extra = picked.model_copy(update={"id": new_id})
    if _explicit_trace(body):
        refs = {e["trace_ref"] for e in session["tool_trace_summary"]}
        ref = next(trace_ref(k) for k in range(len(refs) + 1, len(refs) + 1000) if trace_ref(k) not in refs)
        entry = build_trace_summary([extra], ctx.excerpt_chars)[0].model_copy(update={"trace_ref": ref})
        session["tool_trace_summary"].append(entry.model_dump(mode="json"))
    else:
        new_ref = trace_ref(len(session["tool_invocations"]) + 1)
        if any(b.get("trace_ref") == new_ref for b in _bindings(body)):
            return None  # a ref that points at nothing would start pointing at the distractor
    session["tool_invocations"].append(extra.model_dump(mode="json"))
    return body, None


@perturbation("evidence-position", "blank lines before the content of the bound tool results, inside the limit")
def evidence_position(body: Body, rng: random.Random, ctx: PerturbContext) -> Change | None:
    if _explicit_trace(body):
        return None  # the case's own excerpts are what the verifier reads: kept verbatim
    # the invocations the system resolves the claims' bindings to (§5 step 3), at the run's excerpt limit
    bound = set().union(*cited_invocations(Case.model_validate(body), ctx.excerpt_chars).values())
    changed = False
    for inv in body["session"]["tool_invocations"]:
        blank = "\n" * rng.randint(1, MAX_BLANK_LINES)
        if inv["id"] in bound and inv["result"].strip() and len(inv["result"]) + len(blank) <= ctx.excerpt_chars:
            inv["result"] = blank + inv["result"]
            changed = True
    return (body, None) if changed else None


LAYOUTS: list[dict[str, Any]] = [
    {"indent": None, "separators": (",", ":")},
    {"indent": None, "separators": (", ", ": ")},
    {"indent": 2},
    {"indent": 4},
    {"indent": "\t"},
]


def minified(text: str) -> str:
    """JSON text without the whitespace outside strings: two layouts of one document minify alike."""
    out: list[str] = []
    in_string = escaped = False
    for char in text:
        if in_string:
            out.append(char)
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string = True
            out.append(char)
        elif char not in " \t\r\n":
            out.append(char)
    return "".join(out)


def relayout(text: str, rng: random.Random, limit: int) -> str | None:
    """The JSON object or array `text` in another seeded layout, token for token; None when there is none.

    A result already longer than the limit is left alone: its excerpt would show other text.
    """
    if len(text) > limit:
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict | list):
        return None
    for layout in rng.sample(LAYOUTS, len(LAYOUTS)):
        new = json.dumps(doc, ensure_ascii=False, **layout)
        if text.endswith("\n"):
            new += "\n"
        # the same tokens (a number re-dumped as 1.5 for 1.50 is not the same evidence), still inside the limit
        if new != text and minified(new) == minified(text) and len(new) <= limit:
            return new
    return None


@perturbation("format", "JSON tool results re-laid out (whitespace, indentation), token for token, inside the limit")
def format_results(body: Body, rng: random.Random, ctx: PerturbContext) -> Change | None:
    if _explicit_trace(body):
        return None
    changed = False
    for inv in body["session"]["tool_invocations"]:
        new = relayout(inv["result"], rng, ctx.excerpt_chars)
        if new is not None:
            inv["result"] = new
            changed = True
    return (body, None) if changed else None


ID_PREFIXES = ["K", "F", "claim-", "c_", "A"]


@perturbation("claim-ids", "claim ids renamed consistently in the structured output and the gold labels")
def claim_ids(body: Body, rng: random.Random, ctx: PerturbContext) -> Change | None:
    output = _output(body)
    if output is None:
        return None
    expected = body["expected"].get("claims") or {}
    old = list(dict.fromkeys([c["claim_id"] for c in output.claim_objects] + list(expected)))
    if not old:
        return None
    prefix = rng.choice(ID_PREFIXES)
    numbers = rng.sample(range(100, 1000), len(old))
    rename = {o: f"{prefix}{n}" for o, n in zip(old, numbers, strict=True)}
    if set(rename.values()) & set(old):
        return None
    for claim in output.claim_objects:
        claim["claim_id"] = rename[claim["claim_id"]]
    if body["expected"].get("claims") is not None:
        body["expected"]["claims"] = {rename[k]: v for k, v in expected.items()}
    return body, {new: o for o, new in rename.items()}
