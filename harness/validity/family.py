"""The family ranking (`harness.score.family`, Hsu's MCB) measured against variants of known skill.

A condition is k variants on the first n cases of a seeded order of the corpus: one variant at the control skill
and the others either at the same skill (a family of ties) or at the skill whose exact verdict accuracy is 5 (or 15)
points lower. Each replication draws every variant's run independently (`simulate.simulate_run`, the judge the local
server serves), ranks the family from the variant × case matrix, and checks it against the exact truth
(`truth.expected_metrics`):

- simultaneous coverage: every variant's MCB interval holds its true (rate − best other rate) at once;
- a wrong 'best': a variant called the best that is not strictly better than every other;
- power: the share of the worse variants called 'not best', and how often the true best is called 'best'.

Rates carry Clopper–Pearson intervals (`simulate.Rate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.score.family import mcb_intervals, standing
from harness.validity.simulate import Rate, simulate_run
from harness.validity.study import skill_for_loss, subset
from harness.validity.truth import CaseTable, expected_metrics

CONDITIONS: tuple[tuple[int, int, str], ...] = (
    (5, 20, "ties"), (5, 20, "one best"), (5, 20, "one best by 15 pp"), (20, 20, "ties"), (20, 20, "one best"),
    (20, 136, "ties"), (20, 136, "one best"), (20, 136, "one best by 15 pp"), (200, 136, "ties"),
    (200, 136, "one best"), (200, 136, "one best by 15 pp"),
)  # fmt: skip
"""(variants, cases, kind): the sizes users have (a handful of cases; the whole corpus) and a 200-variant sweep."""
LOSSES = {"ties": 0.0, "one best": 0.05, "one best by 15 pp": 0.15}
"""How far below the best the other variants' exact verdict accuracy lies, per kind of family."""


@dataclass
class FamilyCondition:
    variants: int
    cases: int
    kind: str
    replications: int
    covered: int
    wrong_best: int
    best_found: int
    worse_flagged: int
    worse_total: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "variants": self.variants, "cases": self.cases, "kind": self.kind, "replications": self.replications,
            "coverage": Rate(self.covered, self.replications).as_dict(),
            "wrong_best": Rate(self.wrong_best, self.replications).as_dict(),
            "best_found": Rate(self.best_found, self.replications).as_dict() if LOSSES[self.kind] else None,
            "worse_flagged": Rate(self.worse_flagged, self.worse_total).as_dict() if self.worse_total else None,
        }  # fmt: skip


def run_family_condition(
    tables: Sequence[CaseTable], k: int, n: int, kind: str, replications: int, seed: int, alpha: float = 0.05,
    control_skill: float = 0.8,
) -> FamilyCondition:  # fmt: skip
    chosen = subset(tables, n, seed)
    loss = LOSSES[kind]
    worse_skill = skill_for_loss(chosen, control_skill, loss) if loss else control_skill
    skills = np.array([control_skill] + [worse_skill] * (k - 1))
    truth_rate = {s: expected_metrics(chosen, float(s))["verdict_accuracy"] or 0.0 for s in set(skills.tolist())}
    rates = np.array([truth_rate[float(s)] for s in skills])
    others_best = np.array([np.delete(rates, i).max() for i in range(k)])
    truth = rates - others_best
    strictly_best = truth > 1e-12
    covered = wrong_best = best_found = flagged = 0
    for r in range(replications):
        base = seed * 1_000_003 + r * (k + 1)
        matrix = np.vstack([simulate_run(chosen, float(s), base + i).verdict_correct for i, s in enumerate(skills)])
        lower, upper, _ = mcb_intervals(matrix, alpha)
        said = [standing(float(lo), float(hi)) for lo, hi in zip(lower, upper, strict=True)]
        covered += bool(np.all((lower - 1e-12 <= truth) & (truth <= upper + 1e-12)))
        wrong_best += any(s == "best" and not strictly_best[i] for i, s in enumerate(said))
        best_found += said[0] == "best" and bool(strictly_best[0])
        flagged += sum(s == "not best" for i, s in enumerate(said) if truth[i] < -1e-12)
    worse_total = int((truth < -1e-12).sum()) * replications
    return FamilyCondition(k, n, kind, replications, covered, wrong_best, best_found, flagged, worse_total)


def run_family_study(
    tables: Sequence[CaseTable], replications: int = 400, seed: int = 26,
    conditions: Sequence[tuple[int, int, str]] = CONDITIONS,
) -> list[FamilyCondition]:  # fmt: skip
    """Every condition; the 200-variant ones at a quarter of the replications (each is 200 runs)."""
    return [
        run_family_condition(tables, k, n, kind, replications if k <= 20 else max(replications // 4, 1), seed)
        for k, n, kind in conditions
    ]


def family_markdown(rows: Sequence[dict[str, Any]], command: str, alpha: float = 0.05) -> str:
    """The study's table, with the band each row must meet: coverage ≥ 1 − alpha (its Clopper–Pearson upper
    bound at least that) and a wrong 'best' at most alpha."""
    lines = [
        "# Many variants: Hsu's MCB ranking against variants of known skill",
        "",
        f"Command: `{command}`",
        "",
        "Method: constrained multiple comparisons with the best (Hsu 1996, ch. 4), per-pair paired standard errors "
        "over per-case means, Student's t at 1 − alpha/(k − 1) (Bonferroni in place of Dunnett's quantile). "
        "Variants are the validity study's judge of known skill (`harness.validity`); the worse ones are 5 "
        "(or 15) points of verdict accuracy below the best. A family of ties is always covered (a constrained "
        "interval holds 0), so its row measures only a wrong 'best'. Rates carry 95% Clopper–Pearson intervals.",
        "",
        "| variants | cases | family | reps | simultaneous coverage | wrong 'best' | true best found | worse flagged | band |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        cov, wrong = row["coverage"], row["wrong_best"]
        met = cov["ci"][1] >= 1 - alpha and wrong["ci"][0] <= alpha
        lines.append(
            f"| {row['variants']} | {row['cases']} | {row['kind']} | {row['replications']} | {_rate(cov)} | "
            f"{_rate(wrong)} | {_rate(row['best_found'])} | {_rate(row['worse_flagged'])} | "
            f"{'met' if met else 'MISSED'} |"
        )
    return "\n".join(lines) + "\n"


def family_bands_met(rows: Sequence[dict[str, Any]], alpha: float = 0.05) -> bool:
    return all(r["coverage"]["ci"][1] >= 1 - alpha and r["wrong_best"]["ci"][0] <= alpha for r in rows)


def _rate(rate: dict[str, Any] | None) -> str:
    if rate is None:
        return "—"
    low, high = rate["ci"]
    return f"{rate['rate'] * 100:.1f}% [{low * 100:.1f}, {high * 100:.1f}]"
