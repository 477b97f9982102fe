"""One outcome rule (issue 14, item 2): the mismatch lines conformance and the report show come from the `Outcome`,
so a verdict line appears exactly when the outcome says the verdict is wrong, and a claim line exactly for each claim
it says is wrong, in the one wording both show."""

from __future__ import annotations

import asyncio
import json
from itertools import combinations, product
from pathlib import Path

from harness.corpus.loader import load_cases
from harness.run.conformance import policy_case_mismatches
from harness.run.execute import execute_case, scripted_verifier_for
from harness.run.log import ResultRecord
from harness.run.records import record_from_run
from harness.score.outcome import outcome, record_outcome
from harness.system.models import Derivability, Verdict

CASES = Path(__file__).resolve().parents[2] / "cases"
VERDICTS: list[Verdict | None] = [*Verdict, None]
GOLDS = [set(c) for n in (1, 2, 3) for c in combinations(Verdict, n)]


def test_a_verdict_line_appears_exactly_when_the_outcome_says_the_verdict_is_wrong() -> None:
    for verdict, gold, model, gold_model in product(VERDICTS, GOLDS, VERDICTS, [None, *GOLDS]):
        result = outcome(
            error=None,
            verdict=verdict,
            model_verdict=model,
            claims={},
            gold_verdicts=sorted(v.value for v in gold),
            gold_claims=None,
            gold_model_verdicts=None if gold_model is None else sorted(v.value for v in gold_model),
        )
        lines = result.verdict_mismatches
        wanted = json.dumps(sorted(v.value for v in gold))
        assert (f"verdict: expected {wanted}, got {verdict or 'null'}" in lines) == (verdict not in gold), (
            verdict,
            gold,
        )
        assert any(line.startswith("verdict:") for line in lines) == (not result.verdict_correct)
        assert any(line.startswith("model_verdict:") for line in lines) == (
            gold_model is not None and model not in gold_model
        )


def test_a_claim_line_appears_exactly_for_each_claim_the_outcome_says_is_wrong() -> None:
    labels = [d.value for d in Derivability]
    gold = {"C1": ["direct_observation"], "C2": ["overstated", "unsupported"], "C3": ["contradicted"]}
    for c1, c2 in product([*labels, None], repeat=2):
        got = {cid: label for cid, label in (("C1", c1), ("C2", c2)) if label is not None}
        result = outcome(error=None, verdict=None, model_verdict=None, claims=got, gold_verdicts=[], gold_claims=gold)
        lines = result.claim_mismatches
        assert lines == [
            f"claims.{cid}: expected {json.dumps(sorted(gold[cid]))}, got {got.get(cid) or 'null (no claim check)'}"
            for cid in result.claims_wrong
        ]
        assert result.claims_wrong == tuple(cid for cid in gold if got.get(cid) not in gold[cid])
        assert [line.split(":")[0] for line in lines] == [f"claims.{cid}" for cid in result.claims_wrong]


def test_an_unscored_result_has_no_mismatch_lines_and_the_judged_values_are_not_its_identity() -> None:
    kwargs = dict(model_verdict=None, claims={}, gold_verdicts=["REJECT"], gold_claims={"C1": ["contradicted"]})
    assert outcome(error="transport: timed out", verdict=None, **kwargs).mismatches == []  # type: ignore[arg-type]
    assert outcome(error=None, verdict=None, **kwargs) == outcome(error=None, verdict="LOW_CONFID", **kwargs)  # type: ignore[arg-type]


def test_conformance_and_the_scored_outcome_of_a_policy_result_agree() -> None:
    """The same result, judged by conformance (case and evaluation) and by scoring (the result record)."""
    for case in load_cases([CASES / "policy"])[:25]:
        run = asyncio.run(execute_case(case, scripted_verifier_for(case)))
        for verdict in VERDICTS[:-1]:
            evaluation = run.evaluation.model_copy(update={"verdict": verdict})
            made = record_from_run(case, "policy", 0, run).model_dump(exclude={"outcome"})
            record = ResultRecord.model_validate({**made, "verdict": verdict})  # judged as it is made
            result = record_outcome(record)
            lines = policy_case_mismatches(case, evaluation)
            assert any(line.startswith("verdict:") for line in lines) == (not result.verdict_correct), case.id
            claim_lines = [line for line in lines if line.startswith("claims.")]
            assert claim_lines == result.claim_mismatches, case.id
            assert set(result.mismatches) <= set(lines), case.id
