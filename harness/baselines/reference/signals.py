"""The baseline's named signals, registered like gatekeeper rules, and the order in which they decide.

Each decisive signal reads one claim against the evidence its resolving bindings cite and either stays
silent or gives a class and a reason; the first that speaks decides and its id goes into the check's
`detail`. Reading signals change what the others read. Any signal can be switched off in the settings.
When none speaks, the share of the claim's words the evidence states decides (`coverage`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from harness.baselines.reference.text import (
    content_stems,
    identifiers,
    lexicon,
    normalise,
    numbers,
    phrases,
    stem,
    tokens,
)
from harness.system.models import Derivability

if TYPE_CHECKING:
    from harness.baselines.reference.verifier import ReferenceSettings

D = Derivability


@dataclass(frozen=True)
class Reading:
    """What the signals read about one claim."""

    statement: str
    tentative: bool  # a hedge word or a `hypothesis` status
    hedge: str | None
    question_stems: frozenset[str]  # empty when `novel_words` is off
    evidence: str  # the cited results' text (normalised)
    evidence_stems: frozenset[str]
    evidence_numbers: tuple[float, ...]
    tools: tuple[str, ...]  # every tool of the session
    session: str  # every successful result of the session (normalised)
    words: tuple[str, ...]  # the claim's stems that coverage counts
    truncated: bool  # a cited result was cut at the excerpt limit
    settings: ReferenceSettings  # the thresholds


SignalAnswer = tuple[Derivability, str]
Check = Callable[[Reading], SignalAnswer | None]


@dataclass(frozen=True)
class Signal:
    id: str
    gives: str
    description: str
    check: Check | None  # None: a reading signal (it changes what the others read)
    needs_evidence: bool = True


SIGNALS: dict[str, Signal] = {}


def signal(signal_id: str, gives: str, description: str, needs_evidence: bool = True) -> Callable[[Check], Check]:
    """Register a decisive signal under its id; registration order is the order of decision."""

    def register(fn: Check) -> Check:
        SIGNALS[signal_id] = Signal(signal_id, gives, description, fn, needs_evidence)
        return fn

    return register


def reading_signal(signal_id: str, description: str) -> None:
    SIGNALS[signal_id] = Signal(signal_id, "-", description, None)


reading_signal("novel_words", "coverage counts only the claim's words that the question does not already hold")


def cue(kind: str, text: str) -> str | None:
    m = phrases(lexicon().cues[kind]).search(text)
    return m.group(0) if m else None


@cache
def cue_stems() -> frozenset[str]:
    """Stems of the wording cues: they say how a fact is held, not which fact, so coverage skips them."""
    words = [w for kind in ("hedge", "absolute", "causal", "certainty") for w in lexicon().cues[kind]]
    return frozenset(stem(part) for w in words for part in w.split())


def number_found(value: float, decimals: int, shown: tuple[float, ...]) -> bool:
    """The evidence shows the figure, as written or rounded as written, possibly one unit step away (lexicon)."""
    tolerance = 0.5 * 10**-decimals
    steps = lexicon().unit_steps
    return any(abs(value - e * step) <= max(tolerance, 1e-9 * abs(value)) for e in shown for step in steps)


def found(word: str, r: Reading) -> bool:
    """A claim stem is stated when the evidence has it, or (a figure) shows its value."""
    if word in r.evidence_stems:
        return True
    parts = [p for p in re.split(r"[._:/-]", word) if p]
    if len(parts) > 1 and all(stem(p) in r.evidence_stems for p in parts):
        return True
    figure = numbers(word)
    return len(figure) == 1 and number_found(figure[0][0], figure[0][1], r.evidence_numbers)


def coverage(r: Reading) -> tuple[float, list[str]]:
    """The share of the claim's counted words the evidence states, and the ones it does not."""
    missing = [w for w in r.words if not found(w, r)]
    return (1 - len(missing) / len(r.words) if r.words else 0.0), missing


# --- decisive signals, in the order they decide ----------------------------------------


@signal("external_topic", "external_unknown", "a topic no tool of this session observes", needs_evidence=False)
def external_topic(r: Reading) -> SignalAnswer | None:
    for topic, claim_words, tool_words in lexicon().external:
        said = phrases(claim_words).search(r.statement)
        if not said:
            continue
        looked = any(t in tool.lower() for tool in r.tools for t in tool_words)
        if not looked and not phrases((said.group(0),)).search(r.session):
            return D.EXTERNAL_UNKNOWN, f"'{said.group(0)}' is about {topic}, which no tool of this session observes"
    return None


