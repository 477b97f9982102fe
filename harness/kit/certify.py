"""`vbench certify`: every policy case through a system under test, over the protocol, judged as a run is.

For each case the kit serves the case's scripted verifier reply on an OpenAI-compatible endpoint of its
own on 127.0.0.1 (so the SUT's real model client runs), sends the case to `POST <sut>/verify`, records the
request the SUT sent to the model and the SUT's answer, and scores the answer with the same conformance
functions a `vbench run` uses. Nothing is lost when a case fails: each record is written as it finishes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp

from harness import __version__
from harness.corpus.catalogue import DEFAULT_SPEC_DIR, load_catalogue
from harness.corpus.schema import Case
from harness.devtools.local_server import LocalOpenAIServer
from harness.kit.certificate import write_certificate
from harness.kit.requests import input_problems, request_for, scripted_reply
from harness.kit.source import kit_source_sha256
from harness.kit.sut import SutReply, fetch_info, post_verify
from harness.run.caseref import CaseRef
from harness.run.folder import SUT_LOG, ResultWriter, open_log, write_cases
from harness.run.log import ResultRecord
from harness.run.plan import corpus_hash
from harness.run.provenance import package_git_sha, spec_files
from harness.run.records import record_from_sut
from harness.score.certificate import build_certificate
from harness.score.certificate_model import Certificate, Mode
from harness.score.frames import claims_frame, quality_frame
from harness.score.reply_checks import model_reply, reply_problems
from harness.score.summary import conformance, variant_summary
from harness.score.summary_model import SUMMARY_SCHEMA, Summary, VariantSummary, write_summary
from harness.system.protocol import SutInfo
from harness.system.store_names import EVALUATION_KEY
from harness.system.trace import DEFAULT_EXCERPT_CHARS

VARIANT = "sut"


@dataclass(frozen=True)
class CertifySettings:
    sut_url: str
    out: Path
    case_dirs: Sequence[Path]
    filters: Sequence[str] = ()
    timeout_s: float = 30.0
    concurrency: int = 4
    excerpt_chars: int = DEFAULT_EXCERPT_CHARS
    spec_dir: Path = DEFAULT_SPEC_DIR
    model_base_url: str | None = None
    """A real model endpoint for quality cases (the SUT calls it with its own key); None: they are skipped."""
    model: str | None = None
    corpus_policy_cases: int | None = None
    """The policy cases in `case_dirs` before any filter: fewer ran, and the certificate is partial."""
    mode: Mode = "default"
    """`certification`: the caller refused filters and skips; recorded in the certificate."""


@dataclass
class CertifyResult:
    summary: Summary
    certificate: Certificate
    records: list[ResultRecord] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Every policy case agreed and no invariant broke (nor any deterministic part of a quality case)."""
        return self.certificate.status != "failed"


async def certify_case(
    case: Case, session: aiohttp.ClientSession, settings: CertifySettings, body: dict[str, Any] | None = None
) -> tuple[SutReply, list[dict[str, Any]], list[str], dict[str, Any]]:
    """One case: its own scripted model endpoint, one request to the SUT; (reply, model requests, problems, the
    request sent). `body`: a recorded request to send again (its endpoint is replaced by this case's own)."""
    script = scripted_reply(case)
    endpoint = LocalOpenAIServer(lambda _body: script, model="kit-scripted-verifier")
    await endpoint.start_async()
    try:
        if body is None:
            body = request_for(
                case, endpoint.base_url, settings.excerpt_chars, timeout_s=settings.timeout_s
            ).model_dump(mode="json")
        else:
            body = {**body, "verifier": {**body["verifier"], "base_url": endpoint.base_url}}
        timeout_s = float(body.get("settings", {}).get("timeout_s", settings.timeout_s))
        reply = await post_verify(session, settings.sut_url, body, timeout_s)
    finally:
        await endpoint.stop_async()
    model_requests = list(endpoint.requests)
    if reply.error is not None:
        return reply, model_requests, [], body
    problems = input_problems(case, model_requests, settings.excerpt_chars) + persisted_reply_problems(case, reply)
    return reply, model_requests, problems, body


def persisted_reply_problems(case: Case, reply: SutReply) -> list[str]:
    """The persisted evaluation against the reply the kit scripted (`harness.score.reply_checks`)."""
    stored = (reply.self_evaluation or {}).get(EVALUATION_KEY)
    if not isinstance(stored, dict):
        return []  # the invariants name a missing evaluation
    valid = case.parsed_output.parse_status.status == "valid"
    trace = case.trace(DEFAULT_EXCERPT_CHARS)  # tool names and ids: the same at every excerpt limit
    return reply_problems(stored, model_reply(scripted_reply(case)), case.executor_claims, valid, trace)


def quality_variant(settings: CertifySettings) -> str:
    return f"sut:{settings.model}"


async def quality_case(case: Case, session: aiohttp.ClientSession, settings: CertifySettings) -> SutReply:
    """A quality case through the SUT against the real model endpoint the user named."""
    assert settings.model_base_url is not None and settings.model is not None
    request = request_for(case, settings.model_base_url, settings.excerpt_chars, settings.model, settings.timeout_s)
    body = request.model_dump(mode="json")
    return await post_verify(session, settings.sut_url, body, settings.timeout_s)


