"""The provider registry: a model spec's provider name -> its settings model and its builder.

`reference` (the offline heuristic baseline) and `openai` (any OpenAI-compatible server) are registered
here; the spec grammar (`<provider>` or `<provider>:<model>`) is read by
`harness.system.verifiers.factory.parse_model_spec` alone. The registry drives the study's validation of
`models` and `model_settings` (an unknown provider or a bad setting names its key), the CLI's client
flags (they go to every model whose provider's settings take them) and the verifier a variant runs.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator

from harness.llm.modes import BaseURLError, check_base_url, public_url
from harness.llm.openai_settings import DEFAULT_BASE_URL
from harness.llm.openai_settings import OpenAISettings as ClientSettings
from harness.run.log import VariantInfo
from harness.system.prompts import PromptVariant
from harness.system.verifiers.base import Verifier
from harness.system.verifiers.factory import OPENAI, REFERENCE, ModelSpec, ModelSpecError, parse_model_spec

if TYPE_CHECKING:
    from harness.run.study import Study


class SettingsError(ModelSpecError):
    """Settings a provider cannot use (exit 2), e.g. a key variable that is not set."""


class SettingsValueError(ModelSpecError):
    """Settings their provider's model refuses; the message names each key's whole path, from `model_settings`
    (`model_settings."openai:m".timeout: ...`), so a study's error says it as it is."""


class ProviderSettings(BaseModel):
    """What a study file's `model_settings."<spec>"` holds for one model; unknown keys are errors."""

    model_config = ConfigDict(extra="forbid")

    def client_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for the provider's builder."""
        return self.model_dump(exclude_none=True)

    def recorded(self) -> dict[str, Any]:
        """What a run log may keep: never a secret."""
        return self.model_dump(exclude_none=True)


class NoSettings(ProviderSettings):
    """A provider without client settings (the reference baseline)."""


def client_settings(client: type[BaseModel], base: type[ProviderSettings]) -> type[ProviderSettings]:
    """A provider's settings model built from its client's own settings model, so that their rules have one home.

    Each client field becomes a field of the same type and constraints (`Literal` values, bounds), but optional:
    None means "not given", so the client's own default applies, only what was given is recorded, and flags merge
    over a study file's values. A field with a default factory (`extra_body`) keeps it. `base` adds the registry's
    own fields (what the client takes as arguments rather than as settings) and behaviour. What this could not copy
    (validators, aliases, other model config) is refused here, at import, rather than let through a study file.
    """
    decorators = client.__pydantic_decorators__
    if decorators.field_validators or decorators.model_validators or decorators.validators:
        raise TypeError(f"{client.__name__} has validators, which {base.__name__} would not copy")
    if set(client.model_config) - {"extra"}:
        raise TypeError(f"{client.__name__}'s model config is more than `extra`, which {base.__name__} would not copy")
    fields: dict[str, Any] = {}
    for name, field in client.model_fields.items():
        if field.alias is not None or name in base.model_fields:
            raise TypeError(f"{client.__name__}.{name}: an alias, or a name {base.__name__} has too")
        annotation: Any = Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
        if field.default_factory is not None:
            fields[name] = (annotation, Field(default_factory=field.default_factory, description=field.description))
            continue
        description = f"{field.description or name}{_default_note(field.get_default())}"
        fields[name] = (annotation | None, Field(default=None, description=description))
    return create_model(f"{client.__name__}Fields", __base__=base, __module__=base.__module__, **fields)


def _default_note(default: Any) -> str:
    if default is None:
        return ""
    return f" (default: {default:g})" if isinstance(default, float) else f" (default: {default})"


class _OpenAIEndpoint(ProviderSettings):
    """Where an `openai:` model is served and which variable holds its key: the registry's own settings (the
    client takes them as arguments, not as settings)."""

    base_url: str | None = Field(default=None, description="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    api_key_env: str | None = Field(
        default=None, description="name of the env var that holds the key, never the key (default: OPENAI_API_KEY)"
    )

    @field_validator("base_url")
    @classmethod
    def _no_credentials(cls, url: str | None) -> str | None:
        return None if url is None else check_base_url(url)


