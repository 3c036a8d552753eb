"""Unit values of a support audit that asks relevance too (`aee audit sample --relevance`).

Its clusters are answers (`pipeline.audit.population`, module doc): a drawn answer carries a
person's relevance of each of its statements and support of each pair a person can check, so its
value under the people's labels is computed exactly, by the registry's own metric, with nothing
assumed about the rest of the answer. What the corrected value then estimates is the scorecard of
the people's relevance and support together (strict rules), which is what `aee scorecard --judge
human` prints from people's labels, up to the pairs nobody can check here (a source without text
stays unknown to everyone).

Per answer u of the population:
  * yhat_u: the judge's value (its relevance, its support, an abstention as "none": a fixed
    stand-in, never a prediction, as in `pipeline.audit.ppi`);
  * y_u, c_u: the value under the person's labels (a "can't tell" on a pair leaves it unknown, on
    a relevance question leaves the statement counting as content, as on the scorecard).
An answer is outside the population when no labels could give it a value (the judge has none, nor
does the label-free reading where every statement counts and no pair supports). An answer inside
it that the person's labels leave without a value (every statement filler, say) drops out of the
people's mean, which is the same as giving it that mean: its y is the engine's corrected mean,
solved with the estimate (`ppi_cells.settle_undecided`, fill 1: y = judge's engine mean + the
engine's error; c = the people-only mean). Within an engine that is exact; across engines an
answer that drops out would take the all-engines mean instead of its engine's (a difference of
the share of such answers times the gap between the two means: 19 of 666 answers on ExpertQA).
A judge without a value on an answer predicts its engine's mean (any prediction keeps PPI unbiased).
A statement citing a source with text and one without is read as the metric reads it (one "full"
pair decides it, otherwise it is undecided): the answer's value is computed whole, so nothing needs
to be a sum over statements, unlike the statement clusters of `pipeline.audit.ppi`.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from pipeline.audit import CANT_TELL, definite
from pipeline.audit.population import audited_sources, item_asks, pair_cluster_ids
from pipeline.audit.ppi_units import (
    STRICT,
    Piece,
    Population,
    UnitValues,
    _const,
    _finish,
    _outside,
    in_scope,
    out_of_date,
    prediction_view,
)
from pipeline.audit.sample import Sample
from pipeline.metrics import METRICS, ScoringContext
from pipeline.records import AnnotatedAnswer, Verdict

Labels = Mapping[str, Mapping[str, "str | None"]]


def relabelled(a: AnnotatedAnswer, support: Mapping[tuple[int, int], object], relevance: Mapping[int, object],
               judge: str = "human:audit") -> AnnotatedAnswer:
    """The answer with a person's labels on these pairs and statements: a definite label replaces
    the judge's; "can't tell" removes the judge's label (a pair is then unknown, a statement counts
    as content: in the label view any decided label would win)."""
    undecided = {k for k, v in support.items() if not definite(v)}
    said = set(relevance)
    keep = tuple(v for v in a.verdicts
                 if not (v.kind == "support" and (v.statement_index, v.source_index) in undecided)
                 and not (v.kind == "relevance" and v.statement_index in said))
    aid = a.answer.answer_id
    extra = [Verdict(aid, "support", str(v), judge, "audit", statement_index=si, source_index=src)
             for (si, src), v in support.items() if definite(v)]
    extra += [Verdict(aid, "relevance", str(v), judge, "audit", statement_index=si)
              for si, v in relevance.items() if definite(v)]
    return AnnotatedAnswer(a.answer, a.statements, (*keep, *extra))


def relevance_units(metric: str, sample: Sample, answers: Mapping[str, AnnotatedAnswer],
                    people: Sequence[Labels], population: Population | None = None) -> UnitValues | str:
    """`pipeline.audit.ppi.unit_values` for a pair sample with relevance (answer clusters); with
    `population`, `answers` need only hold the drawn answers (`pipeline.audit.ppi_population`)."""
    frame, items = sample.frame, sample.items
    scope = sample.meta.get("scope", "cited")  # the scope rule itself is checked by `ppi._pair_units`
    design = ("relevance", metric, scope)
    stale = (population.out_of_date(design, frame, "answer") if population is not None else
             out_of_date(frame["answer_id"], frame["cluster_id"], answers,
                         pair_cluster_ids(answers, scope, relevance=True), "answer"))
    if stale:
        return stale
    drawn = {cid: part.to_dict("records") for cid, part in items.groupby("cluster_id", sort=False)}
    rows, consts, judged = [], [], []
    for cid, aid in zip(frame["cluster_id"], frame["answer_id"]):
        if population is not None and aid not in answers:
            continue  # its label-free numbers come from the population
        piece = relevance_piece(metric, answers[aid], cid, drawn.get(cid), people, scope)
        rows += piece.rows
        consts += piece.consts
        judged += piece.judged
    if population is not None:
        return population.merged(design, sample, answers, rows, consts, judged)
    return finish_relevance(sample, pd.DataFrame(rows), consts, pd.DataFrame(judged))


def relevance_piece(metric: str, a: AnnotatedAnswer, cid: str, drawn: Sequence[Mapping] | None,
                    people: Sequence[Labels], scope: str) -> Piece:
    """One answer cluster's part of `relevance_units`: its row (`stand_in` when the judge has no
    value: `finish_relevance` gives it the engine's mean), its constant and its judged row."""
    fn = METRICS[metric].fn
    aid = a.answer.answer_id
    a = in_scope(a, scope)
    listed = {s.index: s for s in a.answer.sources}
    frame_pairs = [(st.index, i) for st in a.statements for i in audited_sources(st, listed, scope)]
    base_j = prediction_view(a, frame_pairs)
    result = fn(ScoringContext(base_j, STRICT))
    judged = [{"answer_id": aid, "engine": a.answer.engine, "query_type": a.answer.query_type, "metric": metric,
               "value": result.value, "units": result.units, "unknown": result.unknown,
               "unknown_why": result.unknown_why}]
    if result.value is None and not _decidable(metric, a, frame_pairs):
        return Piece([_outside(cid)], [], judged)
    row = {"cluster_id": cid, "yhat": result.value, "y": np.nan, "c": np.nan, "complete": False,
           "in_population": True, "engine": a.answer.engine,  # engine: for the judge's stand-in
           "stand_in": result.value is None}
    values = []
    for labels in people if drawn is not None else ():
        support: dict[tuple[int, int], object] = {}
        relevance: dict[int, object] = {}
        for r in drawn or ():
            got = labels.get(r["item_id"]) or {}
            if item_asks(r) == "relevant":
                relevance[int(r["statement_index"])] = got.get("relevant")
            else:
                support[(int(r["statement_index"]), int(r["source_index"]))] = got.get("support")
        if all(definite(v) or v == CANT_TELL for v in (*support.values(), *relevance.values())):
            values.append(fn(ScoringContext(relabelled(base_j, support, relevance), STRICT)).value)
    if values:
        defined = [v for v in values if v is not None]
        # a person whose labels leave the answer without a value: it takes its domain's mean
        # (module doc; `drop_out` is completed per domain by `ppi_cells`); several people: the
        # share of them who did
        share_out = 1 - len(defined) / len(values)
        mean_in = float(np.mean(defined)) if defined else 0.0
        row |= {"y": (1 - share_out) * mean_in, "c": (1 - share_out) * mean_in, "fill": share_out,
                "fill_c": share_out, "drop_out": share_out, "complete": True}
    return Piece([row], [_const(a, 0.0, 0.0)], judged)


