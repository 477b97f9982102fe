"""Wording cues: hedges, absolute scope, causality, certainty, negation, external topics, injection.

Each cue is a plain regular expression over the claim (or the evidence), so the
reference verifier's reasons can name the exact words that decided.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from harness.system.verifiers.reference.text import fold_phrases, stem


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


HEDGE = _rx(
    r"\b(?:likely|unlikely|probabl[ey]|possibly|possibility|may|might|could|suggests?|suggesting|suggestive|"
    r"appears?(?: to)?|seems?(?: to)?|consistent with|points? to|pointing to|presumabl[ey]|perhaps|potential(?:ly)?|"
    r"plausibl[ey]|suspect(?:ed)?|hypothes[ie]s|hypothesi[sz]e[ds]?|candidate|indicative of|most likely|"
    r"we believe|believed|apparently|i think|one explanation|would explain|in line with)\b"
)
ABSOLUTE = _rx(
    r"(?<!almost )(?<!nearly )(?<!not )(?<!virtually )\b(?:all|everyone|everything|entire(?:ly)?|whole|always|never|completely|fully|totally|universally|"
    r"every(?!\s+(?:\d+\s*|single\s+|one\s+of\s+the\s+)?(?:minute|second|hour|day|week|sample|scrape|"
    r"interval|run|time|few)s?\b)|each(?=\s+(?!time\b|run\b)[a-z])|"
    r"cluster[- ]wide|fleet[- ]wide|system[- ]wide|globally|everywhere|across (?:the )?(?:board|fleet|"
    r"cluster|regions|zones|services)|any request|100 ?%|without exception|permanently|constantly|continuously)\b"
)
CAUSAL = _rx(
    r"\b(?:root[- ]cause[sd]?|caused|causes|causing|because(?: of)?|due to|led to|leads? to|leading to|"
    r"result(?:ed|s)? in|as a result of|triggered|triggers|responsible for|the reason|explains?|driven by|"
    r"stems? from|attributable to|is behind|was behind|therefore|hence|culprit|source of the|(?:the|a|main) cause|"
    r"cause of)\b"
)
CERTAINTY = _rx(
    r"\b(?:definitely|certainly|clearly|undoubtedly|unquestionably|proves?|proven|guarantee[ds]?|solely|"
    r"the only (?:cause|reason)|sole (?:cause|reason)|beyond doubt|conclusively|confirms? that|"
    r"will (?:fix|resolve|solve|stop|prevent|eliminate|restore|end|cure)|would (?:fix|resolve|solve|eliminate))\b"
)
STRONG_CAUSAL = _rx(
    r"root[- ]cause|(?:the|a|main|sole|only) cause|cause of|culprit|responsible for|is behind|was behind"
)
CAUSE_FOLLOWS = _rx(r"because|due to|caused by|as a result of|stems? from|driven by|attributable to|the reason")
# evidence wording that states a cause or a full scope itself
EVIDENCE_CAUSAL = _rx(r"\b(?:caused by|due to|because|reason|root cause|triggered by|as a result)\b")
EVIDENCE_SCOPE = _rx(r"\b(?:all|every|each|entire|whole|100 ?%)\b|\b([2-9]|\d{2,})\s*(?:/|of|out of)\s*\1\b")

CUE_WORDS = frozenset(
    stem(w)
    for w in """likely unlikely probably probable possibly possible may might could suggest suggests suggesting
    appear appears seem seems consistent point points pointing presumably perhaps potential potentially
    plausibly suspect suspected hypothesis candidate indicative believe apparently explanation explain explains
    all every each entire entirely whole always never none completely fully totally universally globally everywhere
    permanently constantly continuously root cause caused causes causing because due led lead leads leading
    result resulted results triggered triggers responsible reason driven stem stems attributable behind therefore
    hence culprit definitely certainly clearly undoubtedly prove proves proven guaranteed solely only sole
    conclusively confirm confirms confirmed""".split()
)


def cue(pattern: re.Pattern[str], text: str) -> str | None:
    """The first words of `text` that match the cue, or None."""
    m = pattern.search(text)
    return m.group(0) if m else None


# --- negation ------------------------------------------------------------------------

_NEGATED = _rx(
    r"\b(?:no|zero|none of the|without)\s+(?:new\s+|further\s+|other\s+|recent\s+|more\s+|such\s+)?([a-z][\w-]*)"
    r"|\b(?:not|never|n't|nor|neither)\s+(?:been\s+|be\s+|any\s+|a\s+|an\s+|the\s+|once\s+|seen\s+|show\s+|shown\s+)?"
    r"([a-z][\w-]*)"
)


def negated_stems(text: str) -> set[str]:
    """What the text says is absent or did not happen: `no errors` → error, `did not restart` → restart."""
    folded = fold_phrases(text).replace("n't", " not")
    return {stem(m.group(1) or m.group(2)) for m in _NEGATED.finditer(folded)}


EVENT_STEMS = frozenset(
    stem(w)
    for w in """error errors restart restarts restarted timeout oomkilled crash crashed crashloopbackoff fail failed
    failure failures exception exceptions evicted eviction dropped drop reject rejected refused deadlock throttle
    alert alerts firing retry retries killed panic backlog warning warnings outage unhealthy 5xx
    diskfull evict""".split()
)

_ZERO_BEFORE = _rx(r"\b(?:no|zero|none|without|0)\s+(?:new\s+|recent\s+|further\s+)?$")
_ZERO_AFTER = _rx(r"^[\w-]*[\"']?(?:\s*[:=]\s*|\s+)[\"']?(?:0(?:\.0+)?%?|none|false|null|\[\]|\{\})(?![\w./])")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")


def polarity(text: str, target: str) -> tuple[int, int]:
    """How often `target` (a stem) occurs in phrase-folded `text` stated as present, and as zero / absent."""
    folded = text
    positive = zero = 0
    for m in _WORD.finditer(folded):
        if stem(m.group(0)) != target and not stem(m.group(0)).startswith(target + "_"):
            continue
        before = folded[max(0, m.start() - 16) : m.start()]
        after = folded[m.end() : m.end() + 12]
        if _ZERO_BEFORE.search(before) or _ZERO_AFTER.search(after):
            zero += 1
        else:
            positive += 1
    return positive, zero


# --- external topics -----------------------------------------------------------------


@dataclass(frozen=True)
class Topic:
    """A kind of fact only some tools observe: claim wording, and what shows a tool looked."""

    name: str
    claim: re.Pattern[str]
    tool: re.Pattern[str]
    evidence: re.Pattern[str]


TOPICS: tuple[Topic, ...] = (
    Topic(
        "a deploy or config change",
        _rx(
            r"\b(?:(?:re)?deploy(?:ed|s|ing)?|deploy(?:ment)? of|(?:recent|new|latest|bad|last|faulty|earlier|"
            r"today's|morning's) (?:deploy(?:ment)?|release|rollout|change)|rolled (?:out|back)|rollout|rollback|"
            r"released|(?:'s|s') (?:release|deploy(?:ment)?|rollout|upgrade)|release of|new (?:version|release|build)|upgraded?|config(?:uration)? (?:change|push|update)|"
            r"changed (?:the )?config\w*|feature flag|hotfix|code change|pushed (?:an? |the )?(?:new )?[\w-]* ?config\w*|new [\w-]+ (?:route )?config\w*)\b"
        ),
        _rx(r"deploy|release|rollout|change|argo|helm|spinnaker|audit|git|history|revision|ci_?cd"),
        _rx(r"deploy|rollout|rolled|release|revision|ScalingReplicaSet|helm|argocd|image[: ]|commit|changelog"),
    ),
    Topic(
        "a provider or vendor outage",
        _rx(
            r"\b(?:AWS|GCP|Azure|Google Cloud|cloud provider|(?:upstream |external |third[- ]party )?provider|vendor|"
            r"third[- ]party|Cloudflare|Akamai|Fastly|Stripe|PayPal|Adyen|Twilio|SendGrid|Okta|Auth0|ISP|partner|"
            r"status ?page|status\.\w+|had (?:an?|\w+ \w+) outage|(?:partial|major|regional|provider|vendor|cloud|"
            r"upstream) outage)\b"
        ),
        _rx(r"status|vendor|provider|health_dashboard|third_party|cloud_health"),
        _rx(r"status ?page|aws health|provider status|vendor status|incident (?:report|update)"),
    ),
    Topic(
        "customer or business impact",
        _rx(
            r"\b(?:(?:customers?|end[- ]users?|users?) (?:are |were |have been |could |cannot |can't )?(?:affected|"
            r"impacted|unable|complain\w*|seeing|experienc\w*|churn\w*|los\w+)|(?:lost|losing|loss of) (?:revenue|sales|"
            r"orders|customers)|revenue (?:loss|impact|drop)|SLA (?:breach|violation)|business impact|support tickets?|"
            r"complaints?|churn|marketing|campaign|promotion|newsletter|email blast|black friday)\b"
        ),
        _rx(r"ticket|support|analytics|business|crm|zendesk|revenue|sla"),
        _rx(r"customer|ticket|complain|revenue"),
    ),
    Topic(
        "a person's action or intent",
        _rx(
            r"\b(?:someone|somebody|an? (?:engineer|developer|operator|admin|dba)|team|on-?call|manually|by hand|"
            r"intentional(?:ly)?|on purpose|scheduled maintenance|maintenance window|change (?:request|ticket)|"
            r"paged|pager|told us|confirmed they|announc\w*|(?:change )?freeze|tickets?|load test|"
            r"(?:new|large|enterprise|big) customers?)\b"
        ),
        _rx(r"audit|change|maintenance|calendar|ticket|pager|slack|chat"),
        _rx(r"\baudit|by user|maintenance window|change request"),
    ),
    Topic(
        "something before the session's window",
        _rx(
            r"\b(?:yesterday|last (?:week|night|month|sprint|quarter|monday|tuesday|wednesday|thursday|friday|"
            r"saturday|sunday)|earlier this week|this morning|(?:on|since) (?:monday|tuesday|wednesday|thursday|"
            r"friday|saturday|sunday))\b"
        ),
        _rx(r"history|audit|calendar|change"),
        _rx(r"(?!)"),  # nothing in a tool result shows it by itself
    ),
    Topic(
        "code review or source history",
        _rx(r"\b(?:merged|code review|reviewed|pull request|PR\b|PR ?#\d+|git blame|commit(?:ted)? by)"),
        _rx(r"git|review|scm|pull|vcs|github|gitlab|bitbucket"),
        _rx(r"\breview|\bmerged|pull request"),
    ),
    Topic(
        "an attack or abuse",
        _rx(r"\b(?:attack(?:er|ers|s)?|DDoS|malicious|breach|hacker|bot traffic|credential stuffing|scraper)\b"),
        _rx(r"waf|security|firewall|ids|siem"),
        _rx(r"waf|blocked|attack|malicious|bot"),
    ),
)


_ANY_TOPIC = re.compile("|".join(f"(?:{t.claim.pattern})" for t in TOPICS), re.IGNORECASE)


def external_topics(claim: str) -> list[tuple[Topic, list[str]]]:
    """The topics the claim is about, each with the words that said so."""
    if not _ANY_TOPIC.search(claim):  # one scan for the common case: no topic at all
        return []
    found = [(t, [m.group(0) for m in t.claim.finditer(claim)]) for t in TOPICS]
    return [(t, words) for t, words in found if words]


def topic_observed(topic: Topic, words: Sequence[str], tools: Iterable[tuple[str, str]]) -> bool:
    """Whether a tool of the session looked at the topic, or its output shows every one of the claim's words."""
    tools = list(tools)
    if any(topic.tool.search(name) or topic.evidence.search(text) for name, text in tools):
        return True
    session = "\n".join(text.lower() for _, text in tools)
    return all(re.search(rf"\b{re.escape(w.lower())}\b", session) for w in words)