@signal("identifier", "contradicted", "an identifier (code, pod, version, time) the session does not contain")
def identifier(r: Reading) -> SignalAnswer | None:
    """Absent from the cited evidence and from the whole session (fabricated), or swapped for a sibling it shows."""
    for ident in identifiers(r.statement):
        if ident in r.evidence or stem(ident) in r.evidence_stems or ident in r.question_stems:
            continue
        family = re.split(r"[-_.:/]", ident)[:-1]
        swapped = bool(family) and "-".join(family) + "-" in r.evidence
        if r.truncated and not swapped:
            return D.UNSUPPORTED, f"claim names {ident}, which may lie beyond the excerpt limit"
        code = "-" not in ident or re.fullmatch(r"[a-z]{2,5}-\d{3,}", ident)  # not a name like redis-main-0
        if swapped or (code and ident not in r.session):
            why = "shows a sibling in its place" if swapped else "nor any result of the session contains"
            return D.CONTRADICTED, f"claim names {ident}, which the cited evidence does not contain ({why})"
    return None


def near_miss(value: float, shown: tuple[float, ...], within: float) -> float | None:
    """A shown figure the claim's looks like a slip of: within `within` (relative), or one digit dropped or swapped."""
    digits = _plain(value).replace(".", "")
    for e in shown:
        other = _plain(e).replace(".", "")
        if (e and abs(value - e) / abs(e) <= within) or (len(digits) >= 3 and _one_edit(digits, other)):
            return e
    return None


def _plain(value: float) -> str:
    """A figure as written, without an exponent: 4812330.0 → `4812330`, 12.40 → `12.4`."""
    return f"{value:f}".rstrip("0").rstrip(".")


def _one_edit(a: str, b: str) -> bool:
    if abs(len(a) - len(b)) == 1:
        short, long_ = sorted((a, b), key=len)
        return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))
    return len(a) == len(b) and (sum(x != y for x, y in zip(a, b, strict=True)) == 1 or sorted(a) == sorted(b))


@signal("number", "contradicted", "a figure the cited evidence does not show, where it shows a near miss")
def number(r: Reading) -> SignalAnswer | None:
    for value, decimals, written in numbers(normalise(r.statement)):
        small_count = decimals == 0 and value <= r.settings.count_max
        if small_count or written in r.question_stems or number_found(value, decimals, r.evidence_numbers):
            continue
        if r.truncated:
            return D.UNSUPPORTED, f"claim says {written}, which may lie beyond the excerpt limit"
        other = near_miss(value, r.evidence_numbers, r.settings.near_miss)
        if other is not None:
            return D.CONTRADICTED, f"claim says {written}, the cited evidence shows {_plain(other)} (a near miss)"
    return None


@signal("scope", "overstated", "an absolute scope (all, every, never) the cited evidence does not state")
def scope(r: Reading) -> SignalAnswer | None:
    said = cue("absolute", r.statement)
    if said and not r.tentative and not cue("absolute", r.evidence):
        return D.OVERSTATED, f"'{said}' goes beyond the cited evidence, which does not show the full scope"
    return None


@signal("causal", "overstated", "a cause stated as fact where the cited evidence states none")
def causal(r: Reading) -> SignalAnswer | None:
    said = cue("causal", r.statement)
    if said and cue("cause_follows", said):  # "X because <what the result prints>": the cause itself is shown
        clause = content_stems(r.statement[r.statement.lower().index(said.lower()) + len(said) :])
        if clause and sum(found(w, r) for w in clause) >= r.settings.cause_shown * len(clause):
            return None
    if said and not r.tentative and not cue("causal", r.evidence):
        return D.OVERSTATED, f"causal claim ('{said}') stated as fact; the cited evidence shows no cause"
    return None


@signal("certainty", "overstated", "certainty wording (definitely, will fix) beyond what evidence can show")
def certainty(r: Reading) -> SignalAnswer | None:
    said = cue("certainty", r.statement)
    return (D.OVERSTATED, f"certainty ('{said}') beyond what the cited evidence shows") if said else None


NAME = re.compile(r"\b[A-Z][a-z]+(?:[- ][A-Z][a-z]+)*\b")


@signal("name", "unsupported", "a capitalised name (a person, place, product) the cited evidence does not mention")
def name(r: Reading) -> SignalAnswer | None:
    for m in NAME.finditer(r.statement):
        words = [w for w in tokens(m.group(0)) if w not in lexicon().stopwords and stem(w) not in cue_stems()]
        missing = [w for w in words if stem(w) not in r.evidence_stems and stem(w) not in r.question_stems]
        if missing:
            return D.UNSUPPORTED, f"claim names {m.group(0)}, which the cited evidence does not mention"
    return None


@signal("hedge", "reasonable_inference", "a hedged claim or hypothesis that the evidence is consistent with")
def hedge(r: Reading) -> SignalAnswer | None:
    if not r.tentative:
        return None
    share, missing = coverage(r)
    why = f"hedged ('{r.hedge}')" if r.hedge else "stated as a hypothesis"
    if share >= r.settings.hedged_coverage:
        return D.REASONABLE_INFERENCE, f"{why} and consistent with the cited evidence"
    return D.UNSUPPORTED, f"{why}, but the cited evidence does not mention {', '.join(missing[:4])}"
