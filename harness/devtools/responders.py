"""What the local test servers answer by default: a verifier reply computed from the request itself.

Shared by the project's async server (`harness.devtools.local_server`) and the bench's threaded one, so both
answer a run the same way; the helpers read a chat request body as the verifier's prompt writes it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.corpus.schema import Case

_CLAIMS_BLOCK = re.compile(r"<structured_claims>(.*?)</structured_claims>", re.DOTALL)
_CLAIM_ID = re.compile(r'"claim_id"\s*:\s*"([^"\\]{1,200})"')


def last_user_message(body: dict[str, Any]) -> str:
    """The text of the last user message of a chat request body."""
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def claim_ids_in(text: str) -> list[str]:
    """Claim ids of the `<structured_claims>` block (or of the whole text when there is none), in order."""
    match = _CLAIMS_BLOCK.search(text)
    scope = match.group(1) if match else text
    return list(dict.fromkeys(_CLAIM_ID.findall(scope)))


def verifier_responder(body: dict[str, Any]) -> str:
    """A valid verifier reply computed from the request: every claim it names is `direct_observation`.

    Not a judge of anything: it lets a run go end to end against a real HTTP server.
    """
    ids = claim_ids_in(last_user_message(body))
    checks = [
        {
            "claim_id": cid,
            "verification": "direct_observation",
            "detail": "stated in the cited result",
            "evidence_refs": [],
        }
        for cid in ids
    ]
    reply = {
        "verdict": "PASS" if ids else "LOW_CONFID",
        "groundedness_score": 1.0 if ids else 0.0,
        "critical_fact_count": len(ids),
        "claim_checks": checks,
        "facts_checked": [],
        "rationale": f"local test server: {len(ids)} claim(s) accepted as observed",
    }
    return json.dumps(reply)


def request_claims(text: str) -> list[dict[str, Any]]:
    """The claim objects of the `<structured_claims>` block (a JSON list), [] when there is none or it is not JSON."""
    match = _CLAIMS_BLOCK.search(text)
    try:
        claims = json.loads(match.group(1)) if match else []
    except ValueError:
        return []
    return (
        [c for c in claims if isinstance(c, dict) and isinstance(c.get("claim_id"), str)]
        if isinstance(claims, list)
        else []
    )


def skill_judge_responder(
    cases: Iterable[Case], fallback: Callable[[dict[str, Any]], str] = verifier_responder
) -> Callable[[dict[str, Any]], str]:
    """A judge of known skill for the validity study (`harness.validity.judge`).

    A request whose model is `skill-judge-p<skill>-s<seed>` gets, for each of its claims, the gold label with
    probability skill (else a dangerous wrong label) drawn from the seed, and the verdict the policy derives
    from them; any other model gets `fallback`'s reply.
    """
    from harness.system.models import Claim
    from harness.validity.judge import SkillJudge, parse_model_name

    judge = SkillJudge(cases)

    def respond(body: dict[str, Any]) -> str:
        wanted = parse_model_name(str(body.get("model", "")))
        if wanted is None:
            return fallback(body)
        claims = [Claim.model_validate(c) for c in request_claims(last_user_message(body))]
        return json.dumps(judge.answer(claims, *wanted))

    return respond
