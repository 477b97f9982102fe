"""Refs name runs, tags and branches; a control must match the candidate's model and corpus unless pairing on the
common cases."""

from __future__ import annotations

import pytest

from harness.history.record import HistoryError, RecordHead, VariantHead
from harness.history.refs import is_history_ref, latest, match, resolve
from harness.history.store import Tag


def head(n: int, branch: str = "main", corpus: str = "c0", model: str = "m") -> RecordHead:
    return RecordHead(
        id=f"id-{n}", run_id=f"run-{n}", recorded_at=f"{n:04d}", branch=branch, corpus_hash=corpus,
        variants=[VariantHead(name=f"{model}@p", model=model)],
    )  # fmt: skip


HEADS = [head(1), head(2, corpus="c1"), head(3, branch="pr"), head(4, model="other"), head(5)]
TAGS = [Tag(name="v1", run="id-1", tagged_at="1"), Tag(name="main", run="id-2", tagged_at="2")]


def test_resolution_order_run_then_tag_then_run_id_then_branch() -> None:
    assert [h.id for h in resolve(HEADS, TAGS, "history:id-3")] == ["id-3"]
    assert latest(HEADS, TAGS, "history:v1").id == "id-1"
    assert latest(HEADS, TAGS, "run-4").id == "id-4"
    assert latest(HEADS, [], "history:main").id == "id-5"
    assert latest(HEADS, TAGS, "history:main").id == "id-2"  # a tag named like a branch wins
    assert is_history_ref("history:x") and not is_history_ref("variant@x") and not is_history_ref(None)
    with pytest.raises(HistoryError, match="branches: main, pr; tags: main, v1"):
        resolve(HEADS, TAGS, "history:nothing")
    with pytest.raises(HistoryError, match="not in the store"):
        resolve(HEADS, [Tag(name="gone", run="id-9", tagged_at="1")], "gone")


def test_a_branch_gives_its_latest_run_of_the_same_model_and_corpus() -> None:
    assert match(HEADS, [], "history:main", models=["m"], corpus_hash="c0", pair_common=False).id == "id-5"
    assert match(HEADS, [], "history:main", models=["m"], corpus_hash="c1", pair_common=False).id == "id-2"
    assert match(HEADS, [], "history:main", models=["other"], corpus_hash="c0", pair_common=False).id == "id-4"


def test_a_different_corpus_or_model_is_refused_unless_pair_common() -> None:
    with pytest.raises(HistoryError, match=r"corpus c0 there, c9 here.*--pair-common"):
        match(HEADS, [], "history:main", models=["m"], corpus_hash="c9", pair_common=False)
    with pytest.raises(HistoryError, match=r"model\(s\) new not in it"):
        match(HEADS, TAGS, "history:v1", models=["new"], corpus_hash="c0", pair_common=True, role="anchor")
    assert match(HEADS, [], "history:main", models=["m"], corpus_hash="c9", pair_common=True).id == "id-5"
