"""Stance rules of the offline judge: what side a debate question takes, and which side a statement
of the answer is on.

1. `parse_query` finds the question's proposition: the thing debated (`topic`) and whether the
   question's wording is for it (`sign` +1: "Why should cities build bike lanes?", "Is nuclear power
   good?", "Does rent control work?") or against it (-1: "Should TikTok be banned?", "Is social media
   harmful?", "Why should X not be allowed?"). A negation in the question flips the sign.
2. `statement_stance` reads a statement as clauses. A contrast marker at the start ("However, ...")
   is only a marker: what follows decides. Inside a sentence the clause after "but" / "however" /
   "yet" carries the stance and the clause introduced by "although" / "despite" / "while" is
   conceded (ignored). In the carrying clause it collects cues, each a value for or against what
   the words speak of: evaluative words ("beneficial", "a mistake"), an amount with its direction
   ("fewer injuries" good, "lower sales" bad), verdict phrases ("clearly the best", "not worth it"),
   a recommendation ("should be abolished"). A negation up to four words before a cue flips it;
   "cannot show that ..." flips everything after it.
3. What the cues speak of: the topic, or its removal. A part of the sentence whose subject is a
   removal ("Banning cars is ...", "the car-free core saw ...", "without homework") turns its cues
   round: good news about a ban is bad news for the banned thing. In a removal question an outcome
   reported without naming the thing ("air in the zone became cleaner", "donations would fall") is
   the removal's effect; in a question for adopting something, the status quo ("the current wage")
   is its absence. Words that name the topic itself ("protected" in "protected bike lanes") are
   never cues.
4. "Little effect" / "no evidence" / "the effect fades" deny an effect: the benefit the topic is
   claimed to bring, or the harm when the question asks whether it is harmful.
5. A reported view ("critics argue", "supporters of a ban say") is not the answer's own endorsement,
   but it presents one side: the statement gets the side of the view it reports, from who holds it
   when the sentence names the group's side, else from what the view says.
6. The label is agree / disagree when the cues clearly lean one way; neutral for a statement with no
   evaluative content, a definition, or one that weighs both sides ("depends on", "trade-off");
   `unknown` when the cues conflict, are weak, or report a change in something the rules cannot
   value ("trips fell by 12 percent"). Unknown is an abstention: metrics built on stance leave it
   out or become null.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pipeline.judges.offline import lexicon as lx

TOKEN_RE = re.compile(r"\$?\d+(?:[.,]\d+)*%?|[a-z0-9$]+(?:[-'][a-z0-9]+)*|[.,;:!?()\u2014\u2013\"]")
BOUNDARY = frozenset(".,;:!?()\u2014\u2013\"")
NEGATION_WINDOW = 4  # words a negation reaches forward
FORWARD_WINDOW = 6  # words after a direction word searched for the amount it changes
BACKWARD_WINDOW = 8  # words before it ("injuries in the core fell")
CAUSAL_WINDOW = 8  # words between "produces" / "leads to" and the harm it brings
MAX_STATEMENT_CHARS = 2000  # a statement is a sentence; longer input is cut (untrusted text, bounded work)
SIDE_THRESHOLD = 0.75  # |score| needed for agree / disagree
STRONG_CONTENT = 2.0  # content this clear outweighs the side of the group a view is reported from

STOPWORDS = frozenset("""a an the of to in on at for from by with and or is are was were be been being do does did
should would could can will may might must shall why how what which who whom whose when where whether if
that this these those it its they them their there here than then as so not no nor i we you he she us our
your his her my me""".split())
GENERIC_AGENTS = frozenset("""city cities town towns school schools company companies government governments country
countries state states people person we us society parent parents employer employers everyone anyone
world nation nations""".split())
QUERY_POSITIVE = frozenset("""good beneficial safe safer effective healthy healthier better worth worthwhile
useful helpful necessary fair wise smart sensible""".split())
QUERY_VERBS = frozenset("""work works help helps reduce reduces lower lowers improve improves cause causes increase
increases raise raises prevent prevents lead leads make makes affect affects hurt hurts harm harms save saves
protect protects boost boosts cut cuts""".split())
STATUS_QUO = frozenset("current currently existing present today's".split())
CONTRAST_START_RE = re.compile(r"^(?:however|but|yet|still|nevertheless|nonetheless|on the other hand|that said|"
                               r"even so|conversely|in contrast|by contrast|instead|then again)\b,?\s*")
CONCESSIVE_START_RE = re.compile(r"^(?:although|though|even though|while|whereas|despite|in spite of|even if|"
                                 r"admittedly|granted)\b")
CARRY_AFTER_RE = re.compile(r"(?:,|;|\u2014)\s*(?:but|however|yet|though)\b,?|;\s*|\bbut\b")
CONCEDE_AFTER_RE = re.compile(r",\s*(?:although|though|even though|while|whereas|even if)\b|\s(?:despite|in spite of)\b")
PHRASE_ENDS = frozenset("of in for between among to from than by and that which with on at because when".split())
ACTIVE_REMOVAL_STOP = frozenset("from in at on for to before after during within across by".split())
PAST_CHANGE = frozenset("""fell dropped rose jumped doubled tripled halved became gained grew narrowed widened declined
decreased increased improved saw reported recorded shrank surged soared climbed""".split())
TEMPORAL_AFTER_RE = re.compile(r"\b(?:after|since|once)\b")
VAGUE_DIRECTIONS = frozenset("more less up down extra".split())  # too common to count as a change left unvalued
DESCRIPTION_WORDS = 6  # a "who ..." part longer than this runs on into the main clause
SEGMENT_WORDS = frozenset({"because", "so", "which", "when", "whereas", "while", "since", "and", "who"})
DEFINITION_RE = re.compile(r"^(?:\w+[\s-]){0,5}?(?:is|are|means|refers to|describes|limits how|works by)\b")


def base(word: str) -> str:
    """A light normal form for matching a statement's words with the question's."""
    w = word.lower().replace("\u2019", "'")
    if w.endswith("'s"):
        w = w[:-2]
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 4 and w.endswith(("sses", "shes", "ches", "xes")):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
    elif len(w) > 4 and w.endswith("ed"):
        w = w[:-2]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]
    return w[:-1] if len(w) > 3 and w.endswith("e") else w


def prepare(text: str) -> str:
    """Lower case, plain apostrophes, and a few two-word directions joined into one token."""
    low = text.lower().replace("\u2019", "'")
    for phrase, joined in lx.JOINED_PHRASES:
        low = low.replace(phrase, joined)
    return low


def words_of(text: str) -> list[str]:
    return TOKEN_RE.findall(prepare(text))


# --------------------------------------------------------------------------------------------
# the question
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Proposition:
    """The side a debate question's wording takes."""

    query: str
    topic: frozenset[str]  # base forms of the words naming the thing debated
    sign: int  # +1: the question is for the topic (adopt it, it is good, it works); -1: against it
    form: str  # how the question was read: "adopt", "remove", "evaluate", "effect"
    predicate: str = ""  # the word that decided the form ("banned", "harmful", "work"...)
    effect_is_harm: bool = False  # the effect under debate is a harm ("Is X harmful?", "Does X cause cancer?")

    def describe(self) -> str:
        side = "for" if self.sign > 0 else "against"
        return f"{self.form}: {side} {' '.join(sorted(self.topic)) or '?'} ({self.predicate or 'no predicate'})"


