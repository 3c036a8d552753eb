"""The population an audit samples from: every item a person could label, grouped into clusters.

Two units (docs/audit.md):

* `pair`: a relevant statement (by the judge's relevance) and one of its sources that has text here
  (a source without text, or one that could not be fetched, is unknown to every judge and to the
  metrics, so nobody is asked about it: `audited_sources`). Items are grouped
  by statement, because the support metrics are built per statement (a statement is unsupported
  when none of its sources supports it): a sample draws whole statements and asks about each of
  their pairs in scope, so every drawn statement's value can be computed from human labels alone.
  Scope `cited` (the default) takes the sources the statement cites; `all` takes every listed
  source, which the strict unsupported-statements metric needs on datasets whose judges label
  uncited pairs too.
  With `relevance` (`aee audit sample --relevance`), the frame also asks which statements count,
  and its clusters are answers: every statement gets an item asking its relevance (`asks` =
  "relevant", no source), followed by an item per pair a person can check asking its support.
  The support metrics are averages over each answer's relevant statements: a person who calls a
  statement filler changes the denominator of every other statement's share, so the people's
  value of an answer is known only when all of it is labelled (a statement-by-statement sample
  was tried: 0.3 points off per answer where several statements flip, 2.3 points on a cell of
  ExpertQA with every unit labelled). Corrected support metrics then estimate the scorecard of
  the people's relevance and support together, which `aee scorecard --judge human` computes from
  people's labels.
* `statement`: every statement of an answer (relevance; stance and the answer's confidence on
  debate questions). Items are grouped by answer, because one-sided and overconfident answers are
  built from all of an answer's statements.

Each cluster has a stratum: its engine and what the judge said (for a statement, its best support
label over its pairs; for an answer, whether the judge finds it one-sided, or whether every
statement is relevant). Strata let a sample hold the rare labels and keep every estimate unbiased.

Everything is a pure function of the annotated answers; a judge label that is not one of the
definite values (no verdict, `unknown`, an error) is `unknown`: no prediction, never `none`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Mapping

import pandas as pd

from pipeline.judges.backends.windows import char_windows, rank_windows
from pipeline.matrices import LabelView, is_relevant, label_view
from pipeline.metrics import METRICS, ScoreConfig, ScoringContext
from pipeline.records import SUPPORT_LABELS, AnnotatedAnswer, Source, Statement, unreadable_code

PASSAGE_CHARS = 420  # length of the source window marked as the best match
PASSAGE_OVERLAP = 160
MAX_SOURCE_CHARS = 200_000  # longer source texts are cut (bounded work and page size)
UNKNOWN = "unknown"
SUPPORT_RANK = ("full", "partial", "none")  # a statement's stratum label: its best pair label


@dataclass(frozen=True)
class Frame:
    """The clusters (sampling units) and items (what a person labels) of one dataset x judge."""

    unit: str
    scope: str
    clusters: pd.DataFrame  # cluster_id, answer_id, engine, query_type, judge_class, stratum, n_items
    items: pd.DataFrame  # item_id, cluster_id, position in cluster, display fields, judge labels
    relevance: bool = False  # a pair frame whose clusters also ask their statement's relevance


def item_id(dataset: str, unit: str, answer_id: str, statement_index: int, source_index: int | None = None) -> str:
    """A stable, short id of one item ("p-3f9a..." for a pair, "s-..." for a statement): the same
    item gets the same id in every sample of the dataset."""
    key = "\x1f".join([dataset, answer_id, str(statement_index), "" if source_index is None else str(source_index)])
    return f"{unit[0]}-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]


def best_passage(statement: str, text: str) -> tuple[int, int]:
    """Character span of the source window sharing the most (rare) words with the statement;
    (-1, -1) when the source has no text or is no longer than one window. Judge-independent, so marking it cannot anchor a person
    on the judge's own evidence."""
    if not text.strip() or len(text.strip()) <= PASSAGE_CHARS:
        return (-1, -1)  # nothing to find in a source that fits in one passage: it is read whole
    spans = char_windows(text, PASSAGE_CHARS, PASSAGE_OVERLAP)
    if not spans:
        return (-1, -1)
    best = rank_windows(statement, [text[s:e] for s, e in spans], keep=1)[0]
    return spans[best]


