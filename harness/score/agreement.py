"""Judge-human and human-human agreement on labelled production sessions: `DIR/agreement.json`.

- `pairs[]`: each pair of annotators on the claims both labelled: Cohen's kappa with a 95% bootstrap CI over
  cases, percent agreement, and per-class (specific) agreement 2·both / (a + b) (Fleiss 1975; Cicchetti and
  Feinstein 1990).
- `krippendorff_alpha`: nominal alpha over all annotators (Krippendorff 2011), any number per claim, with CI.
- `vs_verifier[]`: each annotator against the production verifier's claim checks, with the confusion matrix.
- `verdicts`: the same for verdicts; an annotator's verdict is the one the project's policy derives from their
  labels (`label_export.labelled_case`), on the sessions where they labelled every claim.
- `disagreements`: every claim with more than one answer, most disagreed first (for the report's section).

Kappa is `classification.cohen_kappa` and alpha `classification.krippendorff_alpha` (tests check both against
scikit-learn and the `krippendorff` package); the CIs resample cases (`stats.resampled_sums`), summing
per-case confusion and coincidence counts.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from harness.corpus.labels import ClaimKey, read_labels
from harness.corpus.sessions import Imported, load_imported
from harness.score import classification
from harness.score.frames import CLASSES, VERDICTS
from harness.score.label_export import labelled_case
from harness.score.stats import resampled_sums

VERIFIER = "verifier"
"""The production verifier's name in `disagreements`."""


class Interval(BaseModel):
    value: float | None
    ci: list[float] | None


class Agreement(BaseModel):
    """`agreement.json`."""

    annotators: list[str]
    cases: int
    pairs: list[dict[str, Any]] = Field(default_factory=list)
    krippendorff_alpha: dict[str, Any]
    vs_verifier: list[dict[str, Any]] = Field(default_factory=list)
    verdicts: dict[str, Any]
    disagreements: list[dict[str, Any]] = Field(default_factory=list)

    def lines(self) -> list[str]:
        """The console's reading: every kappa and alpha through `kappa_text` (one precision, undefined said)."""
        out = [f"{len(self.annotators)} annotator(s) on {self.cases} session(s): {', '.join(self.annotators) or '-'}"]
        for p in self.pairs:
            out.append(f"  {p['a']} vs {p['b']}: {p['claims']} claims, kappa {kappa_text(p)}, "
                       f"agreement {figure(p['percent_agreement'])}")  # fmt: skip
        out.append(f"  Krippendorff's alpha {alpha_text(self.krippendorff_alpha)}")
        for v in self.vs_verifier:
            out.append(f"  {v['annotator']} vs verifier: {v['claims']} claims, kappa {kappa_text(v)}")
        for v in self.verdicts["vs_verifier"]:
            out.append(f"  verdicts, {v['annotator']} vs verifier: {v['cases']} sessions, kappa {kappa_text(v)}")
        return out


PRECISION = 3
"""Decimals of every printed kappa, alpha and interval bound."""


def figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.{PRECISION}f}"


def interval_text(value: float | None, ci: Sequence[float] | None) -> str:
    """`0.936 [0.795, 1.000]`: the value and its interval at one precision."""
    return figure(value) + (f" [{figure(ci[0])}, {figure(ci[1])}]" if ci else "")


def kappa_undefined(
    matrix: Sequence[Sequence[float]] | np.ndarray, labels: Sequence[str], a: str, b: str
) -> str | None:
    """Why Cohen's kappa of this confusion matrix (rows `a`, columns `b`) means nothing, or None.

    Kappa rescales agreement beyond what the raters' class shares give by chance; when a rater uses one class,
    chance already explains all the agreement there can be (kappa is 0 whatever the other does, or 0/0), so it
    says nothing about the raters."""
    m = np.asarray(matrix, dtype=float)
    if m.size == 0 or m.sum() == 0:
        return "no unit answered by both"
    for name, used in ((a, m.sum(axis=1)), (b, m.sum(axis=0))):
        classes = [labels[i] for i in np.flatnonzero(used)]
        if len(classes) == 1:
            return f"{name} used one class ({classes[0]}), so agreement beyond chance cannot be measured"
    return None


def kappa_text(entry: Mapping[str, Any]) -> str:
    """How every screen prints a pair's kappa: `0.936 [0.795, 1.000]`, or `undefined: <why>`."""
    if why := entry.get("cohen_kappa_undefined"):
        return f"undefined: {why}"
    return interval_text(entry.get("cohen_kappa"), entry.get("cohen_kappa_ci"))


