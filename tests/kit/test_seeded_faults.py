"""The kit's own strength: `vbench certify` fails every seeded fault and certifies every correct variant.

The seeds are data (tests/kit/faulty_sut.py, more_faults.py, variants.py), each tagged with a requirement
id; tests/kit/mutation.py runs them. The whole suite on the whole policy corpus is `slow` (and
`nox -s mutation`); a few seeds run on the requirement-boundary cases in the normal tests.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from harness.kit.requirements import BY_ID, REQUIREMENTS
from tests.kit.faulty_sut import ORIGINAL
from tests.kit.mutation import FAULTS, POLICY, VARIANTS, Outcome, certify_seed, report, scores
from tests.kit.seeds import Seed

BOUNDARIES = POLICY / "requirements"
"""The cases named by requirement: a fast corpus for the seeds whose mistake only a boundary case shows."""


def test_the_suite_is_at_least_40_faults_beyond_the_first_25_and_6_variants() -> None:
    assert len(ORIGINAL) == 25 and len(FAULTS) - len(ORIGINAL) >= 40 and len(VARIANTS) >= 6


def test_every_seed_has_a_unique_name_and_names_a_known_requirement() -> None:
    seeds = [*FAULTS, *VARIANTS]
    assert [n for n, k in Counter(s.name for s in seeds).items() if k > 1] == []
    assert [s.name for s in seeds if s.requirement not in BY_ID] == []
    assert all((s.apply is None) != (s.encoding is None) for s in seeds)  # a patch or an encoding, not both


def test_every_requirement_is_broken_by_a_fault_or_a_may_is_exercised_by_a_variant() -> None:
    broken, varied = {s.requirement for s in FAULTS}, {s.requirement for s in VARIANTS}
    assert [r.id for r in REQUIREMENTS if r.id not in broken and not (r.level == "MAY" and r.id in varied)] == []


def test_the_score_counts_faults_per_requirement_and_names_what_did_not_hold() -> None:
    one, other = FAULTS[0], next(s for s in FAULTS if s.requirement != FAULTS[0].requirement)
    caught = Outcome(one, "fault", 1, "failed", "x", 3, 10, "c: y")
    missed = Outcome(other, "fault", 0, "certified", "x", 0, 10, "")
    broken = Outcome(VARIANTS[0], "variant", 1, "failed", "x", 1, 10, "c: z")
    assert scores([caught, missed, broken]) == {one.requirement: (1, 1), other.requirement: (0, 1)}
    text = report([caught, missed, broken])
    assert f"fault {other.name} " in text and f"variant {VARIANTS[0].name} " in text
    assert f"fault {one.name} " not in text and "Correct variants certified: 0/1" in text


FAST = {
    "excerpt-limit-plus-one": "fault",
    "excerpt-limit-bytes": "fault",
    "invocation-ids-case-insensitive": "fault",
    "gson-html-safe-escaping": "variant",
}


@pytest.mark.parametrize("name", sorted(FAST))
def test_boundary_cases_catch_faults_and_certify_variants(name: str, tmp_path: Path) -> None:
    seed = next(s for s in [*FAULTS, *VARIANTS] if s.name == name)
    outcome = certify_seed(seed, FAST[name], tmp_path, BOUNDARIES)  # type: ignore[arg-type]
    assert outcome.as_intended, outcome
    assert outcome.cases >= 19 and (outcome.failed > 0) == (FAST[name] == "fault")
    if seed.apply is not None:
        assert outcome.sut.endswith(name)  # the seeded process answered, not some other SUT


def _fault_param(seed: Seed) -> Any:
    gap = pytest.mark.xfail(strict=True, reason=f"kit gap: {seed.kit_gap}") if seed.kit_gap else ()
    return pytest.param(seed.name, marks=gap, id=seed.name)


@pytest.mark.slow
@pytest.mark.parametrize("name", [_fault_param(s) for s in FAULTS])
def test_certify_catches_the_seeded_fault(name: str, tmp_path: Path) -> None:
    seed = next(s for s in FAULTS if s.name == name)
    outcome = certify_seed(seed, "fault", tmp_path)
    assert outcome.sut.endswith(name)  # the seeded process answered, not some other SUT
    assert outcome.as_intended, outcome


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(s.name for s in VARIANTS))
def test_certify_certifies_the_correct_variant(name: str, tmp_path: Path) -> None:
    seed = next(s for s in VARIANTS if s.name == name)
    outcome = certify_seed(seed, "variant", tmp_path)
    assert outcome.code == 0 and outcome.status == "certified", outcome
