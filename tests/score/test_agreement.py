"""Agreement figures: kappa and alpha against hand-computed values and against scikit-learn and the
`krippendorff` package; the bootstrap CI's coverage against a simulated judge of known skill; agreement.json."""

from __future__ import annotations

import json
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from harness.cli import main
from harness.score.agreement import alpha_with_ci, annotator_verdicts, kappa_with_ci
from harness.score.frames import CLASSES
from tests.score.labelled_folder import import_folder, label

A, B = "direct_observation", "contradicted"


def test_kappa_and_alpha_by_hand() -> None:
    # rater 1: A A B B A, rater 2: A B B B A. p_o = 4/5; p_e = 3/5*2/5 + 2/5*3/5 = 0.48; kappa = 0.32/0.52.
    pairs = [(A, A), (A, B), (B, B), (B, B), (A, A)]
    got = kappa_with_ci({"c1": pairs[:2], "c2": pairs[2:]}, CLASSES)
    assert got["cohen_kappa"] == pytest.approx(0.32 / 0.52, abs=1e-6)
    assert got["percent_agreement"] == pytest.approx(0.8)
    assert cohen_kappa_score([p[0] for p in pairs], [p[1] for p in pairs]) == pytest.approx(
        got["cohen_kappa"], abs=1e-6
    )
    # coincidences: o_AA = 4, o_BB = 4, o_AB = o_BA = 1; n = 10, n_A = n_B = 5; alpha = 1 - 9 * 2 / 50 = 0.64
    units = [list(p) for p in pairs]
    alpha = alpha_with_ci({"c1": units[:2], "c2": units[2:]}, CLASSES)
    assert alpha["value"] == pytest.approx(0.64, abs=1e-6)
    data = np.array([[CLASSES.index(p[0]) for p in pairs], [CLASSES.index(p[1]) for p in pairs]], dtype=float)
    assert krippendorff.alpha(reliability_data=data, level_of_measurement="nominal") == pytest.approx(0.64, abs=1e-6)


def test_alpha_on_krippendorffs_published_example() -> None:
    """Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", nominal example: 4 observers, 12 units,
    missing values; alpha = 0.743."""
    nan = np.nan
    data = np.array([
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ])  # fmt: skip
    labels = [str(v) for v in range(1, 6)]
    units = [[str(int(v)) for v in data[:, j] if not np.isnan(v)] for j in range(data.shape[1])]
    got = alpha_with_ci({f"u{i}": [u] for i, u in enumerate(units)}, labels)
    assert got["value"] == pytest.approx(0.743, abs=5e-4)
    assert got["value"] == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"), abs=1e-6
    )


@pytest.mark.parametrize("seed", range(5))
def test_kappa_and_alpha_match_the_libraries_on_random_labels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, raters = 60, 3
    truth = rng.integers(0, 6, n)
    answers = np.where(rng.random((raters, n)) < 0.7, truth, rng.integers(0, 6, (raters, n))).astype(float)
    answers[rng.random((raters, n)) < 0.2] = np.nan  # some claims unlabelled by some raters
    both = ~np.isnan(answers[0]) & ~np.isnan(answers[1])
    pairs = [(CLASSES[int(a)], CLASSES[int(b)]) for a, b in zip(answers[0][both], answers[1][both], strict=True)]
    by_case: dict[str, list[tuple[str, str]]] = {}
    for i, pair in enumerate(pairs):
        by_case.setdefault(f"c{i // 4}", []).append(pair)
    got = kappa_with_ci(by_case, CLASSES)
    expected = cohen_kappa_score([p[0] for p in pairs], [p[1] for p in pairs], labels=CLASSES)
    assert got["cohen_kappa"] == pytest.approx(expected, abs=1e-6)
    units = [[CLASSES[int(v)] for v in answers[:, j] if not np.isnan(v)] for j in range(n)]
    units_by_case: dict[str, list[list[str]]] = {}
    for j, unit in enumerate(units):
        units_by_case.setdefault(f"c{j // 4}", []).append(unit)
    alpha = alpha_with_ci(units_by_case, CLASSES)
    assert alpha["value"] == pytest.approx(
        krippendorff.alpha(reliability_data=answers, level_of_measurement="nominal"), abs=1e-6
    )