def alpha_text(entry: Mapping[str, Any]) -> str:
    if why := entry.get("undefined"):
        return f"undefined: {why}"
    return interval_text(entry.get("value"), entry.get("ci"))


def _finite(value: float) -> float | None:
    return None if np.isnan(value) else round(float(value), 6)


def _ci(values: np.ndarray) -> list[float] | None:
    values = values[~np.isnan(values)]
    if len(values) == 0:
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return [round(float(low), 6), round(float(high), 6)]


def kappa_with_ci(
    by_case: Mapping[str, list[tuple[str, str]]], labels: Sequence[str], names: tuple[str, str] = ("a", "b")
) -> dict[str, Any]:
    """Cohen's kappa of (a, b) answer pairs grouped by case, its 95% CI resampling cases, the percent
    agreement and the confusion matrix (rows a, columns b). Where kappa means nothing (`kappa_undefined`) it
    and its CI are null and `cohen_kappa_undefined` says why."""
    k = len(labels)
    rows = [classification.confusion([p[0] for p in ps], [p[1] for p in ps], labels).ravel() for ps in by_case.values()]
    if not rows:
        return {"n": 0, "cohen_kappa": None, "cohen_kappa_ci": None, "percent_agreement": None, "matrix": None,
                "cohen_kappa_undefined": kappa_undefined([], labels, *names)}  # fmt: skip
    table = np.array(rows, dtype=float)
    matrix = table.sum(axis=0).reshape(k, k)
    boots = resampled_sums(table)
    kappas = classification.cohen_kappas(boots.reshape(-1, k, k))
    n = int(matrix.sum())
    undefined = kappa_undefined(matrix, labels, *names)
    return {
        "n": n,
        "cohen_kappa": None if undefined else _finite(classification.cohen_kappa(matrix)),
        "cohen_kappa_ci": None if undefined else _ci(kappas),
        "percent_agreement": round(float(np.trace(matrix)) / n, 6) if n else None,
        "matrix": matrix.astype(int).tolist(),
        "cohen_kappa_undefined": undefined,
    }


def alpha_with_ci(by_case: Mapping[str, list[list[str]]], labels: Sequence[str]) -> dict[str, Any]:
    """Krippendorff's alpha (nominal) of the units grouped by case, with its 95% CI resampling cases."""
    k = len(labels)
    rows = [classification.coincidence(units, labels).ravel() for units in by_case.values()]
    pairable = sum(1 for units in by_case.values() for u in units if len(u) >= 2)
    if not rows or pairable == 0:
        return {"value": None, "ci": None, "claims": 0, "undefined": "no claim answered by two annotators"}
    table = np.array(rows, dtype=float)
    total = table.sum(axis=0).reshape(k, k)
    used = [labels[i] for i in np.flatnonzero(total.sum(axis=1))]
    if len(used) == 1:
        why = f"every answer is one class ({used[0]}), so agreement beyond chance cannot be measured"
        return {"value": None, "ci": None, "claims": pairable, "undefined": why}
    boots = resampled_sums(table)
    return {
        "value": _finite(classification.krippendorff_alpha(total)),
        "ci": _ci(classification.krippendorff_alphas(boots.reshape(-1, k, k))),
        "claims": pairable,
        "undefined": None,
    }


def per_class(matrix: list[list[int]], labels: Sequence[str]) -> dict[str, Any]:
    """Specific agreement per class: 2·both / (times a used it + times b used it)."""
    m = np.array(matrix)
    out = {}
    for i, label in enumerate(labels):
        used = int(m[i, :].sum() + m[:, i].sum())
        out[label] = {"a": int(m[i, :].sum()), "b": int(m[:, i].sum()), "both": int(m[i, i]),
                      "agreement": round(2 * int(m[i, i]) / used, 6) if used else None}  # fmt: skip
    return out


Answers = Mapping[str, Mapping[ClaimKey, str]]
"""Rater name -> (case id, unit id) -> answer."""


