"""Matching claim figures, times and identifiers against evidence, and the row/series checks."""

from __future__ import annotations

import pytest

from harness.system.models import TraceEntry
from harness.system.verifiers.reference.cues import negated_stems
from harness.system.verifiers.reference.evidence import view_entry
from harness.system.verifiers.reference.extract import features
from harness.system.verifiers.reference.match import Basis, match_mention, match_quantity, match_time, near_miss
from harness.system.verifiers.reference.quantities import extract_quantities
from harness.system.verifiers.reference.rows import flag_conflict, flags, row_conflict, series_conflict


def q(text: str):  # type: ignore[no-untyped-def]
    return extract_quantities(text)[0]


def status(claim: str, evidence: str) -> str:
    ev = features(evidence)
    basis = Basis(ev.quantities, tuple(sorted(t.minute for t in ev.times)), frozenset())
    return match_quantity(q(claim), ev.quantities, basis).status


# --- numbers -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("3 s", "timed out after 3000 ms"),
        ("12%", "error rate 12.4%"),
        ("about 0.35 cores", '"value": [1741881600, "0.347"]'),  # a bare Prometheus value in the claim's unit
        ("97%", '"value": [1741881600, "0.97"]'),  # a ratio read as a percentage
        ("about 1.98 GiB", '"value": [1742482800, "2126512128"]'),  # bytes, the metric's base unit
        ("1.5 GiB", "-Xmx1536m"),
        ("2.1 days", "=> 181416 @[2026-07-14T09:49:08Z]"),  # seconds
        ("over 9000 clients", "connected_clients=9980"),
        ("3.98 CPU cores", "report-gen-5c8b7f9d6-qm2lz    3980m"),
        ("about 2.3M", "2026-07-14T05:00:00Z  2310446"),
    ],
)
def test_found_in_another_unit_or_rounding(claim: str, evidence: str) -> None:
    assert status(claim, evidence) == "found"


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("12.4%", "error rate 14.2%"),  # digits swapped
        ("3000 ms", "request timed out after 30000ms"),  # a dropped zero
        ("481,233 rows", "Rows_examined: 4812330"),
        ("96 MB", "/dev/nvme1n1  2.0T  1.9T   96G  96% /var/lib/kafka"),  # unit swapped
        ("21.4%", '"value": [1741771800, "0.1243"]'),
    ],
)
def test_near_miss_figures_conflict(claim: str, evidence: str) -> None:
    assert status(claim, evidence) == "conflict"


def test_derived_figures_are_one_step_away() -> None:
    assert status("99.8%", "connected_clients=9980 maxclients=10000") == "derived"


def test_an_unrelated_figure_is_absent() -> None:
    assert status("31 s", "pool stats active=4 idle=12 max=16") == "absent"


def test_near_miss_needs_at_least_two_digits() -> None:
    assert not near_miss(q("3 pods"), q("5 pods"))
    assert near_miss(q("9880 clients"), q("9980 clients"))


# --- times ---------------------------------------------------------------------------


def t_status(claim: str, evidence: str) -> str:
    return match_time(features(claim).times[0], features(evidence).times).status


def test_time_tolerance_depends_on_wording() -> None:
    assert t_status("at 10:02", "10:02:11 ERROR x") == "found"
    assert t_status("since 10:00", "10:02:11 ERROR x") == "found"
    assert t_status("at 10:00", "10:02:11 ERROR x") == "absent"  # one point, no window to be inside


def test_times_inside_the_window_or_an_hour_off_conflict() -> None:
    assert t_status("at 10:12", "10:00 a\n10:05 b\n10:20 c") == "conflict"  # inside the range, no point there
    assert t_status("since 02:12 UTC", '"startsAt": "2025-03-12T03:12:40.000Z"') == "conflict"  # an hour off
    assert t_status("since about 08:00", "13:30 64\n13:40 64\n14:00 64") == "absent"  # before the window


def test_time_zone_is_converted() -> None:
    assert t_status("at 09:05 CEST", "2025-04-14T07:05:12.402Z ERROR send failed") == "found"


# --- identifiers ---------------------------------------------------------------------


def m_status(claim: str, evidence: str, kind: str | None = None) -> tuple[str, str | None]:
    c = features(claim).mentions
    ev = features(evidence)
    target = next(m for m in c if kind is None or m.kind == kind)
    f = match_mention(target, c, ev.mentions, evidence.lower())
    return f.status, f.other


def test_swapped_identifiers_name_the_alternative() -> None:
    assert m_status("payment-service is down", "order-service ERROR") == ("conflict", "order-service")
    swapped = m_status("pod order-service-7d9f8-xyz12 OOMKilled", "order-service-7d9f8-abcde OOMKilled", "pod")
    assert swapped == ("conflict", "order-service-7d9f8-abcde")
    assert m_status("ORA-00060 deadlock", "ORA-01555 snapshot too old") == ("conflict", "ORA-01555")
    assert m_status("status 504", "probe failed with statuscode: 503") == ("conflict", "503")
    assert m_status("in us-east-1", "region=eu-west-1") == ("conflict", "eu-west-1")
    assert m_status("image 1.8.3", "inventory-api:1.9.0 ... inventory-api:1.8.1")[1] == "1.8.1"  # the closest