def _content(words: list[str]) -> frozenset[str]:
    return frozenset(base(w) for w in words if w not in STOPWORDS and w not in GENERIC_AGENTS
                     and w not in BOUNDARY and len(w) > 1)


def parse_query(query: str) -> Proposition:
    """The question's proposition (see the module docstring)."""
    words = [w for w in words_of(query[:MAX_STATEMENT_CHARS]) if w not in BOUNDARY]
    negations = sum(1 for w in words if w in ("not", "never") or w.endswith("n't"))
    flip = -1 if negations % 2 else 1
    body = [w for w in words if w not in ("not", "never") and not w.endswith("n't")]
    for i, w in enumerate(body):
        if w in lx.QUERY_REMOVAL:
            passive = i > 0 and body[i - 1] in ("be", "been", "being", "is", "are", "get", "become")
            if passive or w in ("illegal", "banned", "abolished", "closed"):
                start = next((k + 1 for k in range(i - 2, -1, -1) if body[k] in ("should", "why", "is", "are", "be")), 0)
                topic = _content(body[start:i]) or _content(body)  # "should it be banned": every content word
            else:
                end = next((k for k in range(i + 1, len(body)) if body[k] in ACTIVE_REMOVAL_STOP), len(body))
                topic = _content(body[i + 1 : end]) or _content(body)
            return Proposition(query, topic - {base(w)}, -flip, "remove", w)
    if body and body[0] in ("does", "do", "did", "can", "will", "would", "could"):
        for i, w in enumerate(body[1:], start=1):
            if w not in QUERY_VERBS:
                continue
            rest = body[i + 1 :]
            bad_object = any(x in lx.BAD_AMOUNTS for x in rest)
            good_object = any(x in lx.GOOD_AMOUNTS for x in rest)
            if w.startswith(("reduc", "lower", "prevent", "cut", "protect", "save")):
                sign = 1 if bad_object or not good_object else -1
            elif w.startswith(("cause", "increas", "rais", "lead", "hurt", "harm", "boost")):
                sign = -1 if bad_object or w.startswith(("hurt", "harm")) else 1
            else:
                sign = 1
            return Proposition(query, _content(body[1:i]) or _content(body), sign * flip, "effect", w,
                               effect_is_harm=sign < 0)
    for i, w in enumerate(body):
        if w in lx.QUERY_NEGATIVE_PREDICATES or w in QUERY_POSITIVE:
            harm = w in lx.QUERY_NEGATIVE_PREDICATES
            start = 1 if body and body[0] in ("is", "are", "was", "were", "why", "can", "could") else 0
            topic = _content(body[start:i]) or _content(body)
            return Proposition(query, topic, (-1 if harm else 1) * flip, "evaluate", w, effect_is_harm=harm)
    return Proposition(query, _content(body), flip, "adopt", "")


