"""Extraction for the reference verifier: identifiers and codes, numbers with units, clock times and dates."""

from __future__ import annotations

import pytest

from harness.system.verifiers.reference.extract import features
from harness.system.verifiers.reference.mentions import extract_mentions
from harness.system.verifiers.reference.quantities import extract_quantities
from harness.system.verifiers.reference.text import content_stems, content_words, fold_phrases, stem
from harness.system.verifiers.reference.times import extract_times


def kinds(text: str) -> dict[str, str]:
    return {m.value: m.kind for m in extract_mentions(text)[0]}


# --- identifiers and codes -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value", "kind"),
    [
        ("pod order-service-7d9f8-abcde restarted", "order-service-7d9f8-abcde", "pod"),
        ("redis-cart-0 is full", "redis-cart-0", "instance"),
        ("Shard-3 is hot", "shard-3", "instance"),
        ("job partner-import-29194380-x1 failed", "partner-import-29194380-x1", "instance"),
        ("calls from cart-service", "cart-service", "service"),
        ("in us-east-1 and eu-west-1a", "us-east-1", "region"),
        ("dial 10.0.3.12:5432 refused", "10.0.3.12", "ip"),
        ("ip-10-0-3-17.eu-west-1.compute.internal is at 97%", "ip-10-0-3-17.eu-west-1.compute.internal", "host"),
        ("image payments-api:4.2.0 rolled out", "4.2.0", "version"),
        ("Android app 5.2 fails", "5.2", "version"),
        ("java.net.SocketTimeoutException: Read timed out", "sockettimeoutexception", "exception"),
        ("mem_fragmentation_ratio:1.87", "mem_fragmentation_ratio", "symbol"),
        ("reason NodeCPUPressure", "nodecpupressure", "symbol"),
        ("df /var/lib/kafka", "/var/lib/kafka", "path"),
    ],
)
def test_identifier_kinds(text: str, value: str, kind: str) -> None:
    assert kinds(text).get(value) == kind


@pytest.mark.parametrize(
    ("text", "value", "family"),
    [
        ("ORA-00060: deadlock detected", "ORA-00060", "ora"),
        ("ERROR: deadlock detected SQLSTATE 40P01", "40P01", "sqlstate"),
        ("returned HTTP 503 to the caller", "503", "http"),
        ('{"status": 504}', "504", "http"),
        ("the gateway answers 502 Bad Gateway", "502", "http"),
        ("checkout returns 500s", "500", "http"),
        ("5xx rate 12%", "5xx", "http_class"),
        ("container exited with code 137", "exit 137", "exit"),
        ("Last State: Terminated, Exit Code: 1", "exit 1", "exit"),
        ("Reason: OOMKilled", "oomkilled", "k8s"),
        ("connect ECONNREFUSED", "econnrefused", "errno"),
        ("killed by SIGKILL", "sigkill", "signal"),
        ("ERROR 1205 (HY000): Lock wait timeout exceeded", "1205", "mysql"),
    ],
)
def test_error_codes(text: str, value: str, family: str) -> None:
    found = {m.value: m.family for m in extract_mentions(text)[0] if m.kind == "code"}
    assert found.get(value) == family


def test_english_hyphenated_words_are_not_services() -> None:
    assert kinds("a read-only, cluster-wide, long-running problem") == {}


def test_a_pod_is_not_also_a_service_and_its_digits_are_masked() -> None:
    mentions, masked = extract_mentions("order-service-7d9f8-abcde used 512Mi")
    assert [m.kind for m in mentions] == ["pod"]
    assert "7d9f8" not in masked and "512Mi" in masked


def test_mention_spans_point_into_the_text() -> None:
    text = "checkout-api on ip-10-0-1-42 returned HTTP 503"
    for m in extract_mentions(text)[0]:
        assert text[m.start : m.end].lower().endswith(m.value.split()[-1].lower())


# --- numbers with units --------------------------------------------------------------


def one(text: str):  # type: ignore[no-untyped-def]
    qs = extract_quantities(text)
    assert len(qs) == 1, qs
    return qs[0]


