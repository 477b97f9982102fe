"""Classify one claim from its usable evidence into the six derivability classes.

Order of the checks (the first that decides wins), each named in the reason:
no usable evidence → unsupported (or external_unknown); a topic no tool of the
session observes → external_unknown; a swapped identifier, a fabricated code,
a near-miss number, a wrong time or a flipped negation → contradicted; an
absolute, causal or certain wording the evidence does not carry → overstated;
hedged wording or a hypothesis → reasonable_inference; then how much of the
claim the evidence states: all of it → direct_observation, part of it or one
arithmetic step away → reasonable_inference, little → unsupported.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pydantic import BaseModel, ConfigDict

from harness.system.models import Claim, Derivability
from harness.system.verifiers.reference import cues
from harness.system.verifiers.reference.evidence import ClaimEvidence
from harness.system.verifiers.reference.extract import ClockTime, Features, Mention, Quantity, features
from harness.system.verifiers.reference.match import (
    Finding,
    match_mention,
    match_quantity,
    match_time,
)
from harness.system.verifiers.reference.pooled import Pooled, coverage, pool
from harness.system.verifiers.reference.rows import flag_conflict, row_conflict, series_conflict
from harness.system.verifiers.reference.text import content_stems, content_words

D = Derivability
FABRICATION_KINDS = frozenset({"code", "exception", "version", "region"})
# identifiers that support a claim when found; only some count against it when absent (a host name is often
# the subject the tool ran on and not repeated in its output; a code or a version is the claim's substance)
STRONG_KINDS = frozenset(
    {"code", "exception", "pod", "instance", "ip", "host", "version", "region", "date", "symbol", "path", "name"}
)
# CamelCase words that name a failure reason (BackoffLimitExceeded, NodeCPUPressure), not a resource kind
REASON_NAME = re.compile(r"(?:exceeded|failed|failure|error|pressure|killed|backoff|timeout|unavailable|refused|"
                         r"notfound|denied|invalid|exhausted|evicted|unhealthy|notready)$")  # fmt: skip
ABSENT_KINDS = frozenset({"code", "exception", "version", "date", "name"})


class ReferenceSettings(BaseModel):
    """Thresholds of the heuristic; recorded by `describe()` so a result names what produced it."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    direct_coverage: float = 0.7
    anchored_coverage: float = 0.0
    inference_coverage: float = 0.4
    hedged_coverage: float = 0.25
    overstated_coverage: float = 0.2
    fabrication_coverage: float = 0.5


@dataclass(frozen=True)
class Decision:
    verification: Derivability
    detail: str


def _h(text: str) -> str:
    return f"heuristic: {text}"


@dataclass(frozen=True)
class Anchors:
    """How the claim's identifiers, numbers and times fare against the evidence."""

    mentions: tuple[tuple[Mention, Finding], ...]
    quantities: tuple[tuple[Quantity, Finding], ...]
    times: tuple[tuple[ClockTime, Finding], ...]

    def strong(self) -> list[tuple[str, Finding]]:
        named = [
            (m.value, f)
            for m, f in self.mentions
            if m.kind in STRONG_KINDS and (f.status == "found" or (m.kind in ABSENT_KINDS and m.family != "http_class"))
        ]
        # a window or a count in words ("the last hour", "three pods") supports when found, is no gap when not
        figures = [(q.raw, f) for q, f in self.quantities if f.status != "absent" or q.unit not in ("one", "word")]
        return named + figures + [(t.raw, f) for t, f in self.times]

    def count(self, status: str) -> int:
        return sum(1 for _, f in self.strong() if f.status == status)

    def any_named(self) -> bool:
        return any(f.status == "found" for _, f in self.mentions)


def anchors(claim: Features, ev: Pooled) -> Anchors:
    return Anchors(
        tuple((m, match_mention(m, claim.mentions, ev.mentions, ev.lower)) for m in claim.mentions),
        tuple((q, match_quantity(q, ev.quantities, ev.basis)) for q in claim.quantities),
        tuple((t, match_time(t, ev.times)) for t in claim.times),
    )