def _support_label(label: object) -> str:
    return label if isinstance(label, str) and label in SUPPORT_LABELS else UNKNOWN


def _stratum_label(labels: list[str]) -> str:
    for label in SUPPORT_RANK:
        if label in labels:
            return label
    return UNKNOWN


def _answer_class(a: AnnotatedAnswer, ctx: ScoringContext | None = None) -> str:
    """What the judge says about a whole answer, for the statement unit's strata."""
    ctx = ctx or ScoringContext(a, ScoreConfig("strict", "exact"))
    one_sided = METRICS["one_sided"].fn(ctx).value if a.answer.query_type == "debate" else None
    return _class_of_answer(a, ctx.view, one_sided)


def _class_of_answer(a: AnnotatedAnswer, view: LabelView, one_sided: float | None) -> str:
    if a.answer.query_type == "debate":
        return UNKNOWN if one_sided is None else ("one-sided" if one_sided == 1.0 else "two-sided")
    relevant = sum(1 for s in a.statements if is_relevant(view, s))
    return "all relevant" if relevant == len(a.statements) else "some filler"


def audited_sources(statement: Statement, sources: Mapping[int, Source], scope: str = "cited") -> list[int]:
    """The source indexes a statement is checked against in a pair audit: the listed sources it
    cites (scope `cited`) or every listed source (`all`), leaving out those with no text here or
    that could not be fetched. Nobody can judge such a pair from what the toolkit holds: every judge
    leaves it `unknown`, the metrics leave it out (docs/metrics/unknown.md), so an audit neither asks
    people about it nor counts it in what it estimates."""
    indexes = [i for i in statement.citations if i in sources] if scope == "cited" else sorted(sources)
    return [i for i in dict.fromkeys(indexes) if not unreadable_code(sources[i])]


def in_pair_frame(view: LabelView, statement: Statement, sources: Mapping[int, Source], scope: str, relevance: bool) -> bool:
    """Whether a statement is in the pair frame: a relevant one (the judge's relevance) with a pair
    in scope a person can check; with `relevance`, every statement (its relevance decides whether it
    counts, and a statement whose sources have no text still enters the unknown-share rule)."""
    return relevance or (is_relevant(view, statement) and bool(audited_sources(statement, sources, scope)))


def pair_cluster_ids(answers: Mapping[str, AnnotatedAnswer], scope: str = "cited", relevance: bool = False) -> set[str]:
    """The clusters `pair_frame` would build (statements, or answers with `relevance`), without
    building them (a cheap check that a sample still matches the results it was drawn from)."""
    out = set()
    for aid, a in answers.items():
        view = label_view(a)
        listed = {s.index: s for s in a.answer.sources}
        for st in a.statements:
            if in_pair_frame(view, st, listed, scope, relevance):
                out.add(aid if relevance else f"{aid}#s{st.index}")
    return out