def _true_kappa(p: np.ndarray, skill: float) -> float:
    """Kappa between the truth and a judge right with probability `skill`, else uniformly on another class."""
    k = len(p)
    q = p * skill + (1 - p) * (1 - skill) / (k - 1)
    pe = float((p * q).sum())
    return (skill - pe) / (1 - pe)


@pytest.mark.parametrize(("cases", "min_coverage"), [(5, 0.75), (10, 0.85), (20, 0.88), (136, 0.88)])
def test_kappa_ci_covers_a_judge_of_known_skill(cases: int, min_coverage: float) -> None:
    """Simulation: 200 labelled sets of `cases` sessions (4 claims each) from a judge of skill 0.75 against the
    truth; the 95% case-bootstrap CI must cover the population kappa (0.689). 136 is the size of the quality
    corpus. The percentile bootstrap undercovers on very few clusters (measured with other seeds, 200 sets:
    0.82 at 5 sessions, 0.905 at 10, 0.935 at 20, 0.93 at 136), so the bounds are set below those figures."""
    rng = np.random.default_rng(cases)
    p = np.array([0.35, 0.15, 0.1, 0.15, 0.1, 0.15])
    skill, reps, covered = 0.75, 200, 0
    target = _true_kappa(p, skill)
    for _ in range(reps):
        truth = rng.choice(6, size=(cases, 4), p=p)
        other = (truth + rng.integers(1, 6, truth.shape)) % 6
        judge = np.where(rng.random(truth.shape) < skill, truth, other)
        by_case = {
            f"c{i}": [(CLASSES[t], CLASSES[j]) for t, j in zip(truth[i], judge[i], strict=True)] for i in range(cases)
        }
        ci = kappa_with_ci(by_case, CLASSES)["cohen_kappa_ci"]
        covered += ci is not None and ci[0] <= target <= ci[1]
    assert covered / reps >= min_coverage


def test_agreement_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = import_folder(tmp_path)
    folder = tmp_path / "imp"
    for (
        case
    ) in cases:  # ann1 answers as the production verifier did; ann2 too, except "contradicted" everywhere on one case
        for check in case.production.claim_checks:
            label(folder, "ann1", case.id, check.claim_id, check.verification.value)
            value = "contradicted" if case.id == cases[0].id else check.verification.value
            label(folder, "ann2", case.id, check.claim_id, value)
    assert main(["agreement", str(folder)]) == 0
    data = json.loads((folder / "agreement.json").read_text())
    assert {"pairs", "krippendorff_alpha", "vs_verifier", "verdicts"} <= set(data)
    (pair,) = data["pairs"]
    assert {"a", "b", "claims", "cohen_kappa", "cohen_kappa_ci", "percent_agreement", "per_class"} <= set(pair)
    total = sum(len(c.production.claim_checks) for c in cases)
    changed = sum(1 for ch in cases[0].production.claim_checks if ch.verification.value != "contradicted")
    assert pair["claims"] == total and pair["percent_agreement"] == pytest.approx(1 - changed / total, abs=1e-6)
    ann1 = next(v for v in data["vs_verifier"] if v["annotator"] == "ann1")
    assert ann1["cohen_kappa"] == pytest.approx(1.0) and ann1["percent_agreement"] == 1.0
    counts = np.array(ann1["confusion_matrix"]["counts"])
    assert counts.sum() == total and np.trace(counts) == total
    assert {"pairs", "krippendorff_alpha", "vs_verifier"} <= set(data["verdicts"])
    assert data["disagreements"][0]["case_id"] == cases[0].id  # the changed session's claims come first
    assert data["krippendorff_alpha"]["value"] is not None and len(data["krippendorff_alpha"]["ci"]) == 2


def test_an_annotators_verdict_comes_from_the_policy(tmp_path: Path) -> None:
    cases = import_folder(tmp_path)
    case = next(
        c for c in cases if c.prepared().gatekeeper.status == "pass" and any(x.critical for x in c.prepared().claims)
    )
    ids = {case.id: [c.claim_id for c in case.prepared().claims]}
    critical = next(c.claim_id for c in case.prepared().claims if c.critical)
    direct = {(case.id, cid): "direct_observation" for cid in ids[case.id]}
    assert annotator_verdicts([case], ids, direct) == {(case.id, "verdict"): "PASS"}
    assert annotator_verdicts([case], ids, direct | {(case.id, critical): "contradicted"}) == {
        (case.id, "verdict"): "REJECT"
    }
    assert annotator_verdicts([case], ids, direct | {(case.id, critical): "overstated"}) == {
        (case.id, "verdict"): "LOW_CONFID"
    }
    partial = dict(list(direct.items())[1:])
    assert annotator_verdicts([case], ids, partial) == {}  # not every claim labelled: no verdict


