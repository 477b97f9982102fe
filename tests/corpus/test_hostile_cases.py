"""Hostile case files (issue 17): an alias bomb or an oversized file is refused by `validate` and `run` alike,
with exit 2 naming the file, and the process stays small while refusing it."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from harness.corpus.loader import DEFAULT_MAX_CASE_BYTES, MAX_CASE_BYTES_ENV, CorpusError, load_cases
from tests.corpus.helpers import example, write

MAX_RSS_MB = 300
"""The issue's bound on a refusal; before the fix the meta bomb below took `vbench run` to 5.6 GB."""
ADDRESS_LIMIT = 3 * 1024**3
"""A ceiling so a regression fails the test instead of swapping the machine (vbench maps ~1.3 GB of address
space at start-up: numpy, scipy and pandas are imported)."""

_RUNNER = """
import json, resource, subprocess, sys
limit = int(sys.argv[1])
def cap():
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    done = subprocess.run(sys.argv[2:], capture_output=True, text=True, timeout=120, preexec_fn=cap)
    code, out, err = done.returncode, done.stdout, done.stderr
except subprocess.TimeoutExpired as exc:
    code, out, err = "timeout", "", str(exc)
rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"code": code, "out": out, "err": err, "rss_mb": rss_kb / 1024}))
"""


def vbench_measured(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> dict[str, object]:
    """Run `vbench args` in a fresh process; its exit code, output and peak resident memory (MB)."""
    import os

    command = [sys.executable, "-c", _RUNNER, str(ADDRESS_LIMIT), sys.executable, "-m", "harness.cli", *args]
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=cwd, env={**os.environ, **(env or {})}, check=True
    )
    return json.loads(done.stdout)


def _bomb(anchor_line: str) -> str:
    """Nine levels of nine aliases each: 9^9 (387 million) strings once expanded, 800 bytes on disk."""
    lines = [anchor_line]
    previous = "a"
    for name in "bcdefghi":
        refs = ", ".join([f"*{previous}"] * 9)
        lines.append(f"  {name}: &{name} [{refs}]")
        previous = name
    return "\n".join(lines) + "\n"


def bomb_file(folder: Path, where: str) -> Path:
    """A case file with the bomb in `meta`, in the question's place (a string key expects no list), or in tags."""
    data = example("policy")
    data.pop("meta", None)
    path = write(folder, data, f"bomb-{where}")
    text = path.read_text(encoding="utf-8")
    bomb = _bomb('  a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]')
    if where == "meta":
        text += "meta:\n" + bomb + "  last: *i\n"
    else:  # a top-level key: refused for being unknown only after it was built, which is too late
        text += "x-anything:\n" + bomb + "tags_again: *i\n"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("where", ["meta", "top-level"])
def test_an_alias_bomb_is_refused_by_the_loader_naming_the_file(tmp_path: Path, where: str) -> None:
    path = bomb_file(tmp_path, where)
    with pytest.raises(CorpusError) as info:
        load_cases([tmp_path])
    (error,) = info.value.errors
    assert error.file == str(path)
    assert "aliases are not allowed" in error.message
    assert error.key_path.startswith("line ")


def test_a_single_alias_is_refused_too(tmp_path: Path) -> None:
    """No expansion bound to tune: any alias is refused, so a small one cannot be grown into a big one."""
    data = example("policy")
    path = write(tmp_path, data)
    text = path.read_text(encoding="utf-8").replace("title:", "title: &t", 1) + "meta:\n  again: *t\n"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CorpusError, match="aliases are not allowed"):
        load_cases([tmp_path])


