"""What the labelling page shows, as data: which claim the keys label, who is given which session, which claims
go to adjudication."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.corpus.labels import LabelLine
from harness.report.label_view import assignment, case_view, current_claim, disputes
from harness.system.models import Derivability
from tests.score.labelled_folder import import_folder


@pytest.mark.parametrize(
    ("n", "roster", "overlap"), [(40, ["a", "b"], 0.2), (37, ["a", "b", "c"], 0.1), (5, ["a", "b"], 0.0)]
)
def test_assignment_shares_the_overlap_and_deals_the_rest_once(n: int, roster: list[str], overlap: float) -> None:
    cases = [f"s{i:03d}" for i in range(n)]
    given = assignment(cases, roster, overlap, seed=3)
    shared = set.intersection(*(set(v) for v in given.values()))
    assert len(shared) == round(overlap * n)
    rest = [c for v in given.values() for c in v if c not in shared]
    assert sorted(rest) == sorted(set(cases) - shared)  # every other session to exactly one annotator
    sizes = [len(v) - len(shared) for v in given.values()]
    assert max(sizes) - min(sizes) <= 1
    assert all(v == [c for c in cases if c in v] for v in given.values())  # in the app's order
    assert assignment(list(reversed(cases)), roster, overlap, seed=3)["a"] == list(reversed(given["a"]))
    assert assignment(cases, roster, overlap, seed=4) != given


def test_a_small_overlap_still_shares_one_session() -> None:
    given = assignment(["x", "y", "z"], ["a", "b"], 0.05)
    assert len(set(given["a"]) & set(given["b"])) == 1
    with pytest.raises(ValueError):
        assignment(["x"], ["a", "b"], 1.5)


def _line(case_id: str, claim: str, label: str | None, who: str, unsure: bool = False) -> LabelLine:
    return LabelLine(case_id=case_id, claim_id=claim, label=label, annotator=who, at="t", unsure=unsure)


def test_keys_never_relabel_the_last_claim_and_disputes_list_the_differences(tmp_path: Path) -> None:
    case = import_folder(tmp_path)[0]
    ids = [c.claim_id for c in case.prepared().claims]
    answers = {(case.id, k): _line(case.id, k, "overstated", "ann") for k in ids}
    assert current_claim(case_view(case, answers), ids[-1]) is None
    del answers[(case.id, ids[0])]
    assert current_claim(case_view(case, answers), ids[-1]) == ids[0]  # back to an open one
    by = {
        "ann": {(case.id, ids[0]): _line(case.id, ids[0], "overstated", "ann"),
                (case.id, ids[1]): _line(case.id, ids[1], "unsupported", "ann", unsure=True)},
        "bob": {(case.id, ids[0]): _line(case.id, ids[0], "contradicted", "bob"),
                (case.id, ids[1]): _line(case.id, ids[1], "unsupported", "bob")},
    }  # fmt: skip
    found = disputes({case.id: case}, by, {})
    assert [(d.claim_id, d.reason) for d in found] == [(ids[0], "2 different labels"), (ids[1], "marked unsure by ann")]
    settled = disputes({case.id: case}, by, {(case.id, ids[0]): Derivability("contradicted")})
    assert [(d.claim_id, d.adjudicated) for d in settled] == [(ids[1], None), (ids[0], "contradicted")]
