"""The verifier protocol the pipeline calls."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from harness.system.models import VerifierCall, VerifierInput


@runtime_checkable
class Verifier(Protocol):
    """Returns the model's raw reply for the explicit verification inputs.

    `name` is recorded in every result; `describe()` gives the arguments that
    identify it (model, prompt, parameters) for the run manifest.
    """

    name: str

    async def verify(self, inputs: VerifierInput) -> VerifierCall: ...

    def describe(self) -> dict[str, object]: ...
