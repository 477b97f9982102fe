"""The mutation generator: labelled seed cases in, mechanically labelled new cases out.

For each seed and mutation (in sorted order) a random generator seeded with
`<seed>/<case id>/<mutation>` picks the sites, so a case's content does not
depend on which other seeds exist. Every mutant is run through the system's
deterministic part (`prepare`) to compute its expected parse status and
gatekeeper result; a mutant whose outcome is not the one its label rule
assumes is skipped. A balanced selection (round robin over mutations) keeps
at most `per_seed` of each seed's mutants, chosen from that seed alone, so adding a
seed adds only its own mutants and leaves every other file byte-identical.
Output is `yaml.safe_dump` with sorted keys: byte-stable.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import yaml

from harness.corpus.evidence_mutations import EVIDENCE_MUTATIONS
from harness.corpus.mutations import (
    AddV1Field,
    DropBindings,
    DropOutput,
    ForeignInvocation,
    LabelSet,
    MissingInvocation,
    Mutant,
    Mutation,
    RenameTool,
    Seed,
    Site,
    TruncateOutput,
    UnknownField,
    WrongSchemaVersion,
)
from harness.corpus.schema import Case
from harness.system.gatekeeper import INVOCATION_REF
from harness.system.models import SEVERITY, Derivability, Verdict
from harness.system.pipeline import Prepared, prepare
from harness.system.policy import structured_claims, verdicts_after_gatekeeper, verdicts_implied_by_labels

GENERATOR_VERSION = "1"
DEFAULT_RANDOM_SEED = 20260707
DEFAULT_PER_SEED = 3
SCARCE = frozenset({"alter-number", "swap-entity"})
"""Mutations only a few seeds offer (a figure or an entity to alter): tried first for those seeds."""
DEFAULT_COUNT = 300
"""The fewest generated cases `vbench cases generate` accepts (fewer: add labelled seed cases)."""

Check = Callable[[Case], list[str]]


def all_mutations() -> list[Mutation]:
    """Every mutation, sorted by name."""
    found: Iterable[Mutation] = [
        MissingInvocation(),
        ForeignInvocation(),
        RenameTool(),
        DropBindings(),
        DropOutput(),
        TruncateOutput(),
        AddV1Field(),
        WrongSchemaVersion(),
        UnknownField(),
        *EVIDENCE_MUTATIONS,
    ]
    return sorted(found, key=lambda m: m.name)


def prepare_case(case: Case) -> Prepared:
    """The system's deterministic part on a case: parse, trace summary, gatekeeper."""
    return prepare(
        case.session.question,
        case.executor.emission(),
        case.session.tool_invocations,
        case.session.tool_trace_summary,
    )


def derived_verdicts(labels: dict[str, LabelSet], prepared: Prepared) -> set[Verdict] | None:
    """The §4 verdicts the critical claims' labels allow; None when a critical claim has no label."""
    return verdicts_implied_by_labels(labels, structured_claims(prepared.parsed), every_critical_labelled=True)


def expected_verdicts(seed: Seed, seed_prepared: Prepared, mutant: Mutant, prepared: Prepared) -> list[Verdict] | None:
    """The effective verdicts a correct verifier may reach on the mutant, or None if not derivable."""
    if prepared.parsed.parse_status.status != "valid":
        return [Verdict.LOW_CONFID]
    assert mutant.labels is not None
    critical = {c.claim_id for c in structured_claims(prepared.parsed) if c.critical}
    seed_critical = {c.claim_id for c in structured_claims(seed_prepared.parsed) if c.critical}
    unchanged = critical == seed_critical and all(mutant.labels.get(c) == seed.labels.get(c) for c in critical)
    base = seed.case.expected.acceptable_verdicts() if unchanged else derived_verdicts(mutant.labels, prepared)
    if not base:
        return None
    gk = prepared.gatekeeper
    out = set().union(
        *(verdicts_after_gatekeeper(v, gk.status, gk.failed_rules, either_on_invocation_ref=True) for v in base)
    )
    return sorted(out, key=SEVERITY.__getitem__)


def outcome_as_assumed(mutant: Mutant, seed: Seed, seed_prepared: Prepared, prepared: Prepared) -> bool:
    """Whether the system's deterministic part concluded what the mutation's label rule assumes."""
    got, before = prepared.gatekeeper, seed_prepared.gatekeeper
    if prepared.parsed.parse_status.status != mutant.parse_status:
        return False
    if mutant.parse_status != "valid":
        return True
    if mutant.fail_rule is not None:
        if before.status == "fail" or mutant.fail_rule not in got.failed_rules or len(got.failed_rules) != 1:
            return False
        if mutant.fail_rule == INVOCATION_REF:
            labels = mutant.labels or {}
            changed = {cid for cid in labels if labels[cid] != seed.labels.get(cid)}
            return {e.claim_id for e in got.errors} <= changed | {None} and bool(changed)
        return True
    if mutant.warn_rule is not None:
        return before.status != "fail" and got.failed_rules == [] and mutant.warn_rule in got.warning_rules
    return (got.status, got.failed_rules, got.warning_rules) == (
        before.status,
        before.failed_rules,
        before.warning_rules,
    )


def label_value(labels: LabelSet) -> str | list[str]:
    order = list(Derivability)
    values = sorted(labels, key=order.index)
    return values[0].value if len(values) == 1 else [v.value for v in values]