# --------------------------------------------------------------------------------------------
# reading a statement
# --------------------------------------------------------------------------------------------


@dataclass
class _Clause:
    text: str
    carries: bool  # False for a conceded clause ("although ...")


@dataclass
class Reading:
    """How one statement was read: its label, the cue shown to a person, and the details kept in raw."""

    label: str
    cue: str
    details: dict[str, Any] = field(default_factory=dict)


def _clauses(low: str) -> tuple[list[_Clause], str]:
    """Split a (prepared) statement into carrying and conceded clauses; also the contrast marker."""
    marker = ""
    m = CONTRAST_START_RE.match(low)
    if m:
        marker = m.group(0).strip(" ,")
        low = low[m.end():]
    m = CONCESSIVE_START_RE.match(low)
    if m:
        marker = marker or m.group(0)
        comma = low.find(",", m.end())
        if comma > 0:
            return [_Clause(low[:comma], False), _Clause(low[comma + 1 :], True)], marker
    if "not only" not in low:
        m = CARRY_AFTER_RE.search(low)
        if m and m.start() > 0 and low[m.end():].strip():
            marker = marker or m.group(0).strip(" ,;")
            return [_Clause(low[: m.start()], False), _Clause(low[m.end():], True)], marker
    m = CONCEDE_AFTER_RE.search(low)
    if m and m.start() > 0:
        marker = marker or m.group(0).strip(" ,")
        return [_Clause(low[: m.start()], True), _Clause(low[m.end():], False)], marker
    return [_Clause(low, True)], marker


def mentions_topic(words: list[str], topic: frozenset[str]) -> bool:
    """True when a word names the topic, also as part of a compound ("phone" / "smartphones",
    "car-free" / "cars", "lighter" / "daylight")."""
    return any(_is_topic_word(w, topic) for w in words)


def _is_topic_word(w: str, topic: frozenset[str]) -> bool:
    for part in ([w, *w.split("-")] if "-" in w else [w]):
        b = base(part)
        if b in topic:
            return True
        if len(b) >= 4 and any(len(t) >= 7 and t != b and (t.startswith(b) or t.endswith(b)) for t in topic):
            return True
    return False


