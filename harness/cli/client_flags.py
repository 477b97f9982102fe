"""`vbench run`'s client flags, made from the provider registry's settings models.

One flag per settings field (`--max-tokens` for `max_tokens`), typed and explained by the field; its bounds
stay the settings model's to check, so a flag and a study-file key are refused by the same rule. A flag goes
to every model of the run whose provider's settings take it.
"""

from __future__ import annotations

import argparse
import json
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import ValidationError
from pydantic.fields import FieldInfo

from harness.run.providers import Provider, provider_of, providers, settings_for
from harness.run.study import Study, StudyError
from harness.system.verifiers.factory import ModelSpecError


def add_client_flags(group: argparse._ArgumentGroup) -> None:
    """Every settings field of every provider as a flag in `group` (its value lands in `client_<name>`)."""
    for name, field in client_flag_fields().items():
        group.add_argument(flag_of(name), dest=f"client_{name}", **_flag_kwargs(name, field))


def client_flag_fields() -> dict[str, FieldInfo]:
    """Every registered provider's settings fields, by name: each is a client flag (`--max-tokens` for
    `max_tokens`), typed and explained by its field, and goes to the models whose provider takes it."""
    fields: dict[str, FieldInfo] = {}
    for provider in providers():
        for name, field in provider.settings.model_fields.items():
            fields.setdefault(name, field)
    return fields


def flag_of(name: str) -> str:
    return "--" + name.replace("_", "-")


def _flag_kwargs(name: str, field: FieldInfo) -> dict[str, Any]:
    """argparse's type, choices and help for a settings field; its bounds are the settings model's to check."""
    kind = _bare(field.annotation)
    help_text = (field.description or "").replace("%", "%%")
    if get_origin(kind) is Literal:
        return {"choices": [str(v) for v in get_args(kind)], "help": help_text}
    if kind in (int, float, str):
        return {"type": kind, "metavar": name.upper(), "help": help_text}
    if _is_json(field):
        return {"metavar": "JSON", "help": help_text}  # read by _client_flags, which names the flag
    raise TypeError(f"settings field {name} ({field.annotation}) has no kind of CLI flag: add one to _flag_kwargs")


def _bare(annotation: Any) -> Any:
    """`Annotated[int, Ge(1)] | None` -> int."""
    while True:
        if get_origin(annotation) is Annotated:
            annotation = get_args(annotation)[0]
        elif get_origin(annotation) in (Union, UnionType):
            kinds = [a for a in get_args(annotation) if a is not type(None)]
            if len(kinds) != 1:
                return annotation
            annotation = kinds[0]
        else:
            return annotation


def _is_json(field: FieldInfo) -> bool:
    """A mapping setting, given on the command line as a JSON object."""
    kind = _bare(field.annotation)
    return kind is dict or get_origin(kind) is dict


def _client_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The client flags given, by settings field (a JSON flag decoded)."""
    flags: dict[str, Any] = {}
    for name, field in client_flag_fields().items():
        value = getattr(args, f"client_{name}")
        if value is None:
            continue
        if _is_json(field):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise StudyError(f"{flag_of(name)} is not a JSON object: {exc}") from exc
            if not isinstance(value, dict):
                raise StudyError(f"{flag_of(name)} must be a JSON object")
        flags[name] = value
    return flags


def apply_client_flags(study: Study, args: argparse.Namespace) -> Study:
    """Client flags apply to every model whose provider's settings take them, over what the study file said."""
    flags = _client_flags(args)
    if not flags:
        return study
    settings = dict(study.model_settings)
    taking = [m for m in study.models if _takes(provider_of(m), flags)]
    if not taking:  # no silent no-op: a client flag no model of this run takes is bad usage
        takers = " or ".join(p.usage for p in providers() if _takes(p, flags)) or "a provider that takes them"
        raise StudyError(
            f"client flags ({', '.join(sorted(flags))}) given, but no model of this run takes them "
            f"({', '.join(study.models)}): add --model {takers}"
        )
    for provider in {provider_of(m).name: provider_of(m) for m in taking}.values():
        try:  # the flags alone first, by the provider's settings model, so that a bad value names its flag
            provider.settings.model_validate(flags)
        except ValidationError as exc:
            raise StudyError("; ".join(f"{flag_of(str(e['loc'][0]))}: {e['msg']}" for e in exc.errors())) from None
    for model in taking:
        current = settings[model].model_dump(exclude_none=True) if model in settings else {}
        try:
            settings[model] = settings_for(model, {**current, **flags})
        except ModelSpecError as exc:
            raise StudyError(f"flags for {model}: {exc}") from None
    return study.model_copy(update={"model_settings": settings})


def _takes(provider: Provider, flags: dict[str, Any]) -> bool:
    return set(flags) <= set(provider.settings.model_fields)
