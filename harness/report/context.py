"""Everything the templates show, assembled from loaded runs: analyses, sign-off, figures and embedded cases."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from harness import __version__
from harness.corpus.catalogue import load_catalogue
from harness.report import analyses, figures
from harness.report.casedata import embedded_json
from harness.report.load import LoadedRun, drill_down
from harness.report.prices import PriceTable
from harness.report.robustness import robustness_rows
from harness.report.signoff import certification, columns_for, scenario_rows
from harness.run.folder import RunFileError
from harness.score.certificate_model import read_certificate
from harness.score.summary_model import Comparison
from harness.system.models import DERIVABILITY_CLASSES

_SECRET_WORDS = frozenset(
    {"key", "apikey", "token", "secret", "password", "passwd", "authorization", "authorisation", "cookie",
     "credential", "credentials", "bearer", "auth"}
)  # fmt: skip


def is_secret_name(name: str) -> bool:
    """A setting that holds a credential: a word of its name is one (`access_token`, `api-key`), not a count of
    them (`max_tokens`) nor the name of the variable that holds one (`api_key_env`)."""
    words = [w for w in re.split(r"[^a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()) if w]
    if words and words[-1] in {"env", "var", "variable"}:
        return False
    return any(w in _SECRET_WORDS for w in words)


def public_settings(value: Any) -> Any:
    """Client settings as shown on the page: anything that names a credential is redacted."""
    if isinstance(value, Mapping):
        return {k: "(redacted)" if is_secret_name(str(k)) else public_settings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [public_settings(v) for v in value]
    return value


def merged_variants(runs: Sequence[LoadedRun]) -> list[dict[str, Any]]:
    """Every variant of every run (names already unique), with the run it came from."""
    out = []
    for run in runs:
        infos = {run.rename.get(v.name, v.name): v for v in run.manifest.variants}
        for variant in run.summary.variants:
            info = infos.get(variant.name)
            out.append(
                {
                    "consistency": None,  # figures a summary written before them does not hold
                    "calibration": None,
                    "robustness": {},
                    **variant.row(),
                    "run": run.label,
                    "settings": public_settings(info.settings) if info else {},
                    "epochs": run.manifest.epochs,
                }
            )
    return out


def merged_comparisons(runs: Sequence[LoadedRun], names: Sequence[str]) -> list[Comparison]:
    """One run: its summary's comparisons. Several: every pair, paired by case from the runs' outcomes."""
    if len(runs) == 1:
        return list(runs[0].summary.comparisons)
    import pandas as pd  # the pairing of several runs is the scorer's (pandas): loaded only for it

    from harness.score.compare import compare_pairs
    from harness.score.outcomes import load_outcomes

    frames = []
    for run in runs:
        frame = load_outcomes(run.run_dir)
        if not frame.empty:
            frames.append(frame.assign(variant=frame["variant"].map(lambda n, r=run: r.rename.get(n, n))))
    if not frames:
        return []
    return compare_pairs(pd.concat(frames, ignore_index=True), names)


def recorded_corpus_policy_cases(run: LoadedRun) -> int | None:
    """How many policy cases the run's folders held before its filters, as its certificate.json recorded."""
    try:
        return read_certificate(run.run_dir).corpus_policy_cases
    except (OSError, RunFileError):  # no certificate, or not one this version reads: the sign-off does without
        return None


def build_signoff(runs: Sequence[LoadedRun]) -> dict[str, Any]:
    catalogue = load_catalogue()
    columns = [c for run in runs for c in columns_for(run.label, run.manifest, run.policy_variant, run.rename)]
    rows = scenario_rows(catalogue, [r for run in runs for r in run.results], columns)
    certs = [
        {
            **certification(
                run.label, run.manifest, run.summary, rows, columns, run.rename, recorded_corpus_policy_cases(run)
            ),
            "run_dir": str(run.run_dir),
        }
        for run in runs
    ]
    return {
        "columns": columns,
        "rows": rows,
        "certifications": certs,
        "multi_run": len(runs) > 1,
        "counts": {s: sum(1 for r in rows if r["status"] == s) for s in ("certified", "deterministic-only", "partial", "fail", "uncovered")},
    }  # fmt: skip


def run_rows(runs: Sequence[LoadedRun]) -> list[dict[str, Any]]:
    return [
        {
            "label": run.label,
            "dir": str(run.run_dir),
            **run.manifest.model_dump(exclude={"variants", "settings", "prompts"}),
            "prompts": run.manifest.prompts,
            "results": run.summary.results,
            "passed": run.summary.passed,
            "baseline": run.summary.baseline.path if run.summary.baseline is not None else None,
        }
        for run in runs
    ]


