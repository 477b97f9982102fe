"""Strict JSON: what the standard library would quietly accept but JSON does not.

`json.loads` takes NaN and Infinity and keeps the last of repeated keys; both
mean the text is not the JSON it claims to be, so both are errors here.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any


class StrictJSONError(ValueError):
    pass


def _no_constants(name: str) -> Any:
    raise StrictJSONError(f"{name} is not JSON")


def _no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise StrictJSONError(f"repeated key {json.dumps(key)}")
        out[key] = value
    return out


DECODER = json.JSONDecoder(parse_constant=_no_constants, object_pairs_hook=_no_repeated_keys)


def _exact_number(literal: str) -> int | float:
    """A JSON number written with a fraction or exponent, by its value: a whole number as the exact integer
    (`9007199254740993e0` is 9007199254740993, which a float cannot hold), any other as the nearest float."""
    value = Decimal(literal)
    return int(value) if value == value.to_integral_value() else float(literal)


EXACT_DECODER = json.JSONDecoder(
    parse_constant=_no_constants, object_pairs_hook=_no_repeated_keys, parse_float=_exact_number
)


def loads(text: str) -> Any:
    """Parse JSON text; raise `ValueError` for anything that is not strictly JSON."""
    value, end = DECODER.raw_decode(text, _skip_ws(text, 0))
    if _skip_ws(text, end) != len(text):
        raise StrictJSONError(f"extra data after the JSON value at character {end}")
    return value


def loads_by_value(text: str) -> Any:
    """`loads`, every number read by its value (`1.0` and `1e0` are 1; `2^53 + 1` however written stays exact): for
    data whose numbers are compared by value, never for a contract that tells `2` from `2.0`."""
    value, end = EXACT_DECODER.raw_decode(text, _skip_ws(text, 0))
    if _skip_ws(text, end) != len(text):
        raise StrictJSONError(f"extra data after the JSON value at character {end}")
    return value


def raw_decode(text: str, start: int) -> tuple[Any, int]:
    """Decode one strict JSON value starting at `start`."""
    return DECODER.raw_decode(text, start)


def _skip_ws(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\n\r":
        index += 1
    return index