def pair_frame(dataset: str, answers: Mapping[str, AnnotatedAnswer], scope: str = "cited",
               relevance: bool = False) -> Frame:
    """Statement clusters of (statement, source) pairs, or with `relevance` answer clusters of
    relevance and pair items; see the module doc."""
    clusters: list[dict] = []
    items: list[dict] = []
    for aid in sorted(answers):
        a = answers[aid]
        view = label_view(a)
        listed = {s.index: s for s in a.answer.sources}
        pos = 0
        for st in a.statements:
            if not in_pair_frame(view, st, listed, scope, relevance):
                continue
            indexes = audited_sources(st, listed, scope)
            cluster_id = aid if relevance else f"{aid}#s{st.index}"
            pos = pos if relevance else 0
            relevant = view.relevant.get(st.index)
            judge_relevant = UNKNOWN if relevant is None else ("relevant" if relevant else "filler")
            common = {"cluster_id": cluster_id, "answer_id": aid, "engine": a.answer.engine, "query": a.answer.query,
                      "query_type": a.answer.query_type, "answer_text": a.answer.text, "statement_index": st.index,
                      "statement": st.text, "statement_start": st.start, "statement_end": st.end,
                      "judge_relevant": judge_relevant}
            if relevance:
                items.append({**common, "item_id": item_id(dataset, "statement", aid, st.index), "position": pos,
                              "source_index": -1, "cited": False, "source_title": "", "source_url": "",
                              "source_text": "", "passage_start": -1, "passage_end": -1, "judge_support": "",
                              "judge_score": None, "asks": "relevant"})
                pos += 1
            labels = []
            for index in indexes:
                src = listed[index]
                text = (src.text or "")[:MAX_SOURCE_CHARS]
                label = _support_label(view.support.get((st.index, index)))
                labels.append(label)
                p_start, p_end = best_passage(st.text, text)
                items.append({**common, "item_id": item_id(dataset, "pair", aid, st.index, index), "position": pos,
                              "source_index": index, "cited": index in st.citations, "source_title": src.title or "",
                              "source_url": src.url or "", "source_text": text, "passage_start": p_start,
                              "passage_end": p_end, "judge_support": label,
                              "judge_score": view.support_score.get((st.index, index)), "asks": "support"})
                pos += 1
            if not relevance:
                judge_class = _stratum_label(labels)
                clusters.append({"cluster_id": cluster_id, "answer_id": aid, "engine": a.answer.engine,
                                 "query_type": a.answer.query_type, "judge_class": judge_class,
                                 "stratum": f"{a.answer.engine} · judge: {judge_class}", "n_items": len(indexes)})
        if relevance and pos:
            judge_class = _support_class(a)
            clusters.append({"cluster_id": aid, "answer_id": aid, "engine": a.answer.engine,
                             "query_type": a.answer.query_type, "judge_class": judge_class,
                             "stratum": f"{a.answer.engine} · judge: {judge_class}", "n_items": pos})
    return Frame("pair", scope, _frame(clusters, CLUSTER_COLUMNS), _frame(items, PAIR_COLUMNS), relevance)


def _support_class(a: AnnotatedAnswer, ctx: ScoringContext | None = None) -> str:
    """What the judge says of a whole answer's support, for the strata of a frame with relevance:
    by its share of unsupported statements (none, some, all, or no value)."""
    return _class_of_support(METRICS["unsupported_statements"].fn(ctx or ScoringContext(a, ScoreConfig("strict", "exact"))).value)


def _class_of_support(value: float | None) -> str:
    if value is None:
        return UNKNOWN
    return "all supported" if value <= 1e-12 else "none supported" if value >= 1 - 1e-12 else "some unsupported"


def statement_frame(dataset: str, answers: Mapping[str, AnnotatedAnswer]) -> Frame:
    """Answer clusters of statements; see the module doc."""
    clusters: list[dict] = []
    items: list[dict] = []
    for aid in sorted(answers):
        a = answers[aid]
        if not a.statements:
            continue
        view = label_view(a)
        for pos, st in enumerate(a.statements):
            relevant = view.relevant.get(st.index)
            items.append({
                "item_id": item_id(dataset, "statement", aid, st.index), "cluster_id": aid, "position": pos,
                "answer_id": aid, "engine": a.answer.engine, "query": a.answer.query, "query_type": a.answer.query_type,
                "answer_text": a.answer.text, "statement_index": st.index, "statement": st.text,
                "statement_start": st.start, "statement_end": st.end,
                "judge_relevant": UNKNOWN if relevant is None else ("relevant" if relevant else "filler"),
                "judge_stance": (view.stance.get(st.index) or UNKNOWN) if a.answer.query_type == "debate" else "",
                "judge_confidence": "" if view.confidence is None else str(view.confidence),
            })
        judge_class = _answer_class(a)
        clusters.append({"cluster_id": aid, "answer_id": aid, "engine": a.answer.engine, "query_type": a.answer.query_type,
                         "judge_class": judge_class,
                         "stratum": f"{a.answer.engine} · {a.answer.query_type} · judge: {judge_class}",
                         "n_items": len(a.statements)})
    return Frame("statement", "all", _frame(clusters, CLUSTER_COLUMNS), _frame(items, STATEMENT_COLUMNS))