def compare(answers: Answers, units: Sequence[ClaimKey], labels: Sequence[str], unit: str) -> dict[str, Any]:
    """pairs[], krippendorff_alpha and (when the verifier is a rater) vs_verifier[] over `units`."""
    raters = [r for r in answers if r != VERIFIER]

    def grouped(a: str, b: str) -> dict[str, list[tuple[str, str]]]:
        out: dict[str, list[tuple[str, str]]] = {}
        for key in units:
            if key in answers[a] and key in answers[b]:
                out.setdefault(key[0], []).append((answers[a][key], answers[b][key]))
        return out

    pairs = []
    for a, b in combinations(raters, 2):
        stats = kappa_with_ci(grouped(a, b), labels, (a, b))
        pair = {"a": a, "b": b, unit: stats.pop("n"), **stats}
        pair["per_class"] = per_class(stats["matrix"], labels) if stats["matrix"] else None
        pairs.append(pair)
    units_by_case: dict[str, list[list[str]]] = {}
    for key in units:
        units_by_case.setdefault(key[0], []).append([answers[r][key] for r in raters if key in answers[r]])
    vs = []
    if VERIFIER in answers:
        for r in raters:
            stats = kappa_with_ci(grouped(r, VERIFIER), labels, (r, "the production verifier"))
            matrix = {"labels": list(labels), "rows": r, "columns": VERIFIER, "counts": stats.pop("matrix")}
            vs.append({"annotator": r, unit: stats.pop("n"), **stats, "confusion_matrix": matrix})
    return {"pairs": pairs, "krippendorff_alpha": alpha_with_ci(units_by_case, labels), "vs_verifier": vs}


def annotator_verdicts(
    cases: Sequence[Imported], claim_ids: Mapping[str, list[str]], labels: Mapping[ClaimKey, str]
) -> dict[ClaimKey, str]:
    """(case id, "verdict") -> the verdict the policy derives from one annotator's labels, on the sessions where
    they labelled every claim."""
    out: dict[ClaimKey, str] = {}
    for case in cases:
        ids = claim_ids[case.id]
        if ids and all((case.id, cid) in labels for cid in ids):
            gold = labelled_case(case, {cid: [labels[(case.id, cid)]] for cid in ids}).expected.verdict
            out[(case.id, "verdict")] = gold.value if not isinstance(gold, list) else gold[0].value
    return out


def disagreements(answers: Answers, units: Sequence[ClaimKey]) -> list[dict[str, Any]]:
    """Claims with more than one answer, most disagreed first: the share of answer pairs that differ."""
    out = []
    for key in units:
        given = {r: a[key] for r, a in answers.items() if key in a}
        if len(given) < 2:
            continue
        values = list(given.values())
        pairs = len(values) * (len(values) - 1) / 2
        same = sum(n * (n - 1) / 2 for n in Counter(values).values())
        out.append({"case_id": key[0], "claim_id": key[1], "labels": given, "disagreement": round(1 - same / pairs, 6)})
    return sorted(out, key=lambda d: (-d["disagreement"], d["case_id"], d["claim_id"]))


def agreement_report(folder: Path) -> Agreement:
    """Agreement over the sessions of an import folder and the label files under it."""
    cases = load_imported(folder)
    labels = {name: {k: v.value for k, v in given.items()} for name, given in read_labels(folder).items()}
    if VERIFIER in labels:
        raise ValueError(
            f"{folder}/labels/{VERIFIER}.jsonl: {VERIFIER!r} names the production verifier; rename the annotator"
        )
    claim_ids = {c.id: [x.claim_id for x in c.prepared().claims] for c in cases}
    units = [(cid, claim) for cid, ids in claim_ids.items() for claim in ids]
    production = {(c.id, ch.claim_id): ch.verification.value for c in cases for ch in c.production.claim_checks}
    claims = compare({**labels, VERIFIER: production}, units, CLASSES, "claims")
    verdict_answers: dict[str, dict[ClaimKey, str]] = {
        n: annotator_verdicts(cases, claim_ids, given) for n, given in labels.items()
    }
    verdict_answers[VERIFIER] = {(c.id, "verdict"): c.production.verdict.value for c in cases if c.production.verdict}
    verdicts = compare(verdict_answers, [(c.id, "verdict") for c in cases], VERDICTS, "cases")
    return Agreement(
        annotators=sorted(labels),
        cases=len(cases),
        **claims,
        verdicts=verdicts,
        disagreements=disagreements({**labels, VERIFIER: production}, units),
    )


def write_agreement(report: Agreement, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def read_agreement(path: Path) -> Agreement:
    return Agreement.model_validate_json(path.read_bytes())
