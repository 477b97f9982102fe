"""A fake verifier for runner logic: a scripted reply per case, chosen by the case marker in the question."""

from __future__ import annotations

import json
from typing import Any

from harness.system.models import Usage, VerifierCall, VerifierInput
from harness.system.verifiers.base import VerifierBase


def reply(verdict: str, c1: str, c2: str, score: float = 0.9) -> str:
    checks = [
        {"claim_id": cid, "verification": v, "detail": "", "evidence_refs": []} for cid, v in (("C1", c1), ("C2", c2))
    ]
    return json.dumps(
        {
            "verdict": verdict,
            "groundedness_score": score,
            "critical_fact_count": 2,
            "claim_checks": checks,
            "facts_checked": [],
            "rationale": "fake",
        }
    )


# What the fake model answers for each hand-computed case (see tests/run/corpus_builder.GOLD).
SCRIPT: dict[str, Any] = {
    "q1": reply("PASS", "direct_observation", "direct_observation"),
    "q2": reply("PASS", "direct_observation", "direct_observation"),
    "q3": reply("LOW_CONFID", "direct_observation", "overstated"),
    "q4": reply("PASS", "direct_observation", "direct_observation"),
    "q5": reply("PASS", "contradicted", "direct_observation"),
    "q6": "I cannot answer in JSON today.",
    "q7": None,  # transport failure after every retry
}


class FakeVerifier(VerifierBase):
    name = "fake"

    def __init__(self, script: dict[str, Any] = SCRIPT, prompt: str = "p1") -> None:
        self.script = script
        self.prompt = prompt
        self.calls = 0

    async def verify(self, inputs: VerifierInput) -> VerifierCall:
        self.calls += 1
        marker = inputs.question.split("]")[0].lstrip("[")
        text = self.script[marker]
        if text is None:
            return VerifierCall(raw_reply=None, model=self.name, error="timeout", attempts=4, latency_ms=50.0)
        return VerifierCall(
            raw_reply=text,
            model=self.name,
            latency_ms=10.0,
            usage=Usage(prompt_tokens=100, completion_tokens=20, total_tokens=120),
        )

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "prompt": {"name": self.prompt, "version": "1", "hash": f"hash-{self.prompt}"}}