def _removal_at(words: list[str], topic: frozenset[str], removal_question: bool = False) -> tuple[int, int, str] | None:
    """Where words speak of taking the topic away ("the ban", "car-free", "abolishing it", "without
    homework", "should be abolished"): (first word, end, text), or None."""
    text = " ".join(words)
    m = lx.REMOVAL_PHRASE_RE.search(text)
    if m:
        a = len(text[: m.start()].split())
        return a, a + len(m.group(0).split()), m.group(0)
    for i, w in enumerate(words):
        parts = w.split("-")
        if len(parts) == 2 and parts[1] in ("free", "less") and _is_topic_word(parts[0], topic):
            return i, i + 1, w  # "car-free", "homework-free"
        if w in lx.REMOVAL_NOUNS:
            return i, i + 1, w
        if w in ("limits", "limit", "caps", "cap", "curbs", "restrictions") and i + 1 < len(words) and words[i + 1] == "on":
            return i, i + 2, f"{w} on"  # "strict limits on short-term rentals"
        if w == "without" and mentions_topic(words[i + 1 : i + 3], topic):
            end = i + 2 if _is_topic_word(words[i + 1], topic) else i + 3
            return i, end, " ".join(words[i:end])
        if w in lx.REMOVAL_VERBS or w in ("fewer", "less"):
            near = words[i + 1 : i + 4]
            if mentions_topic(near, topic) or (near and near[0] in ("it", "them", "this", "these")):
                return i, i + 2, " ".join(words[i : i + 2])
            if i and words[i - 1] in ("be", "been", "being", "is", "are", "was", "were"):
                return i, i + 1, w  # "should be abolished", "were closed"
            if removal_question and w.endswith("ing") and w in lx.REMOVAL_VERBS:
                return i, i + 1, w  # "Banning a single app ...": in a removal question, the proposal
    return None


def _status_quo_at(words: list[str], topic: frozenset[str]) -> tuple[int, int, str] | None:
    """"the current wage": the topic as it is now, i.e. without the change a question proposes."""
    for i, w in enumerate(words):
        if w in STATUS_QUO and mentions_topic(words[i + 1 : i + 3], topic):
            return i, i + 3, " ".join(words[i : i + 3])
    return None


def _opposite_at(words: list[str], topic: frozenset[str]) -> tuple[int, int, str] | None:
    """A word opposite to one of the topic's ("early" when the question wants later starts,
    "voluntary" when it wants compulsory voting): the statement speaks of the alternative."""
    for i, w in enumerate(words):
        other = lx.ANTONYMS.get(w)
        if other and any(base(o) in topic for o in other):
            return i, i + 1, w
    return None


def _proposal_at(words: list[str]) -> tuple[int, int, str] | None:
    """"tried it", "introduced the policy": the proposal being put in place."""
    for i, w in enumerate(words[:-1]):
        if w in lx.ADOPTION_VERBS and words[i + 1] in lx.ADOPTION_OBJECTS:
            return i, i + 2, " ".join(words[i : i + 2])
    return None


def _segments(words: list[str]) -> list[tuple[int, int]]:
    """Word spans of the parts of a clause, cut at punctuation and at "because", "which", "and"..."""
    spans, start = [], 0
    for i, w in enumerate(words):
        if w in BOUNDARY or (w in SEGMENT_WORDS and i > start):
            if i > start:
                spans.append((start, i))
            start = i + 1 if w in BOUNDARY else i
    if start < len(words):
        spans.append((start, len(words)))
    return spans


@dataclass
class _Targets:
    turned: list[bool]  # per word: a cue here speaks of the topic's removal
    descriptive: list[bool]  # per word: inside a "who ..." description or after "than"
    mention_words: set[int]  # words of the removal mentions (never cues, never negations)
    notes: list[str]