def build_frame(dataset: str, answers: Mapping[str, AnnotatedAnswer], unit: str, scope: str = "cited",
                relevance: bool = False) -> Frame:
    """The frame of one unit (`pair` with a scope and whether it asks relevance, or `statement`)."""
    if unit == "pair":
        return pair_frame(dataset, answers, scope, relevance)
    if unit == "statement":
        return statement_frame(dataset, answers)
    raise ValueError(f"unit must be pair or statement, not {unit!r}")


CLUSTER_COLUMNS = ("cluster_id", "answer_id", "engine", "query_type", "judge_class", "stratum", "n_items")
_COMMON = ("item_id", "cluster_id", "position", "answer_id", "engine", "query", "query_type", "answer_text",
           "statement_index", "statement", "statement_start", "statement_end")
# `asks`: what a person answers on the item ("support", or "relevant" for the statement item of a
# frame with relevance, whose source_index is -1)
PAIR_COLUMNS = (*_COMMON, "source_index", "cited", "source_title", "source_url", "source_text", "passage_start",
                "passage_end", "judge_support", "judge_score", "asks", "judge_relevant")
STATEMENT_COLUMNS = (*_COMMON, "judge_relevant", "judge_stance", "judge_confidence")


def _frame(rows: list[dict], columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(columns))


def judge_labels(items: pd.DataFrame, answers: Mapping[str, AnnotatedAnswer], unit: str
                 ) -> tuple[dict[str, dict[str, str]], dict[str, float]]:
    """The judge's current labels of a sample's items (field -> item id -> label, `unknown` where it
    gave none) and its support scores (item id -> score, where it has one)."""
    fields: dict[str, dict[str, str]] = {"support": {}, "relevant": {}, "stance": {}, "confidence": {}}
    scores: dict[str, float] = {}
    views = {aid: label_view(answers[aid]) for aid in set(items["answer_id"]) if aid in answers}
    for r in items.to_dict("records"):
        view = views.get(r["answer_id"])
        if view is None:
            continue
        si, iid = int(r["statement_index"]), r["item_id"]
        if unit == "pair" and item_asks(r) == "relevant":
            relevant = view.relevant.get(si)
            fields["relevant"][iid] = UNKNOWN if relevant is None else ("relevant" if relevant else "filler")
        elif unit == "pair":
            key = (si, int(r["source_index"]))
            fields["support"][iid] = _support_label(view.support.get(key))
            if key in view.support_score:
                scores[iid] = float(view.support_score[key])
        else:
            relevant = view.relevant.get(si)
            fields["relevant"][iid] = UNKNOWN if relevant is None else ("relevant" if relevant else "filler")
            if r["query_type"] == "debate":
                fields["stance"][iid] = view.stance.get(si) or UNKNOWN
                fields["confidence"][iid] = UNKNOWN if view.confidence is None else str(view.confidence)
    return fields, scores


def item_asks(item: Mapping) -> str:
    """What a person answers on a pair-sample item: "support", or "relevant" for a statement item
    (samples drawn before relevance could be asked have no `asks` column: all support)."""
    asks = item.get("asks")
    return asks if isinstance(asks, str) and asks else "support"


# The frames an audit can draw from, by name: (unit, scope, relevance). The Audit page drafts the
# number of items of each from its clusters alone (`cluster_rows`, written by `aee run`).
FRAME_VARIANTS: dict[str, tuple[str, str, bool]] = {
    "pair/cited": ("pair", "cited", False), "pair/all": ("pair", "all", False),
    "pair/cited/relevance": ("pair", "cited", True), "pair/all/relevance": ("pair", "all", True),
    "statement": ("statement", "all", False),
}


