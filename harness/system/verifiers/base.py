"""The verifier protocol the pipeline and the runner call."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from harness.system.models import VerifierCall, VerifierInput


@runtime_checkable
class Verifier(Protocol):
    """Returns the model's raw reply for the explicit verification inputs.

    `name` is recorded in every result; `describe()` gives the arguments that identify it (model, prompt,
    parameters, never a secret) for the run manifest. `replay_identity()` is what decides its replies when
    they come through a response cache (None: nothing may be replayed); `aclose()` releases connections.
    The runner calls these four directly: a verifier declares them instead of being probed for them.
    """

    name: str

    async def verify(self, inputs: VerifierInput) -> VerifierCall: ...

    def describe(self) -> dict[str, object]: ...

    def replay_identity(self) -> dict[str, Any] | None: ...

    async def aclose(self) -> None: ...


class VerifierBase:
    """The defaults of a verifier without a response cache and without connections to close."""

    def replay_identity(self) -> dict[str, Any] | None:
        """No response cache: no earlier result may stand in for this verifier's."""
        return None

    async def aclose(self) -> None:
        """Nothing to release."""
