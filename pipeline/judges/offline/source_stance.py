"""Offline source stance: which side of a debate question a listed source takes, read from cues.

The question is parsed into a proposition (its content words) and a polarity (+1 when the wording
asserts the proposition, -1 when it denies it: "Is X not Y?", "arguments against X"). Each sentence
of the source that is about the proposition (shares enough of its words) is read as affirming or
denying it: a negation or a denial phrase ("no evidence", "a myth") flips it, and so does an
antonym of one of the proposition's words ("safe" asked, "harmful" written). Sentences that only
report others' views ("critics argue") count half. The source's label follows the balance:

- `agree` / `disagree`: at least two sentences' worth of weight on one side and three quarters of
  the weight there, relative to the side the question's wording takes;
- `neutral`: both sides present in comparable weight, or explicit "the evidence is mixed" language
  with no clear side;
- `unknown`: nothing in the source is about the question, or too little to tell. The judge says so
  rather than guess; the metrics leave unknown sources out and go null when too many are unknown.

These are word cues, not understanding: sarcasm, long-range negation, and sources that discuss a
different proposition with the same words fool them. Treat the labels as a cheap first pass and
check them against the LLM judge or recorded labels before drawing conclusions.

Note for the offline-cue rework (helpers 13a/13b): `parse_query` is a small query proposition /
polarity parser written here so this ability could land on its own; `pipeline/judges/offline/cues.py`
is getting one as well. The two should be unified into one parser once both are merged.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from pipeline.records import Answer, Source, Verdict

RULES_VERSION = "source-stance-cues-v1"
MAX_SOURCE_CHARS = 100_000  # a source longer than this is read up to here (the judge stays bounded)
MAX_SENTENCE_CHARS = 500
EVIDENCE_CHARS = 300

_WORD = re.compile(r"[a-z0-9]+")
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_STOP = frozenset(
    """a an the of to in on for and or but with by at from as is are was were be been being do does did
    it its this that these those there their they them he she we you i my our your his her than then
    so such very most least much many some any all each other about into over under after
    before between during while because if whether what which who whom whose when where why how can
    could should would will shall may might must have has had having not no never also just really
    truly actually indeed still yet ever true really""".split()
)
_NEGATORS = frozenset("not no never neither nor without none nobody nothing cannot".split())
# Phrases that deny the proposition they sit next to ("the claim that X is a myth").
_DENIALS = (
    "no evidence", "little evidence", "insufficient evidence", "no link", "no association", "no connection",
    "not linked", "not associated", "myth", "misconception", "debunked", "unfounded", "disproven", "disproved",
    "false", "untrue", "refuted", "fails to", "failed to", "did not find", "found no", "rejected", "rejects",
    "contrary to", "no proof", "no support for", "not supported",
)
_REPORTED = (
    "critics argue", "critics say", "critics claim", "opponents argue", "opponents say", "opponents claim",
    "proponents argue", "proponents say", "supporters argue", "supporters say", "some argue", "some claim",
    "some say", "some people say", "some people believe", "it is claimed", "it is often claimed", "claim that", "claims that", "argue that",
    "believe that", "according to some",
)
_BALANCED = (
    "mixed evidence", "evidence is mixed", "results are mixed", "inconclusive", "no consensus", "not settled",
    "remains unclear", "remains debated", "both sides", "on the other hand", "pros and cons", "divided",
    "more research is needed", "jury is still out", "depends on",
)
# Words whose presence answers the proposition the other way round ("safe" asked, "harmful" written).
_ANTONYM_PAIRS = (
    ("safe", "harmful"), ("safe", "dangerous"), ("safe", "unsafe"), ("safe", "toxic"), ("safe", "risky"),
    ("effective", "ineffective"), ("effective", "useless"), ("good", "bad"), ("good", "evil"),
    ("beneficial", "harmful"), ("beneficial", "detrimental"), ("helpful", "harmful"), ("improve", "worsen"),
    ("improve", "harm"), ("increase", "decrease"), ("increase", "reduce"), ("raise", "lower"), ("more", "less"),
    ("better", "worse"), ("abolish", "keep"), ("abolish", "preserve"), ("abolish", "retain"),
    ("abolish", "maintain"), ("ban", "allow"), ("ban", "permit"), ("ban", "legalize"), ("banned", "legal"),
    ("legal", "illegal"), ("healthy", "unhealthy"), ("important", "unimportant"), ("necessary", "unnecessary"),
    ("ethical", "unethical"), ("fair", "unfair"), ("valued", "undervalued"), ("true", "false"),
    ("cause", "prevent"), ("linked", "unrelated"), ("green", "polluting"), ("sustainable", "unsustainable"),
    ("worth", "worthless"), ("needed", "unneeded"), ("compulsory", "voluntary"), ("mandatory", "voluntary"),
)
# The words that say what a question claims about its subject ("ban", "safe", "linked"), each with
# near-synonyms a source may use instead. A sentence is about the question only when it uses one of
# the question's predicate words (or a synonym, or an antonym): naming the subject is not enough.
_PREDICATE_SYNONYMS = {
    "ban": ("prohibit", "outlaw", "forbid", "bar", "restrict", "close", "closure"), "abolish": ("eliminate", "scrap", "abolition", "end"),
    "allow": ("permit", "legalize", "legalise"), "safe": ("harmless",), "harmful": ("damaging", "hurt"),
    "link": ("associate", "connect", "tie", "cause"), "cause": ("lead", "trigger", "produce"),
    "improve": ("boost", "enhance", "benefit", "help"), "effective": ("work", "works", "efficacious"),
    "beneficial": ("benefit", "help", "helpful", "good"), "increase": ("raise", "rise", "grow", "boost"),
    "reduce": ("cut", "lower", "decrease", "lessen"), "better": ("superior",), "worse": ("inferior",),
    "need": ("require", "necessary"), "compulsory": ("mandatory", "required", "obligatory"),
    "stop": ("end", "cease", "halt"), "valued": ("value", "respect"),
}

# Question openings that carry no proposition content ("Why should ...", "Is it true that ...").
_OPENING = re.compile(
    r"^(?:(?:why|how come)\s+)?(?:is it true that|is it the case that|do you think that|do you think|"
    r"should|shouldn't|is|isn't|are|aren't|do|don't|does|doesn't|did|didn't|can|can't|could|couldn't|will|won't|"
    r"would|wouldn't|was|wasn't|were|weren't|has|hasn't|have|haven't)\b\s*",
)
_AGAINST = re.compile(r"\b(?:arguments?|reasons?|case)\s+against\b")


_IRREGULAR = {"kept": "keep", "held": "hold", "led": "lead", "made": "make", "paid": "pay", "better": "better",
              "worse": "worse", "children": "child", "people": "people", "women": "woman", "men": "man"}


def _stem(word: str) -> str:
    """A tiny suffix stripper: plural and tense variants meet ("linked", "links" -> "link",
    "banned" -> "ban", "zoos" -> "zoo")."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= 3 or word.isdigit():
        return word
    return _drop_final_e(_strip_suffix(word))


