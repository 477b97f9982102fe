"""Case selection for `--filter`: by tag, scenario, id (glob) or a file of ids.

Filters of one kind are OR-ed; different kinds are AND-ed. Forms:
`tag:adv-number`, `scenario:<id or part of it>`, `id:q-cpu-*`, `ids:FILE`,
`kind:policy|quality`, or a bare word (an id glob or a tag).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from harness import UsageError
from harness.corpus.loader import iter_loaded
from harness.corpus.schema import Case
from harness.run.caseref import CaseRef

KINDS = ("tag", "scenario", "id", "ids", "kind", "any")


class FilterError(UsageError):
    pass


def parse_filter(text: str) -> tuple[str, str]:
    kind, sep, value = text.partition(":")
    if sep and kind in KINDS:
        if not value:
            raise FilterError(f"filter {text!r} has no value")
        return kind, value
    return "any", text


def _predicate(kind: str, value: str) -> Callable[[Case], bool]:
    if kind == "tag":
        return lambda c: value in c.tags
    if kind == "scenario":
        return lambda c: any(value == s or value in s for s in c.spec)
    if kind == "id":
        return lambda c: fnmatch.fnmatchcase(c.id, value)
    if kind == "kind":
        return lambda c: c.kind == value
    if kind == "ids":
        try:
            lines = Path(value).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise FilterError(f"cannot read id file {value}: {exc}") from exc
        wanted = {line.split("#", 1)[0].strip() for line in lines} - {""}
        return lambda c: c.id in wanted
    return lambda c: fnmatch.fnmatchcase(c.id, value) or value in c.tags


def case_filter(filters: Sequence[str]) -> Callable[[Case], bool]:
    """Whether every kind of filter admits a case (`FilterError` for a filter that cannot be read)."""
    by_kind: dict[str, list[Callable[[Case], bool]]] = {}
    for text in filters:
        kind, value = parse_filter(text)
        by_kind.setdefault(kind, []).append(_predicate(kind, value))
    preds = list(by_kind.values())
    return lambda c: all(any(p(c) for p in kind) for kind in preds)


def select_cases(cases: Sequence[Case], filters: Sequence[str]) -> list[Case]:
    """The cases every kind of filter admits."""
    admits = case_filter(filters)
    return [c for c in cases if admits(c)]


def load_case_refs(
    paths: Iterable[Path | str], filters: Sequence[str] = (), meanwhile: Callable[[], object] | None = None
) -> tuple[list[CaseRef], int]:
    """The cases below `paths` that `filters` admit, as refs, and how many policy cases the folders hold before
    the filters; an imported, unlabelled session is an unscored case (answered, in no figure). One validated
    case is in memory at a time; a large corpus is read by worker processes, which
    send back only the refs (`iter_loaded`; `meanwhile` is this process's work while they read). `CorpusError`
    names every broken file (nothing is returned then), `FilterError` a filter that cannot be read, as
    `load_cases` and `select_cases` do."""
    admits = case_filter(filters)
    refs: list[CaseRef] = []
    policy = 0
    pairs = iter_loaded(
        paths, lambda case: (CaseRef.of(case), admits(case)), parallel=True, meanwhile=meanwhile, unscored=True
    )
    for (ref, admitted), _, _ in pairs:
        policy += ref.kind == "policy"
        if admitted:
            refs.append(ref)
    return refs, policy