def _targets(words: list[str], prop: Proposition) -> _Targets:
    """What each part of a clause speaks of (see the module docstring, point 3). A part whose subject
    is a removal turns all its cues; a removal in the predicate ("X should be abolished") turns the
    cues after it; a part that names nothing takes the subject of the part before it (or, at the
    start, of the part after it)."""
    n = len(words)
    out = _Targets([False] * n, [False] * n, set(), [])
    spans = _segments(words)
    own: list[bool | None] = []
    for a, b in spans:
        seg = words[a:b]
        if seg and seg[0] == "who":  # a short description of people, not a claim
            for k in range(a, min(b, a + DESCRIPTION_WORDS)):
                out.descriptive[k] = True
            if b - a <= DESCRIPTION_WORDS:
                own.append(None)
                continue
        if "than" in seg:  # what something is compared with is not a cue ("fewer ... than smoking")
            for k in range(a + seg.index("than"), min(b, a + seg.index("than") + 4)):
                out.descriptive[k] = True
        at = _removal_at(seg, prop.topic, prop.form == "remove")
        if at is None:
            at = _opposite_at(seg, prop.topic)
        if at is None and prop.form == "remove":
            at = _proposal_at(seg)
        if at is None and prop.form in ("adopt", "effect"):
            at = _status_quo_at(seg, prop.topic)
        if at is not None:
            start, end, text = at
            out.notes.append(text)
            out.mention_words.update(range(a + start, a + end))
            if start > 3 and mentions_topic(seg[:start], prop.topic):  # "X should be abolished"
                for k in range(a + start, b):
                    out.turned[k] = True
                own.append(False)
            else:
                own.append(True)
            continue
        if mentions_topic(seg, prop.topic):
            own.append(False)
            continue
        decided: bool | None = None
        if prop.form == "remove":
            comparative = any(w.endswith("er") and (w in lx.POSITIVE or w in lx.NEGATIVE) for w in seg)
            if comparative or "would" in seg or any(w in PAST_CHANGE for w in seg) or TEMPORAL_AFTER_RE.search(" ".join(seg)):
                decided = True
                out.notes.append("(outcome of the change)")
        own.append(decided)
    # fill parts that name nothing: from the part before, else from the first decided part after
    filled: list[bool] = []
    previous: bool | None = None
    for i, value in enumerate(own):
        if value is None:
            value = previous if previous is not None else next((v for v in own[i + 1 :] if v is not None), False)
        filled.append(value)
        previous = value
    for (a, b), value in zip(spans, filled):
        if value:
            for k in range(a, b):
                out.turned[k] = True
    return out


def _negated(words: list[str], at: int, masked: set[int]) -> bool:
    """True when a negation stands up to NEGATION_WINDOW words before position `at`, in the same clause."""
    for k in range(at - 1, max(-1, at - 1 - NEGATION_WINDOW), -1):
        w = words[k]
        if w in BOUNDARY or w in ("but", "because", "which", "while", "although"):
            return False
        if k in masked:
            continue
        if w in lx.NEGATORS or w.endswith("n't"):
            return True
    return False


def _amount(w: str) -> float:
    return 1.0 if w in lx.GOOD_AMOUNTS else -1.0 if w in lx.BAD_AMOUNTS else 0.0


def _evaluative(w: str) -> float:
    return lx.POSITIVE.get(w, 0.0) - lx.NEGATIVE.get(w, 0.0)


def _is_direction(w: str) -> bool:
    return w in lx.UP_WORDS or w in lx.DOWN_WORDS


def _partner(words: list[str], i: int, skip: set[int]) -> int | None:
    """The word whose amount the direction word at i changes: the head of the phrase after it
    ("narrows the turnout gap" -> gap, "less harmful"), else the nearest amount before it
    ("sales ... fell")."""
    found = None
    k = i + 1
    if k < len(words) and words[k] in ("in", "of"):  # "a rise in crashes"
        k += 1
    for j in range(k, min(len(words), i + 1 + FORWARD_WINDOW)):
        w = words[j]
        of_ok = w == "of" and (words[i] in lx.OF_OBJECT_WORDS or words[j - 1] in lx.UNIT_WORDS)
        if w in BOUNDARY or _is_direction(w) or (w in PHRASE_ENDS and not of_ok):
            break
        if j not in skip and (_amount(w) or _evaluative(w)):
            found = j
    if found is not None:
        return found
    for j in range(i - 1, max(-1, i - 1 - BACKWARD_WINDOW), -1):
        w = words[j]
        if w in BOUNDARY or w in ("because", "but", "which", "while", "that", "who"):
            break
        if j not in skip and _amount(w) and not _is_direction(w):
            return j
    return None


