"""Text normalisation for the reference verifier: phrase folding, tokens, light stems.

Claim and evidence go through the same functions, so a word is compared with a
word in the same normal form (`timed out` and `TimeoutException` both become
`timeout`; `restarted` and `restarts` both become `restart`).
"""

from __future__ import annotations

import re
from functools import lru_cache

# Multi-word phrases and single-word variants folded to one token, so that wording varies less.
_MULTI = re.compile(
    r"\b(?:(tim(?:e|ed|es|ing)[ _-]outs?)|(out[ -]of[ -]memory|oom[ _-]kill(?:ed|er|s)?)|"
    r"(crash[ -]loop(?:ing|s)?(?:[ -]?back[ -]?off)?)|(response[ _-]times?)|(dead[ -]locks?)|"
    r"(no space left|disk[ _-]full)|(restart[_ ]count)|(99th[ _-]?percentile)|(95th[ _-]?percentile)|"
    r"(50th[ _-]?percentile))\b",
    re.IGNORECASE,
)
_MULTI_REPL = (
    "timeout",
    "oomkilled",
    "crashloopbackoff",
    "latency",
    "deadlock",
    "diskfull",
    "restart",
    "p99",
    "p95",
    "p50",
)
_SINGLE = re.compile(
    r"\b(?:errs?|errors|conns?|db|k8s|oom\w*|timeouts|deadlocks|median|throttl\w*|crashloop\w*|restartcount)\b",
    re.IGNORECASE,
)
_SINGLE_REPL = {
    "err": "error",
    "errs": "error",
    "errors": "error",
    "conn": "connection",
    "conns": "connection",
    "db": "database",
    "k8s": "kubernetes",
    "timeouts": "timeout",
    "deadlocks": "deadlock",
    "median": "p50",
    "restartcount": "restart",
}


_MULTI_NEEDLES = ("tim", "out of", "oom", "crash", "response", "dead", "no space", "disk", "restart", "percentile")
_SINGLE_NEEDLES = (
    "err",
    "conn",
    "db",
    "k8s",
    "oom",
    "timeouts",
    "deadlocks",
    "median",
    "throttl",
    "crashloop",
    "restartcount",
)


def _single(m: re.Match[str]) -> str:
    word = m.group(0).lower()
    if word.startswith("oom"):
        return "oomkilled"
    if word.startswith("throttl"):
        return "throttle"
    if word.startswith("crashloop"):
        return "crashloopbackoff"
    return _SINGLE_REPL[word]


def _multi(m: re.Match[str]) -> str:
    return _MULTI_REPL[(m.lastindex or 1) - 1]


_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_RAW_TOKEN = re.compile(r"[A-Za-z0-9]+")

STOPWORDS = frozenset(
    """a an the and or but if then than of in on at to for from by with within into onto over under about
    as is are was were be been being am do does did done has have had having it its this that these those
    there here their they them he she we our you your i my me which who whom what when where while how why
    so such very also just only any some each per via across after before during since until up down out
    off again further once both same other own too can could should would will shall must may might
    shows show showing shown seen observed observes reports reported report according says said saying
    indicates indicate indicated displays displayed lists listed contains contained reads read
    log logs metric metrics output result results evidence data query queried trace tool
    currently current now still already yet more most less least""".split()
)


def fold_phrases(text: str) -> str:
    """Fold known multi-word phrases and spelling variants to one token each."""
    lower = text.lower()
    if any(n in lower for n in _MULTI_NEEDLES):
        text = _MULTI.sub(_multi, text)
    if any(n in lower for n in _SINGLE_NEEDLES):
        text = _SINGLE.sub(_single, text)
    return text


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light, deterministic suffix stripper (plural, -ed, -ing, -ion, -ly, final e)."""
    w = word.lower()
    if len(w) <= 3 or w.isdigit():
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    stripped = False
    for suffix, minimum in (("ingly", 7), ("edly", 6), ("ing", 6), ("ed", 5), ("ation", 7), ("ion", 6), ("ly", 6)):
        if w.endswith(suffix) and len(w) >= minimum:
            w = w[: -len(suffix)]
            stripped = suffix in ("ing", "ed")
            break
    if w.endswith("ure") and len(w) > 6:
        w = w[:-3]
    if stripped and len(w) > 3 and w[-1] == w[-2] and w[-1] not in "lsz":
        w = w[:-1]
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    return w


def raw_tokens(text: str) -> list[str]:
    """Alphanumeric runs, with camelCase / snake_case / kebab-case split and the whole kept too."""
    out: list[str] = []
    for tok in _RAW_TOKEN.findall(text):
        parts = _CAMEL.findall(tok)
        out.append(tok.lower())
        if len(parts) > 1:
            out.extend(p.lower() for p in parts)
    return out


def stems(text: str) -> set[str]:
    """Every stem in the text (after phrase folding), stopwords kept: for evidence look-ups."""
    return {stem(t) for t in raw_tokens(fold_phrases(text))}


def content_words(text: str) -> dict[str, str]:
    """The claim's content words in order, stem → the word as written: no stopwords, no bare numbers."""
    seen: dict[str, str] = {}
    for tok in _RAW_TOKEN.findall(fold_phrases(text)):
        low = tok.lower()
        if low in STOPWORDS or any(ch.isdigit() for ch in low) or len(low) < 2:
            continue
        seen.setdefault(stem(low), low)
    return seen


def content_stems(text: str) -> list[str]:
    """The stems of the claim's content words, in order."""
    return list(content_words(text))
