"""The reference verifier: an offline, deterministic, non-LLM heuristic baseline."""

from harness.system.verifiers.reference.classify import ReferenceSettings
from harness.system.verifiers.reference.verifier import ReferenceVerifier, build_reply

__all__ = ["ReferenceSettings", "ReferenceVerifier", "build_reply"]
