"""The metric registry drives summary.json, the gates, the console table, the report and the breakdowns;
summary.json keeps every key and value a summary written before the registry had."""

from __future__ import annotations

import io
import json
import math
import tarfile
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from harness.cli.console import print_summary
from harness.report.analyses import headline_rows, shown_metrics
from harness.run.gates import Gates
from harness.score.gates import GateError, check_gate_names, parse_gate
from harness.score.registry import Direction, Format, Frames, MetricSpec, Value, gateable, metrics, registered
from harness.score.scoring import GateSettings, score_run
from harness.score.summary_model import Summary, read_summary_file

ROOT = Path(__file__).resolve().parents[2]
PRE_REGISTRY_RUN = Path(__file__).parent / "data" / "pre_registry_run.tar.gz"
"""A reference run (2 epochs, --perturb claim-order, two --fail-under gates) scored by main before the
registry: its summary.json is what users' scripts read today."""
PRE_GATES = GateSettings(gates=Gates(fail_under={"verdict_accuracy": 0.1, "macro_f1": 0.1}))


@pytest.fixture
def pre_run(tmp_path: Path) -> Path:
    with tarfile.open(PRE_REGISTRY_RUN) as archive:
        archive.extractall(tmp_path / "run", filter="data")
    return tmp_path / "run"


def missing_or_changed(old: Any, new: Any, path: str = "") -> list[str]:
    """Every key path of `old` that `new` lacks or holds with another value (floats equal to 1e-12: the numpy
    classification figures may differ from scikit-learn's in the last digit)."""
    if isinstance(old, dict):
        if not isinstance(new, dict):
            return [f"{path}: {new!r} is not a mapping"]
        return [p for k, v in old.items() for p in (
            [f"{path}/{k}: missing"] if k not in new else missing_or_changed(v, new[k], f"{path}/{k}")
        )]  # fmt: skip
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [
            p for i, (a, b) in enumerate(zip(old, new, strict=True)) for p in missing_or_changed(a, b, f"{path}[{i}]")
        ]
    if isinstance(old, float) and isinstance(new, float) and math.isclose(old, new, rel_tol=1e-12, abs_tol=1e-15):
        return []
    return [] if old == new else [f"{path}: {old!r} became {new!r}"]


def test_a_summary_from_before_the_registry_is_a_subset_of_the_new_one_with_equal_values(pre_run: Path) -> None:
    old = json.loads((pre_run / "summary.json").read_text())
    new = score_run(pre_run, PRE_GATES).to_json()
    # every key kept with its value, except the bounds of rate CIs: a score interval (cluster-adjusted Wilson)
    # replaced the percentile bootstrap, which gave [0, 0] to a rate with no event
    changed = missing_or_changed(old, new)
    assert [c for c in changed if "_ci[" not in c.split(":")[0]] == []
    assert old["variants"][0]["consistency"]["verdict_flip_rate_ci"] == [0.0, 0.0]
    assert new["variants"][0]["consistency"]["verdict_flip_rate_ci"][1] > 0
    assert json.loads((pre_run / "summary.json").read_text()) == new  # what was returned is what was written
    assert {"verdict_accuracy", "grounding_bacc_ci", "per_tag"} <= set(new["variants"][0])
    # every registered figure sits flat on the variant, beside its CI where it has one
    assert all(m.key in new["variants"][0] for m in metrics())


def test_old_summaries_read_through_the_model(pre_run: Path) -> None:
    baseline = ROOT / "reports" / "baselines" / "reference" / "summary.json"
    for path in (baseline, pre_run / "summary.json"):
        model = read_summary_file(path.parent)
        assert model.schema_version == "summary_v1" and model.variants[0].figure("verdict_accuracy") is not None
        # read and written back: the same keys and values, nothing added for fields the file did not hold
        assert model.to_json() == json.loads(path.read_text())
    assert read_summary_file(baseline.parent).variants[0].figure("claim_accuracy") == pytest.approx(
        json.loads(baseline.read_text())["variants"][0]["claim_accuracy"]
    )


def test_a_registered_figure_of_the_wrong_type_does_not_read() -> None:
    data = {"run": {"run_id": "r"}, "conformance": {}, "variants": [{"name": "v", "verdict_accuracy": "high"}]}
    with pytest.raises(ValueError, match="verdict_accuracy"):
        Summary.model_validate(data)
    data["variants"][0]["verdict_accuracy"] = 0.5
    data["variants"][0]["verdict_accuracy_ci"] = [0.1]
    with pytest.raises(ValueError, match="verdict_accuracy_ci"):
        Summary.model_validate(data)


