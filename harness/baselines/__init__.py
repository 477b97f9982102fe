"""Baselines: verifiers the system is compared with, kept outside `system/`.

The replay fingerprint hashes `system/`, not this package, so editing a baseline leaves kept LLM results valid.
A baseline is built like any model: `make_verifier("reference")`; other specs go to the system's factory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.system.prompts import PromptVariant
from harness.system.verifiers.base import Verifier
from harness.system.verifiers.factory import is_reference
from harness.system.verifiers.factory import make_verifier as make_system_verifier


def make_verifier(
    model_spec: str,
    prompt: str | PromptVariant = "baseline",
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    cache_dir: str | Path | None = None,
    cache_epoch: str | int = 0,
    **client_settings: Any,
) -> Verifier:
    """The verifier a model spec names: `reference` here (it ignores prompt and client settings), else the system's."""
    if is_reference(model_spec):
        from harness.baselines.reference import ReferenceVerifier

        return ReferenceVerifier()
    return make_system_verifier(
        model_spec, prompt, base_url=base_url, api_key=api_key, cache_dir=cache_dir, cache_epoch=cache_epoch,
        **client_settings,
    )  # fmt: skip
