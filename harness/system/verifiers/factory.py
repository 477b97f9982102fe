"""Model specs to verifiers: `openai:<model>` (any OpenAI-compatible server).

The offline baseline `reference` lives in `harness.baselines` (outside the replay fingerprint);
`harness.baselines.make_verifier` builds it and hands every other spec to this factory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.llm.cache import CachingChatModel
from harness.llm.types import ChatModel
from harness.system.prompts import PromptVariant, load_prompt
from harness.system.verifiers.base import Verifier

REFERENCE = "reference"
OPENAI_PREFIX = "openai:"


class ModelSpecError(ValueError):
    """A model spec the factory does not know."""


def is_reference(model_spec: str) -> bool:
    return model_spec.strip() == REFERENCE


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
    """The verifier a model spec names.

    `reference` is built by `harness.baselines.make_verifier`, not here. `openai:<model>`
    reads OPENAI_BASE_URL / OPENAI_API_KEY unless `base_url` / `api_key` are
    given; `client_settings` are `OpenAISettings` fields (structured_mode,
    max_attempts, timeout, max_tokens, extra_body, ...; unknown keys are errors).
    With `cache_dir`, replies are cached under it (see `CachingChatModel`).
    """
    spec = model_spec.strip()
    if spec == REFERENCE:
        raise ModelSpecError("the reference baseline is built by harness.baselines.make_verifier")
    if spec.startswith(OPENAI_PREFIX) and spec[len(OPENAI_PREFIX) :].strip():
        from harness.llm.modes import BaseURLError
        from harness.llm.openai_model import OpenAIChatModel
        from harness.system.verifiers.llm import LLMVerifier

        variant = prompt if isinstance(prompt, PromptVariant) else load_prompt(prompt)
        try:
            model: ChatModel = OpenAIChatModel(
                spec[len(OPENAI_PREFIX) :].strip(), base_url=base_url, api_key=api_key, **client_settings
            )
        except BaseURLError as exc:
            raise ModelSpecError(f"{spec}: {exc}") from None
        if cache_dir is not None:
            model = CachingChatModel(model, cache_dir, epoch=cache_epoch)
        return LLMVerifier(model, variant)
    raise ModelSpecError(f"unknown model spec {model_spec!r}: use {REFERENCE!r} or 'openai:<model name>'")