@pytest.mark.parametrize("where", ["meta", "top-level"])
@pytest.mark.parametrize("command", ["validate", "run"])
def test_validate_and_run_refuse_a_bomb_with_exit_2_in_bounded_memory(tmp_path: Path, where: str, command: str) -> None:
    path = bomb_file(tmp_path / "cases", where)
    args = (
        ["cases", "validate", str(path.parent)]
        if command == "validate"
        else ["run", "--cases", str(path.parent), "--out", str(tmp_path / "run"), "--no-cache"]
    )
    seen = vbench_measured(args, tmp_path)
    assert seen["code"] == 2, seen
    assert str(path) in str(seen["err"]) and "aliases are not allowed" in str(seen["err"])
    assert "Traceback" not in str(seen["err"])
    assert float(seen["rss_mb"]) < MAX_RSS_MB, seen["rss_mb"]  # type: ignore[arg-type]
    assert not (tmp_path / "run" / "results.jsonl").exists()


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_50_mb_case_file_is_refused_by_its_size(tmp_path: Path, command: str) -> None:
    folder = tmp_path / "cases"
    path = write(folder, example("policy"))
    with path.open("a", encoding="utf-8") as fh:
        fh.write("meta:\n  padding: '" + "x" * 50_000_000 + "'\n")
    args = (
        ["cases", "validate", str(folder)]
        if command == "validate"
        else ["run", "--cases", str(folder), "--out", str(tmp_path / "run"), "--no-cache"]
    )
    seen = vbench_measured(args, tmp_path)
    assert seen["code"] == 2, seen
    assert f"{path}: <root>: the file is over the size limit of {DEFAULT_MAX_CASE_BYTES:,} bytes" in str(seen["err"])
    assert float(seen["rss_mb"]) < MAX_RSS_MB, seen["rss_mb"]  # type: ignore[arg-type]


def test_the_size_limit_is_a_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, example("policy"))
    size = path.stat().st_size
    monkeypatch.setenv(MAX_CASE_BYTES_ENV, str(size))
    assert len(load_cases([tmp_path])) == 1  # exactly at the limit loads
    monkeypatch.setenv(MAX_CASE_BYTES_ENV, str(size - 1))
    with pytest.raises(CorpusError, match=f"over the size limit of {size - 1:,} bytes"):
        load_cases([tmp_path])
    monkeypatch.setenv(MAX_CASE_BYTES_ENV, "lots")
    with pytest.raises(CorpusError, match=f"\\${MAX_CASE_BYTES_ENV}: <root>: 'lots' is not a positive number"):
        load_cases([tmp_path])


def test_deep_nesting_is_refused_not_a_crash(tmp_path: Path) -> None:
    path = write(tmp_path, "id: deep\nmeta: " + "[" * 100_000 + "]" * 100_000 + "\n", "deep")
    with pytest.raises(CorpusError) as info:
        load_cases([tmp_path])
    assert info.value.errors[0].file == str(path)


def test_resource_module_reports_children_in_kilobytes() -> None:
    """The RSS figure above is ru_maxrss, which Linux gives in KB (the bound would be 1024x off otherwise)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    subprocess.run([sys.executable, "-c", "b = bytearray(64 * 1024 * 1024); b[::4096] = b'x' * len(b[::4096])"])
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert after >= max(before, 64 * 1024)


def test_a_study_file_with_an_alias_bomb_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    """Study files are YAML from a pull request too: they go through the same strict loader."""
    study = tmp_path / "study.yaml"
    bomb = _bomb('  a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]')
    study.write_text("x-defs:\n" + bomb + "filters: *i\n", encoding="utf-8")
    seen = vbench_measured(["run", "--study", str(study), "--out", str(tmp_path / "run")], tmp_path)
    assert seen["code"] == 2, seen
    assert str(study) in str(seen["err"]) and "aliases are not allowed" in str(seen["err"])
    assert float(seen["rss_mb"]) < MAX_RSS_MB, seen["rss_mb"]  # type: ignore[arg-type]


def test_a_price_table_with_an_alias_is_refused(tmp_path: Path) -> None:
    from harness.report.prices import PriceError, load_prices

    prices = tmp_path / "prices.yaml"
    prices.write_text("base: &b {input: 1, output: 2}\nopenai:m: *b\n", encoding="utf-8")
    with pytest.raises(PriceError, match="aliases are not allowed"):
        load_prices(prices)


def test_flow_nesting_is_bounded_at_the_limit_not_before() -> None:
    """The bound refuses one level past MAX_FLOW_DEPTH and parses the level at it (the C composer's stack)."""
    from harness.corpus.loader import MAX_FLOW_DEPTH, CaseFileError, strict_yaml

    at_limit = "x: " + "[" * MAX_FLOW_DEPTH + "]" * MAX_FLOW_DEPTH
    value = strict_yaml(at_limit)["x"]
    for _ in range(MAX_FLOW_DEPTH - 1):
        value = value[0]
    assert value == []
    # sequences one level deeper still parse without the bound (mappings would hit Python's recursion limit
    # first), so only the bound refuses this one
    with pytest.raises(CaseFileError, match=rf"over {MAX_FLOW_DEPTH} levels"):
        strict_yaml("x: " + "[" * (MAX_FLOW_DEPTH + 1) + "]" * (MAX_FLOW_DEPTH + 1))
