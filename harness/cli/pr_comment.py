"""`vbench ci comment`: post the comment body on the pull request, editing the one this job posted before.

The body's first line is its marker (`<!-- verifier-bench prompt-gate model=... -->`, `harness.cli.ci`): the
comment whose first line is the same is edited, so each job of a matrix keeps its own comment across pushes,
and another bot's or a person's comment is never touched. GitHub's REST API (issue comments) over httpx;
the token, repository and API root are the ones a GitHub Actions job has (GH_TOKEN or GITHUB_TOKEN,
GH_REPO or GITHUB_REPOSITORY, GITHUB_API_URL). A token that may not write (a fork's pull request) fails the
step with one line; the workflow marks that step `continue-on-error`, so the gate's own exit code stands.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from harness import UsageError
from harness.cli import EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    import httpx

PAGE = 100


def pr_number(explicit: int | None, env: Mapping[str, str]) -> int:
    """The pull request: `--pr`, else the event's (`$GITHUB_EVENT_PATH`, a pull_request event)."""
    if explicit is not None:
        return explicit
    event_path = env.get("GITHUB_EVENT_PATH")
    try:
        event = json.loads(Path(event_path).read_text(encoding="utf-8")) if event_path else {}
    except (OSError, ValueError) as exc:
        raise UsageError(f"$GITHUB_EVENT_PATH {event_path}: {exc}") from exc
    number = (event.get("pull_request") or {}).get("number")
    if not isinstance(number, int):
        raise UsageError("vbench ci comment: no pull request (give --pr N, or run it on a pull_request event)")
    return number


def post_comment(body_file: Path, pr: int | None, env: Mapping[str, str]) -> int:
    """Edit the comment that starts with the body's marker line, or add one; 0 when posted."""
    import httpx

    try:
        body = body_file.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"vbench ci comment: {body_file}: {exc.strerror or exc}") from exc
    marker = body.split("\n", 1)[0]
    token = env.get("GH_TOKEN") or env.get("GITHUB_TOKEN")
    repo = env.get("GH_REPO") or env.get("GITHUB_REPOSITORY")
    if not token or not repo:
        raise UsageError("vbench ci comment: set GH_TOKEN and GH_REPO (owner/name) to post the comment")
    number = pr_number(pr, env)
    api = env.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json"}
    try:
        with httpx.Client(base_url=api, headers=headers, timeout=30) as client:
            existing = find_comment(client, repo, number, marker)
            if existing is None:
                response = client.post(f"/repos/{repo}/issues/{number}/comments", json={"body": body})
            else:
                response = client.patch(f"/repos/{repo}/issues/comments/{existing}", json={"body": body})
            response.raise_for_status()
    except httpx.HTTPStatusError as exc:
        reason = exc.response.reason_phrase
        print(
            f"error: the comment was not posted on {repo}#{number}: HTTP {exc.response.status_code} {reason} "
            "(a fork's pull request gets a read-only token; the job needs `permissions: pull-requests: write`)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except httpx.HTTPError as exc:
        print(f"error: the comment was not posted: {api} cannot be reached ({type(exc).__name__})", file=sys.stderr)
        return EXIT_USAGE
    print(f"{'edited' if existing is not None else 'posted'} the comment on {repo}#{number}", file=sys.stderr)
    return EXIT_OK


def find_comment(client: httpx.Client, repo: str, number: int, marker: str) -> int | None:
    """The id of the pull request's first comment whose first line is `marker`, paging through them all."""
    page = 1
    while True:
        response = client.get(f"/repos/{repo}/issues/{number}/comments", params={"per_page": PAGE, "page": page})
        response.raise_for_status()
        comments = response.json()
        for comment in comments:
            if str(comment.get("body") or "").split("\n", 1)[0].strip() == marker.strip():
                return int(comment["id"])
        if len(comments) < PAGE:
            return None
        page += 1