def _drop_final_e(word: str) -> str:
    return word[:-1] if word.endswith("e") and len(word) > 3 else word  # "preserve" / "preserved"


def _strip_suffix(word: str) -> str:
    if word.endswith(("ies", "ied")) and len(word) > 4:
        return word[:-3] + "y"  # "cities" -> "city", "studied" -> "study"
    for suffix in ("ations", "ation", "ments", "ment", "ness", "ings", "ing", "ied", "ies", "ed", "ly", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not (suffix == "s" and word.endswith("ss")):
            base = word[: -len(suffix)]
            if suffix in ("ed", "ing", "ings") and base[-1] == base[-2] and base[-1] not in "aeioulsz":
                base = base[:-1]  # "banned" -> "ban", "stopping" -> "stop"
            return base
    return word


def _expand(text: str) -> str:
    """Lower-case with contractions opened ("isn't" -> "is not"), so negation is one word."""
    low = text.lower().replace("\u2019", "'")
    low = re.sub(r"\bcan't\b|\bcannot\b", "can not", low)
    low = re.sub(r"\bwon't\b", "will not", low)
    return re.sub(r"n't\b", " not", low)


def _antonyms() -> dict[str, set[str]]:
    table: dict[str, set[str]] = {}
    for a, b in _ANTONYM_PAIRS:
        table.setdefault(_stem(a), set()).add(_stem(b))
        table.setdefault(_stem(b), set()).add(_stem(a))
    return table


_ANTONYMS = _antonyms()
_PREDICATES: dict[str, set[str]] = {_stem(k): {_stem(w) for w in v} for k, v in _PREDICATE_SYNONYMS.items()}


@dataclass(frozen=True)
class QueryProposition:
    """What a yes/no or "why should" question asks about, as content-word stems, and which way its
    wording leans: +1 asserts the proposition, -1 denies it."""

    query: str
    terms: tuple[str, ...]
    polarity: int
    predicates: tuple[str, ...] = ()  # the terms that carry the claim ("ban", "safe"); the rest name the subject


@lru_cache(maxsize=4096)
def parse_query(query: str) -> QueryProposition:
    """Proposition words and polarity of a debate question (see the module docstring)."""
    low = query.lower().replace("\u2019", "'").strip().rstrip("?!. ")
    polarity = 1
    if _AGAINST.search(low):
        polarity = -polarity
        low = _AGAINST.sub(" ", low)
    # A negative opening is rhetorical and leans the same way as the plain one ("Isn't X safe?"
    # suggests X is safe; "Why shouldn't X be banned?" argues for a ban): only inner negation flips.
    low = _OPENING.sub("", low, count=1)
    words = _WORD.findall(_expand(low))
    if sum(1 for w in words if w in _NEGATORS) % 2:
        polarity = -polarity
    terms = tuple(dict.fromkeys(_stem(w) for w in words if w not in _STOP and w not in _NEGATORS and len(w) > 1))
    return QueryProposition(query, terms, polarity, tuple(t for t in terms if t in _PREDICATES or t in _ANTONYMS))


@dataclass(frozen=True)
class SentenceReading:
    """One source sentence that is about the proposition, read as affirming (+1) or denying (-1)."""

    text: str
    side: int  # relative to the proposition itself, before the question's polarity
    weight: float  # 1, or 0.5 for a reported view ("critics argue ...")
    cues: tuple[str, ...]


def _has(text: str, phrase: str) -> bool:
    return re.search(r"\b" + re.escape(phrase) + r"\b", text) is not None


def read_sentence(sentence: str, prop: QueryProposition) -> SentenceReading | None:
    """How one sentence answers the proposition, or None when it is not about it."""
    if not prop.terms:
        return None
    low = _expand(sentence)
    words = _WORD.findall(low)
    stems = {_stem(w) for w in words}
    matched = [t for t in prop.terms if t in stems or _PREDICATES.get(t, set()) & stems]
    flipped = [t for t in prop.terms if t not in matched and _ANTONYMS.get(t, set()) & stems]
    if prop.predicates:
        # a predicate word (or its synonym or antonym) and half the subject words
        if not any(t in prop.predicates for t in matched + flipped):
            return None
        subject = [t for t in prop.terms if t not in prop.predicates]
        if sum(1 for t in subject if t in stems) < -(-len(subject) // 2):
            return None
    else:
        need = len(prop.terms) if len(prop.terms) <= 2 else max(2, -(-len(prop.terms) // 2))
        if len(matched) + len(flipped) < need:
            return None
    cues: list[str] = []
    sign = 1
    # Any negation or denial flips the sentence. Not parity: a sentence that denies twice ("does
    # not cause cancer; the link is a myth") is far commoner than a double negative.
    negators = [w for w in words if w in _NEGATORS]
    denials = [p for p in _DENIALS if _has(low, p)]
    if negators or denials:
        sign = -sign
    cues += negators[:2] + denials[:2]
    if flipped:
        sign = -sign
        cues += [f"opposite of {t!r}" for t in flipped[:2]]
    reported = [p for p in _REPORTED if _has(low, p)]
    cues += reported[:1]
    return SentenceReading(sentence.strip()[:MAX_SENTENCE_CHARS], sign, 0.5 if reported else 1.0, tuple(cues))


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCES.split(text[:MAX_SOURCE_CHARS]) if any(c.isalnum() for c in s)]


def source_side(text: str, prop: QueryProposition) -> tuple[str, str, dict]:
    """(label, evidence sentence, raw details) for one source's text on a question's proposition."""
    readings = [r for r in (read_sentence(s, prop) for s in _sentences(text)) if r is not None]
    balanced = [p for p in _BALANCED if _has(_expand(text[:MAX_SOURCE_CHARS]), p)]
    pro = sum(r.weight for r in readings if r.side * prop.polarity > 0)
    con = sum(r.weight for r in readings if r.side * prop.polarity < 0)
    total = pro + con
    raw: dict = {"rules": RULES_VERSION, "proposition": list(prop.terms), "query_polarity": prop.polarity,
                 "sentences_about_query": len(readings), "agree_weight": pro, "disagree_weight": con,
                 "balanced_cues": balanced[:5],
                 "readings": [{"side": r.side * prop.polarity, "weight": r.weight, "cues": list(r.cues),
                               "text": r.text[:160]} for r in readings[:8]]}
    if not readings:
        raw["why"] = "no sentence of the source is about the question"
        return "unknown", "", raw
    dominant = max(pro, con)
    if dominant >= 2 and dominant >= 0.75 * total:
        side = 1 if pro > con else -1
        label = "agree" if side > 0 else "disagree"
        best = next(r for r in readings if r.side * prop.polarity == side)
        raw["why"] = f"{dominant:g} of {total:g} sentence weight on one side"
        return label, best.text[:EVIDENCE_CHARS], raw
    if (pro >= 1 and con >= 1 and min(pro, con) >= 0.5 * dominant) or (len(balanced) >= 1 and total <= 1):
        raw["why"] = "both sides in comparable weight" if pro and con else "mixed-evidence language, no clear side"
        return "neutral", (balanced[0] if balanced and not (pro and con) else readings[0].text[:EVIDENCE_CHARS]), raw
    raw["why"] = f"too little to tell ({pro:g} agree, {con:g} disagree sentence weight)"
    return "unknown", "", raw


def offline_source_stance(answer: Answer, sources: Sequence[Source], judge: str, prompt_version: str) -> list[Verdict]:
    """One `source_stance` verdict per source with text (sources without text get `unknown`).
    The verdicts carry the judge's own prompt version, like its other labels; the version of these
    rules is in `raw` ("rules") and in the judge's cache fingerprint."""
    prop = parse_query(answer.query)
    out = []
    for source in sources:
        if not (source.text or "").strip():
            label, evidence, raw = "unknown", "", {"rules": RULES_VERSION, "why": "the source has no text"}
        else:
            label, evidence, raw = source_side(source.text, prop)
        out.append(Verdict(answer.answer_id, "source_stance", label, judge, prompt_version,
                           raw=json.dumps(raw, ensure_ascii=False), source_index=source.index, evidence=evidence))
    return out