DECISION_BADGE = {"ship": "pass", "block": "fail", "inconclusive": "warn"}


def decision_rows(runs: Sequence[LoadedRun]) -> list[dict[str, Any]]:
    """Each run's ship decisions with their one line of why and the regressions in words."""
    if not any(run.summary.decisions for run in runs):
        return []
    from harness.score.decide import headline  # the decision engine loads pandas: only when one decided
    from harness.score.junit import regression_line

    return [
        {
            **d.model_dump(mode="json"),
            "run": run.label,
            "why": headline(d),
            "badge": DECISION_BADGE[d.decision],
            "regression_lines": [{"case_id": r.case_id, "text": regression_line(r)} for r in d.regressions],
        }
        for run in runs
        for d in run.summary.decisions
    ]


CLASSES = DERIVABILITY_CLASSES


def stop_lines(runs: Sequence[LoadedRun]) -> list[str]:
    """The sentence of each run that stopped early (the sequential test loads scipy: only for such a run)."""
    stopped = [r.summary.stop_early for r in runs if r.summary.stop_early]
    if not stopped:
        return []
    from harness.score.sequential import stop_sentence

    return [stop_sentence(s) for s in stopped]


def build_context(runs: Sequence[LoadedRun], prices: PriceTable) -> dict[str, Any]:
    """The whole page's data."""
    variants = merged_variants(runs)
    names = [v["name"] for v in variants]
    comparisons = analyses.comparison_rows(merged_comparisons(runs, names))
    results = [r for run in runs for r in run.results]
    per_epoch = analyses.per_epoch_accuracy(results)
    chart_pairs, pairs_note = analyses.chart_comparisons(comparisons, variants)
    catalogue = load_catalogue()
    titles = {sid: f"{s.requirement} › {s.title}" for sid, s in catalogue.items()}
    stability = analyses.stability_rows(variants)
    operations = analyses.operations_rows(variants, prices)
    grounding = analyses.grounding_rows(variants)
    signoff = build_signoff(runs)
    data, embedded = embedded_json([(run.label, drill_down(run), run.failures(), run.cases) for run in runs])
    selection = {
        key: sum(run.selection.get(key, 0) for run in runs)
        for key in ("results", "embedded", "failures", "failures_embedded")
    }
    gates = [{**g.model_dump(mode="json"), "run": run.label} for run in runs for g in run.summary.gates]
    passed = all(run.summary.passed for run in runs)  # what the run's exit code said: gates
    unfinished = [
        f"{run.label}: {u.results:,} of {u.planned:,} results"
        for run in runs
        if run.summary.run is not None and (u := run.summary.run.unfinished) is not None
    ]
    return {
        "title": " + ".join(run.label for run in runs),
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "version": __version__,
        "runs": run_rows(runs),
        "variants": variants,
        "headline": analyses.headline_rows(variants),
        "confusion": analyses.confusion_tables(variants),
        "metrics": analyses.shown_metrics(),
        "decision_metrics": analyses.decided_metrics(),
        "comparisons": comparisons,
        "comparison_chart_note": pairs_note,
        "per_scenario": analyses.breakdown_table(variants, "per_scenario", titles),
        "per_tag": analyses.breakdown_table(variants, "per_tag"),
        "per_dataset": analyses.breakdown_table(variants, "per_dataset"),
        "stability": stability,
        "robustness": robustness_rows(variants),
        "case_matrix": analyses.case_matrix(results, names),
        "per_epoch": per_epoch,
        "operations": operations,
        "priced": any(r["cost"] is not None for r in operations),
        "grounding": grounding,
        "classes": CLASSES,
        "signoff": signoff,
        "gates": gates,
        "decisions": decision_rows(runs),
        "stop_lines": stop_lines(runs),
        "passed": passed,
        "unfinished": unfinished,
        "selection": {**selection, "complete": selection["embedded"] == selection["results"]},
        "data": data,
        "embedded_records": embedded["records"],
        "filters": {
            "variants": sorted(embedded["variants"]),
            "tags": sorted(embedded["tags"]),
            "scenarios": [(sid, titles.get(sid, sid)) for sid in sorted(embedded["scenarios"])],
        },
        "figures": {
            "headline": figures.headline_chart(variants) if variants else None,
            "per_class": figures.per_class_chart(variants, CLASSES),
            "comparison": figures.comparison_chart(chart_pairs),
            "stability": figures.stability_chart(stability),
            "reliability": figures.reliability_chart(variants),
            "epochs": figures.epoch_chart(per_epoch, names),
            "latency": figures.latency_chart(operations),
            "grounding": figures.grounding_chart(grounding),
        },
    }
