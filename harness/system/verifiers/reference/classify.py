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

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from harness.system.models import Claim, Derivability
from harness.system.verifiers.reference import cues
from harness.system.verifiers.reference.evidence import ClaimEvidence, EntryView
from harness.system.verifiers.reference.extract import ClockTime, Features, Mention, Quantity, features
from harness.system.verifiers.reference.match import (
    derived_quantities,
    match_mention,
    match_quantity,
    match_time,
)
from harness.system.verifiers.reference.text import content_stems

D = Derivability
FABRICATION_KINDS = frozenset({"code", "exception", "pod", "version", "region", "ip"})

# Stems that say the same thing in ops wording, folded on both sides before coverage is counted.
SYNONYMS: dict[str, str] = {
    "heap": "memory",
    "rss": "memory",
    "mem": "memory",
    "ram": "memory",
    "usag": "used",
    "utiliz": "used",
    "utilis": "used",
    "consum": "used",
    "slow": "latency",
    "durat": "latency",
    "delay": "latency",
    "fail": "error",
    "failur": "error",
    "except": "error",
    "fault": "error",
    "refus": "reject",
    "deny": "reject",
    "denied": "reject",
    "deadlin": "timeout",
    "expir": "expire",
    "expiry": "expire",
    "cert": "certificat",
    "tls": "certificat",
    "ssl": "certificat",
    "x509": "certificat",
    "disk": "storag",
    "volum": "storag",
    "filesystem": "storag",
    "pvc": "storag",
    "postgr": "database",
    "postgresql": "database",
    "mysql": "database",
    "oracl": "database",
    "sql": "database",
    "backlog": "queu",
    "lag": "queu",
    "spik": "increas",
    "rise": "increas",
    "rose": "increas",
    "jump": "increas",
    "grow": "increas",
    "grew": "increas",
    "climb": "increas",
    "surg": "increas",
    "up": "increas",
    "high": "increas",
    "elevat": "increas",
    "kill": "oomkill",
    "terminat": "oomkill",
    "restart": "restart",
    "crashloopbackoff": "restart",
    "backoff": "restart",
    "unreachabl": "unavailabl",
    "down": "unavailabl",
    "unhealthy": "unavailabl",
    "resolv": "dns",
    "nxdomain": "dns",
    "lookup": "dns",
    "pod": "pod",
    "replica": "pod",
    "contain": "pod",
    "host": "node",
    "server": "node",
    "machin": "node",
    "cpu": "cpu",
    "processor": "cpu",
    "request": "request",
    "call": "request",
    "traffic": "request",
    "5xx": "error",
    "lock": "lock",
    "wait": "lock",
    "connect": "connect",
    "client": "connect",
}


class ReferenceSettings(BaseModel):
    """Thresholds of the heuristic; recorded by `describe()` so a result names what produced it."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    direct_coverage: float = 0.7
    inference_coverage: float = 0.4
    hedged_coverage: float = 0.25
    overstated_coverage: float = 0.34
    fabrication_coverage: float = 0.5


@dataclass(frozen=True)
class Decision:
    verification: Derivability
    detail: str


@dataclass(frozen=True)
class Pooled:
    """The usable entries of one claim, merged."""

    mentions: tuple[Mention, ...]
    quantities: tuple[Quantity, ...]
    times: tuple[ClockTime, ...]
    lower: str
    text: str
    stems: frozenset[str]
    derived: tuple[Quantity, ...]
    where: str
    truncated: bool
    injected: int


def pool(views: Sequence[EntryView], where: str) -> Pooled:
    mentions = tuple(m for v in views for m in v.feats.mentions)
    quantities = tuple(q for v in views for q in v.feats.quantities)
    times = tuple(t for v in views for t in v.feats.times)
    kinds = Counter(m.kind for m in {(m.kind, m.value): m for m in mentions}.values())
    occurrences = Counter(m.value for m in mentions)
    lines = [sum(1 for line in v.text.splitlines() if line.strip()) for v in views]
    counts = {*kinds.values(), *occurrences.values(), *lines}
    return Pooled(
        mentions=mentions,
        quantities=quantities,
        times=times,
        lower="\n".join(v.lower for v in views),
        text="\n".join(v.text for v in views),
        stems=frozenset().union(*(v.stems for v in views)) if views else frozenset(),
        derived=tuple(derived_quantities(quantities, times, counts)),
        where=where,
        truncated=any(v.entry.truncated for v in views),
        injected=sum(v.injected for v in views),
    )


def canon(s: str) -> str:
    return SYNONYMS.get(s, s)


def coverage(words: Sequence[str], ev_stems: frozenset[str]) -> tuple[float, list[str]]:
    """Share of the claim's content stems the evidence contains (synonyms folded), and the missing ones."""
    if not words:
        return 1.0, []
    have = {canon(s) for s in ev_stems} | ev_stems
    missing = [w for w in words if w not in have and canon(w) not in have and not _prefix_hit(w, have)]
    return 1 - len(missing) / len(words), missing