def contradiction(
    statement: str,
    claim: Features,
    found: Anchors,
    words: Sequence[str],
    ev: Pooled,
    tentative: bool,
    settings: ReferenceSettings,
) -> str | None:
    """The first signal that the evidence says otherwise, as a reason; None when nothing conflicts."""
    for m, f in found.mentions:
        if f.status == "conflict" and not ev.truncated:
            return f"claim names {m.value}, {ev.where} shows {f.other} in that place"
    row = row_conflict(statement, claim, ev.views, tentative) or flag_conflict(
        statement, claim, cues.negated_stems(statement), ev.views
    )
    if row:
        return row
    for q, f in found.quantities:
        if f.status == "conflict" and (not tentative or f.label != "figure"):
            slot = "a near-miss figure" if f.label == "figure" else f"the same {f.label}"
            return f"claim says {q.raw}, {ev.where} shows {f.other} ({slot})"
    if not tentative:
        for t, f in found.times:
            if f.status == "conflict":
                return f"claim says {t.relation} {t.raw}, {ev.where} shows {f.other} and nothing at that time"
        drift = series_conflict(statement, claim, ev.views)
        if drift:
            return drift
    rest, _ = coverage(words, ev.vocab)
    for m, f in found.mentions:
        # `5xx` names a class, not a code; a CamelCase word (BackoffLimitExceeded) is a reason or error name
        specific = (m.kind in FABRICATION_KINDS and m.family != "http_class") or (
            m.family == "camel" and REASON_NAME.search(m.value) is not None
        )
        if specific and f.status == "absent" and rest >= settings.fabrication_coverage:
            return f"claim asserts {m.value}, which {ev.where} does not contain (fabricated {m.kind})"
    return None


def negation_conflict(statement: str, words: Sequence[str], ev: Pooled) -> str | None:
    """`no errors` against error lines, or `restarted` against `restarts: 0` (event words only)."""
    negated = {s for s in cues.negated_stems(statement) if s in cues.EVENT_STEMS}
    for s in sorted(negated):
        pos, zero = cues.polarity(ev.folded, s)
        if pos and not zero:
            return f"claim says no/not {s}, {ev.where} shows it {pos} time(s)"
    for s in words:
        if s in cues.EVENT_STEMS and s not in negated:
            pos, zero = cues.polarity(ev.folded, s)
            if zero and not pos:
                return f"claim asserts {s}, {ev.where} reports none (zero / absent)"
    return None


def overstatement(statement: str, hedged: bool, found: Anchors, ev: Pooled) -> str | None:
    """An absolute, causal or certain wording that the cited evidence does not itself carry."""
    absolute = cues.ABSOLUTE.search(statement)
    if absolute and not hedged and absolute.group(0).lower() != "never" and not cues.EVIDENCE_SCOPE.search(ev.text):
        # "all 50 server connections": the total is a figure the evidence states, so the scope is shown
        stated_total = any(
            f.status == "found" and q.unit not in ("one", "word") and 0 <= q.start - absolute.end() <= 2
            for q, f in found.quantities
        )
        if not stated_total:
            return f"'{absolute.group(0)}' goes beyond {ev.where}, which does not show the full scope"
    causal = cues.CAUSAL.search(statement)
    if causal and not hedged and not cues.EVIDENCE_CAUSAL.search(ev.text):
        if cues.STRONG_CAUSAL.search(causal.group(0)) or not _cause_shown(statement, causal, found, ev):
            return f"causal claim ('{causal.group(0)}') stated as fact; {ev.where} shows co-occurrence, not the cause"
    certain = cues.cue(cues.CERTAINTY, statement)
    if certain:
        return f"certainty ('{certain}') beyond what {ev.where} shows"
    return None


def _cause_shown(statement: str, causal: re.Match[str], found: Anchors, ev: Pooled) -> bool:
    """`X failed because <the error the log prints>`: the cause clause itself is in the evidence."""
    after = cues.CAUSE_FOLLOWS.match(causal.group(0)) is not None
    lo, hi = (causal.end(), len(statement)) if after else (0, causal.start())
    anchored = [
        f
        for items in (found.mentions, found.quantities, found.times)
        for item, f in items
        if lo <= item.start < hi and f.status == "found" and getattr(item, "kind", "q") != "service"
    ]
    words = [w for w in content_stems(statement[lo:hi]) if w not in cues.CUE_WORDS]
    cov, _ = coverage(words, ev.vocab)
    return bool(anchored) or (len(words) >= 2 and cov >= 0.75)


_NAME = re.compile(r"(?<=[a-z0-9,;(] )[A-Z][a-z]{2,}(?: (?:of |de |the )?[A-Z][a-z]+)*")
_NOT_NAMES = frozenset(
    "The This That These Those It Its Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February "
    "March April May June July August September October November December Linux Kubernetes Redis Java".split()
)


def proper_names(masked: str) -> list[Mention]:
    """Capitalised names inside a sentence (a person, a place, a product, a vendor): kept as claim anchors."""
    return [
        Mention("name", m.group(0).lower(), "name", m.start(), m.end())
        for m in _NAME.finditer(masked)
        if m.group(0).split()[0] not in _NOT_NAMES
    ]


