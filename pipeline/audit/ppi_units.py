"""The unit values both kinds of pair estimate share (`pipeline.audit.ppi`, statement clusters, and
`pipeline.audit.ppi_relevance`, answer clusters): the record of per-unit numbers, the judge's
labels as a prediction, and the answers' constants. Kept apart so those two modules need not
import each other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import AbstractSet, Iterable, Mapping, NamedTuple, Protocol, Sequence

import pandas as pd

from pipeline.audit.sample import Sample
from pipeline.metrics import ScoreConfig
from pipeline.records import SUPPORT_LABELS, AnnotatedAnswer, Verdict

STRICT = ScoreConfig("strict", "exact")
NO_PREDICTION_JUDGE = "audit:no-prediction"


def with_verdicts(a: AnnotatedAnswer, extra: Sequence[Verdict]) -> AnnotatedAnswer:
    """The answer with verdicts appended: in the label view the last verdict of a key wins."""
    return AnnotatedAnswer(a.answer, a.statements, (*a.verdicts, *extra)) if extra else a


def _support(a: AnnotatedAnswer, pairs: Mapping[tuple[int, int], str], judge: str) -> list[Verdict]:
    return [Verdict(a.answer.answer_id, "support", label, judge, "audit", statement_index=si, source_index=src)
            for (si, src), label in pairs.items()]


def prediction_view(a: AnnotatedAnswer, frame_pairs: Sequence[tuple[int, int]]) -> AnnotatedAnswer:
    """The judge's labels with every frame pair that has no definite support label set to "none":
    a fixed stand-in, never a prediction (`pipeline.audit.ppi`, module doc)."""
    from pipeline.matrices import label_view

    view = label_view(a)
    missing = {k: "none" for k in frame_pairs if view.support.get(k) not in SUPPORT_LABELS}
    return with_verdicts(a, _support(a, missing, NO_PREDICTION_JUDGE))


@dataclass(frozen=True)
class UnitValues:
    """Per frame cluster (population order): stratum, answer, prediction, human value (NaN when not
    labelled), human-only contribution; per answer: constants that need no label."""

    # cluster_id, stratum, answer_id, engine, query_type, yhat, y, c, labelled, n_items, and fill / fill_c: the
    # share of its answer's decided units a person's "can't tell" took out (`pipeline.audit.ppi` module doc, "Undecided units")
    clusters: pd.DataFrame
    answers: pd.DataFrame  # answer_id, engine, query_type, judge_const, human_const (answers in the metric's population)
    # every answer (in the population or not): the metric's units and those no label can decide here
    # (answer_id, engine, query_type, metric, value, units, unknown, unknown_why), for the
    # scorecard's unjudged-share rule on the corrected values; empty where no label-free unknown exists
    judged: pd.DataFrame = field(default_factory=pd.DataFrame)


class Piece(NamedTuple):
    """One answer's part of a metric's unit values: its clusters' rows, its constant (none when it
    is outside the metric's population) and its judged row (pair metrics)."""

    rows: list[dict]
    consts: list[dict]
    judged: list[dict]


# a sample design: ("pair" | "relevance" | "answer", metric, scope ("" for answer clusters))
Design = tuple[str, str, str]


class Population(Protocol):
    """The label-free numbers of every answer of a result set for some designs
    (`pipeline.audit.ppi_population.StoredPopulation`): the unit functions compute only the answers
    they are given (the drawn ones) and take every other answer's part from it."""

    @property
    def ids(self) -> AbstractSet[str]: ...

    @property
    def cited_only(self) -> bool: ...

    def clusters(self, design: Design) -> set[str]: ...

    def out_of_date(self, design: Design, frame: pd.DataFrame, what: str) -> str: ...

    def merged(self, design: Design, sample: Sample, answers: Mapping[str, AnnotatedAnswer], rows: list[dict],
               consts: list[dict], judged: list[dict]) -> UnitValues: ...


