"""A judge of known skill: each claim gets its gold label with probability `skill`, else a dangerous wrong one.

The draw is a pure function of (seed, case fingerprint, claim id), so the local test server's responder
(`harness.devtools.responders.skill_judge_responder`) and the in-process study draw the same labels. The
wrong label is the most PASS-favouring class the gold does not accept (the policy's `CHECK_SEVERITY` order:
an unsupported claim is called direct_observation, a direct observation reasonable_inference), so a weaker
judge errs towards unsafe PASSes, the error a ship decision must not miss. The judge's verdict is the one
the policy derives from its own labels (`derive_verdict`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.corpus.schema import Case
from harness.system.models import Claim, ClaimCheck, Derivability
from harness.system.policy import CHECK_SEVERITY, derive_verdict

MODEL_PREFIX = "skill-judge"
_MODEL = re.compile(r"^skill-judge-p(?P<skill>[01](?:\.\d+)?)-s(?P<seed>\d{1,12})$")
BY_SEVERITY = sorted(CHECK_SEVERITY, key=lambda d: CHECK_SEVERITY[d])


def model_name(skill: float, seed: int) -> str:
    """The model name that asks the responder for this skill and seed (`openai:<name>` in a run)."""
    if not 0.0 <= skill <= 1.0:
        raise ValueError(f"skill {skill} is not a probability")
    return f"{MODEL_PREFIX}-p{skill:.4f}-s{int(seed)}"


def parse_model_name(name: str) -> tuple[float, int] | None:
    """(skill, seed) of a `model_name`, None for any other model name."""
    match = _MODEL.match(name or "")
    return (float(match["skill"]), int(match["seed"])) if match else None


def fingerprint(claims: Iterable[tuple[str, str]]) -> str:
    """What identifies a case to the judge: its claims' (id, statement) pairs, as a request carries them."""
    text = json.dumps(sorted((str(i), str(s)) for i, s in claims), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def uniform(seed: int, case_key: str, claim_id: str) -> float:
    """A uniform draw in [0, 1) fixed by the seed, the case and the claim."""
    digest = hashlib.blake2b(f"{seed}\x1f{case_key}\x1f{claim_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


def right_label(acceptable: Iterable[Derivability]) -> Derivability:
    """The gold label the judge gives when it is right: the most PASS-favouring acceptable one."""
    ok = set(acceptable)
    return next(d for d in BY_SEVERITY if d in ok)


def wrong_label(acceptable: Iterable[Derivability]) -> Derivability:
    """The label the judge gives when it is wrong: the most PASS-favouring one the gold does not accept."""
    ok = set(acceptable)
    return next(d for d in BY_SEVERITY if d not in ok)


@dataclass(frozen=True)
class JudgedCase:
    """What the judge knows of one case: its fingerprint and, per gold-labelled claim, its two answers."""

    case_id: str
    key: str
    answers: dict[str, tuple[Derivability, Derivability]]
    """claim id -> (label when right, label when wrong), in the case's claim order."""


def judged_case(case: Case) -> JudgedCase:
    claims = case.executor_claims
    gold = case.expected.acceptable_labels()
    answers = {
        c.claim_id: (right_label(gold[c.claim_id]), wrong_label(gold[c.claim_id])) for c in claims if c.claim_id in gold
    }
    return JudgedCase(case.id, fingerprint((c.claim_id, c.statement) for c in claims), answers)


def draw_mask(judged: JudgedCase, skill: float, seed: int) -> tuple[bool, ...]:
    """Which of the case's gold-labelled claims the judge gets right under this seed (claim order)."""
    return tuple(uniform(seed, judged.key, cid) < skill for cid in judged.answers)


def labels_for(judged: JudgedCase, mask: Sequence[bool]) -> dict[str, Derivability]:
    return {cid: pair[0] if right else pair[1] for (cid, pair), right in zip(judged.answers.items(), mask, strict=True)}


def reply(claims: Sequence[Claim], labels: Mapping[str, Derivability]) -> dict[str, Any]:
    """The judge's reply: its label for every claim (direct_observation where it knows no gold), and the verdict
    the policy derives from those labels."""
    checks = [
        ClaimCheck(claim_id=c.claim_id, verification=labels.get(c.claim_id, Derivability.DIRECT_OBSERVATION))
        for c in claims
    ]
    verdict = derive_verdict(checks, claims, 1.0)
    return {
        "verdict": verdict.value,
        "groundedness_score": 1.0,
        "critical_fact_count": sum(1 for c in claims if c.critical),
        "claim_checks": [
            {
                "claim_id": k.claim_id,
                "verification": k.verification.value,
                "detail": "simulated judge",
                "evidence_refs": [],
            }
            for k in checks
        ],
        "facts_checked": [],
        "rationale": "simulated judge of known skill",
    }


class SkillJudge:
    """The judge over a set of cases: the reply to a request's claims, for the skill and seed its model names."""

    def __init__(self, cases: Iterable[Case]) -> None:
        self.cases = {j.key: j for j in (judged_case(c) for c in cases)}

    def answer(self, claims: Sequence[Claim], skill: float, seed: int) -> dict[str, Any]:
        judged = self.cases.get(fingerprint((c.claim_id, c.statement) for c in claims))
        labels = {} if judged is None else labels_for(judged, draw_mask(judged, skill, seed))
        return reply(claims, labels)