def _prefix_hit(word: str, have: set[str]) -> bool:
    return len(word) >= 5 and any(len(h) >= 5 and (h.startswith(word) or word.startswith(h)) for h in have)


def _h(text: str) -> str:
    return f"heuristic: {text}"


def contradiction(claim: Features, words: Sequence[str], ev: Pooled, settings: ReferenceSettings) -> str | None:
    """The first signal that the evidence says otherwise, as a reason; None when nothing conflicts."""
    for m in claim.mentions:
        found = match_mention(m, claim.mentions, ev.mentions, ev.lower, ev.stems)
        if found.status == "conflict":
            return f"claim names {m.value}, {ev.where} shows {found.other} in that place"
    rest, _ = coverage(words, ev.stems)
    for m in claim.mentions:
        if m.kind in FABRICATION_KINDS and rest >= settings.fabrication_coverage:
            if match_mention(m, claim.mentions, ev.mentions, ev.lower, ev.stems).status == "absent":
                return f"claim asserts {m.value}, which {ev.where} does not contain (fabricated {m.kind})"
    for q in claim.quantities:
        found = match_quantity(q, ev.quantities, ev.derived)
        if found.status == "conflict":
            slot = f" for the same {found.label}" if found.label else ""
            return f"claim says {q.raw}, {ev.where} shows {found.other}{slot}"
    for t in claim.times:
        found = match_time(t, ev.times)
        if found.status == "conflict":
            return f"claim says {t.relation} {t.raw}, {ev.where} has no time near it (nearest {found.other})"
    return None


def negation_conflict(statement: str, words: Sequence[str], ev: Pooled) -> str | None:
    """`no errors` against error lines, or `restarted` against `restarts: 0`."""
    negated = cues.negated_stems(statement)
    for s in sorted(negated):
        pos, zero = cues.polarity(ev.text, s)
        if pos and not zero:
            return f"claim says no/not {s}, {ev.where} shows it {pos} time(s)"
    for s in words:
        if s in cues.EVENT_STEMS and s not in negated:
            pos, zero = cues.polarity(ev.text, s)
            if zero and not pos:
                return f"claim asserts {s}, {ev.where} reports none (zero / absent)"
    return None


def overstatement(statement: str, status: str, ev: Pooled) -> str | None:
    """An absolute, causal or certain wording that the cited evidence does not itself carry."""
    absolute = cues.cue(cues.ABSOLUTE, statement)
    if absolute and absolute.lower() not in ("never", "none") and not cues.EVIDENCE_SCOPE.search(ev.text):
        return f"'{absolute}' goes beyond {ev.where}, which does not show the full scope"
    hedged = cues.cue(cues.HEDGE, statement) or status == "hypothesis"
    causal = cues.cue(cues.CAUSAL, statement)
    if causal and not hedged and not cues.EVIDENCE_CAUSAL.search(ev.text):
        return f"causal claim ('{causal}') stated as fact; {ev.where} shows co-occurrence, not the cause"
    certain = cues.cue(cues.CERTAINTY, statement)
    if certain:
        return f"certainty ('{certain}') beyond what {ev.where} shows"
    return None


