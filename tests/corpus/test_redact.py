"""Secret patterns: each kind is taken out and counted, the text around it kept, keys scanned too."""

from __future__ import annotations

import pytest

from harness.corpus.redact import redact, redact_text


@pytest.mark.parametrize(
    ("text", "kind", "kept"),
    [
        ("key sk-proj-abcdefghijklmnopqrstuv01 used", "api_key", "key [REDACTED:api_key] used"),
        ("AWS AKIAIOSFODNN7EXAMPLE here", "api_key", "AWS [REDACTED:api_key] here"),
        ("token ghp_abcdefghijklmnopqrstuvwxyz0123", "api_key", "token [REDACTED:api_key]"),
        ('{"api_key": "abcdef123456"}', "api_key", '{"api_key": "[REDACTED:api_key]"}'),
        ("password=hunter2hunter2 retry", "api_key", "password=[REDACTED:api_key] retry"),
        ("Authorization: Bearer abc.def-ghi_jkl", "bearer_token", "Authorization: [REDACTED:bearer_token]"),
        (
            "redis://default:pa55word@cache:6379/0",
            "url_password",
            "redis://default:[REDACTED:url_password]@cache:6379/0",
        ),
        ("mail ops-team+alerts@corp.example.org now", "email", "mail [REDACTED:email] now"),
    ],
)
def test_each_kind(text: str, kind: str, kept: str) -> None:
    out, hits = redact_text(text)
    assert out == kept
    assert hits == {kind: 1}


def test_plain_operational_text_is_left_alone() -> None:
    text = "p99 latency 1.2s on order-service; pod api-7f9c restarted 3 times; see https://grafana.local/d/abc"
    assert redact_text(text) == (text, {})


def test_nested_values_and_keys_are_listed_by_path() -> None:
    value = {"rows": [{"note": "ping a@b.io and c@d.io"}], "x@y.io": 1}
    out, found = redact(value, "session")
    assert out == {"rows": [{"note": "ping [REDACTED:email] and [REDACTED:email]"}], "[REDACTED:email]": 1}
    assert [(r.path, r.kind, r.count) for r in found] == [
        ("session.rows[0].note", "email", 2),
        ("session.[REDACTED:email] (key)", "email", 1),
    ]
