"""Labelled sessions as cases: the gold labels from the annotators, the gold verdict from the project's policy.

A claim both (or all) annotators class alike gets that label; one they disagree on gets both labels (at most
two, the case contract's rule) unless `labels/adjudicated.jsonl` settles it; a claim with three different
labels and no adjudication, or any claim nobody labelled, leaves the case out (listed with the reason). The
expected parse status and gatekeeper are what the system's deterministic part concludes on the session; the
verdict is `conformance.verdicts_implied_by_labels`, never typed by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from harness.corpus.durable import write_whole
from harness.corpus.labels import ClaimKey, read_adjudicated, read_labels
from harness.corpus.schema import MAX_LABELS, Case
from harness.corpus.sessions import UNLABELLED_KEY, Imported, case_yaml, load_imported, system_expectations
from harness.run.conformance import verdicts_implied_by_labels
from harness.system.models import SEVERITY, Derivability, Verdict

PLACEHOLDER_VERDICT = Verdict.LOW_CONFID
"""Held by the expected verdict only while the policy derives the real one (never written)."""


def labelled_case(imported: Imported, labels: Mapping[str, Iterable[Derivability | str]]) -> Case:
    """The session as a quality case whose gold labels are `labels` (claim id -> acceptable classes) and whose
    expected verdict the policy derives from them (a list when the labels allow several)."""
    claims = {cid: sorted({Derivability(x) for x in v}, key=list(Derivability).index) for cid, v in labels.items()}
    meta = {k: v for k, v in imported.meta.items() if k != UNLABELLED_KEY}
    data = {
        **imported.case_data(),
        "meta": {**meta, "labelled_from": "production session"},
        "tags": [*imported.tags, "labelled"],
        "expected": {
            **system_expectations(imported.prepared()),
            "claims": {cid: (v[0].value if len(v) == 1 else [x.value for x in v]) for cid, v in claims.items()},
            "verdict": PLACEHOLDER_VERDICT.value,
        },
    }
    case = Case.model_validate(data)
    implied = verdicts_implied_by_labels(case)
    if not implied:
        raise ValueError(f"{imported.id}: the labels imply no verdict")
    ordered = sorted(implied, key=SEVERITY.__getitem__)
    verdict = ordered[0] if len(ordered) == 1 else ordered
    return case.model_copy(update={"expected": case.expected.model_copy(update={"verdict": verdict})})


def gold_labels(
    claim_ids: list[str],
    case_id: str,
    by_annotator: Mapping[str, Mapping[ClaimKey, Derivability]],
    adjudicated: Mapping[ClaimKey, Derivability],
) -> tuple[dict[str, list[Derivability]], str | None]:
    """Each claim's acceptable labels, or why the case cannot be exported."""
    out: dict[str, list[Derivability]] = {}
    for cid in claim_ids:
        key = (case_id, cid)
        if key in adjudicated:
            out[cid] = [adjudicated[key]]
            continue
        given = sorted({labels[key] for labels in by_annotator.values() if key in labels}, key=list(Derivability).index)
        if not given:
            return {}, f"claim {cid} is not labelled"
        if len(given) > MAX_LABELS:
            return {}, f"claim {cid} has {len(given)} different labels; settle it in labels/adjudicated.jsonl"
        out[cid] = given
    return out, None


@dataclass
class ExportResult:
    written: list[str] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)


def export_cases(folder: Path, out: Path) -> ExportResult:
    """Write every fully labelled session of `folder` as a case file into `out`; list the ones left out."""
    by_annotator = read_labels(folder)
    adjudicated = read_adjudicated(folder)
    result = ExportResult()
    out.mkdir(parents=True, exist_ok=True)
    for imported in load_imported(folder):
        claim_ids = [c.claim_id for c in imported.prepared().claims]
        if not claim_ids:
            result.left_out[imported.id] = "the structured output has no claims to label"
            continue
        labels, problem = gold_labels(claim_ids, imported.id, by_annotator, adjudicated)
        if problem:
            result.left_out[imported.id] = problem
            continue
        case = labelled_case(imported, labels)
        write_whole(out / f"{case.id}.yaml", case_yaml(case.model_dump(mode="json", by_alias=True, exclude_none=True)))
        result.written.append(case.id)
    return result
