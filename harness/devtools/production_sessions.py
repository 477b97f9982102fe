"""Production sessions as the spec's service would persist them, made from the project's own quality cases.

Each quality case is loaded into a fresh store and run through the system's own pipeline with a "production"
verifier, the reference verifier with some of its signals switched off (so it disagrees with the full
reference verifier on some sessions, as a production model would); the row is the store's session as
persisted: `session` with `self_evaluation` (a sibling key and the `verifier_evaluation`), and `executor`.
`with_secrets` plants an API key, a bearer token, a password in a URL and an email in the first session's
tool result, as a careless tool would return them. The gold labels of the cases are never in a row.

    python -m harness.devtools.production_sessions cases/quality --out sessions.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from pathlib import Path
from typing import Any

from harness.baselines.reference import ReferenceSettings, ReferenceVerifier
from harness.corpus.loader import load_cases
from harness.corpus.schema import Case
from harness.run.execute import execute_case

PRODUCTION_SIGNALS_OFF: tuple[tuple[str, ...], ...] = ((), ("number",), ("scope", "causal"), ("external_topic",))
"""Signals the production verifier lacks, cycled over the sessions: the first sessions get the full reference."""
PLANTED = (
    "\nAuthorization: Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.ZmFrZQ"
    "\nOPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx0123"
    "\ndsn: postgresql://svc_orders:hunter2-Secret@db.internal:5432/orders"
    "\npaged: oncall.engineer@example.com\n"
)
"""Secrets a careless tool returns (all made up); the importer must take every one out."""


def session_id_for(case_id: str) -> str:
    return "prod-" + re.sub(r"[^a-z0-9._-]", "-", case_id.lower())


def production_verifier(index: int) -> ReferenceVerifier:
    settings = ReferenceSettings()
    for signal in PRODUCTION_SIGNALS_OFF[index % len(PRODUCTION_SIGNALS_OFF)]:
        settings = settings.without(signal)
    return ReferenceVerifier(settings)


async def persisted_row(case: Case, index: int, planted: str = "") -> dict[str, Any]:
    """The case's session run through the pipeline, as the service's store holds it afterwards."""
    if planted and case.session.tool_invocations:
        first = case.session.tool_invocations[0]
        invocations = [first.model_copy(update={"result": first.result + planted}), *case.session.tool_invocations[1:]]
        case = case.model_copy(update={"session": case.session.model_copy(update={"tool_invocations": invocations})})
    sibling = {"executor_confidence": 0.7, **case.session.self_evaluation}
    case = case.model_copy(update={"session": case.session.model_copy(update={"self_evaluation": sibling})})
    run = await execute_case(case, production_verifier(index))
    session = case.session.model_dump(mode="json", exclude_none=True, exclude={"id"})
    session["self_evaluation"] = run.self_evaluation
    executor = case.executor.model_dump(mode="json", exclude_none=True)
    return {"id": session_id_for(case.id), "session": session, "executor": executor}


def production_rows(paths: list[Path], limit: int | None = None, with_secrets: bool = True) -> list[dict[str, Any]]:
    """Rows for the quality cases below `paths` (sorted by id; policy cases are left out)."""
    cases = sorted((c for c in load_cases(paths) if c.kind == "quality"), key=lambda c: c.id)[:limit]

    async def all_rows() -> list[dict[str, Any]]:
        return [await persisted_row(c, i, PLANTED if with_secrets and i == 0 else "") for i, c in enumerate(cases)]

    return asyncio.run(all_rows())


def write_jsonl(rows: list[dict[str, Any]], path: Path) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path, help="case folders or files (quality cases are used)")
    parser.add_argument("--out", type=Path, required=True, help="the JSONL file to write")
    parser.add_argument("--limit", type=int, default=None, help="at most N sessions")
    args = parser.parse_args(argv)
    rows = write_jsonl(production_rows(args.paths, args.limit), args.out)
    print(f"wrote {rows}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