def classify(
    claim: Claim, evidence: ClaimEvidence, session: Sequence[tuple[str, str]], settings: ReferenceSettings
) -> Decision:
    """The derivability class of one claim, and a short reason naming the signal that decided."""
    statement = claim.statement.strip()
    if not statement:
        return Decision(D.UNSUPPORTED, _h("the claim has no statement"))
    unobserved = [t for t in cues.external_topics(statement) if not cues.topic_observed(t, session)]
    if unobserved:
        return Decision(D.EXTERNAL_UNKNOWN, _h(f"about {unobserved[0].name}, which no tool in this session observes"))
    if not evidence.usable:
        why = "; ".join(evidence.problems) or "no binding resolves"
        return Decision(D.UNSUPPORTED, _h(f"no usable evidence ({why})"))

    ev = pool(evidence.usable, evidence.labels)
    feats = features(statement)
    words = [w for w in content_stems(feats.masked) if w not in cues.CUE_WORDS]
    reason = contradiction(feats, words, ev, settings) or negation_conflict(statement, words, ev)
    if reason:
        return Decision(D.CONTRADICTED, _h(reason))

    cov, missing = coverage(words, ev.stems)
    notes = _notes(ev)
    over = overstatement(statement, claim.status, ev)
    if over and cov >= settings.overstated_coverage:
        return Decision(D.OVERSTATED, _h(over))

    found = [match_mention(m, feats.mentions, ev.mentions, ev.lower, ev.stems).status for m in feats.mentions]
    qfound = [match_quantity(q, ev.quantities, ev.derived).status for q in feats.quantities]
    tfound = [match_time(t, ev.times).status for t in feats.times]
    anchors = found + qfound + tfound
    hedge = cues.cue(cues.HEDGE, statement)
    if hedge or claim.status == "hypothesis":
        why = f"hedged ('{hedge}')" if hedge else "stated as a hypothesis"
        if cov >= settings.hedged_coverage or "found" in anchors:
            return Decision(D.REASONABLE_INFERENCE, _h(f"{why} and consistent with {ev.where}{notes}"))
        return Decision(D.UNSUPPORTED, _h(f"{why}, but {ev.where} does not mention {_few(missing)}{notes}"))

    exact = all(a == "found" for a in anchors)
    if exact and cov >= settings.direct_coverage:
        return Decision(
            D.DIRECT_OBSERVATION, _h(f"{ev.where} states it ({_anchors(feats)}{len(words)} words matched){notes}")
        )
    if "derived" in qfound and "absent" not in anchors:
        return Decision(D.REASONABLE_INFERENCE, _h(f"a number is computed from {ev.where}, not stated there{notes}"))
    if cov >= settings.inference_coverage and anchors.count("absent") <= len(anchors) // 2:
        return Decision(
            D.REASONABLE_INFERENCE,
            _h(f"{ev.where} supports part of it; not stated: {_few(missing) or 'an identifier'}{notes}"),
        )
    return Decision(D.UNSUPPORTED, _h(f"{ev.where} does not mention {_few(missing) or 'its identifiers'}{notes}"))


def _few(words: Sequence[str], n: int = 4) -> str:
    return ", ".join(words[:n]) + (" ..." if len(words) > n else "")


def _anchors(feats: Features) -> str:
    named = [m.value for m in feats.mentions] + [q.raw for q in feats.quantities] + [t.raw for t in feats.times]
    return f"{_few(named, 3)}; " if named else ""


def _notes(ev: Pooled) -> str:
    notes = []
    if ev.truncated:
        notes.append("the excerpt was cut at the length limit")
    if ev.injected:
        notes.append(f"ignored {ev.injected} instruction-like sentence(s) in the tool output")
    return f" ({'; '.join(notes)})" if notes else ""
