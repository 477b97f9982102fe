"""The judge of known skill over real HTTP: the `openai:` model, the local server, the whole pipeline.

Each case's recorded outcome must be the one the validity study reads from its in-process table for the same
skill and seed; that identity is what lets the study decide thousands of pairs without HTTP.
"""

from __future__ import annotations

import asyncio

from harness.corpus.loader import load_cases
from harness.devtools.local_server import LocalOpenAIServer
from harness.devtools.responders import skill_judge_responder
from harness.run.execute import execute_case
from harness.run.records import record_from_run
from harness.score.outcome import record_outcome
from harness.system.pipeline import PipelineRun
from harness.system.verifiers.base import Verifier
from harness.system.verifiers.factory import make_verifier
from harness.validity.judge import model_name
from harness.validity.simulate import simulate_run
from harness.validity.truth import case_table

CASES = load_cases(["cases/quality/cpu"])


async def _outcomes(server: LocalOpenAIServer, skill: float, seed: int) -> list[tuple[float, float, float]]:
    verifier = make_verifier(f"openai:{model_name(skill, seed)}", base_url=server.base_url, api_key="local-test")
    try:
        out = []
        for case in CASES:
            run = await execute_case(case, verifier)
            got = record_outcome(record_from_run(case, "judge", 1, run))
            out.append((float(got.verdict_correct), float(got.unsafe_pass), float(got.claims_right)))
        return out
    finally:
        await verifier.aclose()


def test_over_http_the_judge_scores_what_the_in_process_table_says(openai_server: LocalOpenAIServer) -> None:
    openai_server.responder = skill_judge_responder(CASES)
    tables = [case_table(c) for c in CASES]
    for skill, seed in ((0.6, 3), (0.9, 4)):
        http = asyncio.run(_outcomes(openai_server, skill, seed))
        model = simulate_run(tables, skill, seed)
        assert http == list(zip(model.verdict_correct, model.unsafe_pass, model.claims_right, strict=True))
    assert sum(v for v, _, _ in asyncio.run(_outcomes(openai_server, 0.3, 5))) < len(CASES)  # a weak judge errs


def test_other_models_get_the_default_reply(openai_server: LocalOpenAIServer) -> None:
    openai_server.responder = skill_judge_responder(CASES)
    verifier = make_verifier("openai:some-model", base_url=openai_server.base_url, api_key="local-test")

    run = asyncio.run(_run_one(verifier))
    assert run.evaluation.rationale.startswith("local test server")


async def _run_one(verifier: Verifier) -> PipelineRun:
    try:
        return await execute_case(CASES[0], verifier)
    finally:
        await verifier.aclose()
