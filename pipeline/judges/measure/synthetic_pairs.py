"""Support pairs made from the sources themselves, for fitting and testing the offline judge.

ExpertQA's expert labels are on claims written by answer engines against short passages; a model
fitted on them alone learns that passage style. Sentences of the same passages give pairs whose
label is known by construction, in any style the passages have:

- `copy`: a sentence against its own source (full support);
- `paraphrase`: the sentence rewritten by rules that keep its meaning - its longest clause alone,
  words swapped for a synonym or another word of the same direction ("rose" for "increased"),
  figures written another way ("35%" as "35 percent", "1,200" as "1200"), adverbs dropped (full);
- `other`: a sentence of another passage on the same question against this source (no support);
- `partial`: the sentence joined to a clause of such another sentence (partial support).

And, to measure the stated contradiction rules rather than to fit the model, the same sentence
changed so that the source contradicts it (`contradictions`): a figure changed, a negation
added, a direction flipped, a name swapped for a name from another passage.

Everything is drawn with a seeded `random.Random`, so a fit is reproducible.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Sequence

from pipeline.judges.offline.support import PairInput
from pipeline.judges.offline.text import split_sentences
from pipeline.judges.offline.words import clauses, forms, words

MIN_FORMS = 6  # a sentence with fewer content words makes a poor claim
MAX_CHARS = 300
_SYNONYMS = (("increase", "rise"), ("increased", "rose"), ("increases", "rises"), ("decrease", "decline"),
             ("decreased", "fell"), ("reduce", "lower"), ("reduced", "lowered"), ("large", "big"),
             ("begin", "start"), ("began", "started"), ("show", "demonstrate"), ("shows", "demonstrates"),
             ("use", "utilize"), ("uses", "utilizes"), ("help", "assist"), ("helps", "assists"),
             ("need", "require"), ("needs", "requires"), ("children", "kids"), ("doctor", "physician"),
             ("doctors", "physicians"), ("main", "primary"), ("disease", "illness"), ("diseases", "illnesses"),
             ("allow", "permit"), ("allows", "permits"), ("significant", "substantial"), ("study", "research"),
             ("method", "approach"), ("methods", "approaches"), ("country", "nation"), ("countries", "nations"))
_FLIPS = (("increase", "decrease"), ("increased", "decreased"), ("increases", "decreases"), ("higher", "lower"),
          ("more", "less"), ("rise", "fall"), ("rose", "fell"), ("raised", "cut"), ("improves", "worsens"),
          ("improved", "worsened"), ("larger", "smaller"), ("faster", "slower"), ("longer", "shorter"),
          ("better", "worse"), ("reduce", "increase"), ("reduced", "increased"), ("reduces", "increases"),
          ("lower", "higher"), ("decreased", "increased"), ("fewer", "more"), ("less", "more"))
_AUXILIARY_RE = re.compile(r"\b(is|are|was|were|can|will|could|should|has|have|had|does|do|did)\b")
_NAME_RE = re.compile(r"(?<=[a-z,;] )[A-Z][a-z]{2,}(?: [A-Z][a-z]{2,})*")
_FIGURE_RE = re.compile(r"(?<![\w.,])(\d+(?:\.\d+)?)(?![\d])")


@dataclass(frozen=True)
class MadePair:
    pair: PairInput
    kind: str  # copy, paraphrase, other, partial, or a contradiction kind (figure, negation, direction, name)
    label: str  # Complete / Partial / Incomplete (the expert vocabulary the fit uses)


def usable_sentences(text: str) -> list[str]:
    """Sentences of a source that read as claims: enough content words, not a heading."""
    out = []
    for s in split_sentences(text):
        ws = words(s)
        if len(s) > MAX_CHARS or len(set(forms(ws))) < MIN_FORMS:
            continue
        if sum(1 for w in ws if w.capital) > 0.5 * len(ws) or "http" in s or s.count("|") > 1:
            continue
        out.append(s)
    return out


def paraphrase(sentence: str, rng: random.Random) -> str:
    """A rule-made rewording that keeps the sentence's meaning (see the module doc)."""
    text = sentence
    parts = [p for p in clauses(text) if len(set(forms(words(p)))) >= MIN_FORMS - 1]
    if len(clauses(text)) > 1 and parts and rng.random() < 0.5:
        text = max(parts, key=len)
    for a, b in rng.sample(_SYNONYMS, len(_SYNONYMS)):
        if re.search(rf"\b{a}\b", text):
            text = re.sub(rf"\b{a}\b", b, text, count=1)
            break
    text = re.sub(r"(\d)\s*%", r"\1 percent", text)
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    if rng.random() < 0.5:
        text = re.sub(r"\b[a-z]{4,}ly\s+", "", text, count=1)
    return text.strip()