def finish_relevance(sample: Sample, rows: pd.DataFrame, consts: Sequence[dict] | pd.DataFrame,
                     judged: pd.DataFrame) -> UnitValues:
    """The units of `relevance_units` from every cluster's row (`stand_in_means` first)."""
    rows = stand_in_means(rows)
    out = _finish(sample, rows, consts)
    drop = rows[["cluster_id", "drop_out"]].astype({"drop_out": float}).fillna({"drop_out": 0.0})
    clusters = out.clusters.merge(drop, on="cluster_id", how="left").fillna({"drop_out": 0.0})
    return UnitValues(clusters, out.answers, judged)


def stand_in_means(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows with the judge's engine mean as its prediction where it has no value (rows marked
    `stand_in`), the mean taken over the engine's other answers in the population."""
    rows = rows.copy()
    for column in ("cluster_id", "yhat", "in_population", "engine", "stand_in", "drop_out"):
        if column not in rows.columns:
            rows[column] = None
    stand_in = rows["stand_in"].astype("boolean").fillna(False).astype(bool).to_numpy()
    inside = rows["in_population"].astype("boolean").fillna(False).astype(bool).to_numpy()
    usable = inside & ~stand_in
    if stand_in.any():
        means = pd.to_numeric(rows.loc[usable, "yhat"]).groupby(rows.loc[usable, "engine"]).mean()
        rows.loc[stand_in, "yhat"] = rows.loc[stand_in, "engine"].map(means).fillna(0.0).to_numpy()
    rows["yhat"] = pd.to_numeric(rows["yhat"]).astype(float)
    return rows


def _decidable(metric: str, a: AnnotatedAnswer, frame_pairs: Sequence[tuple[int, int]]) -> bool:
    """Whether some labels could give the answer a value: a citation a person can check (citation
    accuracy), or a statement with such a pair or citing no listed source (unsupported statements:
    unsupported when it counts)."""
    checked = {si for si, _ in frame_pairs}
    if metric == "citation_accuracy":
        return any(src in st.citations for st in a.statements for si, src in frame_pairs if si == st.index)
    listed = {s.index for s in a.answer.sources}
    return any(st.index in checked or not any(i in listed for i in st.citations) for st in a.statements)


def relevance_view(sample: Sample) -> Sample:
    """A pair sample asking relevance seen as a statement sample of its relevance items: it holds the
    relevance of every statement of each drawn answer, all that *relevant statements* reads, so that
    metric can be corrected from it where no statement sample was drawn. Its clusters (answers),
    strata and weights are the pair sample's own: any stratification the sample was drawn by keeps
    the estimate unbiased."""
    items = sample.items
    if "asks" in items.columns:
        items = items[items["asks"] == "relevant"].reset_index(drop=True)
    return Sample(dict(sample.meta) | {"unit": "statement", "relevance": False, "relevance_of": sample.sample_id}, items,
                  sample.frame)