@dataclass
class _Cues:
    topic_value: float = 0.0  # summed values for (+) or against (-) the topic being present
    positive: float = 0.0
    negative: float = 0.0
    hits: list[str] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)  # changes in amounts the rules cannot value
    recommendation: bool = False

    def add(self, topic_value: float, text: str) -> None:
        self.topic_value += topic_value
        if topic_value > 0:
            self.positive += topic_value
        else:
            self.negative -= topic_value
        self.hits.append(text)

    def merge(self, other: "_Cues") -> None:
        self.topic_value += other.topic_value
        self.positive += other.positive
        self.negative += other.negative
        self.hits += other.hits
        self.unresolved += other.unresolved
        self.recommendation = self.recommendation or other.recommendation


def _denied_effect(words: list[str], after: int, prop: Proposition) -> float:
    """Value of "no effect" / "little evidence that ...": denying a harm is good (+1), denying a
    benefit bad (-1). A claim spelled out after "that" says which ("no evidence that data was
    misused"); else the question does: a harm when it asks whether the topic is harmful, a benefit
    otherwise ("no effect on learning", "the ban had little effect")."""
    if after < len(words) and words[after] == "that":
        for w in words[after + 1 : after + 9]:
            if w in BOUNDARY:
                break
            value = _evaluative(w) or _amount(w)
            if value:
                return 1.0 if value < 0 else -1.0
    return 1.0 if prop.effect_is_harm else -1.0


def _complement(words: list[str], after: int) -> range:
    """The words of "... of heart disease", "... on total plastic waste": what an amount or an effect
    is measured on, which belongs to it and is not a cue of its own."""
    if after < len(words) and words[after] in ("of", "between", "among", "in", "for", "on", "that"):
        end = after + 1
        while end < len(words) and end < after + 10 and words[end] not in BOUNDARY and words[end] not in SEGMENT_WORDS:
            end += 1
        return range(after, end)
    return range(0)


