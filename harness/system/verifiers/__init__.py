"""Verifiers: anything that turns `VerifierInput` into a `VerifierCall` (the raw reply)."""

from harness.system.verifiers.base import Verifier

__all__ = ["Verifier"]
