"""Relevance, confidence and stance rules of the offline judge (its support model lives in
`pipeline.judges.offline.judge`; the stance reading in `pipeline.judges.offline.stance`; the word lists in
`pipeline.judges.offline.lexicon`). Rule sets, not fitted models: docs/judges/offline.md lists their
cues and limits, and `aee judges check --judge offline` measures them.

Relevance. A statement is filler when it is empty, a heading, or matches a filler pattern
(greeting, list introduction, sign-off, offer of more help, talk about the engine or the question
itself, a restated question) - and only if what is left once the pattern is taken out carries no
fact. A fact is a number, a name, or a few content words the question does not already contain.
So "Great question! Honey never spoils because ..." and "Canberra is the capital of Australia."
stay relevant, while "Great question!" and "Many people wonder how vaccines work." are filler. A
bare "Yes." / "No." answering a yes/no question is a direct answer, never filler.

Confidence. Hedges ("may", "it is unclear") and boosters ("clearly", "without doubt") are counted,
weighted, per sentence. An answer with boosters and no hedge is 5; hedges only go down to 1 as
their density grows; an answer with both lands on 3 or 4; an answer with neither is 4 (plain
assertion).

`CUES_VERSION` is part of the judge's prompt version: changing any rule here means bumping it, so
cached labels and built results are recomputed.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from pipeline.judges.offline import lexicon as lx
from pipeline.judges.offline.stance import Proposition, Reading, parse_query, statement_stance
from pipeline.judges.offline.text import WORD_RE, content_tokens, split_sentences, strip_markers

CUES_VERSION = "cues-v2"

# --------------------------------------------------------------------------------------------
# relevance
# --------------------------------------------------------------------------------------------

FILLER_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(p, re.I))
    for name, p in (
        ("greeting", r"^\s*(?:hi|hello|hey|greetings|dear)\b(?:\s+\w+){0,3}\s*(?:[.!?,]|$)"),
        ("greeting", r"^\s*(?:sure|certainly|of course|absolutely|great question|good question|"
                     r"what an? (?:great|good|fascinating|interesting|excellent) question)\s*[!.,:]"),
        ("greeting", r"^\s*thanks? (?:you )?for (?:the|this|your|asking)\b[^.!?]{0,40}[.!?]"),
        ("list intro", r"^\s*(?:here (?:are|is)|below (?:are|is)|the following (?:are|is))\b[^.!?:]{0,120}(?::|\.?\s*$)"),
        ("list intro", r"^\s*(?:some|a few|several) (?:of the )?(?:key |main |possible |common )?"
                       r"(?:points|reasons|ways|factors|arguments|things|options|tips|examples)\b[^.!?]{0,80}:\s*$"),
        ("list intro", r"^\s*there are (?:a few|several|some|many|a number of) (?:\w+ )?(?:things|ways|options|steps|"
                       r"factors|reasons|tips|points|considerations)\b[^.!?]{0,60}[.:]?\s*$"),
        ("sign-off", r"\b(?:i hope (?:this|that) (?:helps|clears|answers)|hope (?:this|that) (?:helps|clears|answers)|"
                     r"happy to help|good luck|take care|thanks for (?:reading|asking|your question|reaching out))\b"),
        ("sign-off", r"^\s*(?:happy \w+ing|stay (?:safe|warm|healthy|dry|cool)|enjoy (?:your|the)\b[^.!?]{0,40})\b[^.!?]{0,30}[.!]?\s*$"),
        ("sign-off", r"\bit(?:'s| is) (?:(?:all )?up to you|your (?:call|choice|decision))\b"),
        ("offer of more help", r"\b(?:let me know|feel free to|don't hesitate to|do not hesitate to)\b"),
        ("offer of more help", r"^\s*(?:would you like|do you want|want me to|shall i|should i)\b"),
        ("offer of more help", r"^\s*if you(?:'d| would)? (?:like|want|prefer),? i (?:can|could)\b"),
        ("offer of more help", r"\bi (?:can|could) (?:also )?(?:go deeper|go into|help|provide|explain|walk you|give you|"
                               r"suggest|share|expand|elaborate)\b[^.!?]*\b(?:if|should you|whenever)\b"),
        ("self reference", r"^\s*(?:as an ai|i am an ai|i'm an ai|as a language model)\b"),
        ("meta", r"^\s*(?:that'?s|this is|what) an? (?:\w+ )?(?:complex|difficult|great|good|tricky|interesting|"
                 r"fascinating|common|important) question\b"),
        ("meta", r"^\s*(?:in (?:summary|conclusion)|to (?:sum up|summarize|summarise|conclude))\s*[,:]?\s*$"),
        ("meta", r"\b(?:is|are|remains|has become) (?:a |an )?(?:\w+ )?(?:debated|contested|controversial|divisive|"
                 r"complex|tricky|hot|interesting|fascinating|popular|sensitive) (?:topic|question|issue|subject|debate)\b"),
        ("meta", r"^\s*there are (?:\w+ )?(?:arguments|views|opinions|perspectives) on (?:both|all|many) sides\b"),
        ("meta", r"^\s*let'?s (?:look at|explore|dive into|break down|take a look|consider|unpack)\b"),
        ("restated question", r"^\s*(?:you(?:'re| are)? (?:asked|asking|wondering|want to know)|many people (?:wonder|ask)|"
                              r"the question (?:of|is) whether|you asked)\b"),
        ("search", r"^\s*(?:according to (?:my|the) (?:search )?results|based on (?:my|the) (?:search )?results|"
                   r"i (?:found|searched)|searching for)\b[^.!?]{0,80}[:.,]?"),
    )
)
HEADING_RE = re.compile(r"^\s*(#{1,6}\s+\S.*|\*\*[^*]{1,80}\*\*:?|[A-Z][^.!?]{0,60}:)\s*$")
# words that say something about the question rather than answer it
META_WORDS = frozenset(content_tokens("""question questions topic interesting complex exactly really actually
asked ask asking wonder wondering people look explore consider answer explain let one debate debated
discuss great good tricky simple know want so well i'd i'm i'll you'd you're don't can't glad happy
help like love detail detailed breakdown opinion opinions personal information info assist further need
hope feel free thanks thank reach reaching welcome sure""".replace("\n", " ")))
# patterns whose whole sentence is the filler: what is left counts only with a number or a name in a real clause
CLOSING_PATTERNS = frozenset({"sign-off", "offer of more help", "self reference"})
CLOSING_FACT_TOKENS = 5
YES_NO_START_RE = re.compile(r"^\s*(?:is|are|was|were|does|do|did|can|could|should|will|would|has|have|had|may|must)\b", re.I)
REQUEST_RE = re.compile(r"^\s*(?:can|could|would|will) you\b", re.I)
BARE_ANSWER_RE = re.compile(r"^\s*(?:yes|no|yep|nope|absolutely(?: not)?|certainly(?: not)?|definitely(?: not)?|"
                            r"of course(?: not)?|not really|sure|correct|incorrect|true|false|it depends)\s*[.!]?\s*$", re.I)
NUMBER_RE = re.compile(r"\d")
NAME_RE = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-zA-Z\-]{2,}|[A-Z]{2,})\b")
FACT_WORDS = 3  # new content words that make a remainder a statement of its own


def _fact(text: str, query_tokens: set[str], query_names: set[str], closing: bool = False) -> str:
    """What makes this text carry a fact ("" when nothing does): a number or a name the question
    does not contain, or at least FACT_WORDS content words it does not contain. A question carries
    none; after a closing pattern (sign-off, offer, talk about the engine) only a number or a name
    in a clause of CLOSING_FACT_TOKENS content words does."""
    if text.rstrip().endswith("?"):
        return ""
    tokens = [t for t in content_tokens(text) if t not in META_WORDS]
    if closing and len(tokens) < CLOSING_FACT_TOKENS:
        return ""
    new = [t for t in tokens if t not in query_tokens]
    numbers = [t for t in new if NUMBER_RE.search(t)]
    if numbers and len(tokens) >= 2:
        return f"number {numbers[0]}"
    names = [m.group(1) for m in NAME_RE.finditer(text) if m.group(1).lower() not in query_names]
    if names and len(tokens) >= 2:
        return f"name {names[0]}"
    if len(new) >= FACT_WORDS and not closing:
        return f"new content: {' '.join(new[:3])}"
    return ""


def filler_cue(text: str, query: str) -> tuple[str, str]:
    """(cue, fact): the filler cue that makes the statement filler ("" when it is relevant), and the
    fact that kept a statement with a filler pattern relevant ("" when none)."""
    stripped = strip_markers(text).strip()
    if not any(c.isalnum() for c in stripped):
        return "empty", ""
    if HEADING_RE.match(stripped) and len(stripped.split()) <= 10:
        return "heading", ""
    query_tokens = set(content_tokens(query))
    query_names = {w.lower() for w in re.findall(r"[A-Za-z][\w\-]+", query)}
    if BARE_ANSWER_RE.match(stripped) and YES_NO_START_RE.match(query) and not REQUEST_RE.match(query):
        return "", "a direct yes/no answer"
    for name, pattern in FILLER_PATTERNS:
        m = pattern.search(stripped)
        if m:
            rest = (stripped[: m.start()] + " " + stripped[m.end():]).strip()
            fact = _fact(rest, query_tokens, query_names, closing=name in CLOSING_PATTERNS)
            if fact:
                return "", fact
            return f"{name}: {m.group(0).strip()[:60]}", ""
    tokens = [t for t in content_tokens(stripped) if t not in META_WORDS]
    if query_tokens and tokens and all(t in query_tokens for t in tokens) and len(tokens) <= 20:
        return "restates the question", ""
    return "", ""


# --------------------------------------------------------------------------------------------
# confidence
# --------------------------------------------------------------------------------------------

_PHRASE_RE_CACHE: dict[str, re.Pattern[str]] = {}


def _count_phrases(text: str, lexicon: dict[str, float]) -> tuple[float, list[str]]:
    total, hits = 0.0, []
    for phrase, weight in lexicon.items():
        pat = _PHRASE_RE_CACHE.get(phrase)
        if pat is None:
            pat = _PHRASE_RE_CACHE[phrase] = re.compile(r"\b" + re.escape(phrase) + r"\b", re.I)
        k = len(pat.findall(text))
        if k:
            total += weight * k
            hits.append(phrase)
    return total, hits


def confidence_level(answer_text: str) -> tuple[int, dict[str, Any], str]:
    """(level 1..5, raw details, cue) for a whole answer (see the module docstring)."""
    text = strip_markers(answer_text)
    sentences = max(len(split_sentences(text)), 1)
    hedge, hedge_hits = _count_phrases(text, lx.HEDGES)
    boost, boost_hits = _count_phrases(text, lx.BOOSTERS)
    net = (boost - hedge) / sentences
    if hedge == 0:
        level = 5 if boost / sentences >= 0.2 else 4
    elif boost == 0:
        level = 4 if net >= -0.3 else 3 if net >= -1.0 else 2 if net >= -2.2 else 1
    else:
        level = 5 if net >= 0.5 else 4 if net >= 0 else 3 if net >= -1.5 else 2
    raw = {"hedges": hedge_hits[:20], "boosters": boost_hits[:20], "sentences": sentences,
           "net_per_sentence": round(net, 3), "words": len(WORD_RE.findall(text.lower()))}
    cue = ", ".join((boost_hits if net >= 0 else hedge_hits)[:5])
    return level, raw, cue


# --------------------------------------------------------------------------------------------
# stance
# --------------------------------------------------------------------------------------------


def stance_readings(query: str, statements: Sequence[str]) -> tuple[Proposition, list[Reading]]:
    """The question's proposition and one reading per statement text (markers stripped here)."""
    prop = parse_query(query)
    return prop, [statement_stance(strip_markers(s), prop) for s in statements]