def _clause_cues(clause: str, prop: Proposition) -> tuple[_Cues, list[str]]:
    """Cues of one clause as values for the topic, and the mentions that turned some round."""
    out = _Cues()
    words = words_of(clause)
    targets = _targets(words, prop)
    masked = set(targets.mention_words)  # negation words that negate nothing ("no longer", "without homework")
    for m in lx.NOT_NEGATION_RE.finditer(clause):
        start = len(words_of(clause[: m.start()]))
        masked |= set(range(start, start + len(words_of(m.group(0)))))
    flip_from = len(words) + 1  # "cannot show that ...": every cue after it is denied
    denial = lx.EPISTEMIC_NEGATION_RE.search(clause)
    if denial:
        start = len(words_of(clause[: denial.start()]))
        flip_from = start + len(words_of(denial.group(0)))
        masked |= set(range(start, flip_from))
    # words that are not cues: the topic's own name, removal mentions, descriptions
    used = {i for i, w in enumerate(words) if _is_topic_word(w, prop.topic) or targets.descriptive[i]}
    used |= {k for k in targets.mention_words if words[k] not in ("fewer", "less")}  # "fewer bags clogging drains"
    taken: set[int] = set()  # words of the phrases already read
    raw: list[tuple[float, str, int]] = []  # (value for what the words speak of, cue text, position)

    def span_of(m: re.Match[str]) -> tuple[int, int]:
        start = len(words_of(clause[: m.start()]))
        return start, start + len(words_of(m.group(0)))

    balance = lx.BALANCE_RE.search(clause)
    if balance:
        used.update(range(*span_of(balance)))
        taken.update(range(*span_of(balance)))
    for pattern, weight in (*lx.VERDICT_PHRASES, *lx.EXTRA_PHRASES, (lx.WORK_VERB_RE, 1.0)):
        for m in pattern.finditer(clause):
            a, b = span_of(m)
            if any(k in taken for k in range(a, b)):
                continue
            # only "does not work" carries its own negation; the verdict phrases spell theirs out
            inner = pattern is lx.WORK_VERB_RE and any(words[k] in lx.NEGATORS or words[k].endswith("n't") for k in range(a, b))
            value = -weight if inner != _negated(words, a, masked) else weight
            used.update(range(a, b))
            taken.update(range(a, b))
            raw.append((value, m.group(0), a))
    for m in lx.WEAK_EFFECT_RE.finditer(clause):
        a, b = span_of(m)
        if not any(k in taken for k in range(a, b)):
            used.update(range(a, b))
            used.update(_complement(words, b))
            taken.update(range(a, b))
            raw.append((_denied_effect(words, b, prop), m.group(0), a))
    for m in lx.LARGE_AMOUNT_RE.finditer(clause):
        a, b = span_of(m)
        j = _partner(words, b - 1, used)
        if j is not None and _amount(words[j]) < 0:
            used.update({j, *range(a, b)})
            raw.append((-1.0, f"{m.group(0)} {words[j]}", a))
    for i, w in enumerate(words):
        if i in used:
            continue
        if w in lx.EFFECT_WORDS:
            before = words[max(0, i - 2) : i]
            if any(x in lx.EFFECT_NEGATORS for x in before) or _negated(words, i, masked):
                used.add(i)
                used.update(_complement(words, i + 1))
                raw.append((_denied_effect(words, i + 1, prop), " ".join([*before[-1:], w]), i))
            continue
        direction = 1 if w in lx.UP_WORDS else -1 if w in lx.DOWN_WORDS or w in lx.COST_WORDS else 0
        if not direction:
            continue
        j = _partner(words, i, used)
        if w in lx.COST_WORDS and (j is None or _amount(words[j]) <= 0):
            money = next((k for k in range(i + 1, min(len(words), i + 7)) if words[k] in lx.MONEY_WORDS
                          or words[k].startswith("$")), None)
            if money is not None:  # "would cost taxpayers billions of dollars"
                used.update(range(i, money + 1))
                raw.append((-1.0, " ".join(words[i : money + 1]), i))
            continue
        if j is None:
            continue
        used.update({i, j, *range(i, j)})  # "fewer toxic chemicals": the words between belong to it
        value = direction * (1.0 if (_amount(words[j]) or _evaluative(words[j])) > 0 else -1.0)
        if _negated(words, min(i, j), masked):
            value = -value
        raw.append((value, f"{w} {words[j]}" if i < j else f"{words[j]} {w}", min(i, j)))
        # the amount's own complement ("risk of heart disease", "gap between richer and poorer") is part of it
        used.update(_complement(words, j + 1))
    for i, w in enumerate(words):
        if i in used or w in BOUNDARY:
            continue
        value = 0.0
        for part in (w.split("-") if "-" in w and not _evaluative(w) and not w.endswith(("-ups", "-up")) else [w]):
            if _evaluative(part):
                value = _evaluative(part)
            elif _amount(part) < 0 and lx.CAUSAL_RE.search(" ".join(words[max(0, i - CAUSAL_WINDOW) : i])):
                value = -1.0  # "leads to arguments": a harm brought about
            elif _is_direction(part) and part not in VAGUE_DIRECTIONS and base(part) not in ("limit", "protect"):
                out.unresolved.append(part)
        if value:
            raw.append((-value if _negated(words, i, masked) else value, w, i))
    recommendations: list[tuple[float, str]] = []
    for i, w in enumerate(words):
        if w not in lx.MODALS:
            continue
        ahead = words[i + 1 : i + 5]
        if any(x in lx.REMOVAL_VERBS for x in ahead):  # "should be abolished", "should not be banned"
            negated = any(x in lx.NEGATORS or x.endswith("n't") for x in words[i : i + 3])
            recommendations.append((2.0 if negated else -2.0, " ".join(words[i : i + 4])))
        elif mentions_topic(ahead, prop.topic) or (prop.predicate and any(base(x) == base(prop.predicate) for x in ahead)):
            out.recommendation = True
    for value, text, at in raw:
        if at >= flip_from:
            value = -value
        out.add(-value if targets.turned[at] else value, text)
    for topic_value, text in recommendations:  # a recommended removal is against the topic
        out.add(topic_value, text)
    return out, targets.notes