# --- prompt injection ----------------------------------------------------------------

INJECTION = _rx(
    r"\b(?:ignore|disregard|forget|override|bypass)\b[^.\n]{0,60}\b(?:instructions?|prompts?|rules?|guidelines|"
    r"previous|above|prior|everything)\b"
    r"|\b(?:you are (?:now )?(?:an?|the)|as an ai|system prompt|new instructions?|assistant:|system:|"
    r"<\|im_start\|>|\[/?inst\])"
    r"|\b(?:verifier|grader|evaluator|reviewer|the model|llm)s?\b[^.\n]{0,60}\b(?:must|should|shall|will|needs? to)\b"
    r"|\b(?:mark|classify|label|rate|treat)\b[^.\n]{0,40}\b(?:claims?|facts?|statements?|answer)\b[^.\n]{0,40}"
    r"\b(?:as|is)\b"
    r"|\b(?:direct_observation|reasonable_inference|groundedness|claim_checks|verdict)\b"
)
_SENTENCE = re.compile(r"(?:[^\n.!?]|[.!?](?=\w))*(?:[.!?]+|\n|$)")


def _clause_start(piece: str, at: int) -> int:
    """Where the instruction's clause begins: after the last separator (` -- `, `:`, `;`, `|`) before it."""
    seps = [piece.rfind(sep, 0, at) for sep in (" -- ", " - ", ": ", "; ", "| ", "\t")]
    best = max(seps)
    return best + 1 if best >= 0 else 0


def strip_injection(text: str) -> tuple[str, int]:
    """Drop the sentences of tool output that address the verifier: tool results are data, not orders."""
    if not INJECTION.search(text):
        return text, 0
    kept: list[str] = []
    removed = 0
    for m in _SENTENCE.finditer(text):
        piece = m.group(0)
        hit = INJECTION.search(piece) if piece else None
        if hit:
            removed += 1
            cut = _clause_start(piece, hit.start())
            tail = piece[cut:]
            blank = " " * len(tail) if not tail.endswith("\n") else " " * (len(tail) - 1) + "\n"
            kept.append(piece[:cut] + blank)
        else:
            kept.append(piece)
    return "".join(kept), removed