async def run_cases(
    cases: Sequence[Case], settings: CertifySettings, hashes: dict[str, str], writer: ResultWriter, log: Any
) -> tuple[SutInfo, list[str], list[ResultRecord], dict[str, list[str]]]:
    """Every case through the SUT, a few at a time; records and log lines written as each finishes."""
    records: list[ResultRecord] = []
    extra: dict[str, list[str]] = {}
    gate = asyncio.Semaphore(max(1, settings.concurrency))
    async with aiohttp.ClientSession() as session:
        info, info_problems = await fetch_info(session, settings.sut_url, settings.timeout_s)

        async def one(case: Case) -> None:
            async with gate:
                if case.kind == "policy":
                    reply, model_requests, problems, body = await certify_case(case, session, settings)
                else:
                    reply, model_requests, problems, body = await quality_case(case, session, settings), [], [], {}
            record = record_from_sut(
                case,
                VARIANT if case.kind == "policy" else quality_variant(settings),
                reply.self_evaluation,
                reply.error,
                scripted_reply(case) if model_requests else None,
                reply.elapsed_ms,
                hashes.get(case.id),
            )
            records.append(record)
            if problems:
                extra[case.id] = problems
            writer.write(record)
            served = scripted_reply(case) if case.kind == "policy" else None
            log.write(json.dumps(_log_line(case, reply, model_requests, problems, body, served)) + "\n")
            log.flush()

        await asyncio.gather(*(one(c) for c in cases))
    return info, info_problems, records, extra


async def reachable(settings: CertifySettings) -> None:
    """`SutUnreachable` when `GET /info` cannot be had."""
    async with aiohttp.ClientSession() as session:
        await fetch_info(session, settings.sut_url, settings.timeout_s)


def _log_line(
    case: Case,
    reply: SutReply,
    model_requests: list[dict[str, Any]],
    problems: list[str],
    body: dict[str, Any],
    model_reply: str | None = None,
) -> dict[str, Any]:
    """What an auditor needs to inspect one case, and `vbench certify --replay` to send it again: the request
    the kit sent, the reply its model endpoint served (a parsing red is read from the log alone), the SUT's
    answer as sent, and what it asked the model."""
    return {
        "case_id": case.id,
        "sut_request": body,
        "model_reply": model_reply,
        "http_status": reply.status,
        "error": reply.error,
        "elapsed_ms": reply.elapsed_ms,
        "sut_response": reply.body,
        "model_requests": model_requests,
        "input_problems": problems,
    }


def certify(cases: Sequence[Case], quality: Sequence[Case], settings: CertifySettings) -> CertifyResult:
    """Certify the SUT on `cases` (policy cases); `quality` cases are scored with the named model, else skipped."""
    git_sha = package_git_sha()  # before anything is written: the code that runs, as it is now
    asyncio.run(reachable(settings))  # an unreachable SUT leaves --out untouched, free for the retry
    settings.out.mkdir(parents=True, exist_ok=True)
    refs = [CaseRef.of(c) for c in [*cases, *quality]]
    hashes = {r.id: r.hash for r in refs}
    write_cases(settings.out, refs)
    with ResultWriter(settings.out) as writer, open_log(settings.out, SUT_LOG) as log:
        ran_quality = list(quality) if settings.model else []
        info, info_problems, records, extra = asyncio.run(
            run_cases([*cases, *ran_quality], settings, hashes, writer, log)
        )
    by_id = {c.id: c for c in [*cases, *ran_quality]}
    records.sort(key=lambda r: r.case_id)
    catalogue = load_catalogue(settings.spec_dir, fresh=True) if settings.spec_dir != DEFAULT_SPEC_DIR else None
    conf = conformance(records, by_id, extra, settings.excerpt_chars, catalogue)
    errors = sum(1 for r in records if r.error)
    hash_ = corpus_hash(refs)
    skipped = {
        "quality_cases": 0 if ran_quality else len(quality),
        "case_ids": [] if ran_quality else sorted(c.id for c in quality),
        "reason": "quality cases need a real model endpoint; none was named" if not ran_quality else "",
    }
    data = {
        "schema_version": SUMMARY_SCHEMA,
        "kind": "certify",
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "package_version": __version__,
        "sut": {"url": settings.sut_url, **info.model_dump()},
        "corpus_hash": hash_,
        "filters": list(settings.filters),
        "conformance": conf,
        "errors": errors,
        "skipped": skipped,
        "variants": [quality_summary(settings, records)] if ran_quality else [],
        "gates": [],
    }
    certificate = build_certificate(
        sut={"url": settings.sut_url, **info.model_dump()},
        kit={
            "name": "verifier-bench",
            "version": __version__,
            "git_sha": git_sha,
            "source_sha256": kit_source_sha256(),
        },
        spec=spec_files(settings.spec_dir),
        corpus_hash=hash_,
        conformance=conf,
        case_dirs=[str(p) for p in settings.case_dirs],
        filters=list(settings.filters),
        errors=errors,
        skipped=skipped,
        corpus_policy_cases=settings.corpus_policy_cases,
        protocol_problems=info_problems,
        mode=settings.mode,
    )
    summary = write_summary(settings.out, data, sort_keys=True)  # checked against `Summary`, written whole
    write_certificate(settings.out, certificate)
    return CertifyResult(summary=summary, certificate=certificate, records=records)


def quality_summary(settings: CertifySettings, records: Sequence[ResultRecord]) -> VariantSummary:
    """The quality cases' figures, scored as a run scores a variant."""
    quality = [r for r in records if r.kind == "quality"]
    meta = {"name": quality_variant(settings), "model": settings.model, "base_url": settings.model_base_url}
    return variant_summary(meta, quality_frame(quality), claims_frame(quality))