@pytest.mark.parametrize(
    ("text", "dimension", "value"),
    [
        ("12.4%", "percent", 12.4),
        ("3000 ms", "duration", 3.0),
        ("2.1 days", "duration", 181440.0),
        ("the last 30m", "duration", 1800.0),
        ("512Mi", "bytes", 512 * 1024**2),
        ("96G available", "bytes", 96 * 1024**3),
        ("1,204 req/s", "rate", 1204.0),
        ("3.98 CPU cores", "cpu", 3.98),
        ("a 16-vCPU host", "cpu", 16.0),
        ("about 41k ops/s", "rate", 41000.0),
        ("3x more", "factor", 3.0),
    ],
)
def test_units_normalise_to_base(text: str, dimension: str, value: float) -> None:
    q = one(text)
    assert (dimension, pytest.approx(value)) in [(d, pytest.approx(v)) for d, v in q.readings]


def test_ambiguous_units_keep_every_reading() -> None:
    assert {d for d, _ in one("500m").readings} == {"duration", "cpu"}
    assert {d for d, _ in one("2.3M messages").readings} == {"count", "bytes"}
    assert len(one("1 GB").readings) == 2  # 10^9 and 2^30


def test_comparison_words_and_signs() -> None:
    assert one("over 90% CPU").op == ">"
    assert one("less than 5 ms").op == "<"
    assert one("about 0.35 cores").op == "~"
    assert one("~2x").op == "~"
    assert one("exactly 7 pods").op == "="


def test_number_label_is_what_it_measures() -> None:
    q = one("p99 latency rose to 850ms")
    assert {"p99", "latency"} <= q.label


def test_jvm_flags_and_number_words() -> None:
    assert one("-Xmx1536m").value == 1536 * 1024**2
    assert one("three pods restarted").value == 3
    assert one("within the next hour").value == 3600


def test_rounding_step_follows_the_written_precision() -> None:
    assert one("12.4%").step == pytest.approx(0.1)
    assert one("3 s").step == pytest.approx(1.0)
    assert one("850 ms").step == pytest.approx(0.001)


# --- clock times and dates -----------------------------------------------------------


def test_clock_times_with_relation_and_zone() -> None:
    times, _, _, _ = extract_times("errors since 10:02, around 09:50 and at 09:05 CEST")
    assert [(t.minute, t.relation) for t in times] == [(602, "since"), (590, "approx"), (425, "at")]


def test_iso_and_epoch_timestamps_give_times_and_dates() -> None:
    times, dates, _, _ = extract_times('2026-07-14T02:00:41Z and "value": [1741773600, "0.2"]')
    assert [t.minute for t in times] == [120, 600]
    assert all(t.absolute is not None for t in times)
    assert [d.value for d in dates] == ["07-14"]


def test_month_name_dates() -> None:
    _, dates, _, _ = extract_times("notAfter=Jul 12 23:59:59 2026 GMT; expired on 14 July 2026")
    assert sorted(d.value for d in dates) == ["07-12", "07-14"]


def test_elapsed_hms_is_also_a_duration() -> None:
    _, _, spans, _ = extract_times("idle in transaction | 00:14:31.40912 |")
    assert [s.value for s in spans] == [871.0]


def test_features_mask_times_and_identifiers_before_numbers() -> None:
    f = features("08:02:11 ERROR cart-service-5d8c9b7f6-x9p2w timed out after 3000 ms")
    assert [q.raw for q in f.quantities] == ["3000 ms"]
    assert [t.minute for t in f.times] == [482]


# --- words ---------------------------------------------------------------------------


def test_phrases_fold_to_one_token() -> None:
    assert fold_phrases("conn timed out, out of memory, 99th percentile response time") == (
        "connection timeout, oomkilled, p99 latency"
    )


def test_stems_agree_across_inflections() -> None:
    assert stem("restarted") == stem("restarts") == stem("restart")
    assert stem("connection") == stem("connected")
    assert stem("exhausted") == stem("exhaustion")


def test_content_words_drop_stopwords_and_numbers() -> None:
    assert content_stems("The pool is at 25 of 25 connections") == ["pool", "connect"]
    assert content_words("The pool is at 25 of 25 connections") == {"pool": "pool", "connect": "connections"}


def test_proper_names_inside_a_sentence() -> None:
    from harness.system.verifiers.reference.classify import proper_names

    names = [m.value for m in proper_names("It was renewed by the Bank of England team on Monday, said Alice")]
    assert names == ["bank of england", "alice"]
