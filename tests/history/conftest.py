"""Shared fixtures of the history tests: a git work tree to run in, a scripted model that loses the cases its
prompt names, and runs of it against the local OpenAI-compatible server."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.devtools.local_server import LocalOpenAIServer
from harness.devtools.responders import last_user_message
from tests.run.corpus_builder import GOLD
from tests.run.prompt_models import prompt_dir, system_text, write_copies

MODEL = "openai:local-model"
LOSABLE = ("q1", "q7")
"""Cases whose gold is PASS: answering them REJECT (every claim contradicted) is wrong, but never an unsafe PASS."""
_CASE = re.compile(r"\[(q\d-\d+)\]")
_LOSE = re.compile(r"^LOSE:(.*)$", re.M)


def losing_responder(body: dict[str, Any]) -> str:
    """Right on every case, except those the system prompt lists on a `LOSE: id id ...` line: REJECT on those."""
    case = _CASE.search(last_user_message(body))
    assert case, "the scripted model needs a case id in the question"
    found = _LOSE.search(system_text(body))
    lose = case.group(1) in (found.group(1).split() if found else [])
    labels, verdict = GOLD[case.group(1).split("-")[0]]
    checks = [
        {"claim_id": cid, "verification": "contradicted" if lose else (g if isinstance(g, str) else g[0]),
         "detail": "scripted", "evidence_refs": []}
        for cid, g in labels.items()
    ]  # fmt: skip
    reply = {
        "verdict": "REJECT" if lose else (verdict if isinstance(verdict, str) else verdict[0]),
        "groundedness_score": 0.9, "critical_fact_count": len(checks), "claim_checks": checks,
        "facts_checked": [], "rationale": "scripted",
    }  # fmt: skip
    return json.dumps(reply)


def losable_ids(copies: int) -> list[str]:
    """The losable case ids in a fixed order (one of each losable case first, then the next copy)."""
    return [f"{q}-{k}" for k in range(1, copies + 1) for q in LOSABLE]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalOpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-history-key")
    with LocalOpenAIServer(losing_responder) as srv:
        yield srv


@pytest.fixture
def work_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git work tree on branch main with one commit, as the current folder."""
    tree = tmp_path / "repo"
    tree.mkdir()
    git = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(tree)], check=True)
    subprocess.run([*git, "-C", str(tree), "commit", "-q", "--allow-empty", "-m", "init"], check=True)
    monkeypatch.chdir(tree)
    return tree


def losing_prompt(folder: Path, name: str, lose: list[str]) -> Path:
    return prompt_dir(folder, name, "LOSE: " + " ".join(lose) if lose else None)


def corpus(folder: Path, copies: int) -> Path:
    return write_copies(folder, copies=copies)


def vbench_run(server: LocalOpenAIServer, cases: Path, prompt: Path, out: Path, *extra: str) -> int:
    args = ["run", "--cases", str(cases), "--model", MODEL, "--prompt", str(prompt), "--base-url", server.base_url]
    return main([*args, "--out", str(out), "--no-cache", "--no-report", *extra])


def summary(out: Path) -> dict[str, Any]:
    return json.loads((out / "summary.json").read_text())


CHAIN = ([], ["q1-1"], ["q1-1", "q7-1"], ["q7-1"])
"""The cases each recorded run of `chain_store` loses: q1-1 changes in run 2 and back in run 4; q7-1 in run 3."""


@pytest.fixture(scope="session")
def chain_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """A folder store with four recorded runs of the scripted model on 21 cases (branch main, commits c1..c4)."""
    root = tmp_path_factory.mktemp("chain")
    cases, store = corpus(root / "cases", 3), root / "history"
    runs = []
    with pytest.MonkeyPatch.context() as mp, LocalOpenAIServer(losing_responder) as srv:
        mp.setenv("OPENAI_API_KEY", "sk-test-history-key")
        for i, lose in enumerate(CHAIN, start=1):
            out = root / f"run-{i}"
            assert vbench_run(srv, cases, losing_prompt(root, f"p{i}", lose), out) in (0, 1)
            args = ["history", "record", str(out), "--history", str(store), "--branch", "main", "--commit", f"c{i}"]
            assert main(args) == 0
            runs.append(out)
    return store, runs
