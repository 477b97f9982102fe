"""Prompt variants as data: `<name>/system.j2`, `<name>/user.j2` and `<name>/prompt.toml`.

A variant is identified by its name and a content hash (sha256 over both
templates and the sampling parameters), so every result says exactly which
prompt produced it. Templates render with StrictUndefined: a missing input is
an error, not an empty string.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import jinja2
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness import UsageError
from harness.llm.types import ChatMessage
from harness.system.models import VerifierInput

PROMPTS_DIR = Path(__file__).resolve().parent
TEMPLATE_FILES = ("system.j2", "user.j2")
PARAMS_FILE = "prompt.toml"

_SECTION_TAGS = re.compile(
    r"<(/?)(\s*)(tool_result|structured_claims|executor_final_answer|gatekeeper_result|question)\b", re.IGNORECASE
)


class PromptError(UsageError):
    """A prompt variant cannot be loaded or rendered; the message names the file."""


class PromptParams(BaseModel):
    """`prompt.toml`: the variant's version and sampling parameters."""

    model_config = ConfigDict(extra="forbid")
    version: str = Field(min_length=1)
    description: str = ""
    temperature: float | None = Field(default=0.0, ge=0.0, le=2.0)
    seed: int | None = None
    max_tokens: int | None = Field(default=None, ge=1)


class PromptVariant(BaseModel):
    """One loaded prompt variant; `render` turns verifier inputs into chat messages."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    version: str
    description: str = ""
    temperature: float | None
    seed: int | None
    max_tokens: int | None
    system_template: str
    user_template: str
    content_hash: str
    source: str

    def render(self, inputs: VerifierInput) -> list[ChatMessage]:
        """The system and user messages for these verification inputs."""
        context = render_context(inputs)
        try:
            system = _compile(self.system_template).render(context)
            user = _compile(self.user_template).render(context)
        except jinja2.TemplateError as exc:
            raise PromptError(f"prompt {self.name!r} ({self.source}): cannot render: {exc}") from exc
        return [
            ChatMessage(role="system", content=system.strip() + "\n"),
            ChatMessage(role="user", content=user.strip() + "\n"),
        ]

    def describe(self) -> dict[str, Any]:
        """Name, version, hash and parameters, for the run manifest."""
        return {
            "name": self.name,
            "version": self.version,
            "hash": self.content_hash,
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
        }


def render_context(inputs: VerifierInput) -> dict[str, Any]:
    """Exactly the spec's explicit verification inputs, under the spec's names."""
    return {
        "question": inputs.question,
        "executor_final_answer": inputs.executor_final_answer,
        "executor_output_parse_status": inputs.executor_output_parse_status,
        "claims": inputs.claims,
        "tool_trace_summary": inputs.tool_trace_summary,
        "gatekeeper_result": inputs.gatekeeper_result,
    }


def content_hash(system: str, user: str, params: PromptParams) -> str:
    """sha256 over both templates and the parameters that change the model's input or sampling."""
    payload = {"system": system, "user": user, "params": params.model_dump(exclude={"description"})}
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def available_prompts() -> list[str]:
    """Names of the packaged prompt variants."""
    return sorted(p.name for p in PROMPTS_DIR.iterdir() if (p / PARAMS_FILE).is_file())


def prompt_source(name: str) -> tuple[str, Path | None]:
    """(variant name, directory or None): a packaged prompt by name, else a variant directory named after itself.

    Any other name is returned as it is: loading it is what says it is unknown.
    """
    if re.fullmatch(r"[A-Za-z0-9_.-]+", name) and (PROMPTS_DIR / name / PARAMS_FILE).is_file():
        return name, None
    path = Path(name)
    if (path / PARAMS_FILE).is_file():
        return path.resolve().name, path
    return name, None


def load_prompt(name: str) -> PromptVariant:
    """A packaged variant by name, or a variant directory by path."""
    packaged_name, directory = prompt_source(name)
    if directory is not None:
        return load_prompt_dir(directory)
    if (PROMPTS_DIR / packaged_name / PARAMS_FILE).is_file():
        return load_prompt_dir(PROMPTS_DIR / packaged_name)
    raise PromptError(f"unknown prompt {name!r}: not one of {', '.join(available_prompts())} nor a variant directory")


def load_prompt_dir(directory: Path) -> PromptVariant:
    """Load and check one variant directory (templates must compile; the toml must fit `PromptParams`)."""
    params_path = directory / PARAMS_FILE
    try:
        with params_path.open("rb") as fh:
            raw = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise PromptError(f"{params_path}: {exc}") from exc
    try:
        params = PromptParams.model_validate(raw)
    except ValidationError as exc:
        errors = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {'unknown key' if e['type'] == 'extra_forbidden' else e['msg']}"
            for e in exc.errors()
        )
        raise PromptError(f"{params_path}: {errors}") from exc
    texts: dict[str, str] = {}
    for filename in TEMPLATE_FILES:
        path = directory / filename
        try:
            texts[filename] = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise PromptError(f"{path}: {exc}") from exc
        try:
            _compile(texts[filename])
        except jinja2.TemplateSyntaxError as exc:
            raise PromptError(f"{path}: line {exc.lineno}: {exc.message}") from exc
    system, user = texts["system.j2"], texts["user.j2"]
    return PromptVariant(
        name=directory.name,
        version=params.version,
        description=params.description,
        temperature=params.temperature,
        seed=params.seed,
        max_tokens=params.max_tokens,
        system_template=system,
        user_template=user,
        content_hash=content_hash(system, user, params),
        source=str(directory),
    )


# --- jinja ---------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


def to_json(value: Any) -> str:
    """Compact one-line JSON of plain values or pydantic models (not HTML-escaped, unlike jinja's tojson)."""
    if isinstance(value, list):
        value = [_plain(v) for v in value]
    return json.dumps(_plain(value), ensure_ascii=False, default=str)


def to_json_rows(values: Any) -> str:
    """A JSON array with one item per line: readable, and far fewer tokens than indented JSON."""
    if not isinstance(values, list) or not values:
        return to_json(values)
    return "[\n" + ",\n".join(to_json(v) for v in values) + "\n]"


def untrusted(text: Any) -> str:
    """Text from outside (tool output, executor text) with our section tags defused, so it cannot close a block."""
    return _SECTION_TAGS.sub(lambda m: f"&lt;{m.group(1)}{m.group(2)}{m.group(3)}", str(text))


_ENV = jinja2.Environment(
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    autoescape=False,  # noqa: S701 - prompts are plain text, not HTML
)
_ENV.filters["to_json"] = to_json
_ENV.filters["to_json_rows"] = to_json_rows
_ENV.filters["untrusted"] = untrusted


@functools.lru_cache(maxsize=64)
def _compile(source: str) -> jinja2.Template:
    return _ENV.from_string(source)