def in_scope(a: AnnotatedAnswer, scope: str) -> AnnotatedAnswer:
    """The answer without the judge's support labels on pairs outside the audit's scope: with scope
    `cited` (allowed for a metric only where labels of uncited pairs cannot change it, or the
    dataset's labels cover cited pairs only, as ExpertQA's), a pair the statement does not cite is
    never asked about, so the judge's label there must not enter the prediction, the people's value
    or the label-free baseline: the estimand is then the scorecard of the people's labels on the
    cited pairs, as `aee scorecard --judge human` computes it. (Left in, an uncited pair the judge
    calls "full" made a statement supported whatever the people said: on ExpertQA, 13 points on one
    engine's unsupported statements.)"""
    if scope != "cited":
        return a
    cites: dict[int | None, set[int]] = {st.index: set(st.citations) for st in a.statements}
    keep = tuple(v for v in a.verdicts if not (v.kind == "support" and v.source_index is not None
                                               and v.source_index not in cites.get(v.statement_index, set())))
    return a if len(keep) == len(a.verdicts) else AnnotatedAnswer(a.answer, a.statements, keep)


def _outside(cluster_id: str) -> dict:
    """A unit of an answer outside the metric's population: its value is 0 with any labels."""
    return {"cluster_id": cluster_id, "yhat": 0.0, "y": 0.0, "c": 0.0, "complete": True, "in_population": False}


def _const(a: AnnotatedAnswer, judge_const: float, human_const: float) -> dict:
    return {"answer_id": a.answer.answer_id, "engine": a.answer.engine, "query_type": a.answer.query_type,
            "judge_const": judge_const, "human_const": human_const}


def _finish(sample: Sample, rows: Sequence[dict] | pd.DataFrame, consts: Sequence[dict] | pd.DataFrame) -> UnitValues:
    """Per-cluster numbers in frame order. A cluster is labelled when it was drawn and its value is
    known: complete human labels, or outside the population (0 whatever the labels). Undrawn
    clusters never count as labelled, or the labelled set would stop being a random sample."""
    values = pd.DataFrame(rows, columns=["cluster_id", "yhat", "y", "c", "complete", "in_population", "fill", "fill_c"])
    values[["fill", "fill_c"]] = values[["fill", "fill_c"]].astype(float).fillna(0.0)
    clusters = sample.frame[["cluster_id", "stratum", "answer_id", "engine", "query_type", "n_items"]].merge(
        values, on="cluster_id", how="left")
    drawn = clusters["cluster_id"].isin(set(sample.items["cluster_id"]))
    clusters["labelled"] = drawn & clusters["complete"].astype("boolean").fillna(False).astype(bool)
    clusters["in_population"] = clusters["in_population"].astype("boolean").fillna(False).astype(bool)
    clusters[["fill", "fill_c"]] = clusters[["fill", "fill_c"]].astype(float).fillna(0.0)
    answers = pd.DataFrame(consts, columns=["answer_id", "engine", "query_type", "judge_const", "human_const"])
    return UnitValues(clusters, answers)


def out_of_date(frame_answers: Iterable[str], frame_clusters: Iterable[str], answers: Iterable[str],
                current_clusters: set[str], what: str) -> str:
    """Why a registered sample no longer matches the results it was drawn from ("" when it does):
    answers gone, or clusters (`what`: statements, answers) that entered or left the population."""
    missing = sorted(set(frame_answers) - set(answers))
    if missing:
        return answers_gone(missing)
    changed = set(frame_clusters) ^ current_clusters
    return clusters_changed(len(changed), what) if changed else ""


def answers_gone(missing: Sequence[str]) -> str:
    """The reason for a sample whose answers (`missing`, sorted) left the results."""
    return f"{len(missing)} answer(s) of the sample are no longer in the results (e.g. {missing[0]!r}): draw a new sample"


def clusters_changed(count: int, what: str) -> str:
    """The reason for a sample whose population gained or lost `count` clusters."""
    return (f"the judge's results changed since the sample was drawn ({count} {what}(s) entered or left "
            "the audited population): draw a new sample")