def contradictions(sentence: str, rng: random.Random, names: Sequence[str]) -> list[tuple[str, str]]:
    """(kind, changed sentence) for each change that applies: the source then contradicts it."""
    out = []
    m = next((x for x in _FIGURE_RE.finditer(sentence) if x.group(1) not in ("1", "0")), None)
    if m is not None:
        value = m.group(1)
        changed = value + "0" if rng.random() < 0.5 else str(int(float(value)) + rng.randint(2, 9))
        out.append(("figure", sentence[: m.start(1)] + changed + sentence[m.end(1) :]))
    aux = _AUXILIARY_RE.search(sentence)
    if aux is not None and not re.search(r"\bnot\b|n't\b|\bno\b|\bnever\b", sentence):
        out.append(("negation", sentence[: aux.end()] + " not" + sentence[aux.end() :]))
    for a, b in _FLIPS:
        if re.search(rf"\b{a}\b", sentence):
            out.append(("direction", re.sub(rf"\b{a}\b", b, sentence, count=1)))
            break
    here = _NAME_RE.search(sentence)
    others = [n for n in names if n not in sentence]
    if here is not None and others:
        out.append(("name", sentence[: here.start()] + rng.choice(others) + sentence[here.end() :]))
    return out


def make_pairs(inputs: Sequence[PairInput], per_source: int, seed: int,
               with_contradictions: bool = False) -> list[MadePair]:
    """Pairs made from the sources of `inputs` (their questions group sources by topic): for up to
    `per_source` sentences of each distinct source, one pair of each kind that applies."""
    rng = random.Random(seed)
    by_question: dict[str, list[str]] = {}
    for p in inputs:
        texts = by_question.setdefault(p.question, [])
        if p.source not in texts:
            texts.append(p.source)
    names = sorted({m.group(0) for p in inputs for m in _NAME_RE.finditer(p.source)})
    out: list[MadePair] = []
    for question in sorted(by_question):
        texts = by_question[question]
        for text in texts:
            sentences = usable_sentences(text)
            others = [s for t in texts if t != text for s in usable_sentences(t) if s not in text]
            for s in rng.sample(sentences, min(per_source, len(sentences))):
                out.append(MadePair(PairInput(s, text, (text,), question), "copy", "Complete"))
                out.append(MadePair(PairInput(paraphrase(s, rng), text, (text,), question), "paraphrase", "Complete"))
                if others:
                    other = rng.choice(others)
                    out.append(MadePair(PairInput(other, text, (text,), question), "other", "Incomplete"))
                    tail = max(clauses(rng.choice(others)), key=len).rstrip(".")
                    joined = s.rstrip(".") + ", and " + tail[:1].lower() + tail[1:] + "."
                    out.append(MadePair(PairInput(joined, text, (text,), question), "partial", "Partial"))
                if with_contradictions:
                    for kind, changed in contradictions(s, rng, names):
                        out.append(MadePair(PairInput(changed, text, (text,), question), kind, "Incomplete"))
    return out