def test_identifiers_of_different_roles_are_not_swaps() -> None:
    assert m_status("orders-db is full", "orders-api active 38")[0] == "absent"
    assert m_status("the container exited with code 137", "Exit Code: 137") == ("found", None)


def test_symbols_match_across_separators() -> None:
    assert m_status("the ReplicaSet is new", "NewReplicaSet: payments-api-7c4f8b2d9")[0] == "found"


# --- rows and series -----------------------------------------------------------------


def view(text: str, ref: str = "T1"):  # type: ignore[no-untyped-def]
    return view_entry(TraceEntry(trace_ref=ref, tool_name="kubectl_top", result_excerpt=text))


TABLE = (
    "NAME                          CPU(cores)   MEMORY(bytes)\n"
    "report-gen-5c8b7f9d6-qm2lz    3980m        2711Mi\n"
    "report-gen-5c8b7f9d6-zt9kd    112m         804Mi\n"
)


def test_a_number_on_another_entitys_row_is_a_swap() -> None:
    claim = "report-gen-5c8b7f9d6-zt9kd is using 3.98 CPU cores."
    reason = row_conflict(claim, features(claim), [view(TABLE)], tentative=False)
    assert reason is not None and "report-gen-5c8b7f9d6-qm2lz" in reason


def test_the_right_row_is_no_conflict() -> None:
    claim = "report-gen-5c8b7f9d6-qm2lz is using 3.98 CPU cores."
    assert row_conflict(claim, features(claim), [view(TABLE)], tentative=False) is None


def test_a_value_the_entitys_own_row_does_not_show() -> None:
    claim = "mem_fragmentation_ratio is 1.02, so fragmentation is not a factor."
    reason = row_conflict(
        claim, features(claim), [view("used_memory_human:5.93G\nmem_fragmentation_ratio:1.87")], False
    )
    assert reason is not None and "1.87" in reason


def test_numbers_in_another_clause_are_not_paired_with_the_entity() -> None:
    text = "shard     ops_per_sec  cpu_main_thread\nshard-0   13880        0.22\nshard-3   14130        0.99"
    claim = "shard-3's main thread is at 99% CPU while the other shards sit around 22%."
    assert row_conflict(claim, features(claim), [view(text)], tentative=False) is None


SERIES = "\n".join(
    f"2026-07-14T{h:02d}:{m:02d}:00Z  {v}"
    for (h, m), v in zip(
        [(1, 0), (1, 20), (1, 40), (2, 0), (2, 20), (2, 40), (3, 0), (3, 20), (3, 40), (4, 0), (4, 20)],
        [220, 180, 240, 210, 195, 260, 230, 215, 248, 610400, 1240877],
        strict=True,
    )
)


def test_onset_where_the_series_is_still_flat() -> None:
    claim = "The lag began growing at 02:00."
    reason = series_conflict(claim, features(claim), [view(SERIES)])
    assert reason is not None and "04:00" in reason


def test_onset_at_the_change_is_fine() -> None:
    claim = "The lag began growing at 04:00."
    assert series_conflict(claim, features(claim), [view(SERIES)]) is None


def test_an_old_value_called_current() -> None:
    text = "\n".join(f"2026-07-14T{h:02d}:00:00Z  {v}" for h, v in [(8, 0.931), (9, 0.744), (10, 0.652), (11, 0.600)])
    claim = "The hit ratio is still about 93%."
    reason = series_conflict(claim, features(claim), [view(text)])
    assert reason is not None and "latest point is 0.6 " in reason


def test_a_region_swapped_with_another_regions_row() -> None:
    text = (
        "probe_region     avg probe_duration_seconds   avg probe_success\n"
        "eu-west-1        0.082                        1\n"
        "ap-southeast-2   2.910                        0.62\n"
    )
    claim = "Probes from eu-west-1 average 2.91 s and succeed 62% of the time."
    reason = row_conflict(claim, features(claim), [view(text)], tentative=False)
    assert reason is not None and "ap-southeast-2" in reason


DIFF = 'Suspend:      True\n-  FEATURE_PRICING_ENGINE_V2: "false"\n+  FEATURE_PRICING_ENGINE_V2: "true"'


def test_flags_take_the_value_a_diff_ends_with() -> None:
    assert flags(view(DIFF)) == {"suspend": True, "featurepricingenginev2": True}


@pytest.mark.parametrize(
    ("claim", "conflict"),
    [
        ("warehouse-sync is not suspended", True),
        ("revision 23 disabled FEATURE_PRICING_ENGINE_V2", True),
        ("revision 23 enabled FEATURE_PRICING_ENGINE_V2", False),
    ],
)
def test_a_setting_stated_the_other_way_round(claim: str, conflict: bool) -> None:
    reason = flag_conflict(claim, features(claim), negated_stems(claim), [view(DIFF)])
    assert (reason is not None) == conflict
