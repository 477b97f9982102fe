"""The lexicon and the text reading shared by every signal: phrases, tokens, light stems, numbers, identifiers.

Claim and evidence go through the same functions, so a word is compared with a word in the same normal form.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

LEXICON_PATH = Path(__file__).with_name("lexicon.toml")
TOKEN = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?(?:[._:/-][a-z0-9]+)*")
NUMBER = re.compile(r"(?<![\w.:/-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?!xx)(?=[a-z%]{0,3}(?![\w:/-]|\.\d))", re.I)
MEASURE = re.compile(r"\d+(?:\.\d+)?[a-z]{0,3}")
CAMEL = re.compile(r"\b(?=[A-Za-z]{8,}\b)[A-Za-z]*[a-z][A-Z][A-Za-z]*\b")


@dataclass(frozen=True)
class Lexicon:
    stopwords: frozenset[str]
    synonyms: dict[str, str]
    cues: dict[str, tuple[str, ...]]
    external: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]
    unit_steps: tuple[float, ...]
    digest: str

    def phrase(self, kind: str) -> re.Pattern[str]:
        return phrases(self.cues[kind])


@cache
def lexicon(path: Path = LEXICON_PATH) -> Lexicon:
    """The one data file of word lists (read once)."""
    raw = path.read_bytes()
    data = tomllib.loads(raw.decode("utf-8"))
    return Lexicon(
        stopwords=frozenset(data["stopwords"].split()),
        synonyms={k.lower(): v.lower() for k, v in data["synonyms"].items()},
        cues={k: tuple(v) for k, v in data["cues"].items()},
        external=tuple((t["topic"], tuple(t["claim"]), tuple(t["tools"])) for t in data["external"]),
        unit_steps=tuple(float(step) for step in data["unit_steps"]),
        digest=hashlib.sha256(raw).hexdigest()[:12],
    )


@cache
def phrases(words: tuple[str, ...]) -> re.Pattern[str]:
    """One case-insensitive pattern for a list of words and phrases, longest first, on word boundaries."""
    alts = sorted((re.escape(w) for w in words), key=len, reverse=True)
    return re.compile(r"(?<![\w-])(?:" + "|".join(alts) + r")(?![\w-])", re.IGNORECASE)


def normalise(text: str) -> str:
    """Lower-cased, with the lexicon's synonyms folded to one form."""
    lex = lexicon()
    text = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text.lower())  # 1,234 → 1234
    return phrases(tuple(lex.synonyms)).sub(lambda m: lex.synonyms[m.group(0).lower()], text)


def stem(word: str) -> str:
    """A light suffix strip (`failures` → `failur`, `failed` → `fail`); words with digits stay whole."""
    if any(ch.isdigit() for ch in word) or len(word) <= 3:
        return word
    for suffix in ("ies", "ing", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def tokens(text: str) -> list[str]:
    return TOKEN.findall(normalise(text))


def content_stems(text: str, drop: frozenset[str] = frozenset()) -> list[str]:
    """The stems of the words that carry a fact: no stopwords, no cue words, no `drop` stems, in order, unique."""
    out: list[str] = []
    for tok in tokens(text):
        s = stem(tok)
        if tok in lexicon().stopwords or s in drop or s in out or len(tok) < 2:
            continue
        out.append(s)
    return out


def stem_set(text: str) -> frozenset[str]:
    """Every stem of the text, compound tokens (`pod/api-7d9f`) also split into their parts."""
    found: set[str] = set()
    for tok in tokens(text):
        found.add(stem(tok))
        found.update(stem(p) for p in re.split(r"[._:/-]", tok) if p)
    return frozenset(found)


def numbers(text: str) -> list[tuple[float, int, str]]:
    """Each free-standing number: (value, decimals, as written). Parts of identifiers and times are not numbers."""
    return [
        (float(m.group(1).replace(",", "") + (m.group(2) or "")), len(m.group(2) or ".") - 1, m.group(0))
        for m in NUMBER.finditer(text)
    ]


def identifiers(text: str) -> list[str]:
    """Tokens that name one thing: letters and digits mixed (`40p01`, `pod-7d9f8`, `10:02`, `v1.2`) or CamelCase."""
    ids = [t for t in tokens(text) if any(c.isdigit() for c in t) and not MEASURE.fullmatch(t)]
    return list(dict.fromkeys([*ids, *(m.group(0).lower() for m in CAMEL.finditer(text))]))
