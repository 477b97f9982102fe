"""`vbench ci comment` against a local stand-in for GitHub's API: the comment is found by its marker line and
edited, one per model, past the first page, never another's; a read-only token fails that step with one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.cli.ci import comment_marker
from tests.cli.github_api import TOKEN, GitHubAPI


def body_file(folder: Path, model: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "comment.md").write_text(f"{comment_marker('prompt-gate', model)}\n## {text}\n")
    return folder


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    with GitHubAPI() as server:
        monkeypatch.setenv("GITHUB_API_URL", server.url)
        monkeypatch.setenv("GH_TOKEN", TOKEN)
        monkeypatch.setenv("GH_REPO", server.repo)
        yield server


def test_each_model_keeps_one_comment_edited_on_every_push(tmp_path: Path, api: GitHubAPI) -> None:
    api.add(7, "<!-- verifier-bench -->\n## an older comment of another tool")  # a bare marker is not this job's
    for n in range(120):  # the comment must be found past the first page of 100
        api.add(7, f"a review comment {n}")
    first = body_file(tmp_path / "a", "openai:gpt-4o-mini", "first push")
    assert main(["ci", "comment", "--out", str(first), "--pr", "7"]) == 0
    other = body_file(tmp_path / "b", "openai:gpt-4o", "the other model")
    assert main(["ci", "comment", "--out", str(other), "--pr", "7"]) == 0
    again = body_file(tmp_path / "c", "openai:gpt-4o-mini", "second push")
    assert main(["ci", "comment", "--out", str(again), "--pr", "7"]) == 0
    ours = [c["body"] for c in api.comments[7] if c["body"].startswith("<!-- verifier-bench prompt-gate")]
    assert ours == [
        "<!-- verifier-bench prompt-gate model=openai:gpt-4o-mini -->\n## second push\n",
        "<!-- verifier-bench prompt-gate model=openai:gpt-4o -->\n## the other model\n",
    ]
    assert api.comments[7][0]["body"].endswith("an older comment of another tool")
    assert [m for m, _ in api.calls].count("PATCH") == 1 and [m for m, _ in api.calls].count("POST") == 2


def test_the_pull_request_comes_from_the_event(tmp_path: Path, api: GitHubAPI, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 12}}))
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    assert main(["ci", "comment", "--out", str(body_file(tmp_path / "a", "m", "x"))]) == 0
    assert len(api.comments[12]) == 1


def test_a_read_only_token_fails_the_step_in_one_line(tmp_path: Path, api: GitHubAPI, capsys) -> None:  # type: ignore[no-untyped-def]
    api.read_only = True
    assert main(["ci", "comment", "--out", str(body_file(tmp_path / "a", "m", "x")), "--pr", "3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "HTTP 403" in err[0] and "pull-requests: write" in err[0] and TOKEN not in err[0]


def test_a_marker_cannot_close_its_html_comment() -> None:
    marker = comment_marker("prompt-gate", "openai:evil --> <script>")
    assert marker.count("-->") == 1 and marker.endswith(" -->") and "<script>" not in marker
