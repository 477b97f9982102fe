"""Versioned verifier prompts: one directory per variant (system.j2, user.j2, prompt.toml)."""

from harness.system.prompts.variant import (
    PromptError,
    PromptParams,
    PromptVariant,
    available_prompts,
    load_prompt,
    load_prompt_dir,
    render_context,
)

__all__ = [
    "PromptError",
    "PromptParams",
    "PromptVariant",
    "available_prompts",
    "load_prompt",
    "load_prompt_dir",
    "render_context",
]
