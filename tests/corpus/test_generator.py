"""The mutation generator: deterministic, provenance in every case, and every case consistent."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from harness.cli import main
from harness.corpus.generator import (
    GENERATOR_VERSION,
    all_mutations,
    candidates,
    case_yaml,
    generate,
    relative_path,
    select,
)
from harness.corpus.loader import load_cases
from harness.corpus.schema import Case
from harness.run.conformance import quality_case_problems
from tests.corpus.helpers import REPO, case, example, quality, write


def seed_corpus() -> list[Case]:
    """The quality example and two variants (only inference critical, a non-critical claim), plus a policy case."""
    variant = quality("seed-inference")
    for claim, critical in zip(variant["executor"]["structured_output"]["claims"], (False, False, True), strict=True):
        claim["critical"] = critical
    variant["expected"]["verdict"] = "LOW_CONFID"
    noncritical = quality("seed-noncritical", tags=["incident-cache", "adv-number"])
    noncritical["executor"]["structured_output"]["claims"][0]["critical"] = False
    return [case(d) for d in (example("quality"), variant, noncritical, example("policy"))]


def files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_every_mutation_has_a_distinct_name() -> None:
    names = [m.name for m in all_mutations()]
    assert names == sorted(set(names)) and len(names) >= 13


def test_generation_is_byte_identical_from_the_same_seed(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds"
    for c in seed_corpus():
        write(seeds, c.model_dump(mode="json", by_alias=True, exclude_none=True))
    args = ["cases", "generate", "--seeds", str(seeds), "--per-seed", "13", "--count", "30", "--seed", "11"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    first, second = files(tmp_path / "a"), files(tmp_path / "b")
    assert len(first) >= 30 and first == second
    assert main([*args[:-1], "12", "--out", str(tmp_path / "c")]) == 0
    assert files(tmp_path / "c") != first


def test_generated_cases_load_and_pass_check(tmp_path: Path) -> None:
    cases = generate(seed_corpus(), random_seed=3, per_seed=100)
    out = tmp_path / "gen"
    for c in cases:
        path = out / relative_path(c)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(case_yaml(c), encoding="utf-8")
    loaded = {c.id: c for c in load_cases([out])}
    assert loaded.keys() == {c.id for c in cases}
    assert all(loaded[c.id].content_hash() == c.content_hash() for c in cases)  # YAML round-trips exactly
    assert {c.id: quality_case_problems(c) for c in cases if quality_case_problems(c)} == {}
    assert main(["cases", "check", str(out)]) == 0


def test_provenance_tags_and_ids() -> None:
    seeds = {c.id: c for c in seed_corpus()}
    for c in generate(list(seeds.values()), random_seed=5, per_seed=100):
        meta = c.meta
        assert meta["generator_version"] == GENERATOR_VERSION and meta["random_seed"] == 5
        assert meta["seed_hash"] == seeds[meta["seed_id"]].content_hash()
        assert isinstance(meta["mutation_params"], dict)
        assert re.fullmatch(rf"gen-{meta['mutation']}-{meta['seed_id']}-\d+", c.id)
        assert {"generated", f"mut-{meta['mutation']}"} <= set(c.tags)
        assert c.kind == "quality"
        if meta["seed_id"] == "seed-noncritical":
            assert "incident-cache" in c.tags  # incident tags carry over, adversarial ones only by the mutation
            assert ("adv-number" in c.tags) == (meta["mutation"] == "alter-number")
    assert "example-redis-fabricated-id" not in {c.meta["seed_id"] for c in generate(list(seeds.values()), 5, 100)}


def test_a_seed_whose_verdict_does_not_follow_from_its_labels_is_skipped() -> None:
    broken = quality("seed-broken", expected__verdict="REJECT")  # all critical claims direct: PASS, not REJECT
    found = candidates([case(broken)], random_seed=1)
    assert sum(map(len, found.values())) == 0


def test_labels_follow_the_seed_criticality() -> None:
    found = candidates(seed_corpus(), random_seed=1)
    by_seed = {c.meta["seed_id"]: c for c in found["alter-number"]}
    assert {v.value for v in by_seed["example-redis-quality"].expected.acceptable_verdicts()} == {"REJECT"}
    # C1 is not critical here: the contradiction does not change the verdict the seed's labels give
    assert {v.value for v in by_seed["seed-noncritical"].expected.acceptable_verdicts()} == {"PASS"}
    missing = [c for c in found["missing-invocation"] if c.meta["seed_id"] == "seed-inference"]
    c3 = next(c for c in missing if c.meta["mutation_params"]["claim_id"] == "C3")
    # C3 (critical inference) becomes inference-or-unsupported: LOW_CONFID either way, or REJECT by the downgrade
    assert {v.value for v in c3.expected.acceptable_verdicts()} == {"LOW_CONFID", "REJECT"}


def test_selection_takes_at_most_per_seed_mutants_of_different_mutations() -> None:
    found = candidates(seed_corpus(), random_seed=2)
    chosen = select(found, 4, random_seed=2)
    per_seed = Counter(c.meta["seed_id"] for c in chosen)
    offered = {c.meta["seed_id"] for cases in found.values() for c in cases}
    assert set(per_seed) == offered and set(per_seed.values()) == {4}
    for seed_id in offered:
        mutations = [c.meta["mutation"] for c in chosen if c.meta["seed_id"] == seed_id]
        assert len(set(mutations)) == len(mutations)
    assert len({c.meta["mutation"] for c in chosen}) >= 6  # seeded per seed, not the same four for every seed
    assert [c.id for c in chosen] == sorted(c.id for c in chosen)


def test_a_new_seed_adds_only_its_own_mutants_and_leaves_every_file_byte_identical(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds"
    for c in seed_corpus():
        write(seeds, c.model_dump(mode="json", by_alias=True, exclude_none=True))
    args = ["cases", "generate", "--seeds", str(seeds), "--count", "1"]
    assert main([*args, "--out", str(tmp_path / "before")]) == 0
    extra = quality("seed-added", tags=["incident-disk"])
    write(seeds, extra)
    assert main([*args, "--out", str(tmp_path / "after")]) == 0
    before, after = files(tmp_path / "before"), files(tmp_path / "after")
    added = set(after) - set(before)
    assert added and all("-seed-added-" in path for path in added)
    assert {path: after[path] for path in before} == before  # nothing else moved, byte for byte


def test_a_failed_citation_keeps_one_label_per_label() -> None:
    from harness.corpus.mutations import failed_citation_labels
    from harness.system.models import Derivability as D

    assert failed_citation_labels(frozenset({D.REASONABLE_INFERENCE, D.OVERSTATED})) == {D.UNSUPPORTED}
    assert failed_citation_labels(frozenset({D.CONTRADICTED, D.DIRECT_OBSERVATION})) == {D.CONTRADICTED, D.UNSUPPORTED}
    assert failed_citation_labels(frozenset({D.EXTERNAL_UNKNOWN})) == {D.EXTERNAL_UNKNOWN}


def test_too_few_seeds_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seeds = write(tmp_path / "seeds", example("quality")).parent
    assert main(["cases", "generate", "--seeds", str(seeds), "--out", str(tmp_path / "out"), "--count", "500"]) == 1
    assert "add labelled seed cases" in capsys.readouterr().out


def test_regenerating_removes_stale_generated_files_only(tmp_path: Path) -> None:
    out = tmp_path / "gen"
    (out / "old").mkdir(parents=True)
    (out / "old" / "gen-stale-1.yaml").write_text("stale", encoding="utf-8")
    (out / "README.md").write_text("keep", encoding="utf-8")
    seeds = write(tmp_path / "seeds", example("quality")).parent
    assert main(["cases", "generate", "--seeds", str(seeds), "--out", str(out), "--per-seed", "5", "--count", "5"]) == 0
    assert not (out / "old").exists() and (out / "README.md").read_text(encoding="utf-8") == "keep"
    assert len(list(out.rglob("gen-*.yaml"))) == 5


@pytest.mark.slow
def test_committed_generated_cases_are_reproduced_exactly() -> None:
    committed = REPO / "cases" / "generated"
    seeds = load_cases([REPO / "cases" / "quality"])
    cases = generate(seeds, check=quality_case_problems)
    expected = {relative_path(c).as_posix(): case_yaml(c) for c in cases}
    on_disk = {p.relative_to(committed).as_posix(): p.read_text(encoding="utf-8") for p in committed.rglob("*.yaml")}
    assert len(cases) >= 300
    assert sorted(on_disk) == sorted(expected), "run: vbench cases generate"
    assert on_disk == expected, "run: vbench cases generate"
