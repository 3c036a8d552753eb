"""Reference (gold) answers: how they are stored, how sources are matched, how they reach answers.

A dataset such as HAGRID gives, for each query, human-checked answers with citations. Those answers
are compared with other answers to the same query (`aee compare-gold`): their text for answer
correctness, their cited sources for citation overlap. A `GoldAnswer` names the sources it cites by
an identity key (`source_key`), so the sources of two answers can be matched whatever number each
answer gave them: the normalised URL when the source has one, else a hash of its normalised text
(HAGRID's quotes are Wikipedia passages without URLs; an answer that cites the same passage carries
the same text).

Answer correctness compares texts without their citation markers (`comparable_text`). The
BERTScore-style similarity of an answer with each of its gold answers needs a model, so the annotate
stage measures it (`pipeline.gold.similarity`) and stores one `gold_similarity` verdict per gold answer;
this module holds that verdict's layout (`GoldSimilarity`) and reads it back for the metrics
(`read_gold_similarity`), checking that each verdict still matches the texts it was measured on.

Pure functions over records: no I/O.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from pipeline.records import AnnotatedAnswer, Answer, GoldAnswer, LabelKind, Source, Verdict
from pipeline.text.text import all_cited_indexes, find_citation_markers, strip_citation_markers

__all__ = ["source_key", "gold_from_answer", "gold_to_json", "gold_from_json", "query_key", "attach_gold",
           "preferred_gold", "cited_keys", "comparable_text", "text_digest", "GOLD_SIMILARITY", "GoldSimilarity",
           "GoldSimilarities", "read_gold_similarity"]

GOLD_SIMILARITY: LabelKind = "gold_similarity"  # the verdict kind (records.LabelKind)

_SPACE_RE = re.compile(r"\s+")


def source_key(source: Source) -> str:
    """Identity of a source across answers: "url:<normalised url>" or "text:<hash of the text>";
    "" for a source with neither."""
    url = (source.url or "").strip()
    if url:
        url = re.sub(r"^https?://(www\.)?", "", url.lower()).rstrip("/")
        return f"url:{url}"
    text = _SPACE_RE.sub(" ", source.text or "").strip().lower()
    if not text:
        return ""
    return "text:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def cited_keys(answer: Answer) -> tuple[str, ...]:
    """Identity keys of the listed sources that a marker anywhere in the answer points to, in order."""
    urls = {s.url: s.index for s in answer.sources if s.url}
    keys: dict[str, None] = {}
    for index in all_cited_indexes(answer.text, urls):
        source = answer.source(index)
        key = source_key(source) if source is not None else ""
        if key:
            keys.setdefault(key, None)
    return tuple(keys)


def _flag(value: str | None) -> bool | None:
    return {"1": True, "0": False}.get(value or "")


def gold_from_answer(answer: Answer) -> GoldAnswer:
    """An answer of a gold dataset as a reference for others (its text, its cited sources, and the
    answer-level `attributable` / `informative` labels the importer put in meta as "1"/"0")."""
    return GoldAnswer(answer.text, cited_keys(answer), _flag(answer.meta.get("attributable")),
                      _flag(answer.meta.get("informative")))


def gold_to_json(gold: Sequence[GoldAnswer]) -> str:
    """The answers-table cell for an answer's gold references ("" when there are none)."""
    if not gold:
        return ""
    return json.dumps([dataclasses.asdict(g) for g in gold], ensure_ascii=False)


def gold_from_json(cell: object) -> tuple[GoldAnswer, ...]:
    """Read the answers-table cell back (a missing or damaged cell gives no gold)."""
    if not isinstance(cell, str) or not cell.strip():
        return ()
    try:
        items = json.loads(cell)
    except ValueError:
        return ()
    out = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("text"), str):
            flags = {k: item.get(k) if isinstance(item.get(k), bool) else None for k in ("attributable", "informative")}
            out.append(GoldAnswer(item["text"], tuple(str(c) for c in item.get("cited") or () if isinstance(c, str)), **flags))
    return tuple(out)


def query_key(query: str) -> str:
    """How queries are matched between a gold dataset and generated answers: case, spacing and
    closing punctuation ignored."""
    return _SPACE_RE.sub(" ", query).strip().rstrip("?.!").strip().casefold()