# mypy cannot follow a base class built at import
class OpenAIProviderSettings(client_settings(ClientSettings, _OpenAIEndpoint)):  # type: ignore[misc]
    """Per-model settings of `openai:` models: the client's settings (`harness.llm.openai_settings`, the
    one home of their rules) plus the endpoint and the key's variable, each optional."""

    def client_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for the verifier factory. The key is read from its variable here, never stored."""
        kwargs = self.model_dump(exclude_none=True, exclude={"extra_body", "api_key_env"})
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        if self.api_key_env:
            if self.api_key_env not in os.environ:
                raise SettingsError(f"model_settings.api_key_env names {self.api_key_env}, which is not set")
            kwargs["api_key"] = os.environ[self.api_key_env]
        return kwargs

    def recorded(self) -> dict[str, Any]:
        """What a run log may keep: no key, and a base URL without credentials or query."""
        data = self.model_dump(exclude_none=True)
        if self.base_url:
            data["base_url"] = public_url(self.base_url)
        return data


@dataclass(frozen=True)
class Endpoint:
    """Where a model is served, as a run checks it before the first case and watches it during the run."""

    url: str
    """The base URL (what the probe and the breaker name; may not be recorded as it is: see `public_url`)."""
    key_env: str
    """The environment variable that must hold its key."""
    max_connection_failures: int
    """Requests in a row that may fail with connection errors before the run stops."""


def _openai_endpoint(settings: ProviderSettings) -> Endpoint:
    """An `openai:` model's endpoint: its settings' base URL and key variable, else the client's defaults."""
    assert isinstance(settings, OpenAIProviderSettings)
    url = settings.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    failures = settings.max_connection_failures or ClientSettings().max_connection_failures
    try:
        checked = check_base_url(url)
    except BaseURLError as exc:  # from OPENAI_BASE_URL (the settings' own were checked when read)
        raise SettingsError(str(exc)) from None
    return Endpoint(checked.rstrip("/"), settings.api_key_env or "OPENAI_API_KEY", failures)


def endpoint_of(text: str, settings: ProviderSettings | None) -> Endpoint | None:
    """The endpoint a model spec is served at, with these settings; None for a provider that calls none."""
    provider = provider_of(text)
    if provider.endpoint is None:
        return None
    return provider.endpoint(settings or provider.settings())


Build = Callable[[ModelSpec, "str | PromptVariant", ProviderSettings, "Path | None", int], Verifier]
"""(spec, prompt, settings, response cache folder, epoch) -> the verifier of one variant and epoch."""


@dataclass(frozen=True)
class Provider:
    name: str
    settings: type[ProviderSettings]
    build: Build
    takes_model: bool
    """`<name>:<model>` (True) or `<name>` alone (False)."""
    takes_prompt: bool
    """Its variants are one per prompt; without one, one variant per model."""
    endpoint: Callable[[ProviderSettings], Endpoint] | None = None
    """Where its models are served (checked before the run, watched during it); None: it calls no endpoint."""
    imports: tuple[str, ...] = ()
    """The modules `build` imports (its client library): imported ahead by `warm_imports`."""

    @property
    def usage(self) -> str:
        return f"'{self.name}:<model>'" if self.takes_model else repr(self.name)


_PROVIDERS: dict[str, Provider] = {}


def register_provider(provider: Provider) -> Provider:
    if provider.name in _PROVIDERS or ":" in provider.name:
        raise ValueError(f"provider {provider.name!r} is already registered or holds ':'")
    _PROVIDERS[provider.name] = provider
    return provider


def providers() -> tuple[Provider, ...]:
    return tuple(_PROVIDERS.values())


def grammar() -> str:
    """How a model spec is written, for help texts and errors: `'reference' or 'openai:<model>'`."""
    usages = [p.usage for p in _PROVIDERS.values()]
    return " or ".join([", ".join(usages[:-1]), usages[-1]] if len(usages) > 1 else usages)


def provider_of(text: str) -> Provider:
    """The provider a model spec names, checked against the registry (ModelSpecError: unknown or ill-formed)."""
    spec = parse_model_spec(text)
    found = _PROVIDERS.get(spec.provider)
    if found is None or (spec.model is not None) != found.takes_model or spec.model == "":
        raise ModelSpecError(f"unknown model spec {text!r}: use {grammar()}")
    return found


