"""Words as the offline support judge compares them: one form per word, figures as values, the
direction a word states, negation, clauses and names.

`words(text)` turns a text into `Word`s: lower-cased content words brought to one form (irregular
verbs to their base: "took" = "take"; British and American spelling: "metre" = "meter",
"organisation" = "organization"; a light suffix stripper: "increased" = "increase"; a few general
synonym sets: "begin" = "start", "large" = "big"; the verbs of a rising or falling quantity to "^up"
and "^down") and every figure as its value token from `offline_numbers` ("1.2 million" and
"1,200,000" are the same word). Each word keeps whether it was written with a capital inside a
sentence, which is how names are told from common words.

`polarity(words)` is negated or not (an odd number of negation cues, "found little link" and "no
significant difference" counting as one); `directions(words)` are the (dimension, sign) pairs the
words state ("raised" = amount +1, "cut" = amount -1, "cheaper" = cost -1); `clauses(text)` cuts a
sentence where a comma, semicolon, colon, dash or a contrast word ("although", "but", "while")
opens a new clause.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from functools import lru_cache

from pipeline.judges.offline.numbers import MAX_TEXT_CHARS, Figure, figure_token, figures
from pipeline.judges.offline.text import STOPWORDS

_IRREGULAR_FORMS = """
take took taken | grow grew grown | rise rose risen | fall fell fallen | win won | lose lost | begin began begun |
build built | buy bought | bring brought | catch caught | choose chose chosen | come came | draw drew drawn |
drive drove driven | eat ate eaten | find found | fly flew flown | forget forgot forgotten | give gave given |
go went gone | get got gotten | hold held | keep kept | know knew known | lead led | lend lent | make made |
mean meant | meet met | pay paid | run ran | say said | sell sold | send sent | shake shook shaken |
shoot shot | show showed shown | shrink shrank shrunk | sink sank sunk | sleep slept | spend spent |
speak spoke spoken | stand stood | strike struck | swim swam swum | teach taught | think thought | tell told |
understand understood | wake woke woken | wear wore worn | write wrote written | hide hid hidden | lay laid |
ride rode ridden | ring rang rung | sing sang sung | see saw seen | sit sat | fight fought | seek sought |
feel felt | deal dealt | dig dug | feed fed | hang hung | spin spun | steal stole stolen | stick stuck |
throw threw thrown | freeze froze frozen | break broke broken | arise arose arisen | become became |
beat beaten | bite bit bitten | blow blew blown | flee fled | forbid forbade forbidden | overcome overcame |
leave left | split split | spread spread | cost cost | hit hit | hurt hurt | let let | put put | quit quit |
shut shut | slide slid | speed sped | undertake undertook undertaken | withdraw withdrew withdrawn |
child children | person people | man men | woman women | mouse mice | tooth teeth | foot feet | die dead
"""
_SYNONYM_SETS = """
big large huge | small little tiny | start begin commence | finish end conclude | buy purchase |
show demonstrate | use utilize utilise | help assist aid | need require | get obtain | child kid |
doctor physician | car automobile | fast quick rapid | enough sufficient | type kind sort |
main primary principal chief | illness disease sickness | allow permit | ban prohibit forbid outlaw |
wealthy rich | nation country | perhaps maybe | almost nearly | significant substantial considerable |
study research | examine investigate | method approach | shows indicates | build construct | say state |
choose select | try attempt | enlarge expand | link association connection relationship correlation |
hurt injure harm | death fatality | reply answer respond | danger risk hazard | ancient old
"""
# A quantity that goes up or down: the same word for coverage ("rose" = "increased"), opposite
# words for the direction check ("cut" against "raised").
_UP = "increase rise raise grow climb boost surge soar jump expand double triple quadruple swell spike widen mount"
_DOWN = "decrease fall drop decline cut reduce lower shrink plunge slump halve dip diminish lessen narrow slash tumble"
# (dimension, words stating +1, words stating -1); "^up"/"^down" stand for the verbs above.
_DIRECTIONS = (
    ("amount", "^up ^more higher greater gain", "^down ^less lose loss"),
    ("speed", "faster quicker accelerate speed", "slower decelerate slow"),
    ("size", "larger bigger", "smaller"),
    ("length", "longer lengthen extend", "shorter shorten"),
    ("quality", "better improve strengthen enhance", "worse worsen weaken deteriorate impair"),
    ("cost", "expensive costly pricier dearer", "cheap cheaper inexpensive affordable"),
    ("employment", "hire recruit", "fire dismiss layoff sack"),
    ("approval", "approve accept grant", "reject refuse deny veto"),
    ("permission", "allow permit legalize authorize", "ban prohibit forbid outlaw"),
    ("contest", "win victory", "lose defeat"),
    ("extreme", "highest maximum peak", "lowest minimum"),
    ("balance", "profit surplus", "deficit"),
    ("sign", "positive", "negative"),
    ("temperature", "warm warmer warming hotter", "cool cooler cooling colder"),
    ("presence", "present presence", "absent absence"),
)
_NEGATION_WORDS = frozenset(
    """not no never none nobody nothing neither nor cannot without lack lacks lacking lacked fail fails failed
    failing unable refuse refused refuses refusing hardly scarcely unlikely impossible""".split()
)
_NOT_NEGATION_RE = re.compile(
    r"\b(not only|not least|no doubt|nothing but|no sooner|not just|whether or not|if not|not solely|not necessarily|"
    r"not all|not always|no matter)\b", re.I)
_NULL_FINDING_RE = re.compile(
    r"\b(?:little|no|not much|not any|weak|without any)\s+(?:or no\s+)?(?:clear\s+|significant\s+|strong\s+|real\s+|"
    r"meaningful\s+|consistent\s+|direct\s+|measurable\s+)?(?:link|links|association|associations|relationship|"
    r"correlation|evidence|effect|effects|benefit|benefits|difference|differences|impact|change|improvement|"
    r"connection|influence)\b",
    re.I,
)
# Multi-word forms read as one word first, in one pass (the first alternative that matches wins).
_PHRASE_PATTERNS = (
    ("limiter", _NOT_NEGATION_RE.pattern, " "),  # "not only", "if not": not a negation of the claim
    ("null", _NULL_FINDING_RE.pattern, " nonefound "),  # "found little link", "no significant difference"
    ("against", r"\b(?:advise[sd]?|advising|warn(?:s|ed)?|recommend(?:s|ed)?|caution(?:s|ed)?)\s+against\b",
     " should not "),
    ("layoff", r"\b(?:lay|lays|laid|laying)\s+off\b|\blay-?offs?\b", " layoff "),
    ("up", r"\b(?:go|goes|went|gone|going)\s+up\b", " rise "),
    ("down", r"\b(?:go|goes|went|gone|going)\s+down\b", " fall "),
    ("dearer", r"\bmore expensive\b", " expensive "),
    ("cheaper", r"\bless expensive\b", " cheaper "),
    ("cannot", r"\bcan't\b|\bcannot\b|\bcan not\b", " cannot "),
    ("nt", r"n't\b", " not"),
)
_PHRASE_RE = re.compile("|".join(f"(?P<{name}>{pattern})" for name, pattern, _ in _PHRASE_PATTERNS), re.I)
_PHRASE_FORMS = {name: form for name, _, form in _PHRASE_PATTERNS}
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'\u2019]*[A-Za-z]|[A-Za-z]")
_CLAUSE_SPLIT_RE = re.compile(
    r"\s*;\s*|:(?!\d)\s*|\s*[\u2013\u2014]\s+|\s+-\s+|,\s+|\s+(?=(?:although|though|but|while|whereas|however|yet|"
    r"because|unlike|despite)\b)",
    re.I,
)
_SUFFIXES = ("ational", "ization", "isation", "fulness", "ousness", "iveness", "ments", "ment", "ings", "ing",
             "edly", "ies", "ied", "ers", "est", "er", "ed", "es", "ly", "s")
_EXTRA_STOPWORDS = frozenset("""approximately roughly around nearly almost about some over under than
    according also recent recently""".split())


def _spelling(w: str) -> str:
    """British to American spelling, applied to both texts alike (a merge of two real words is rare)."""
    if len(w) > 6 and ("isation" in w or "yse" in w):
        w = w.replace("isation", "ization").replace("yse", "yze")
    if len(w) >= 8:
        for a, b in (("ise", "ize"), ("ised", "ized"), ("ising", "izing"), ("ises", "izes")):
            if w.endswith(a):
                return w[: -len(a)] + b
    if len(w) >= 6 and w.endswith("our"):
        return w[:-3] + "or"
    if len(w) >= 5 and (w.endswith("tre") or w.endswith("bre")):
        return w[:-2] + "er"
    if len(w) >= 6 and (w.endswith("tres") or w.endswith("bres")):
        return w[:-3] + "ers"
    return w


def _stem(w: str) -> str:
    """Two rounds of a light suffix stripper ("lowered" -> "lower" -> "low", as "lower" -> "low")."""
    return _stem_once(_stem_once(w))


def _stem_once(w: str) -> str:
    if len(w) <= 3:
        return w
    for suf in _SUFFIXES:
        if w.endswith(suf) and len(w) - len(suf) >= (4 if len(suf) > 3 else 3):
            w = w[: -len(suf)] + ("y" if suf in ("ies", "ied") else "")
            break
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    if len(w) > 4 and w[-1] == w[-2] and w[-1] not in "aeiouls":  # "stopped" -> "stopp" -> "stop"
        w = w[:-1]
    return w


def _build_canonical() -> dict[str, str]:
    canon: dict[str, str] = {}
    for group in _IRREGULAR_FORMS.split("|"):
        forms = group.split()
        for f in forms[1:]:
            canon[f] = forms[0]
    return canon


_CANON = _build_canonical()


@lru_cache(maxsize=200_000)
def norm(word: str) -> str:
    """One form per word (see the module doc); "" for a stopword."""
    w = word.lower().replace("\u2019", "'")
    if w.endswith("'s"):
        w = w[:-2]
    w = w.strip("'")
    if not w or w in STOPWORDS or w in _EXTRA_STOPWORDS or len(w) < 2:
        return ""
    w = _CANON.get(w, w)
    w = _stem(_spelling(w))
    return _SYNONYM.get(w, w)


def _build_synonyms() -> dict[str, str]:
    out: dict[str, str] = {}
    for group in _SYNONYM_SETS.split("|"):
        forms = [_stem(_spelling(_CANON.get(f, f))) for f in group.split()]
        for f in forms[1:]:
            out.setdefault(f, forms[0])
    for w in _UP.split():
        out[_stem(_spelling(_CANON.get(w, w)))] = "^up"
    for w in _DOWN.split():
        out[_stem(_spelling(_CANON.get(w, w)))] = "^down"
    return out


_SYNONYM = _build_synonyms()


def _norm_set(words: str) -> frozenset[str]:
    return frozenset(w if w.startswith("^") else _SYNONYM.get(_stem(_spelling(_CANON.get(w, w))),
                                                              _stem(_spelling(_CANON.get(w, w))))
                     for w in words.split())


DIRECTION_WORDS: dict[str, tuple[str, int]] = {}
for _dim, _plus, _minus in _DIRECTIONS:
    for _w in _norm_set(_plus):
        DIRECTION_WORDS.setdefault(_w, (_dim, 1))
    for _w in _norm_set(_minus):
        DIRECTION_WORDS.setdefault(_w, (_dim, -1))
NEGATION_TOKEN = "^not"
# Stopwords that still state a direction: kept as cues, never counted as content.
_CUE_WORDS = {"more": "^more", "less": "^less", "fewer": "^less"}
CUE_FORMS = frozenset({NEGATION_TOKEN, *_CUE_WORDS.values()})
_SENTENCE_END_RE = re.compile(r"[.!?][\"')\]]*\s|\n")
_NEXT_WORD_RE = re.compile(r"\s+([A-Za-z]+)")
# a figure needs a digit or a number word; most sentences can skip the figure parser
_MAYBE_FIGURE_RE = re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
                              r"thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|"
                              r"fifty|sixty|seventy|eighty|ninety|dozen)\b", re.I)


@dataclass(frozen=True, slots=True)
class Word:
    """One compared word of a text."""

    form: str  # the normalised form ("^not" for a negation cue, "#..." for a figure)
    name: bool  # written with a capital where a common word would not be (see `words`)
    figure: Figure | None = None
    capital: bool = False  # written with a capital (names, and any word opening a sentence)
    text: str = field(default="", compare=False)  # as written, lower-cased (for the term-swap check's embeddings)


def _phrase(m: re.Match[str]) -> str:
    return _PHRASE_FORMS[m.lastgroup or ""]


def _prepare(text: str) -> str:
    """The text with multi-word forms read as one word ("laid off", "found little link", "n't")."""
    return _PHRASE_RE.sub(_phrase, text[:MAX_TEXT_CHARS].replace("\u2019", "'"))


@lru_cache(maxsize=100_000)
def words(text: str) -> tuple[Word, ...]:
    """The compared words of a text in order: content words, figures and cue words (negation,
    "more"/"less")."""
    text = _prepare(text)
    out: list[tuple[int, Word]] = []
    taken: list[tuple[int, int]] = []
    if _MAYBE_FIGURE_RE.search(text):
        pos = 0
        for f in figures(text):
            start = text.find(f.raw, pos)
            if start < 0:
                continue
            out.append((start, Word(figure_token(f), False, f)))
            taken.append((start, start + len(f.raw)))
            pos = start + len(f.raw)
    found = [(m.start(), m.group(0)) for m in _WORD_RE.finditer(text)]
    lowered = [raw.lower() for _, raw in found]
    content = [k for k, low in enumerate(lowered) if low not in STOPWORDS]
    capitals = sum(1 for k in content if found[k][1][0].isupper())
    title_case = len(content) >= 4 and capitals >= 0.9 * len(content)  # a heading or title: capitals say nothing
    ends = [m.end() for m in _SENTENCE_END_RE.finditer(text)]  # where sentences end
    k_fig = 0
    for k, (start, raw) in enumerate(found):
        if taken:
            while k_fig < len(taken) and taken[k_fig][1] <= start:
                k_fig += 1
            if k_fig < len(taken) and taken[k_fig][0] <= start < taken[k_fig][1]:
                continue
        low = lowered[k]
        if low in _NEGATION_WORDS or low == "nonefound":
            out.append((start, Word(NEGATION_TOKEN, False)))
            continue
        if low in _CUE_WORDS:
            out.append((start, Word(_CUE_WORDS[low], False)))
            continue
        form = norm(raw)
        if not form:
            continue
        capital = raw[0].isupper() and not title_case
        name = False
        if capital:
            # a capital opening a sentence says nothing unless a name follows or it is possessive
            prev_end = found[k - 1][0] + len(found[k - 1][1]) if k else 0
            first = k == 0 or bisect.bisect_right(ends, start) > bisect.bisect_right(ends, prev_end)
            name = (len(raw) >= 2 and raw.isupper()) or not first or _initial_name(text, start + len(raw), raw)
        out.append((start, Word(form, name, None, capital, low)))
    if taken:
        out.sort(key=lambda x: x[0])
    return tuple(w for _, w in out)


@lru_cache(maxsize=100_000)
def forms_and_figures(text: str) -> tuple[tuple[str, ...], tuple[Figure, ...]]:
    """`forms(words(text))` and the text's figures, without telling names apart: the quick path
    for indexing every sentence of a long source."""
    text = _prepare(text)
    spans: list[tuple[int, int, str]] = []
    figs: tuple[Figure, ...] = ()
    if _MAYBE_FIGURE_RE.search(text):
        figs = figures(text)
        pos = 0
        for f in figs:
            start = text.find(f.raw, pos)
            if start >= 0:
                spans.append((start, start + len(f.raw), figure_token(f)))
                pos = start + len(f.raw)
    out: list[str] = []
    k = 0
    for m in _WORD_RE.finditer(text):
        start = m.start()
        while k < len(spans) and spans[k][1] <= start:
            out.append(spans[k][2])
            k += 1
        if k < len(spans) and spans[k][0] <= start:
            continue
        raw = m.group(0)
        low = raw.lower()
        if low in _NEGATION_WORDS or low in _CUE_WORDS or low == "nonefound":
            continue
        form = norm(raw)
        if form:
            out.append(form)
    out.extend(sp[2] for sp in spans[k:])
    return tuple(out), figs


def _initial_name(text: str, end: int, raw: str) -> bool:
    """A capitalised word opening a sentence is a name when a capitalised word follows it ("Louis
    Pasteur", "Mozart's Ninth") or it ends in a possessive."""
    if raw.endswith("'s"):
        return True
    nxt = _NEXT_WORD_RE.match(text, end)
    return bool(nxt and nxt.group(1)[0].isupper() and nxt.group(1).lower() not in STOPWORDS)


def forms(ws: tuple[Word, ...]) -> tuple[str, ...]:
    """The compared forms, without cue words."""
    return tuple(w.form for w in ws if w.form not in CUE_FORMS)


def negated(ws: tuple[Word, ...] | list[Word]) -> bool:
    """An odd number of negation cues."""
    return sum(w.form == NEGATION_TOKEN for w in ws) % 2 == 1


def directions(ws: tuple[Word, ...] | list[Word]) -> set[tuple[str, int]]:
    return {DIRECTION_WORDS[w.form] for w in ws if w.form in DIRECTION_WORDS}


@lru_cache(maxsize=50_000)
def clauses(sentence: str) -> tuple[str, ...]:
    """A sentence cut into clauses (pieces with at least one letter)."""
    return tuple(p for p in _CLAUSE_SPLIT_RE.split(sentence) if p and any(c.isalpha() for c in p))