def gold_index(gold_answers: Iterable[AnnotatedAnswer]) -> dict[str, tuple[GoldAnswer, ...]]:
    """Reference answers of a gold dataset grouped by `query_key`, in the dataset's order."""
    out: dict[str, list[GoldAnswer]] = {}
    for annotated in gold_answers:
        out.setdefault(query_key(annotated.answer.query), []).append(gold_from_answer(annotated.answer))
    return {k: tuple(v) for k, v in out.items()}


def attach_gold(annotated: AnnotatedAnswer, index: Mapping[str, tuple[GoldAnswer, ...]]) -> AnnotatedAnswer:
    """The same answer carrying the reference answers of its query (unchanged when there are none)."""
    gold = index.get(query_key(annotated.answer.query), ())
    if not gold:
        return annotated
    return dataclasses.replace(annotated, answer=dataclasses.replace(annotated.answer, gold=gold))


def preferred_gold(gold: Sequence[GoldAnswer]) -> GoldAnswer | None:
    """The one reference whose citations citation overlap compares with, chosen as Djeddal et al.'s
    code does: the first answer labelled attributable and informative, else the first attributable,
    else the first informative, else the first. None when there is no gold answer."""
    for test in (lambda g: g.attributable and g.informative, lambda g: g.attributable, lambda g: g.informative):
        for g in gold:
            if test(g):
                return g
    return gold[0] if gold else None


# ---- BERTScore-style similarity with each gold answer, as measured by the annotate stage --------------


def comparable_text(text: str) -> str:
    """The text an answer or a gold answer is compared by: its citation markers removed."""
    return strip_citation_markers(text, find_citation_markers(text))


def text_digest(text: str) -> str:
    """A short fingerprint of a compared text, kept in the verdict so that a changed answer or gold
    answer is never scored with a similarity measured on the old text."""
    return hashlib.sha256(comparable_text(text).encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class GoldSimilarity:
    """What a `gold_similarity` verdict holds (as JSON in `raw`): the BERTScore-style precision,
    recall and F of the answer against the gold answer at position `gold` of `Answer.gold`, or why
    it could not be measured (`error`, the values then 0)."""

    gold: int
    answer_digest: str
    gold_digest: str
    precision: float = 0.0
    recall: float = 0.0
    f: float = 0.0
    error: str = ""

    def to_raw(self) -> str:
        """The verdict's raw JSON: the three values, or the error instead of them."""
        item = dataclasses.asdict(self)
        for key in ("precision", "recall", "f") if self.error else ("error",):
            del item[key]
        return json.dumps(item, ensure_ascii=False)

    @classmethod
    def from_raw(cls, raw: str) -> "GoldSimilarity | None":
        """Read a verdict's raw JSON back; None when it is not in this layout."""
        try:
            item = json.loads(raw)
            return cls(int(item["gold"]), str(item["answer_digest"]), str(item["gold_digest"]),
                       float(item.get("precision", 0.0)), float(item.get("recall", 0.0)), float(item.get("f", 0.0)),
                       str(item.get("error") or ""))
        except (ValueError, TypeError, KeyError, AttributeError):
            return None


@dataclass(frozen=True)
class GoldSimilarities:
    """The similarities of one answer with its gold answers, by gold position: measured ones, and
    for the others the reason the annotate stage gave (model unavailable)."""

    measured: dict[int, GoldSimilarity]
    failed: dict[int, str]


def read_gold_similarity(answer: Answer, verdicts: Iterable[Verdict]) -> GoldSimilarities:
    """The `gold_similarity` verdicts of an answer that match its current text and gold answers
    (others, measured on texts since changed, are ignored). Among several for one gold answer the
    last wins, except that a failure never hides a measurement."""
    answer_digest = text_digest(answer.text) if answer.gold else ""
    gold_digests = [text_digest(g.text) for g in answer.gold]
    measured: dict[int, GoldSimilarity] = {}
    failed: dict[int, str] = {}
    for v in verdicts:
        if v.kind != GOLD_SIMILARITY:
            continue
        item = GoldSimilarity.from_raw(v.raw)
        if (item is None or not 0 <= item.gold < len(gold_digests) or item.answer_digest != answer_digest
                or item.gold_digest != gold_digests[item.gold]):
            continue
        if item.error or v.error:
            if item.gold not in measured:
                failed[item.gold] = item.error or f"the similarity could not be measured ({v.error} error)"
        else:
            measured[item.gold] = item
            failed.pop(item.gold, None)
    return GoldSimilarities(measured, failed)