def test_the_case_authors_labels_give_the_committed_verdicts(tmp_path: Path) -> None:
    """Cross-check of the verdict derivation: the disk cases' own gold labels (the first where two are listed),
    put through the policy as an annotator's, give each case's committed expected verdict."""
    from harness.corpus.loader import load_cases
    from harness.devtools.production_sessions import session_id_for
    from tests.corpus.production import QUALITY

    cases = import_folder(tmp_path)
    committed = {session_id_for(c.id): c for c in load_cases([QUALITY])}
    labels = {}
    for case in cases:
        for cid, value in (committed[case.id].expected.claims or {}).items():
            labels[(case.id, cid)] = value[0] if isinstance(value, list) else value
    ids = {c.id: [x.claim_id for x in c.prepared().claims] for c in cases}
    got = annotator_verdicts(cases, ids, labels)
    assert len(got) == len(cases)
    for case in cases:
        assert got[(case.id, "verdict")] in {v.value for v in committed[case.id].expected.acceptable_verdicts()}


def test_the_committed_sample_figures_are_what_the_command_computes() -> None:
    """docs/guides/production-corpus.md quotes docs/guides/production-sample/agreement.json: it must stay what
    `vbench agreement` computes from the committed sessions and label files."""
    from harness.score.agreement import agreement_report, read_agreement

    sample = Path(__file__).resolve().parents[2] / "docs" / "guides" / "production-sample"
    assert read_agreement(sample / "agreement.json") == agreement_report(sample)


def test_kappa_is_undefined_when_a_rater_uses_one_class() -> None:
    """A rater who always answers one class gives kappa 0 whatever the other does: it is reported as undefined,
    with the reason, never as "0.000 [0.000, 0.000]"."""
    from harness.score.agreement import kappa_text

    pairs = [(A, B), (B, B), (A, B), ("overstated", B)]
    got = kappa_with_ci({"c1": pairs[:2], "c2": pairs[2:]}, CLASSES, ("alice", "verifier"))
    assert got["cohen_kappa"] is None and got["cohen_kappa_ci"] is None
    assert kappa_text(got) == (
        "undefined: verifier used one class (contradicted), so agreement beyond chance cannot be measured"
    )
    fine = kappa_with_ci({"c1": [(A, A), (B, B)], "c2": [(A, B), (B, B)]}, CLASSES, ("alice", "bob"))
    assert fine["cohen_kappa_undefined"] is None and kappa_text(fine) == "0.500 [" + kappa_text(fine)[7:]
    assert kappa_text({"cohen_kappa": 1.0, "cohen_kappa_ci": [0.8, 1.0]}) == "1.000 [0.800, 1.000]"


def test_the_console_says_undefined_for_a_verifier_of_one_class(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = import_folder(tmp_path)
    folder = tmp_path / "imp"
    for case in cases:  # the annotator labels every claim "unsupported": one class
        for check in case.production.claim_checks:
            label(folder, "ann1", case.id, check.claim_id, "unsupported")
    assert main(["agreement", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "ann1 vs verifier" in out and "kappa undefined: ann1 used one class (unsupported)" in out
    assert "0.000 [0.000, 0.000]" not in out
    data = json.loads((folder / "agreement.json").read_text())
    assert (
        data["vs_verifier"][0]["cohen_kappa"] is None and "one class" in data["vs_verifier"][0]["cohen_kappa_undefined"]
    )


def test_a_torn_label_line_is_reported_not_fatal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = import_folder(tmp_path)
    folder = tmp_path / "imp"
    check = cases[0].production.claim_checks[0]
    label(folder, "ann1", cases[0].id, check.claim_id, check.verification.value)
    with (folder / "labels" / "ann1.jsonl").open("a") as fh:
        fh.write('{"case_id": "x", "claim')  # a crash mid-write
    assert main(["agreement", str(folder)]) == 0
    err = capsys.readouterr().err
    assert "ann1.jsonl:2: a line cut off mid-write (a crash or a full disk) is skipped" in err