def build_case(
    seed: Seed, seed_prepared: Prepared, mutation: Mutation, site: Site, n: int, random_seed: int
) -> Case | None:
    """The generated case for one site, or None when its expectation is not mechanical."""
    mutant = mutation.apply(seed, site)
    body = {
        "id": f"gen-{mutation.name}-{seed.case.id}-{n}",
        "title": f"{mutant.title} [{mutation.name} of {seed.case.id}]",
        "spec": mutant.spec or list(seed.case.spec),
        "tags": sorted(
            {"generated", "quality", f"mut-{mutation.name}", *mutant.tags}
            | {t for t in seed.case.tags if t.startswith("incident-")}
        ),
        "meta": {
            "generator_version": GENERATOR_VERSION,
            "random_seed": random_seed,
            "seed_id": seed.case.id,
            "seed_hash": seed.content_hash,
            "mutation": mutation.name,
            "mutation_params": site.params,
        },
        **mutant.body,
        "expected": {"parse_status": "valid", "gatekeeper": {"status": "pass"}, "verdict": "PASS"},
    }
    draft = Case.model_validate(body)
    prepared = prepare_case(draft)
    if not outcome_as_assumed(mutant, seed, seed_prepared, prepared):
        return None
    verdicts = expected_verdicts(seed, seed_prepared, mutant, prepared)
    if verdicts is None:
        return None
    gk = prepared.gatekeeper
    body["expected"] = {
        "parse_status": prepared.parsed.parse_status.status,
        "gatekeeper": {"status": gk.status, "failed_rules": gk.failed_rules, "warnings": gk.warning_rules},
        "claims": None if mutant.labels is None else {cid: label_value(v) for cid, v in sorted(mutant.labels.items())},
        "verdict": [v.value for v in verdicts] if len(verdicts) > 1 else verdicts[0].value,
    }
    return Case.model_validate(body)


def candidates(seeds: Sequence[Case], random_seed: int, check: Check | None = None) -> dict[str, list[Case]]:
    """Every mechanically labelled mutant, by mutation name, in seed order; seeds failing `check` are skipped."""
    out: dict[str, list[Case]] = {m.name: [] for m in all_mutations()}
    for case in sorted(seeds, key=lambda c: c.id):
        seed = Seed.of(case)
        if seed is None or "generated" in case.tags or "external" in case.tags or (check and check(case)):
            continue
        seed_prepared = prepare_case(case)
        if seed_prepared.gatekeeper.status == "fail":
            continue
        derived = derived_verdicts(seed.labels, seed_prepared)
        if derived is not None and not derived & case.expected.acceptable_verdicts():
            continue  # the seed's verdict does not follow from its labels: nothing can follow from it
        for mutation in all_mutations():
            rng = random.Random(f"{random_seed}/{case.id}/{mutation.name}")
            for n, site in enumerate(mutation.sites(seed, rng), start=1):
                built = build_case(seed, seed_prepared, mutation, site, n, random_seed)
                if built is not None:
                    out[mutation.name].append(built)
    return out


def select(found: dict[str, list[Case]], per_seed: int, random_seed: int, check: Check | None = None) -> list[Case]:
    """At most `per_seed` mutants of each seed, of different mutations, sorted by id.

    Each seed's mutations are tried in an order seeded by the seed's id alone (scarce ones first), so what one
    seed yields never depends on the other seeds. A candidate that fails `check` is passed over (checked only when its turn comes).
    """
    by_seed: dict[str, dict[str, list[Case]]] = {}
    for name, cases in found.items():
        for c in cases:
            by_seed.setdefault(str(c.meta["seed_id"]), {}).setdefault(name, []).append(c)
    chosen: list[Case] = []
    for seed_id, offered in sorted(by_seed.items()):
        order = sorted(offered)
        random.Random(f"{random_seed}/select/{seed_id}").shuffle(order)
        order.sort(key=lambda name: name not in SCARCE)  # the few seeds a scarce mutation fits get it first
        picked = 0
        for name in order:
            candidate = next((c for c in offered[name] if not (check and check(c))), None)
            if candidate is not None and picked < per_seed:
                chosen.append(candidate)
                picked += 1
    return sorted(chosen, key=lambda c: c.id)


def generate(
    seeds: Sequence[Case],
    random_seed: int = DEFAULT_RANDOM_SEED,
    per_seed: int = DEFAULT_PER_SEED,
    check: Check | None = None,
) -> list[Case]:
    """Up to `per_seed` generated cases per seed, deterministic from `random_seed` and each seed alone."""
    return select(candidates(seeds, random_seed, check), per_seed, random_seed, check)


def case_yaml(case: Case) -> str:
    """One case as YAML: safe_dump, sorted keys, nulls of optional contract fields left out."""
    data = case.model_dump(mode="json", by_alias=True)
    session, executor, expected = data["session"], data["executor"], data["expected"]
    for parent, key in (
        (data, "verifier_response"),
        (session, "id"),
        (session, "tool_trace_summary"),
        (executor, "structured_output"),
        (executor, "structured_output_raw"),
        (expected, "claims"),
        (expected, "model_verdict"),
    ):
        if parent.get(key) is None:
            parent.pop(key, None)
    if not session.get("other_sessions"):
        session.pop("other_sessions", None)
    if not session.get("self_evaluation"):
        session.pop("self_evaluation", None)
    return yaml.safe_dump(data, sort_keys=True, allow_unicode=True, width=100, default_flow_style=False)


def relative_path(case: Case) -> Path:
    return Path(str(case.meta["mutation"])) / f"{case.id}.yaml"


def write_cases(cases: Sequence[Case], out: Path) -> list[Path]:
    """Replace the generated files under `out` with these cases; only `gen-*.yaml` files are removed."""
    for old in sorted(out.rglob("gen-*.yaml")) if out.exists() else []:
        old.unlink()
    written = []
    for case in cases:
        path = out / relative_path(case)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(case_yaml(case), encoding="utf-8")
        written.append(path)
    for folder in sorted(out.glob("*"), reverse=True) if out.exists() else []:
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    return written
