"""A verifier that replays a fixed reply: the policy cases' `verifier_response`."""

from __future__ import annotations

import json
from typing import Any

from harness.system.models import VerifierCall, VerifierInput
from harness.system.verifiers.base import VerifierBase


class ScriptedVerifier(VerifierBase):
    """Replays one reply, given as an object (written out as JSON) or as exact raw text."""

    name = "scripted"

    def __init__(self, reply_json: dict[str, Any] | None = None, reply_raw: str | None = None) -> None:
        if (reply_json is None) == (reply_raw is None):
            raise ValueError("give exactly one of reply_json or reply_raw")
        self.raw = reply_raw if reply_raw is not None else json.dumps(reply_json)

    async def verify(self, inputs: VerifierInput) -> VerifierCall:
        return VerifierCall(raw_reply=self.raw, model=self.name, finish_reason="stop")

    def describe(self) -> dict[str, object]:
        return {"name": self.name}
