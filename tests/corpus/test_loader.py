"""Loader errors on broken files: each names the file and the exact key path, and nothing loads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.corpus.loader import CaseError, CorpusError, load_cases
from harness.corpus.schema import _may_hold_nul, _nul_path
from tests.corpus.helpers import example, quality, write

SCENARIO = "chat-verifier-agent/verifier-shall-fact-check-executor-answers/pass-verdict-when-all-claims-have-evidence"


def errors_of(*paths: Path) -> list[CaseError]:
    with pytest.raises(CorpusError) as info:
        load_cases(list(paths))
    return info.value.errors


def only_error(folder: Path) -> CaseError:
    errors = errors_of(folder)
    assert len(errors) == 1, errors
    return errors[0]


def test_the_examples_load(tmp_path: Path) -> None:
    write(tmp_path, example("quality"))
    write(tmp_path, example("policy"))
    loaded = load_cases([tmp_path])
    assert sorted(c.kind for c in loaded) == ["policy", "quality"]


def test_unknown_key_names_its_path(tmp_path: Path) -> None:
    data = example()
    data["expected"]["gatekeeper"]["failed_rule"] = []
    path = write(tmp_path, data)
    err = only_error(tmp_path)
    assert (err.file, err.key_path, err.message) == (
        str(path),
        "expected.gatekeeper.failed_rule",
        "unknown key (did you mean 'failed_rules'?)",
    )


def test_unknown_key_inside_a_list_names_the_index(tmp_path: Path) -> None:
    data = example()
    data["session"]["tool_invocations"][1]["stauts"] = "success"
    path = write(tmp_path, data)
    err = only_error(tmp_path)
    assert (err.file, err.key_path) == (str(path), "session.tool_invocations[1].stauts")


def test_wrong_type(tmp_path: Path) -> None:
    data = example()
    data["session"]["tool_invocations"][0]["arguments"] = "service=cart-service"
    path = write(tmp_path, data)
    err = only_error(tmp_path)
    assert (err.file, err.key_path) == (str(path), "session.tool_invocations[0].arguments")
    assert "dictionary" in err.message


def test_duplicate_id_in_two_files_names_both(tmp_path: Path) -> None:
    first = write(tmp_path, example(), "a-first")
    second = write(tmp_path, example(), "b-second")
    err = only_error(tmp_path)
    assert (err.file, err.key_path) == (str(second), "id")
    assert "example-redis-quality" in err.message and str(first) in err.message


def test_label_outside_the_set_names_the_claim(tmp_path: Path) -> None:
    path = write(tmp_path, quality("bad-label", expected__claims={"C1": "directly_seen"}))
    err = only_error(tmp_path)
    assert (err.file, err.key_path) == (str(path), "expected.claims.C1")
    assert "direct_observation" in err.message


def test_label_outside_the_set_inside_a_list(tmp_path: Path) -> None:
    path = write(tmp_path, quality("bad-list", expected__claims={"C2": ["overstated", "maybe"]}))
    err = only_error(tmp_path)
    assert (err.file, err.key_path) == (str(path), "expected.claims.C2[1]")


def test_verdict_outside_the_set(tmp_path: Path) -> None:
    path = write(tmp_path, quality("bad-verdict", expected__verdict="ACCEPT"))
    err = only_error(tmp_path)
    assert (err.file, err.key_path) == (str(path), "expected.verdict")


def test_unknown_scenario_id(tmp_path: Path) -> None:
    path = write(tmp_path, quality("bad-scenario", spec=[SCENARIO, "chat-verifier-agent/no-such/scenario"]))
    err = only_error(tmp_path)
    assert (err.file, err.key_path) == (str(path), "spec[1]")
    assert "chat-verifier-agent/no-such/scenario" in err.message


def test_yaml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "id: broken\ntitle: [unclosed\nspec: []\n", "broken")
    err = only_error(tmp_path)
    assert err.file == str(path)
    assert err.key_path.startswith("line ")
    assert "YAML syntax error" in err.message


def test_repeated_yaml_key_names_its_path(tmp_path: Path) -> None:
    source = write(tmp_path / "src", example()).read_text(encoding="utf-8")
    doubled = source.replace("      status: confirmed\n", "      status: confirmed\n      status: hypothesis\n", 1)
    assert doubled != source
    path = write(tmp_path / "cases", doubled, "repeated")
    err = only_error(tmp_path / "cases")
    assert (err.file, err.key_path) == (str(path), "executor.structured_output.claims[0].status")
    assert "repeated key 'status'" in err.message and "line" in err.message


def test_every_broken_file_is_reported_and_nothing_loads(tmp_path: Path) -> None:
    good = write(tmp_path, example("policy"))
    bad_a = write(tmp_path, quality("bad-a", expected__verdict="ACCEPT"))
    bad_b = write(tmp_path, quality("bad-b", extra_key=1))
    errors = errors_of(tmp_path)
    assert {e.file for e in errors} == {str(bad_a), str(bad_b)}
    assert str(good) not in str(CorpusError(errors))
    assert f"{bad_b}: extra_key: unknown key" in str(CorpusError(errors))


def test_other_sessions_must_be_other_and_unique(tmp_path: Path) -> None:
    """A case whose other sessions collide with its own session or each other would break the store."""
    import yaml

    from harness.corpus.loader import CorpusError, load_cases

    base = yaml.safe_load((Path(__file__).parent / "data" / "example-redis-quality.yaml").read_text())
    variants = {
        "same-as-case": [{"id": base["id"], "tool_invocations": []}],
        "repeated": [{"id": "s-0"}, {"id": "s-0"}],
        "repeated-invocations": [
            {"id": "s-0", "tool_invocations": [{"id": "a", "tool_name": "t"}, {"id": "a", "tool_name": "t"}]}
        ],
    }
    for name, others in variants.items():
        case = {**base, "session": {**base["session"], "other_sessions": others}}
        folder = tmp_path / name
        folder.mkdir()
        (folder / "case.yaml").write_text(yaml.safe_dump(case))
        with pytest.raises(CorpusError) as info:
            load_cases([folder])
        assert "case.yaml: session.other_sessions" in str(info.value), (name, str(info.value))


_json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(alphabet=st.characters()),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(alphabet=st.characters()), inner, max_size=4),
    max_leaves=20,
)


@given(_json_like)
@settings(max_examples=300, deadline=None)
def test_the_fast_nul_check_never_misses_a_nul_the_walk_finds(value: Any) -> None:
    """`_may_hold_nul` only lets a case skip the exact walk: it must say True whenever the walk finds a NUL."""
    found = _nul_path(value, "")
    if found is not None:
        assert _may_hold_nul(value), found
    assert _may_hold_nul({"deep": [value, {"k": "x\x00y"}]})
    assert _may_hold_nul({"key\x00": value})
