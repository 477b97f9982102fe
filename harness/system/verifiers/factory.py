"""Model specs to verifiers: `openai:<model>` (any OpenAI-compatible server), and the spec grammar.

A model spec is `<provider>` or `<provider>:<model>`; `parse_model_spec` is its one parser. Which
providers exist, their settings and builders are `harness.run.providers`' registry. The offline baseline
`reference` lives in `harness.baselines` (outside the replay fingerprint); this factory builds `openai`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from harness import UsageError
from harness.llm.cache import CachingChatModel
from harness.llm.types import ChatModel
from harness.system.prompts import PromptVariant, load_prompt
from harness.system.verifiers.base import Verifier

REFERENCE = "reference"
OPENAI = "openai"


class ModelSpecError(UsageError):
    """A model spec the factory does not know."""


class ModelSpec(NamedTuple):
    """`openai:gpt-4o-mini` is (openai, gpt-4o-mini); `reference` is (reference, None)."""

    provider: str
    model: str | None


def parse_model_spec(text: str) -> ModelSpec:
    """The one reading of a model spec's text: a provider name, then `:` and a model name where it takes one."""
    provider, sep, model = text.strip().partition(":")
    return ModelSpec(provider.strip(), model.strip() if sep else None)


def is_reference(model_spec: str) -> bool:
    return parse_model_spec(model_spec) == ModelSpec(REFERENCE, None)


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

    `reference` is built through the provider registry (`harness.run.providers`), not here. `openai:<model>`
    reads OPENAI_BASE_URL / OPENAI_API_KEY unless `base_url` / `api_key` are
    given; `client_settings` are `OpenAISettings` fields (structured_mode,
    max_attempts, timeout, max_tokens, extra_body, ...; unknown keys are errors).
    With `cache_dir`, replies are cached under it (see `CachingChatModel`).
    """
    spec = parse_model_spec(model_spec)
    if is_reference(model_spec):
        raise ModelSpecError("the reference baseline is built by harness.run.providers.build_verifier")
    if spec.provider == OPENAI and spec.model:
        from harness.llm.modes import BaseURLError
        from harness.llm.openai_model import OpenAIChatModel
        from harness.system.verifiers.llm import LLMVerifier

        variant = prompt if isinstance(prompt, PromptVariant) else load_prompt(prompt)
        try:
            model: ChatModel = OpenAIChatModel(spec.model, base_url=base_url, api_key=api_key, **client_settings)
        except BaseURLError as exc:
            raise ModelSpecError(f"{model_spec.strip()}: {exc}") from None
        if cache_dir is not None:
            model = CachingChatModel(model, cache_dir, epoch=cache_epoch)
        return LLMVerifier(model, variant)
    raise ModelSpecError(f"unknown model spec {model_spec!r}: use {REFERENCE!r} or 'openai:<model name>'")
