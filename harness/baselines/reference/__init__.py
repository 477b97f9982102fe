"""The reference verifier: an offline, deterministic, non-LLM baseline of named signals (see `signals`)."""

from harness.baselines.reference.signals import SIGNALS
from harness.baselines.reference.verifier import VERSION, ReferenceSettings, ReferenceVerifier, build_reply

__all__ = ["SIGNALS", "VERSION", "ReferenceSettings", "ReferenceVerifier", "build_reply"]
