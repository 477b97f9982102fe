"""Production sessions as unlabelled cases: one row `{"id", "session", "executor"}` becomes `DIR/<id>.yaml`.

A row holds the case format's `session` and `executor` blocks as the service persisted them:
`session.self_evaluation.verifier_evaluation` is the production verifier's evaluation (any subset of the
fields of INTERPRETATION §7; `claim_checks` with `claim_id` and `verification` is what is needed), and the
other keys of `self_evaluation` are siblings that are kept. The evaluation is moved to `meta.production`, so
the session is as it was before the verifier ran. The case is marked `meta.unlabelled`; the loader refuses it
until `vbench label export` writes it with gold labels.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.corpus.redact import Redaction, redact
from harness.corpus.schema import CaseExecutor, CaseSession
from harness.system.models import ClaimCheck, Verdict
from harness.system.pipeline import Prepared, prepare
from harness.system.store_names import EVALUATION_KEY

ID_PATTERN = re.compile(r"^[a-z0-9._-]{1,185}$")
UNLABELLED_KEY = "unlabelled"
UNLABELLED_MESSAGE = (
    "unlabelled: an imported production session without gold labels; label it with `vbench label serve` "
    "and write labelled cases with `vbench label export`"
)
SCENARIO = "chat-verifier-agent/verifier-shall-fact-check-executor-answers/"
GATEKEEPER = "chat-verifier-agent/executor-gatekeeper-shall-validate-deterministic-structured-output-failures/"
VERDICT_SCENARIOS: dict[Verdict, str] = {
    Verdict.PASS: SCENARIO + "pass-verdict-when-all-claims-have-evidence",
    Verdict.LOW_CONFID: SCENARIO + "low-confid-verdict-with-partial-evidence",
    Verdict.REJECT: SCENARIO + "reject-verdict-when-claims-contradict-evidence",
}
"""The scenario a session exercises, by the production verdict (the catalogue's ids)."""
GATEKEEPER_SCENARIOS: dict[str, str] = {
    "pass": GATEKEEPER + "valid-structured-output-passes-initial-gatekeeper-rules",
    "warn": GATEKEEPER + "valid-structured-output-passes-initial-gatekeeper-rules",
    "fail": GATEKEEPER + "gatekeeper-fail-prevents-pass",
}


class RowError(BaseModel):
    """A source row that was not imported: its id (or line), why, and a message that names the key path."""

    model_config = ConfigDict(frozen=True)
    row: str
    reason: str
    message: str

    def __str__(self) -> str:
        return f"{self.row}: {self.reason}: {self.message}"


class ProductionEvaluation(BaseModel):
    """What is needed of the production `verifier_evaluation`: its claim checks (every other §7 field optional)."""

    model_config = ConfigDict(extra="allow")
    verdict: Verdict | None = None
    claim_checks: list[ClaimCheck] = Field(min_length=0)


class Imported(BaseModel):
    """An unlabelled case as imported: the session before the verifier ran, and the production evaluation."""

    model_config = ConfigDict(extra="forbid")
    id: str
    title: str
    spec: list[str]
    tags: list[str] = Field(default_factory=list)
    meta: dict[str, Any]
    session: CaseSession
    executor: CaseExecutor

    @property
    def production(self) -> ProductionEvaluation:
        return ProductionEvaluation.model_validate(self.meta["production"])

    @property
    def content_hash(self) -> str:
        return str(self.meta["content_hash"])

    def prepared(self) -> Prepared:
        """The system's deterministic part on the session: parse, claims, trace summary, gatekeeper."""
        return prepare(
            self.session.question,
            self.executor.emission(),
            self.session.tool_invocations,
            self.session.tool_trace_summary,
        )

    def case_data(self) -> dict[str, Any]:
        """The case file's mapping, in the contract's key order, without the unlabelled marker's meta keys."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def decode_json(value: Any, key: str) -> Any:
    """A column's value: native JSON as is, JSON text (str or bytes) decoded; ValueError names the key."""
    if isinstance(value, bytes | bytearray | memoryview):
        value = bytes(value).decode("utf-8")
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{key}: not JSON ({exc.msg} at character {exc.pos})") from None
    return value


def content_hash(row_id: str, session: Any, executor: Any) -> str:
    """The row's hash as read (before redaction): the same session from JSONL or a database hashes alike."""
    blob = json.dumps({"id": row_id, "session": session, "executor": executor}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def row_size(session: Any, executor: Any) -> int:
    return len(json.dumps([session, executor], ensure_ascii=False, default=str).encode())


def to_imported(row_id: Any, session: Any, executor: Any, source: str, max_bytes: int) -> Imported | RowError:
    """One row as an unlabelled case, or why it cannot be one (bad JSON, wrong shape, too large)."""
    name = str(row_id) if row_id is not None else "<no id>"
    if not isinstance(row_id, str | int) or not ID_PATTERN.match(str(row_id)):
        return RowError(row=name, reason="bad id", message="id: must be 1-185 characters of a-z 0-9 . _ -")
    row_id = str(row_id)
    try:
        session, executor = decode_json(session, "session"), decode_json(executor, "executor")
    except (ValueError, UnicodeDecodeError) as exc:
        return RowError(row=row_id, reason="not JSON", message=str(exc))
    if (size := row_size(session, executor)) > max_bytes:
        return RowError(row=row_id, reason="too large", message=f"{size:,} bytes, over the limit of {max_bytes:,}")
    for key, value in (("session", session), ("executor", executor)):
        if not isinstance(value, dict):
            return RowError(row=row_id, reason="wrong shape", message=f"{key}: an object, not {type(value).__name__}")
    digest = content_hash(row_id, session, executor)
    (session, executor), redactions = _redacted(session, executor)
    self_evaluation = session.get("self_evaluation")
    if not isinstance(self_evaluation, dict) or not isinstance(self_evaluation.get(EVALUATION_KEY), dict):
        where = f"session.self_evaluation.{EVALUATION_KEY}"
        return RowError(row=row_id, reason="wrong shape", message=f"{where}: the production evaluation is missing")
    siblings = {k: v for k, v in self_evaluation.items() if k != EVALUATION_KEY}
    evaluation = self_evaluation[EVALUATION_KEY]
    try:
        production = ProductionEvaluation.model_validate(evaluation)
        before = CaseSession.model_validate({**session, "self_evaluation": siblings})
        emitted = CaseExecutor.model_validate(executor)
    except ValidationError as exc:
        return RowError(row=row_id, reason="wrong shape", message=_first_problem(exc, session, evaluation))
    case = Imported(
        id=row_id,
        title=_title(row_id, before.question),
        spec=[],
        tags=[],
        meta={
            UNLABELLED_KEY: True,
            "source": source,
            "content_hash": digest,
            "production": evaluation,
            "redactions": [r.model_dump() for r in redactions],
        },
        session=before,
        executor=emitted,
    )
    gatekeeper = case.prepared().gatekeeper.status
    verdict = production.verdict
    spec = [VERDICT_SCENARIOS[verdict]] if verdict is not None else []
    spec.append(GATEKEEPER_SCENARIOS[gatekeeper])
    tags = ["production", f"gatekeeper-{gatekeeper}"]
    tags += [f"production-{verdict.value.lower().replace('_', '-')}"] if verdict is not None else []
    return case.model_copy(update={"spec": list(dict.fromkeys(spec)), "tags": tags})


def _redacted(session: dict[str, Any], executor: dict[str, Any]) -> tuple[tuple[Any, Any], list[Redaction]]:
    clean_session, found = redact(session, "session")
    clean_executor, more = redact(executor, "executor")
    # sorted: a database that reorders keys (PostgreSQL's jsonb) lists them in the same order as a file
    return (clean_session, clean_executor), sorted(found + more, key=lambda r: (r.path, r.kind))


def _first_problem(exc: ValidationError, session: dict[str, Any], evaluation: Any) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    title = exc.title
    prefix = {
        "ProductionEvaluation": f"session.self_evaluation.{EVALUATION_KEY}",
        "CaseSession": "session",
        "CaseExecutor": "executor",
    }.get(title, title)
    return f"{prefix}.{loc}: {err['msg']}" if loc else f"{prefix}: {err['msg']}"


def _title(row_id: str, question: str) -> str:
    text = " ".join(question.split())
    text = text if len(text) <= 90 else text[:89] + "…"
    return f"Production session {row_id}: {text}" if text else f"Production session {row_id}"


def case_yaml(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100)


def is_unlabelled(data: Any) -> bool:
    """Whether a case file's mapping is an imported production session not yet labelled."""
    return isinstance(data, dict) and isinstance(data.get("meta"), dict) and data["meta"].get(UNLABELLED_KEY) is True


UNSCORED_TAG = "unscored"


def unscored_case_data(data: dict[str, Any]) -> dict[str, Any]:
    """An imported session as a case a run answers and no figure scores: what the system concludes on it
    (parse status, gatekeeper) as its expectations, no claim labels and no acceptable verdict (an empty list,
    which `score.headline.is_headline` leaves out of every figure), tagged `unscored`. A run's answers on such
    cases are a judge's answers for `vbench estimate`. ValueError when the file is not an imported session."""
    try:
        imported = Imported.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ValueError(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}") from None
    meta = {k: v for k, v in imported.meta.items() if k != UNLABELLED_KEY} | {UNSCORED_TAG: True}
    return {
        **imported.case_data(),
        "meta": meta,
        "tags": [*imported.tags, UNSCORED_TAG],
        "expected": {**system_expectations(imported.prepared()), "verdict": []},
    }


def system_expectations(prepared: Prepared) -> dict[str, Any]:
    """The expectations the system sets itself on a session (parse status, gatekeeper), for a case made from it."""
    gatekeeper = prepared.gatekeeper
    return {
        "parse_status": prepared.parsed.parse_status.status,
        "gatekeeper": {
            "status": gatekeeper.status,
            "failed_rules": list(gatekeeper.failed_rules),
            "warnings": gatekeeper.warning_rules,
        },
    }


def read_imported(path: Path) -> Imported:
    """One unlabelled case file (a bounded, strict YAML read); ValueError names the file."""
    from harness.corpus.loader import CaseFileError, read_yaml

    try:
        data = read_yaml(path)
    except (yaml.YAMLError, CaseFileError, OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: {exc}") from None
    if not is_unlabelled(data):
        raise ValueError(f"{path}: not an imported session (meta.{UNLABELLED_KEY} is not true)")
    try:
        return Imported.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ValueError(f"{path}: {'.'.join(str(p) for p in err['loc'])}: {err['msg']}") from None


def imported_files(folder: Path) -> list[Path]:
    """The unlabelled case files at the top of an import folder, sorted."""
    return sorted(p for p in folder.glob("*.yaml") if p.is_file())


def load_imported(folder: Path) -> list[Imported]:
    """Every unlabelled case of an import folder; ValueError naming the first broken file."""
    return [read_imported(p) for p in imported_files(folder)]
