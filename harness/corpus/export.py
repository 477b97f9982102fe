"""Export the corpus as Parquet and as a Hugging Face `datasets.DatasetDict`, for teams that share corpora.

Two tables: one row per case, one row per structured claim. `cases_table`
and `claims_table` are pure (cases in, `pyarrow.Table` out, fixed schemas so an
empty corpus still has its columns); `write_export` is the only I/O.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from harness.corpus.schema import Case

_STRINGS = pa.list_(pa.string())

CASES_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("kind", pa.string()),
        ("title", pa.string()),
        ("tags", _STRINGS),
        ("spec", _STRINGS),
        ("question", pa.string()),
        ("parse_status", pa.string()),
        ("gatekeeper_status", pa.string()),
        ("failed_rules", _STRINGS),
        ("verdicts", _STRINGS),
        ("model_verdicts", _STRINGS),
        ("claim_count", pa.int64()),
        ("content_hash", pa.string()),
        ("case_json", pa.string()),
    ]
)
CLAIMS_SCHEMA = pa.schema(
    [
        ("case_id", pa.string()),
        ("claim_id", pa.string()),
        ("statement", pa.string()),
        ("critical", pa.bool_()),
        ("status", pa.string()),
        ("gold_labels", _STRINGS),
    ]
)


def _sorted_values(values: set[Any]) -> list[str]:
    return sorted(str(v.value if hasattr(v, "value") else v) for v in values)


def case_row(case: Case) -> dict[str, Any]:
    """One case as a flat row; the whole case is kept as JSON so nothing is lost."""
    exp = case.expected
    model = exp.acceptable_model_verdicts()
    return {
        "id": case.id,
        "kind": case.kind,
        "title": case.title,
        "tags": list(case.tags),
        "spec": list(case.spec),
        "question": case.session.question,
        "parse_status": exp.parse_status,
        "gatekeeper_status": exp.gatekeeper.status,
        "failed_rules": list(exp.gatekeeper.failed_rules),
        "verdicts": _sorted_values(exp.acceptable_verdicts()),
        "model_verdicts": None if model is None else _sorted_values(model),
        "claim_count": case.executor_output.claim_count or 0,
        "content_hash": case.content_hash(),
        "case_json": json.dumps(case.model_dump(mode="json", by_alias=True), sort_keys=True, ensure_ascii=False),
    }


def claim_rows(case: Case) -> list[dict[str, Any]]:
    """One row per structured claim; `gold_labels` empty when the claim carries no label."""
    labels = case.expected.acceptable_labels()
    return [
        {
            "case_id": case.id,
            "claim_id": c["claim_id"],
            "statement": c["statement"] if isinstance(c.get("statement"), str) else None,
            "critical": c["critical"] if isinstance(c.get("critical"), bool) else None,
            "status": c["status"] if isinstance(c.get("status"), str) else None,
            "gold_labels": _sorted_values(labels.get(c["claim_id"], set())),
        }
        for c in case.executor_output.claim_objects
    ]


def cases_table(cases: Sequence[Case]) -> pa.Table:
    return pa.Table.from_pylist([case_row(c) for c in cases], schema=CASES_SCHEMA)


def claims_table(cases: Sequence[Case]) -> pa.Table:
    return pa.Table.from_pylist([row for c in cases for row in claim_rows(c)], schema=CLAIMS_SCHEMA)


def write_export(cases: Sequence[Case], out: Path) -> dict[str, Path]:
    """`out/cases.parquet`, `out/claims.parquet` and `out/hf` (a DatasetDict saved with `save_to_disk`)."""
    from datasets import Dataset, DatasetDict
    from datasets.table import InMemoryTable
    from datasets.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    out.mkdir(parents=True, exist_ok=True)
    tables = {"cases": cases_table(cases), "claims": claims_table(cases)}
    paths = {}
    for name, table in tables.items():
        paths[name] = out / f"{name}.parquet"
        pq.write_table(table, paths[name])
    paths["hf"] = out / "hf"
    quiet = are_progress_bars_disabled()
    disable_progress_bars()
    try:
        dataset = DatasetDict({name: Dataset(InMemoryTable(table)) for name, table in tables.items()})
        dataset.save_to_disk(str(paths["hf"]))
    finally:
        if not quiet:
            enable_progress_bars()
    return paths
