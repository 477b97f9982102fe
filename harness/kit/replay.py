"""`vbench certify --replay CASE`: send one case's recorded exchange to a SUT again, to reproduce a failure.

The request is the one `sut-log.jsonl` recorded (the kit's model endpoint replaced by a fresh one that
answers the case's scripted reply), sent to the SUT the certificate names or to another; the answer is
judged by the same functions a certification uses.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from harness.corpus.loader import load_cases
from harness.kit.certify import VARIANT, CertifySettings, certify_case
from harness.kit.requests import scripted_reply
from harness.kit.sut import SutReply
from harness.run.conformance import case_problems
from harness.run.folder import SUT_LOG
from harness.run.records import record_from_sut
from harness.score.certificate_model import read_certificate


class ReplayError(ValueError):
    """The run folder cannot replay that case (no log, no such case, case file gone)."""


@dataclass(frozen=True)
class Replay:
    case_id: str
    sut_url: str
    reply: SutReply
    problems: list[str]

    @property
    def passed(self) -> bool:
        return self.reply.error is None and not self.problems


def recorded_request(run_dir: Path, case_id: str) -> dict[str, Any] | None:
    """The request `sut-log.jsonl` recorded for the case (None: a log written before requests were kept)."""
    path = run_dir / SUT_LOG
    if not path.is_file():
        raise ReplayError(f"{path}: no such file; --replay needs the --out folder of an earlier vbench certify")
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            try:
                entry = json.loads(line)
            except ValueError:
                raise ReplayError(f"{path}:{number}: not a JSON line") from None
            if isinstance(entry, dict) and entry.get("case_id") == case_id:
                request = entry.get("sut_request")
                return request if isinstance(request, dict) and request else None
    raise ReplayError(f"{path}: case {case_id!r} was not certified in this run")


def replay(run_dir: Path, case_id: str, sut_url: str | None = None) -> Replay:
    """Send the case's recorded request again (to `sut_url`, else the certified SUT) and judge the answer."""
    request = recorded_request(run_dir, case_id)
    certificate = read_certificate(run_dir)
    dirs = [Path(d) for d in certificate.case_dirs]
    case = next((c for c in load_cases(dirs) if c.id == case_id), None)
    if case is None:
        raise ReplayError(f"case {case_id!r} is no longer in {', '.join(map(str, dirs))}")
    if case.kind != "policy":
        raise ReplayError(f"case {case_id!r} is a quality case: only policy cases replay (their reply is scripted)")
    url = sut_url or certificate.sut.url
    settings = CertifySettings(sut_url=url, out=run_dir, case_dirs=dirs)

    async def send() -> tuple[SutReply, list[str]]:
        async with aiohttp.ClientSession() as session:
            reply, _requests, problems, _body = await certify_case(case, session, settings, body=request)
        return reply, problems

    reply, extra = asyncio.run(send())
    record = record_from_sut(
        case, VARIANT, reply.self_evaluation, reply.error, scripted_reply(case), reply.elapsed_ms, None
    )
    mismatches, violations = case_problems(record, case, settings.excerpt_chars)
    return Replay(case_id, url, reply, [*mismatches, *extra, *violations])
