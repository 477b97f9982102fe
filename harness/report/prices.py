"""Token prices for the cost column: a small user-supplied table, unknown by default.

A price file (TOML, JSON or YAML) maps a model spec to USD per million tokens:

    ["openai:gpt-4o-mini"]
    input = 0.15
    output = 0.60

A model that the table does not name has no cost, only tokens. The key may be
the full spec (`openai:gpt-4o-mini`) or the bare model name (`gpt-4o-mini`).
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness import UsageError

PRICES_ENV = "VBENCH_PRICES"


class Price(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input: float = Field(ge=0, description="USD per million prompt tokens")
    output: float = Field(ge=0, description="USD per million completion tokens")
    currency: str = "USD"


PriceTable = dict[str, Price]


class PriceError(UsageError):
    """A price file that cannot be read; the message names the file and key."""


def parse_prices(data: Any, source: str) -> PriceTable:
    if not isinstance(data, Mapping):
        raise PriceError(f"{source}: a price table maps model names to {{input, output}}")
    table: PriceTable = {}
    for model, entry in data.items():
        try:
            table[str(model)] = Price.model_validate(entry)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in (model, *err["loc"]))
            raise PriceError(f"{source}: {loc}: {err['msg']}") from exc
    return table


def load_prices(path: Path | None) -> PriceTable:
    """The price table in `path` (or in $VBENCH_PRICES); empty when neither is given."""
    if path is None:
        env = os.environ.get(PRICES_ENV)
        if not env:
            return {}
        path = Path(env)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PriceError(f"{path}: cannot read the price table: {exc.strerror}") from exc
    try:
        if path.suffix == ".toml":
            data: Any = tomllib.loads(text)
        elif path.suffix == ".json":
            data = json.loads(text)
        else:
            import yaml  # PyYAML and the corpus loader: only for a YAML price table

            from harness.corpus.loader import strict_yaml

            try:
                data = strict_yaml(text)
            except yaml.YAMLError as exc:
                raise ValueError(str(exc)) from exc
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, ValueError) as exc:
        raise PriceError(f"{path}: not a valid {path.suffix.lstrip('.') or 'YAML'} file: {exc}") from exc
    return parse_prices(data or {}, str(path))


def price_for(model: str, prices: PriceTable) -> Price | None:
    if model in prices or not prices:
        return prices.get(model)
    from harness.system.verifiers.factory import parse_model_spec  # the verifier factory: only with a price table

    bare = parse_model_spec(model).model  # `openai:gpt-4o` is priced as `gpt-4o`
    return prices.get(bare) if bare else None


def cost_of(model: str, tokens: Mapping[str, int], prices: PriceTable) -> dict[str, Any] | None:
    """Cost of the tokens a variant used, or None when the model's price is unknown."""
    price = price_for(model, prices)
    if price is None:
        return None
    prompt, completion = tokens.get("prompt", 0), tokens.get("completion", 0)
    total = (prompt * price.input + completion * price.output) / 1_000_000
    return {"total": total, "currency": price.currency, "input": price.input, "output": price.output}
