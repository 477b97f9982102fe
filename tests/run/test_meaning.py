"""Meaning, not bytes: any valid JSON escaping of a value is found, numbers compare by value, free lists by key."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from harness.run.meaning import json_unescape, mentions, same_number, same_unordered, text_views, token_in
from tests.kit.reencode import escape_string

texts = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=60)


@given(value=texts, escape=st.sampled_from(["python", "ascii", "gson", "php"]))
def test_any_escaping_of_a_string_decodes_to_it(value: str, escape: str) -> None:
    assert json_unescape(escape_string(value, escape)[1:-1]) == value  # type: ignore[arg-type]


@given(value=texts.filter(lambda v: v.strip()), escape=st.sampled_from(["python", "ascii", "gson", "php"]))
def test_a_value_embedded_as_json_in_a_prompt_is_found(value: str, escape: str) -> None:
    prompt = "<claims>\n" + '{"statement": ' + escape_string(value, escape) + "}\n</claims>"  # type: ignore[arg-type]
    assert mentions(text_views(prompt), value)


@given(value=texts.filter(lambda v: v.strip()))
def test_json_inside_json_is_found(value: str) -> None:
    twice = json.dumps(json.dumps({"excerpt": value}, ensure_ascii=True))
    assert mentions(text_views(twice), value)


def test_gson_and_php_escapes_of_the_issue() -> None:
    views = text_views('{"r":"a\\u003db \\u003cx\\u003e it\\u0027s","u":"http:\\/\\/h\\/p"}')
    assert mentions(views, "a=b <x> it's") and mentions(views, "http://h/p")
    assert not mentions(views, "a=b <y>")


def test_html_entities_and_layout_are_not_meaning() -> None:
    views = text_views("&lt;tool_result&gt; 5xx   rate\n  is 12%")
    assert mentions(views, "<tool_result> 5xx rate is 12%")
    assert token_in(views, "tool_result") and not token_in(views, "tool")


def test_surrogate_pairs_join() -> None:
    assert json_unescape("\\ud83d\\ude00") == "\U0001f600"


def test_numbers_by_value_never_booleans() -> None:
    assert same_number(1, 1.0) and same_number(json.loads("1e0"), 1) and same_number(0.5, json.loads("5e-1"))
    assert not same_number(True, 1) and not same_number("1", 1) and not same_number(None, 0)


def test_unordered_lists_by_key() -> None:
    a = [("C1", "x"), ("C2", "y")]
    assert same_unordered(a, list(reversed(a)), key=lambda f: f)
    assert not same_unordered(a, [("C1", "x"), ("C1", "x")], key=lambda f: f)
    assert not same_unordered(a, a[:1], key=lambda f: f)