REPORTED_VIEW_RE = re.compile(
    rf"\b({'|'.join(sorted(lx.AGAINST_GROUPS | lx.FOR_GROUPS))})\b(?:\s+of\s+([^,.;:]{{1,60}}?))?\s+"
    r"(?:(?:also|often|have|has|long|still|widely|generally|now|may|might|would|will|can|could)\s+){0,2}"
    rf"({'|'.join(sorted(lx.REPORT_VERBS, key=len, reverse=True))})\b(?:\s+(?:out that|that|to))?")


def _reported_view(low: str, prop: Proposition) -> tuple[int, str, str]:
    """A reported view: (its side relative to the question when known from who holds it, else 0;
    the frame words; the text of the view itself). (0, "", low) when there is none."""
    m = REPORTED_VIEW_RE.search(low)
    if not m:
        return 0, "", low
    group, target, view = m.group(1), m.group(2) or "", low[m.end():]
    side = -1 if group in lx.AGAINST_GROUPS else 1
    frame = m.group(0)
    if target:
        tw = words_of(target)
        if _removal_at(tw, prop.topic, prop.form == "remove") or any(w in lx.REMOVAL_NOUNS for w in tw):
            return -side * prop.sign, frame, view  # critics of a ban are for the banned thing
        if mentions_topic(tw, prop.topic) or any(w in lx.UP_WORDS or w in ("increase", "rise", "change") for w in tw):
            return side * prop.sign, frame, view
    return (side if group in lx.ROLE_GROUPS else 0), frame, view


def statement_stance(text: str, prop: Proposition) -> Reading:
    """Label one statement agree / disagree / neutral / unknown relative to the proposition."""
    low = prepare(text.strip()[:MAX_STATEMENT_CHARS])
    frame_side, frame, view = _reported_view(low, prop)
    clauses, marker = _clauses(view.strip() if frame else low)
    opening = CONTRAST_START_RE.match(low)
    if frame and opening and not marker:  # "However, critics argue that ...": the marker opens the sentence
        marker = opening.group(0).strip(" ,")
    cues, notes = _Cues(), []
    for c in clauses:
        if c.carries:
            part, part_notes = _clause_cues(c.text, prop)
            cues.merge(part)
            notes += part_notes
    score = cues.topic_value * prop.sign  # > 0: agrees with the question
    balance = lx.BALANCE_RE.search(low)
    details: dict[str, Any] = {
        "proposition": prop.describe(), "score": round(score, 3), "cues": cues.hits[:12], "contrast": marker,
        "turned_by": notes[:6], "reported_by": frame, "unresolved_changes": cues.unresolved[:6],
        "balance": balance.group(0) if balance else "",
    }
    mixed = cues.positive >= 1 and cues.negative >= 1 and abs(cues.topic_value) < 1
    lead = ", ".join(([marker] if marker else []) + cues.hits[:3])
    if balance and abs(score) < STRONG_CONTENT:
        return Reading("neutral", f"weighs both sides: {balance.group(0)}", details)
    if frame_side and abs(score) < STRONG_CONTENT:
        details["decided_by"] = "the side of the group whose view is reported"
        return Reading("agree" if frame_side > 0 else "disagree", frame, details)
    if abs(score) >= SIDE_THRESHOLD and not mixed:
        return Reading("agree" if score > 0 else "disagree", lead, details)
    if not cues.hits and DEFINITION_RE.match(low) and mentions_topic(words_of(low)[:4], prop.topic):
        details["decided_by"] = "a definition of the topic"
        return Reading("neutral", "", details)
    if mixed or cues.hits or cues.unresolved or cues.recommendation:
        details["why_unknown"] = ("cues on both sides" if mixed else "cues too weak" if cues.hits else
                                  "a change in something the rules cannot value" if cues.unresolved else
                                  "a recommendation the rules cannot place")
        return Reading("unknown", lead or ", ".join(cues.unresolved[:3]), details)
    if marker and CONTRAST_START_RE.match(low):
        details["why_unknown"] = "a contrast marker with no readable claim after it"
        return Reading("unknown", marker, details)
    return Reading("neutral", "", details)
