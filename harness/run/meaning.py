"""Comparing meaning, not bytes, wherever the spec and the SUT protocol leave the bytes to the implementation.

A SUT may embed values in the text it sends its model in any valid encoding (JSON with `ensure_ascii`,
Gson's HTML-safe `\\u003d`/`\\u003c`/`\\u0027`, PHP's `\\/`, XML/HTML entities, JSON inside JSON), may
spell a number `1`, `1.0` or `1e0`, and may order a list the spec gives no order in any way. These pure
functions are the one place the kit decides that two spellings mean the same.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, TypeGuard, TypeVar

T = TypeVar("T")

_JSON_ESCAPE = re.compile(
    r'\\(?:u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|(["\\/bfnrt]))'
)
_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_WHITESPACE = re.compile(r"\s+")
MAX_NESTING = 3
"""How many layers of JSON-in-JSON string encoding are undone (a prompt rarely nests more than two)."""


def _unescape_one(match: re.Match[str]) -> str:
    high, low, single, simple = match.groups()
    if high is not None:
        return chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + (int(low, 16) - 0xDC00))
    if single is not None:
        return chr(int(single, 16))
    return _SIMPLE[simple]


def json_unescape(text: str) -> str:
    """Every JSON string escape in `text` decoded (`\\u003d` -> `=`, `\\/` -> `/`, surrogate pairs joined)."""
    return _JSON_ESCAPE.sub(_unescape_one, text)


def text_views(text: str) -> tuple[str, ...]:
    """`text` as written and with each layer of JSON and HTML/XML escaping undone, whitespace runs collapsed:
    a value the SUT embedded in any valid encoding appears as written in at least one view."""
    views: list[str] = []
    layer = text
    for _ in range(MAX_NESTING + 1):
        for view in (layer, html.unescape(layer)):
            normal = normal_space(view)
            if normal not in views:
                views.append(normal)
        decoded = json_unescape(layer)
        if decoded == layer:
            break
        layer = decoded
    return tuple(views)


def normal_space(text: str) -> str:
    """Whitespace runs as one space, ends trimmed: how a value reads, not how it was laid out."""
    return _WHITESPACE.sub(" ", text).strip()


def mentions(views: Sequence[str], value: str) -> bool:
    """`value` (as the case writes it) appears in one of the `text_views` of a text."""
    want = normal_space(value)
    return any(want in view for view in views)


def token_in(views: Sequence[str], value: str) -> bool:
    """`value` appears as a whole token (an id, a rule, a trace ref) in one of the views."""
    pattern = re.compile(rf"(?<![\w.-]){re.escape(value)}(?![\w-])")
    return any(pattern.search(view) for view in views)


def same_number(a: Any, b: Any, rel: float = 1e-9) -> bool:
    """Two JSON numbers equal by value (`1`, `1.0`, `1e0`); booleans are not numbers."""
    if not is_number(a) or not is_number(b):
        return False
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-12)


def is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(float(value))


def same_unordered(got: Iterable[T], want: Iterable[T], key: Callable[[T], Hashable]) -> bool:
    """Two lists equal as multisets of `key` (a list the spec sets no order in)."""
    return sorted(map(_sortable, map(key, got))) == sorted(map(_sortable, map(key, want)))


def _sortable(value: Hashable) -> tuple[str, Hashable]:
    return (repr(value), value)


def same_json(a: Any, b: Any) -> bool:
    """Two decoded JSON values equal by meaning: numbers by exact value (`1` and `1.0` alike, `2^53 + 1` not
    `2^53`), `true` not `1`, `null` only `null`, objects by key in any order, arrays in order."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return type(a) is type(b) and a == b
    if is_number(a) or is_number(b):
        return is_number(a) and is_number(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def json_text(value: Any, limit: int = 120) -> str:
    """A value as JSON text (`null`, `["LOW_CONFID"]`, `"x"`), cut to `limit` characters: how a message shows a
    value to a reader in any language, never in Python's spelling (`None`, `['LOW_CONFID']`)."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