def test_only_a_certify_summary_goes_without_a_run() -> None:
    with pytest.raises(ValueError, match="names its run"):
        Summary.model_validate({"conformance": {}})
    certified = Summary.model_validate({"kind": "certify", "conformance": {}, "errors": 0, "skipped": {}})
    assert certified.run is None and certified.to_json() == {
        "kind": "certify",
        "conformance": {},
        "errors": 0,
        "skipped": {},
    }
    with pytest.raises(ValueError, match="errors"):
        Summary.model_validate({"kind": "certify", "conformance": {}, "errors": "some"})


def share_answered(frames: Frames, with_ci: bool) -> Value:
    """Scored quality results whose effective verdict is PASS (a metric no file of the harness knows)."""
    scored = frames.quality[frames.quality["scored"]] if len(frames.quality) else frames.quality
    return Value(float((scored["verdict"] == "PASS").mean()) if len(scored) else None, [0.0, 1.0] if with_ci else None)


PASS_SHARE = MetricSpec(
    "pass_share", "PASS share", "results whose verdict is PASS", Direction.LOWER, Format.FRACTION, share_answered,
    has_ci=True, gateable=True, console=True, grouped=True, notes=True, short="PASS share",
)  # fmt: skip


def test_one_registry_entry_reaches_summary_gates_console_report_and_breakdowns(pre_run: Path) -> None:
    with registered(PASS_SHARE):
        assert parse_gate("pass_share=0.9") == ("pass_share", 0.9)
        summary = score_run(pre_run, GateSettings(gates=Gates(fail_under={"pass_share": 0.0})))
        written = json.loads((pre_run / "summary.json").read_text())
        variant = written["variants"][0]
        assert variant["pass_share_ci"] == [0.0, 1.0] and 0 < variant["pass_share"] < 1
        groups = [g for breakdown in ("per_scenario", "per_tag", "per_dataset") for g in variant[breakdown].values()]
        assert groups and all("pass_share" in g for g in groups)
        # lower is better: --fail-under names a ceiling, and a non-zero share is over a ceiling of 0
        gate = next(g for g in summary.gates if g.gate.startswith("pass_share"))
        assert gate.gate == "pass_share<=0.0" and gate.passed is False and summary.passed is False
        out = io.StringIO()
        print_summary(Console(file=out, width=250), summary, pre_run)
        assert "PASS share" in out.getvalue() and "gate failed pass_share<=0.0" in out.getvalue()
        shown = [m.key for m in shown_metrics()]
        cells = headline_rows(written["variants"])[0]["cells"]
        assert cells[shown.index("pass_share")]["value"] == variant["pass_share"]
        from harness.report.render import render_run

        html = render_run([pre_run], pre_run).read_text(encoding="utf-8")
        assert 'title="results whose verdict is PASS">PASS share ↓</th>' in html  # the report's headline table
        notes = (pre_run / "summary.md").read_text(encoding="utf-8").splitlines()
        header = next(line for line in notes if line.startswith("| variant | cases | errors |"))
        row = notes[notes.index(header) + 2]
        assert header.endswith("| macro-F1 | PASS share ↓ |") and row.endswith(
            f"| {variant['pass_share']:.1%} [0.0, 100.0] |"
        )
        assert header.count("|") == row.count("|") and not any(line.endswith(" ") for line in notes)
    assert "pass_share" not in gateable() and all(m.key != "pass_share" for m in metrics())
    with pytest.raises(GateError, match="unknown metric 'pass_share'"):
        parse_gate("pass_share=0.9")


def test_unknown_gate_names_list_the_gateable_metrics() -> None:
    with pytest.raises(GateError) as caught:
        parse_gate("unsafe_pass_rate=0.1")  # a figure, but not one --fail-under may name (--max-unsafe-pass does)
    assert all(key in str(caught.value) for key in gateable())
    with pytest.raises(GateError, match=r"study.toml: gates.fail_under.bogus: unknown metric"):
        check_gate_names({"verdict_accuracy": 0.5, "bogus": 0.1}, "study.toml")
    check_gate_names({"verdict_accuracy": 0.5}, "study.toml")


def test_a_study_file_gate_on_an_unknown_metric_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main

    study = tmp_path / "study.toml"
    study.write_text('models = ["reference"]\n[gates.fail_under]\nno_such_metric = 0.5\n')
    cases = ROOT / "cases" / "policy" / "gatekeeper"
    assert main(["run", "--study", str(study), "--cases", str(cases), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "gates.fail_under.no_such_metric" in err and "verdict_accuracy" in err
    assert not (tmp_path / "out").exists()


def test_the_registry_refuses_a_key_twice() -> None:
    with pytest.raises(ValueError, match="already registered"):
        with registered(PASS_SHARE), registered(PASS_SHARE):
            pass
    assert "pass_share" not in [m.key for m in metrics()]
