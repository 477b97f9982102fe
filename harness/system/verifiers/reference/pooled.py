"""The evidence one claim is judged on, merged: its identifiers, numbers, times, words and counts.

Claims that cite the same entries share one `Pooled` (entries are extracted
once per verifier call). Word coverage folds a few ops synonyms on both sides
so that `heap` meets `memory` and `spiked` meets `rose`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from harness.system.verifiers.reference.evidence import EntryView
from harness.system.verifiers.reference.extract import ClockTime, Mention, Quantity
from harness.system.verifiers.reference.match import Basis

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


@dataclass(frozen=True)
class Pooled:
    """The usable entries of one claim, merged."""

    mentions: tuple[Mention, ...]
    quantities: tuple[Quantity, ...]
    times: tuple[ClockTime, ...]
    lower: str
    folded: str
    text: str
    stems: frozenset[str]
    vocab: Vocabulary
    basis: Basis
    where: str
    truncated: bool
    injected: int
    views: tuple[EntryView, ...]


@lru_cache(maxsize=64)
def pool(views: tuple[EntryView, ...], where: str) -> Pooled:
    """The usable entries of a claim merged; claims citing the same entries share one (entries are per call)."""
    mentions = tuple(m for v in views for m in v.feats.mentions)
    quantities = tuple(q for v in views for q in v.feats.quantities)
    times = tuple(t for v in views for t in v.feats.times)
    kinds = Counter(m.kind for m in {(m.kind, m.value): m for m in mentions}.values())
    occurrences = Counter(m.value for m in mentions)
    lines = [sum(1 for line in v.text.splitlines() if line.strip()) for v in views]
    stems: frozenset[str] = frozenset().union(*(v.stems for v in views)) if views else frozenset()
    counts = {*kinds.values(), *occurrences.values(), *lines}
    return Pooled(
        mentions=mentions,
        quantities=quantities,
        times=times,
        lower="\n".join(v.lower for v in views),
        folded="\n".join(v.folded for v in views),
        text="\n".join(v.text for v in views),
        stems=stems,
        vocab=vocabulary(stems),
        basis=Basis(
            quantities,
            tuple(sorted({t.absolute if t.absolute is not None else t.minute for t in times})),
            frozenset(counts),
        ),
        where=where,
        truncated=any(v.entry.truncated for v in views),
        injected=sum(v.injected for v in views),
        views=tuple(views),
    )


def canon(s: str) -> str:
    return SYNONYMS.get(s, s)


@dataclass(frozen=True)
class Vocabulary:
    """The evidence's stems, with synonyms folded and an index by five-letter prefix."""

    stems: frozenset[str]
    by_prefix: dict[str, tuple[str, ...]]


def vocabulary(ev_stems: frozenset[str]) -> Vocabulary:
    have = frozenset({canon(s) for s in ev_stems} | ev_stems)
    index: dict[str, list[str]] = {}
    for h in have:
        if len(h) >= 5:
            index.setdefault(h[:5], []).append(h)
    return Vocabulary(have, {k: tuple(v) for k, v in index.items()})


def coverage(words: Sequence[str], vocab: Vocabulary) -> tuple[float, list[str]]:
    """Share of the claim's content stems the evidence contains (synonyms folded), and the missing ones."""
    if not words:
        return 1.0, []
    missing = [w for w in words if w not in vocab.stems and canon(w) not in vocab.stems and not _prefix_hit(w, vocab)]
    return 1 - len(missing) / len(words), missing


def _prefix_hit(word: str, vocab: Vocabulary) -> bool:
    """`saturat` matches `saturated`: one stem is a prefix (of five letters or more) of the other."""
    if len(word) < 5:
        return False
    return any(h.startswith(word) or word.startswith(h) for h in vocab.by_prefix.get(word[:5], ()))
