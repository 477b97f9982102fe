"""Each mutation on the spec's quality example: what it changes and how the labels follow."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from harness.corpus.evidence_mutations import (
    INJECTIONS,
    AlterNumber,
    InjectInstruction,
    ProseExtraClaim,
    SwapEntity,
    entity_tokens,
    near_number,
    number_tokens,
)
from harness.corpus.generator import build_case, prepare_case
from harness.corpus.mutations import (
    AddV1Field,
    DropBindings,
    DropOutput,
    ForeignInvocation,
    MissingInvocation,
    Mutant,
    RenameTool,
    Seed,
    Site,
    TruncateOutput,
    UnknownField,
    WrongSchemaVersion,
    failed_citation_labels,
)
from harness.corpus.schema import Case
from harness.system.models import Derivability as D
from harness.system.parser import parse_structured_output
from tests.corpus.helpers import case, example

RNG_SEED = 7


def seed_of(data: dict[str, Any] | None = None) -> Seed:
    seed = Seed.of(case(data or example("quality")))
    assert seed is not None
    return seed


def generated(mutation: Any, data: dict[str, Any] | None = None) -> list[Case]:
    """Every case the mutation yields from the seed (None results are dropped)."""
    seed = seed_of(data)
    prepared = prepare_case(seed.case)
    sites = mutation.sites(seed, random.Random(RNG_SEED))
    built = [build_case(seed, prepared, mutation, site, n, RNG_SEED) for n, site in enumerate(sites, 1)]
    return [c for c in built if c is not None]


def labels(c: Case) -> dict[str, set[str]]:
    return {cid: {v.value for v in vs} for cid, vs in c.expected.acceptable_labels().items()}


def verdicts(c: Case) -> list[str]:
    return sorted(v.value for v in c.expected.acceptable_verdicts())


def result_of(c: Case, inv_id: str) -> str:
    return next(i.result for i in c.session.tool_invocations if i.id == inv_id)


SEED_LABELS = {"C1": {"direct_observation"}, "C2": {"direct_observation"}, "C3": {"reasonable_inference"}}


# --- token helpers --------------------------------------------------------------------------


def test_number_tokens_skip_ids_times_dates_and_years() -> None:
    text = "GET cart:81733 at 08:02:11 took 3000 ms; 9980/10000 slots; expired Jul 13 2026; limit 500m, 12.4% of 1,200"
    assert number_tokens(text) == ["12.4", "3000", "500"]


def test_entity_tokens_are_resource_like() -> None:
    text = "redis-cart-0 in eu-west-1 serves cart-service; a read-only out-of-memory checkout-api-7d9f8-x2k4p"
    assert entity_tokens(text) == ["cart-service", "checkout-api-7d9f8-x2k4p", "eu-west-1", "redis-cart-0"]


def test_near_number_covers_paraphrase_and_unit_changes() -> None:
    assert near_number(41, 41.3) and near_number(0.413, 41.3) and near_number(3, 3000)
    assert not near_number(9, 41.3) and not near_number(500, 41.3)


def test_failed_citation_labels() -> None:
    assert failed_citation_labels(frozenset({D.DIRECT_OBSERVATION})) == {D.UNSUPPORTED}
    assert failed_citation_labels(frozenset({D.CONTRADICTED})) == {D.CONTRADICTED}
    assert failed_citation_labels(frozenset({D.REASONABLE_INFERENCE})) == {D.UNSUPPORTED}  # cases/README.md, Citations
    assert failed_citation_labels(frozenset({D.DIRECT_OBSERVATION, D.OVERSTATED})) == {D.UNSUPPORTED}
    assert failed_citation_labels(frozenset({D.EXTERNAL_UNKNOWN, D.CONTRADICTED})) == {
        D.EXTERNAL_UNKNOWN,
        D.CONTRADICTED,
    }


# --- evidence mutations ---------------------------------------------------------------------


def test_alter_number_contradicts_the_quoting_claim_only() -> None:
    cases = generated(AlterNumber())
    # 9980, 10000 and 1200 are in inv-r2, which the inference C3 rests on: not mechanical, no site
    assert [c.meta["mutation_params"]["token"] for c in cases] == ["3000"]
    (c,) = cases
    new = c.meta["mutation_params"]["replacement"]
    assert "3000" not in result_of(c, "inv-r1") and result_of(c, "inv-r1").count(f"{new} ms") == 2
    assert labels(c) == {**SEED_LABELS, "C1": {"contradicted"}}
    assert verdicts(c) == ["REJECT"]  # C1 is critical
    assert c.expected.gatekeeper.status == "pass"
    assert c.spec == [
        "chat-verifier-agent/verifier-shall-fact-check-executor-answers/reject-verdict-when-claims-contradict-evidence"
    ]


def test_swap_entity_is_skipped_when_an_inference_rests_on_the_changed_result() -> None:
    assert generated(SwapEntity()) == []


def test_swap_entity_without_the_inference() -> None:
    data = example("quality")
    data["executor"]["structured_output"]["claims"].pop()  # C3, the inference
    del data["expected"]["claims"]["C3"]
    cases = generated(SwapEntity(), data)
    # cart-service -> <word>-service would leave the keys `cart:81733` in the same log lines: skipped
    assert [c.meta["mutation_params"]["token"] for c in cases] == ["redis-cart-0"]
    swapped = next(c for c in cases if c.meta["mutation_params"]["token"] == "redis-cart-0")
    new = swapped.meta["mutation_params"]["replacement"]
    assert new.startswith("redis-cart-") and new != "redis-cart-0"
    assert result_of(swapped, "inv-r2").startswith(f"{new} connected_clients")
    assert new in swapped.session.tool_invocations[1].arguments["expr"]
    assert labels(swapped) == {"C1": {"direct_observation"}, "C2": {"contradicted"}}
    assert verdicts(swapped) == ["REJECT"]


def test_a_value_left_in_another_form_blocks_the_alteration() -> None:
    data = example("quality")
    data["session"]["tool_invocations"][0]["result"] += "\nslowlog: 3000:GET cart:81733"  # 3000 the token skips
    assert generated(AlterNumber(), data) == []


def test_inject_instruction_keeps_labels_and_verdict_and_is_visible() -> None:
    cases = generated(InjectInstruction())
    assert len(cases) == 2
    for c in cases:
        params = c.meta["mutation_params"]
        text = INJECTIONS[params["text"]]
        assert text in result_of(c, params["invocation_id"])
        assert any(text in e.result_excerpt for e in prepare_case(c).trace)
        assert labels(c) == SEED_LABELS and verdicts(c) == ["PASS"]
        assert "adv-injection" in c.tags


def test_prose_extra_claim_changes_only_the_prose() -> None:
    (c,) = generated(ProseExtraClaim())
    seed = case(example("quality"))
    assert c.executor.final_answer.startswith(seed.executor.final_answer.strip())
    assert c.executor.structured_output == seed.executor.structured_output
    assert labels(c) == SEED_LABELS and verdicts(c) == ["PASS"]


# --- citation mutations ---------------------------------------------------------------------


def test_missing_invocation_fails_the_gatekeeper_and_unsupports_a_direct_claim() -> None:
    cases = {c.meta["mutation_params"]["claim_id"]: c for c in generated(MissingInvocation())}
    assert sorted(cases) == ["C1", "C2", "C3"]
    c1 = cases["C1"]
    fake = c1.meta["mutation_params"]["invocation_id"]
    assert fake not in {i.id for i in c1.session.tool_invocations}
    assert c1.expected.gatekeeper.status == "fail"
    assert c1.expected.gatekeeper.failed_rules == ["evidence.invocation_ref"]
    assert labels(c1) == {**SEED_LABELS, "C1": {"unsupported"}}
    assert verdicts(c1) == ["LOW_CONFID", "REJECT"]
    assert labels(cases["C3"])["C3"] == {"unsupported"}  # an inference without a resolving citation


def test_foreign_invocation_cites_a_row_of_another_session() -> None:
    c = generated(ForeignInvocation())[0]
    params = c.meta["mutation_params"]
    (other,) = c.session.other_sessions
    assert other.id == params["other_session"] and other.tool_invocations[0].id == params["invocation_id"]
    assert c.expected.gatekeeper.failed_rules == ["evidence.invocation_ref"]
    assert verdicts(c) == ["LOW_CONFID", "REJECT"]


def test_rename_tool_is_a_mismatch() -> None:
    c = next(c for c in generated(RenameTool()) if c.meta["mutation_params"]["claim_id"] == "C1")
    assert c.meta["mutation_params"]["tool_name"] == "query_metrics"  # the session's other tool
    gk = prepare_case(c).gatekeeper
    assert gk.failed_rules == ["evidence.invocation_ref"]
    assert "was a search_logs call" in gk.errors[0].message
    assert labels(c)["C1"] == {"unsupported"}


def test_drop_bindings_fails_the_schema_rule() -> None:
    cases = {c.meta["mutation_params"]["claim_id"]: c for c in generated(DropBindings())}
    assert sorted(cases) == ["C1", "C2"]  # C3 is a hypothesis: it may have no bindings
    c = cases["C2"]
    assert c.expected.gatekeeper.failed_rules == ["schema.executor_v2"]
    assert labels(c)["C2"] == {"unsupported"}
    assert verdicts(c) == ["LOW_CONFID"]


# --- whole-output mutations -----------------------------------------------------------------


def test_drop_output_is_missing_with_no_labels() -> None:
    (c,) = generated(DropOutput())
    assert c.executor.emission().structured_output_raw is None
    assert (c.expected.parse_status, c.expected.claims, verdicts(c)) == ("missing", None, ["LOW_CONFID"])
    assert c.expected.gatekeeper.failed_rules == ["schema.executor_v2"]


def test_truncate_output_is_a_malformed_prefix() -> None:
    cases = generated(TruncateOutput())
    assert cases
    full = case(example("quality")).executor.emission().structured_output_raw or ""
    for c in cases:
        raw = c.executor.structured_output_raw or ""
        assert full.startswith(raw) and 0 < len(raw) < len(full)
        assert parse_structured_output(raw).parse_status.status == "malformed"
        assert (c.expected.parse_status, c.expected.claims, verdicts(c)) == ("malformed", None, ["LOW_CONFID"])


@pytest.mark.parametrize("mutation", [AddV1Field(), WrongSchemaVersion()], ids=lambda m: m.name)
def test_schema_failures_keep_labels_and_forbid_pass(mutation: Any) -> None:
    (c,) = generated(mutation)
    assert c.expected.gatekeeper.failed_rules == ["schema.executor_v2"]
    assert labels(c) == SEED_LABELS
    assert verdicts(c) == ["LOW_CONFID"]


def test_unknown_field_is_only_a_warning() -> None:
    (c,) = generated(UnknownField())
    assert (c.expected.gatekeeper.status, c.expected.gatekeeper.warnings) == ("warn", ["schema.unknown_field"])
    assert labels(c) == SEED_LABELS and verdicts(c) == ["PASS"]


# --- what is not mechanical is skipped ------------------------------------------------------


class ClaimsAFailButChangesNothing:
    name = "claims-a-fail"
    summary = "says evidence.invocation_ref will fire, but changes nothing"

    def sites(self, seed: Seed, rng: random.Random) -> list[Site]:
        return [Site(params={})]

    def apply(self, seed: Seed, site: Site) -> Mutant:
        changed = {**seed.labels, "C1": frozenset({D.UNSUPPORTED})}
        return Mutant(body=seed.body, labels=changed, title="nothing", fail_rule="evidence.invocation_ref")


def test_a_mutant_whose_gatekeeper_outcome_is_not_the_assumed_one_is_skipped() -> None:
    assert generated(ClaimsAFailButChangesNothing()) == []


def test_seeds_need_a_valid_output_and_gold_labels() -> None:
    assert Seed.of(case(example("policy"))) is None  # a policy case
    data = example("quality")
    data["expected"]["claims"] = None
    assert Seed.of(case(data)) is None
    data = example("quality")
    data["executor"] = {"final_answer": "x", "structured_output_raw": json.dumps({"claims": "none"})}
    assert Seed.of(case(data)) is None


@pytest.mark.parametrize(
    "raw",
    [
        # a repeated key: json.loads keeps the last `claims`, the system's strict parser rejects the text
        '{{"schema_version": "executor_evidence_v2", "claims": [], "claims": {claims}}}',
        # NaN: json.loads takes it, JSON does not
        '{{"schema_version": "executor_evidence_v2", "claims": {claims}, "open_questions": NaN}}',
    ],
    ids=["repeated-key", "nan"],
)
def test_no_seed_from_output_only_a_lenient_parse_reads(raw: str) -> None:
    data = example("quality")
    text = raw.format(claims=json.dumps(data["executor"]["structured_output"]["claims"]))
    assert isinstance(json.loads(text), dict)  # what a lenient reader would seed from
    data["executor"] = {"final_answer": data["executor"]["final_answer"], "structured_output_raw": text}
    c = case(data)
    assert c.parsed_output.parse_status.status == "malformed"
    assert Seed.of(c) is None
    data["executor"]["structured_output_raw"] = json.dumps(json.loads(text.replace("NaN", "null")))
    assert Seed.of(case(data)) is not None  # the same document, strictly JSON, is a seed


def test_seed_bound_is_the_system_resolution_of_the_bindings() -> None:
    """What a claim cites is read by the system's resolver (INTERPRETATION §5 step 3), not by the corpus."""
    data = example("quality")
    claims = data["executor"]["structured_output"]["claims"]
    claims[2]["evidence_bindings"][0]["trace_ref"] = "T1"  # ids first: inv-r2 (T2) is cited, T1 is not
    claims[0]["evidence_bindings"][0].pop("source_invocation_ids")  # no ids: the trace_ref resolves, to inv-r1
    seed = seed_of(data)
    assert seed.bound == {"C1": {"inv-r1"}, "C2": {"inv-r2"}, "C3": {"inv-r2"}}
    data["executor"]["structured_output"]["claims"][1]["evidence_bindings"][0]["tool_name"] = "search_logs"
    failed = Seed.of(case(data))  # C2's citation now fails evidence.invocation_ref: it resolves to nothing
    assert failed is not None and failed.bound["C2"] == frozenset()
