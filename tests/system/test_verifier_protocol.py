"""The Verifier protocol declares identity and close: the runner calls them, it does not probe for them."""

from __future__ import annotations

import asyncio

from harness.baselines.reference import ReferenceVerifier
from harness.system.models import VerifierCall, VerifierInput
from harness.system.verifiers.base import Verifier, VerifierBase
from harness.system.verifiers.scripted import ScriptedVerifier


class OnlyVerifies:
    """What a verifier looked like before: verify and describe, nothing else."""

    name = "bare"

    async def verify(self, inputs: VerifierInput) -> VerifierCall:
        return VerifierCall(raw_reply="{}", model=self.name)

    def describe(self) -> dict[str, object]:
        return {"name": self.name}


class Declared(VerifierBase, OnlyVerifies):
    pass


def test_a_verifier_must_declare_replay_identity_and_aclose() -> None:
    assert not isinstance(OnlyVerifies(), Verifier)
    assert isinstance(Declared(), Verifier)
    for verifier in (Declared(), ReferenceVerifier(), ScriptedVerifier(reply_raw="x")):
        assert isinstance(verifier, Verifier)
        assert verifier.replay_identity() is None  # no response cache: nothing may be replayed for it
        assert asyncio.run(verifier.aclose()) is None