def claim_features(statement: str) -> Features:
    """The claim's features, with its proper names; an `00:00:04` in a claim is a clock time, not an elapsed time."""
    feats = features(statement)
    return replace(
        feats,
        mentions=feats.mentions + tuple(proper_names(feats.masked)),
        quantities=tuple(q for q in feats.quantities if q.unit != "hms"),
    )


def classify(
    claim: Claim, evidence: ClaimEvidence, session: Sequence[tuple[str, str]], settings: ReferenceSettings
) -> Decision:
    """The derivability class of one claim, and a short reason naming the signal that decided."""
    statement = claim.statement.strip()
    if not statement:
        return Decision(D.UNSUPPORTED, _h("the claim has no statement"))
    unobserved = [(t, w) for t, w in cues.external_topics(statement) if not cues.topic_observed(t, w, session)]
    if unobserved:
        topic, said = unobserved[0]
        return Decision(
            D.EXTERNAL_UNKNOWN, _h(f"'{said[0]}' is about {topic.name}, which no tool in this session observes")
        )
    if not evidence.usable:
        why = "; ".join(evidence.problems) or "no binding resolves"
        return Decision(D.UNSUPPORTED, _h(f"no usable evidence ({why})"))

    ev = pool(tuple(evidence.usable), evidence.labels)
    feats = claim_features(statement)
    written = content_words(feats.masked)
    words = [w for w in written if w not in cues.CUE_WORDS]
    hedge = cues.cue(cues.HEDGE, statement)
    tentative = bool(hedge) or claim.status == "hypothesis"
    found = anchors(feats, ev)
    reason = contradiction(statement, feats, found, words, ev, tentative, settings) or negation_conflict(
        statement, words, ev
    )
    if reason:
        return Decision(D.CONTRADICTED, _h(reason))

    cov, missing_stems = coverage(words, ev.vocab)
    missing = [written[w] for w in missing_stems]  # named as the claim wrote them
    notes = _notes(ev)
    n_found, n_absent, n_derived = found.count("found"), found.count("absent"), found.count("derived")
    over = overstatement(statement, tentative, found, ev)
    if over and (n_found or n_derived or found.any_named() or cov >= settings.overstated_coverage):
        return Decision(D.OVERSTATED, _h(over))
    if tentative:
        why = f"hedged ('{hedge}')" if hedge else "stated as a hypothesis"
        if cov >= settings.hedged_coverage or n_found or n_derived:
            return Decision(D.REASONABLE_INFERENCE, _h(f"{why} and consistent with {ev.where}{notes}"))
        return Decision(D.UNSUPPORTED, _h(f"{why}, but {ev.where} does not mention {_few(missing)}{notes}"))
    if n_found and not n_absent and not n_derived and cov >= settings.anchored_coverage:
        return Decision(D.DIRECT_OBSERVATION, _h(f"{ev.where} states {_few([a for a, _ in found.strong()], 3)}{notes}"))
    if not found.strong() and cov >= settings.direct_coverage:
        return Decision(D.DIRECT_OBSERVATION, _h(f"{ev.where} states it ({len(words)} content words matched){notes}"))
    if n_derived and not n_absent:  # arithmetic on shown values that comes out right is an observation (guide)
        return Decision(D.DIRECT_OBSERVATION, _h(f"{ev.where} shows it; a figure is arithmetic on shown values{notes}"))
    if (n_found and n_absent <= n_found // 2) or (not n_absent and cov >= settings.inference_coverage):
        lacking = [a for a, f in found.strong() if f.status == "absent"] or missing
        return Decision(
            D.REASONABLE_INFERENCE, _h(f"{ev.where} supports part of it; not stated: {_few(lacking)}{notes}")
        )
    lacking = [a for a, f in found.strong() if f.status == "absent"] + missing
    return Decision(D.UNSUPPORTED, _h(f"{ev.where} does not show {_few(lacking) or 'it'}{notes}"))


def _few(words: Sequence[str], n: int = 4) -> str:
    return ", ".join(words[:n]) + (" ..." if len(words) > n else "")


def _notes(ev: Pooled) -> str:
    notes = []
    if ev.truncated:
        notes.append("the excerpt was cut at the length limit")
    if ev.injected:
        notes.append(f"ignored {ev.injected} instruction-like sentence(s) in the tool output")
    return f" ({'; '.join(notes)})" if notes else ""
