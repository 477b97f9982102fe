"""What a ref names in a store: `history:<run>` (a record id or a run id), `history:<tag>` or `history:<branch>`
(the latest recorded run on that branch), tried in that order.

A control or an anchor must have run the same model on the same corpus as the candidate: `match` picks the latest
such run on a branch, and refuses a fixed ref (a tag, a run) that differs, unless the caller pairs on the cases
both sides share (`pair_common`).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.history.record import HistoryError, RecordHead
from harness.history.store import Tag

PREFIX = "history:"


def is_history_ref(value: str | None) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


def ref_name(value: str) -> str:
    """`history:main` -> `main` (a bare name is taken as it is)."""
    name = value[len(PREFIX) :] if value.startswith(PREFIX) else value
    if not name:
        raise HistoryError(f"{value!r}: name a branch, tag or run after {PREFIX}")
    return name


def resolve(heads: Sequence[RecordHead], tags: Sequence[Tag], ref: str) -> list[RecordHead]:
    """The runs a ref names, oldest first: one for a run or a tag, every run of a branch."""
    name = ref_name(ref)
    by_id = {h.id: h for h in heads}
    if name in by_id:
        return [by_id[name]]
    tagged = [t for t in tags if t.name == name]
    if tagged:
        run = tagged[-1].run
        if run not in by_id:
            raise HistoryError(f"tag {name!r} names run {run}, which is not in the store")
        return [by_id[run]]
    same_run = [h for h in heads if h.run_id == name]
    if same_run:
        return same_run[-1:]
    on_branch = [h for h in heads if h.branch == name]
    if on_branch:
        return on_branch
    branches = sorted({h.branch for h in heads if h.branch})
    raise HistoryError(
        f"{PREFIX}{name}: no recorded run, tag or branch of that name ({len(heads)} runs recorded; "
        f"branches: {', '.join(branches) or 'none'}; tags: {', '.join(sorted({t.name for t in tags})) or 'none'})"
    )


def latest(heads: Sequence[RecordHead], tags: Sequence[Tag], ref: str) -> RecordHead:
    return resolve(heads, tags, ref)[-1]


def _fits(head: RecordHead, models: Sequence[str], corpus_hash: str) -> bool:
    return head.corpus_hash == corpus_hash and set(models) <= set(head.models)


def match(
    heads: Sequence[RecordHead],
    tags: Sequence[Tag],
    ref: str,
    *,
    models: Sequence[str],
    corpus_hash: str,
    pair_common: bool,
    role: str = "control",
) -> RecordHead:
    """The recorded run a candidate of `models` on the corpus `corpus_hash` is decided against.

    A branch gives its latest run of the same models and corpus; a tag or a run gives itself. When none fits,
    `pair_common` takes the latest the ref names and pairs on the cases both sides share; else HistoryError,
    naming what differs."""
    found = resolve(heads, tags, ref)
    fitting = [h for h in found if _fits(h, models, corpus_hash)]
    if fitting:
        return fitting[-1]
    last = found[-1]
    if pair_common and set(models) & set(last.models):
        return last
    differs = []
    if last.corpus_hash != corpus_hash:
        differs.append(f"corpus {last.corpus_hash} there, {corpus_hash} here")
    missing = sorted(set(models) - set(last.models))
    if missing:
        differs.append(f"model(s) {', '.join(missing)} not in it (it ran {', '.join(last.models) or 'none'})")
    raise HistoryError(
        f"--{role} {PREFIX}{ref_name(ref)}: no recorded run of the same model and corpus "
        f"(the latest, {last.id} of commit {last.commit or '?'}: {'; '.join(differs)}). "
        "Record a run of this model and corpus, or pass --pair-common to decide on the cases both share"
    )
