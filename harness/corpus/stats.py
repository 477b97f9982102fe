"""Corpus statistics and the corpus's coverage targets, as pure functions returning data.

Nothing here prints: `harness.cli.cases` renders the tables. By default the
tables and the targets count hand-written cases only; generated cases (tag
`generated`) and imported ones (tag `external`) appear in the origin summary
and can be counted on request, since 300 mutants must not meet a target that
is about hand-written labels.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, Field

from harness.corpus.catalogue import Scenario
from harness.corpus.schema import ADVERSARIAL_CATEGORIES, ADVERSARIAL_PREFIX, Case
from harness.system.models import Derivability, Verdict

Origin = Literal["hand-written", "generated", "external"]
ORIGINS: tuple[Origin, ...] = ("hand-written", "generated", "external")
INCIDENT_PREFIX, MUTATION_PREFIX = "incident-", "mut-"

"""The adversarial categories the corpus must cover and their tags (cases/README.md)."""


class Targets(BaseModel):
    """The numbers the hand-written corpus must reach."""

    policy_per_scenario: int = 3
    quality_per_scenario: int = 3
    quality_cases: int = 120
    incident_kinds: int = 8
    labels_per_class: int = 40
    verdict_share: float = 0.20
    cases_per_adversarial_category: int = 8
    min_claims: int = 1
    max_claims: int = 6


class KindCount(BaseModel):
    key: str
    policy: int = 0
    quality: int = 0

    @property
    def total(self) -> int:
        return self.policy + self.quality


class ClassCount(BaseModel):
    """How often a value is gold: alone, as one of several, and weighted 1/k for a k-way list."""

    key: str
    sole: int = 0
    any_of: int = 0
    weighted: float = 0.0
    share: float = 0.0
    policy: int = 0


class ScenarioCount(BaseModel):
    id: str
    policy: int = 0
    quality: int = 0
    generated: int = 0
    external: int = 0


class TargetResult(BaseModel):
    name: str
    description: str
    met: bool
    shortfalls: list[str] = Field(default_factory=list)


class CorpusStats(BaseModel):
    counted: list[Origin]
    total: int
    by_origin: list[KindCount]
    by_kind: KindCount
    labels: list[ClassCount]
    verdicts: list[ClassCount]
    claims_per_case: dict[int, int]
    tags: list[KindCount]
    incident_kinds: list[KindCount]
    adversarial: list[KindCount]
    unknown_adversarial_tags: list[str]
    mutations: list[KindCount]
    scenarios: list[ScenarioCount]
    uncovered: list[str]
    unknown_scenarios: list[str]
    targets: list[TargetResult]

    @property
    def targets_met(self) -> bool:
        return all(t.met for t in self.targets)


def origin(case: Case) -> Origin:
    """Where a case comes from, by its tags."""
    if "generated" in case.tags:
        return "generated"
    if "external" in case.tags:
        return "external"
    return "hand-written"


def _as_list(value: object) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [str(v) for v in items]


def _kind_counts(cases: Iterable[Case], keys_of: object) -> list[KindCount]:
    counts: dict[str, KindCount] = {}
    for case in cases:
        for key in keys_of(case):  # type: ignore[operator]
            entry = counts.setdefault(key, KindCount(key=key))
            setattr(entry, case.kind, getattr(entry, case.kind) + 1)
    return [counts[k] for k in sorted(counts)]


def class_counts(values: Iterable[object], classes: Sequence[str]) -> list[ClassCount]:
    """Count gold values (a value or a list of acceptable ones) per class."""
    out = {c: ClassCount(key=c) for c in classes}
    n = 0
    for value in values:
        n += 1
        items = sorted(set(_as_list(value)))
        for item in items:
            entry = out.setdefault(item, ClassCount(key=item))
            entry.any_of += 1
            entry.sole += len(items) == 1
            entry.weighted += 1 / len(items)
    for entry in out.values():
        entry.weighted = round(entry.weighted, 3)
        entry.share = round(entry.weighted / n, 4) if n else 0.0
    return list(out.values())


def scenario_counts(
    cases: Sequence[Case], catalogue: Mapping[str, Scenario], counted: Sequence[Origin] = ("hand-written",)
) -> list[ScenarioCount]:
    """Per scenario: policy and quality cases of the counted origins; generated and external ones apart."""
    rows = {sid: ScenarioCount(id=sid) for sid in catalogue}
    for case in cases:
        where = origin(case)
        for sid in dict.fromkeys(case.spec):
            row = rows.setdefault(sid, ScenarioCount(id=sid))
            fields = ([case.kind] if where in counted else []) + ([where] if where != "hand-written" else [])
            for field in fields:
                setattr(row, field, getattr(row, field) + 1)
    return list(rows.values())


def corpus_stats(
    cases: Sequence[Case],
    catalogue: Mapping[str, Scenario],
    targets: Targets = Targets(),
    counted: Sequence[Origin] = ("hand-written",),
) -> CorpusStats:
    """Every count and every target of the corpus; `counted` picks the origins the tables count."""
    scope = [c for c in cases if origin(c) in counted]
    quality = [c for c in scope if c.kind == "quality"]
    policy = [c for c in scope if c.kind == "policy"]
    labels = class_counts(
        (v for c in quality for v in (c.expected.claims or {}).values()), [d.value for d in Derivability]
    )
    policy_labels = Counter(v for c in policy for gold in (c.expected.claims or {}).values() for v in _as_list(gold))
    for entry in labels:
        entry.policy = policy_labels[entry.key]
    verdicts = class_counts((c.expected.verdict for c in quality), [v.value for v in Verdict])
    policy_verdicts = Counter(v for c in policy for v in _as_list(c.expected.verdict))
    for entry in verdicts:
        entry.policy = policy_verdicts[entry.key]
    claims = Counter(n for c in quality if (n := c.executor_output.claim_count) is not None)
    adversarial = _kind_counts(scope, lambda c: [t for t in c.tags if t.startswith(ADVERSARIAL_PREFIX)])
    by_tag = {a.key: a for a in adversarial}
    scenarios = scenario_counts(cases, catalogue, counted)
    stats = CorpusStats(
        counted=list(counted),
        total=len(cases),
        by_origin=_kind_counts(cases, lambda c: [origin(c)]),
        by_kind=KindCount(key="all", policy=len(policy), quality=len(quality)),
        labels=labels,
        verdicts=verdicts,
        claims_per_case=dict(sorted(claims.items())),
        tags=_kind_counts(scope, lambda c: sorted(set(c.tags))),
        incident_kinds=_kind_counts(scope, lambda c: [t for t in c.tags if t.startswith(INCIDENT_PREFIX)]),
        adversarial=[by_tag.get(tag, KindCount(key=tag)) for tag in ADVERSARIAL_CATEGORIES],
        unknown_adversarial_tags=sorted(set(by_tag) - set(ADVERSARIAL_CATEGORIES)),
        mutations=_kind_counts(
            [c for c in cases if origin(c) == "generated"],
            lambda c: [t for t in c.tags if t.startswith(MUTATION_PREFIX)],
        ),
        scenarios=scenarios,
        uncovered=[s.id for s in scenarios if s.id in catalogue and s.policy + s.quality == 0],
        unknown_scenarios=[s.id for s in scenarios if s.id not in catalogue],
        targets=[],
    )
    stats.targets = check_targets(stats, catalogue, targets)
    return stats


def check_targets(stats: CorpusStats, catalogue: Mapping[str, Scenario], targets: Targets) -> list[TargetResult]:
    """Each coverage target, met or not, with what falls short."""
    t = targets
    short_scenarios = [
        f"{s.id}: {s.policy} policy, {s.quality} quality"
        for s in stats.scenarios
        if s.id in catalogue and (s.policy < t.policy_per_scenario or s.quality < t.quality_per_scenario)
    ]
    kinds = [k for k in stats.incident_kinds if k.quality > 0]
    classes_short = [
        f"{c.key}: {c.weighted:g} (sole {c.sole})" for c in stats.labels if c.weighted < t.labels_per_class
    ]
    verdicts_short = [
        f"{v.key}: {v.share:.1%} ({v.weighted:g} of {stats.by_kind.quality})"
        for v in stats.verdicts
        if v.share < t.verdict_share
    ]
    adversarial_short = [f"{a.key}: {a.total}" for a in stats.adversarial if a.total < t.cases_per_adversarial_category]
    claims_out = {n: k for n, k in stats.claims_per_case.items() if not t.min_claims <= n <= t.max_claims}
    return [
        _target(
            "scenario-coverage",
            f"every scenario has >= {t.policy_per_scenario} policy and >= {t.quality_per_scenario} quality cases",
            short_scenarios,
        ),
        _target(
            "quality-cases",
            f">= {t.quality_cases} quality cases",
            [] if stats.by_kind.quality >= t.quality_cases else [f"{stats.by_kind.quality} quality cases"],
        ),
        _target(
            "incident-kinds",
            f"quality cases cover >= {t.incident_kinds} incident kinds (tags incident-*)",
            [] if len(kinds) >= t.incident_kinds else [f"{len(kinds)} incident kinds: {[k.key for k in kinds]}"],
        ),
        _target("labels-per-class", f"every class has >= {t.labels_per_class} gold labels (weighted)", classes_short),
        _target("verdict-balance", f"no verdict under {t.verdict_share:.0%} of quality cases", verdicts_short),
        _target(
            "adversarial-categories",
            f"every adversarial category has >= {t.cases_per_adversarial_category} cases",
            adversarial_short,
        ),
        _target(
            "claims-per-case",
            f"every quality case has {t.min_claims} to {t.max_claims} claims",
            [f"{k} case(s) with {n} claims" for n, k in claims_out.items()],
        ),
    ]


def _target(name: str, description: str, shortfalls: list[str]) -> TargetResult:
    return TargetResult(name=name, description=description, met=not shortfalls, shortfalls=shortfalls)