def variant_name(unit: str, scope: str, relevance: bool) -> str:
    """The FRAME_VARIANTS key of a frame ("pair/all/relevance", "statement")."""
    if unit == "statement":
        return "statement"
    return f"pair/{scope}" + ("/relevance" if relevance else "")


CLASS_METRICS = ("unsupported_statements", "one_sided")  # strict, exact: what the strata read of the metrics


def cluster_rows(answers: Mapping[str, AnnotatedAnswer],
                 values: Mapping[str, Mapping[str, float | None]] | None = None) -> list[dict]:
    """The clusters of `build_frame(...)` of every FRAME_VARIANTS frame (same rows, same order within
    a variant, named in `variant`), without their items: no source text is windowed and each answer's
    labels are read once, so it is cheap enough to run on every chunk of `aee run`. `values`: {answer
    id: {metric: value}} of CLASS_METRICS under strict rules and exact necessity, when the caller
    scored them already (the runner); computed here otherwise."""
    out: list[dict] = []
    for aid in sorted(answers):
        a = answers[aid]
        if not a.statements:
            continue
        engine, query_type = a.answer.engine, a.answer.query_type
        known = (values or {}).get(aid)
        ctx = None if known is not None else ScoringContext(a, ScoreConfig("strict", "exact"))
        view = ctx.view if ctx is not None else label_view(a)
        listed = {s.index: s for s in a.answer.sources}
        if known is not None:
            answer_class = _class_of_answer(a, view, known.get("one_sided"))
        else:
            answer_class = _answer_class(a, ctx)
        out.append({"variant": "statement", "cluster_id": aid, "answer_id": aid, "engine": engine,
                    "query_type": query_type, "judge_class": answer_class,
                    "stratum": f"{engine} · {query_type} · judge: {answer_class}", "n_items": len(a.statements)})
        support_class: str | None = None
        for scope in ("cited", "all"):
            pos = 0
            for st in a.statements:
                indexes = audited_sources(st, listed, scope)
                pos += 1 + len(indexes)  # with relevance every statement is asked, then its pairs
                if not (is_relevant(view, st) and indexes):
                    continue
                judge_class = _stratum_label([_support_label(view.support.get((st.index, i))) for i in indexes])
                out.append({"variant": f"pair/{scope}", "cluster_id": f"{aid}#s{st.index}", "answer_id": aid,
                            "engine": engine, "query_type": query_type, "judge_class": judge_class,
                            "stratum": f"{engine} · judge: {judge_class}", "n_items": len(indexes)})
            if support_class is None:
                support_class = _support_class(a, ctx) if known is None else \
                    _class_of_support(known.get("unsupported_statements"))
            out.append({"variant": f"pair/{scope}/relevance", "cluster_id": aid, "answer_id": aid, "engine": engine,
                        "query_type": query_type, "judge_class": support_class,
                        "stratum": f"{engine} · judge: {support_class}", "n_items": pos})
    return out


def clusters_frame(unit: str, scope: str, relevance: bool, clusters: pd.DataFrame) -> Frame:
    """A frame of clusters only (one stand-in item per cluster): enough for `draw` to choose clusters
    and for `ppi_cells.items_for_corrected_values` to draft the number of items, not for labelling."""
    clusters = clusters[list(CLUSTER_COLUMNS)].reset_index(drop=True)
    # plain Python strings, as `build_frame` makes: Arrow-backed ones (a Parquet read) compare and
    # iterate an order of magnitude slower in the draws that size a sample
    clusters = clusters.astype({c: object for c in CLUSTER_COLUMNS if c != "n_items"}).astype({"n_items": "int64"})
    items = pd.DataFrame({"cluster_id": clusters["cluster_id"], "position": 0})
    return Frame(unit, scope, clusters, items, relevance)
