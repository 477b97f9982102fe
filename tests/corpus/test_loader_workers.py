"""A large corpus is read by worker processes: the same refs, filters, policy count and errors, in file order,
as reading it in one process (each run in a fresh interpreter, which has no other thread and so may fork)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from harness.corpus.loader import PARALLEL_FROM
from tests.run.corpus_builder import policy_case, quality_case

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, os, sys
from pathlib import Path
from harness.corpus import loader
from harness.corpus.loader import CorpusError, case_files, read_in_workers
from harness.run.select import load_case_refs

folder, filters = Path(sys.argv[1]), sys.argv[2:]
pids = set(read_in_workers(case_files([folder]), lambda path: os.getpid()))

def load():
    try:
        refs, policy = load_case_refs([folder], filters)
        return {"refs": [[r.id, r.kind, r.hash, r.content.decode()] for r in refs], "policy": policy}
    except CorpusError as exc:
        return {"errors": [str(e) for e in exc.errors]}

workers = load()
loader.PARALLEL_FROM = 10**9
print(json.dumps({"workers": workers, "here": load(), "readers": len(pids - {os.getpid()})}))
"""


def write_large_corpus(folder: Path, broken: bool) -> None:
    folder.mkdir()
    for i in range(PARALLEL_FROM + 20):
        case = quality_case(f"q{i % 7 + 1}", tags=["even" if i % 2 == 0 else "odd"])
        case["id"] = f"bulk-{i:04d}"
        (folder / f"bulk-{i:04d}.yaml").write_text(yaml.safe_dump(case, sort_keys=False))
    (folder / "policy.yaml").write_text(yaml.safe_dump(policy_case(), sort_keys=False))
    if broken:  # a file that is not YAML, a case that fails validation and a repeated id, far apart
        (folder / "bulk-0003.yaml").write_text("id: [unclosed\n")
        bad = quality_case("q1")
        bad["id"], bad["verdict_expectation"] = "bulk-0150", "MAYBE"
        (folder / "bulk-0150.yaml").write_text(yaml.safe_dump(bad, sort_keys=False))
        again = quality_case("q2")
        again["id"] = "bulk-0010"
        (folder / "bulk-0199.yaml").write_text(yaml.safe_dump(again, sort_keys=False))


def probe(folder: Path, *filters: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(folder), *filters], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return json.loads(done.stdout.splitlines()[-1])


def test_a_large_corpus_read_by_workers_gives_the_refs_one_process_gives(tmp_path: Path) -> None:
    write_large_corpus(tmp_path / "cases", broken=False)
    out = probe(tmp_path / "cases", "tag:even")
    assert out["readers"] >= 1  # the files were read in other processes than this one
    assert out["workers"] == out["here"]
    assert len(out["workers"]["refs"]) == (PARALLEL_FROM + 20) // 2 and out["workers"]["policy"] == 1


def test_a_broken_large_corpus_names_the_same_errors_in_the_same_order(tmp_path: Path) -> None:
    write_large_corpus(tmp_path / "cases", broken=True)
    out = probe(tmp_path / "cases")
    errors = out["workers"]["errors"]
    assert errors == out["here"]["errors"]
    assert [e.split(":")[0].rsplit("/", 1)[-1] for e in errors] == [
        "bulk-0003.yaml",
        "bulk-0150.yaml",
        "bulk-0199.yaml",
    ]
    assert "repeated id 'bulk-0010'" in errors[-1]


MEANWHILE = """
import json, multiprocessing, sys
from pathlib import Path
from harness.corpus.loader import case_files, read_in_workers
from harness.run.providers import warm_imports

seen = {}

def meanwhile():
    seen["workers"] = len(multiprocessing.active_children())
    before = "harness.llm.openai_model" in sys.modules
    warm_imports(["openai:some-model", "not a spec"])
    seen["imported"] = not before and "harness.llm.openai_model" in sys.modules

ids = list(read_in_workers(case_files([Path(sys.argv[1])]), lambda path: path.name, meanwhile=meanwhile))
print(json.dumps({**seen, "files": len(ids)}))
"""


def test_this_process_imports_the_verifiers_libraries_while_the_workers_read(tmp_path: Path) -> None:
    """A run's `meanwhile`: the client library imported while worker processes read the cases; a spec that
    names no provider is passed over (its build reports it)."""
    write_large_corpus(tmp_path / "cases", broken=False)
    done = subprocess.run(
        [sys.executable, "-c", MEANWHILE, str(tmp_path / "cases")], capture_output=True, text=True, check=True, cwd=ROOT
    )
    out = json.loads(done.stdout.splitlines()[-1])
    assert out == {"workers": out["workers"], "imported": True, "files": PARALLEL_FROM + 21}
    assert out["workers"] >= 2