def import_ahead(names: Iterable[str]) -> None:
    """Import modules before they are used; one that fails here is left for the import that uses it to raise,
    with its context, where it is used."""
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: S112 - raised again by the import that needs it
            continue


def warm_imports(models: Iterable[str]) -> None:
    """Import the modules the providers of `models` build their verifiers with, ahead of the first build (a
    run does this while worker processes read its cases: the client library's imports would otherwise hold
    up the first request). A spec that names no provider is passed over: the build reports it."""
    for text in models:
        try:
            provider = provider_of(text)
        except ModelSpecError:
            continue
        import_ahead(provider.imports)


def settings_for(text: str, data: Any) -> ProviderSettings:
    """`model_settings."<spec>"` validated by its provider's settings model; errors name the key path."""
    provider = provider_of(text)
    if isinstance(data, provider.settings):
        return data
    if isinstance(data, ProviderSettings):
        data = data.model_dump(exclude_none=True)
    try:
        return provider.settings.model_validate(data)
    except ValidationError as exc:
        at = f"model_settings.{json.dumps(text)}"
        raise SettingsValueError(
            "; ".join(f"{at}{''.join('.' + str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        ) from None


def build_verifier(
    text: str,
    prompt: str | PromptVariant,
    settings: ProviderSettings | None = None,
    cache_dir: Path | None = None,
    epoch: int = 1,
) -> Verifier:
    """The verifier of a model spec with its settings (its provider's defaults when None)."""
    provider = provider_of(text)
    return provider.build(parse_model_spec(text), prompt, settings or provider.settings(), cache_dir, epoch)


def study_factory(study: Study) -> Callable[[VariantInfo, int], Verifier]:
    """The verifier of each variant × epoch of a study: its model spec through this registry, with the study's
    settings for that model (not the variant's recorded, redacted copy) and its response cache. What `vbench run`
    and the bench build."""

    def factory(variant: VariantInfo, epoch: int) -> Verifier:
        prompt = variant.prompt_path or variant.prompt or "baseline"
        return build_verifier(variant.model, prompt, study.model_settings.get(variant.model), study.cache, epoch)

    return factory


def _build_reference(
    spec: ModelSpec, prompt: str | PromptVariant, settings: ProviderSettings, cache_dir: Path | None, epoch: int
) -> Verifier:
    from harness.baselines.reference import ReferenceVerifier

    return ReferenceVerifier()


def _build_openai(
    spec: ModelSpec, prompt: str | PromptVariant, settings: ProviderSettings, cache_dir: Path | None, epoch: int
) -> Verifier:
    from harness.system.verifiers.factory import make_verifier

    return make_verifier(
        f"{spec.provider}:{spec.model}", prompt, cache_dir=cache_dir, cache_epoch=epoch, **settings.client_kwargs()
    )


register_provider(
    Provider(
        REFERENCE,
        NoSettings,
        _build_reference,
        takes_model=False,
        takes_prompt=False,
        imports=("harness.baselines.reference",),
    )
)
register_provider(
    Provider(
        OPENAI,
        OpenAIProviderSettings,
        _build_openai,
        takes_model=True,
        takes_prompt=True,
        endpoint=_openai_endpoint,
        imports=("harness.system.verifiers.factory", "harness.llm.openai_model", "harness.system.verifiers.llm"),
    )
)


# --- what a run records of its components -------------------------------------------------------


def components(variants: Sequence[VariantInfo], verifiers: Mapping[tuple[str, int], Verifier]) -> dict[str, Any]:
    """What each variant's epoch-1 verifier says of itself once the run is over (`Manifest.components`)."""
    out: dict[str, Any] = {}
    for variant in variants:
        verifier = verifiers[(variant.name, 1)]
        identity = verifier.replay_identity()
        out[variant.name] = {
            "provider": provider_of(variant.model).name,
            "verifier": json_safe(verifier.describe()),
            "replay_identity": None if identity is None else json_safe(identity),
        }
    return out


def json_safe(described: Mapping[str, object]) -> dict[str, Any]:
    """A describe() as plain JSON (tuples become lists; anything else becomes its text)."""
    return json.loads(json.dumps(described, default=str))
