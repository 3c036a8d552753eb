"""Cached loaders of the judge audit for the pages: samples, the labels store, agreement and the
prediction-powered rows. Everything is computed by `pipeline.audit`; this module only caches it,
keyed by what can change it (the labels store's newest event, the sample files, the results tables),
so a label given in one tab shows in another on its next rerun."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import data
from pipeline.audit import UNIT_FIELDS
from pipeline.audit.agreement import audit_agreement, per_person
from pipeline.audit.humans import EXPERTS, expert_labels
from pipeline.audit.labels import LabelStore, labels_path, seat_items
from pipeline.audit.population import item_asks, judge_labels
from pipeline.audit.sample import Sample, asks_relevance, list_samples, load_sample, samples_dir
from pipeline.storage.store import list_judges


def store() -> LabelStore:
    """The labels store of the current results folder (opened per call: it is a file, not a server)."""
    return LabelStore(labels_path(data.results_root()))


def version() -> tuple[int, int]:
    """(events, newest event id) of the labels store: changes whenever anyone saves a label."""
    return store().version()


def samples(dataset: str) -> list[dict[str, Any]]:
    """How each sample of a dataset was drawn, newest first."""
    return list_samples(dataset, data.results_root())


def _sample_stamp(sample_id: str) -> int:
    path = samples_dir(data.results_root()) / sample_id / "sample.json"
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


@st.cache_resource(show_spinner=False, max_entries=16)
def _sample(root: str, sample_id: str, stamp: int) -> Sample:
    return load_sample(sample_id, Path(root))


def sample(sample_id: str) -> Sample:
    """A registered sample (cached until its files change)."""
    return _sample(str(data.results_root()), sample_id, _sample_stamp(sample_id))


def sample_what(meta: dict[str, Any]) -> str:
    """What a sample holds, in words: "100 support pairs"; for a pair sample asking relevance too the
    two kinds of item apart ("272 items: 62 statements (relevance) and 210 pairs (support)")."""
    n = meta.get("n_items", "?")
    if meta.get("unit") == "pair" and meta.get("relevance"):
        try:
            asks = sample(str(meta["sample_id"])).items["asks"]
        except Exception:  # noqa: BLE001 - a sample whose files went missing is still named in the list
            return f"{n} items: statements (relevance) and pairs (support)"
        statements = int((asks == "relevant").sum())
        return f"{n} items: {statements} statements (relevance) and {len(asks) - statements} pairs (support)"
    what = {"pair": "support pairs", "statement": "statements (relevance, stance)"}.get(str(meta.get("unit")), "items")
    return f"{n} {what}"


def sample_label(meta: dict[str, Any], short: bool = False) -> str:
    """How a sample is named in a select box; `short`: its id and item count only (a narrow box, with
    `sample_what` written out beside it)."""
    if short:
        return f"{meta['sample_id']} · {meta.get('n_items', '?')} items"
    return f"{meta['sample_id']} · {sample_what(meta)} · judge {meta.get('judge', '?')}"


def item_order(s: Sample, seat: dict | None = None) -> list[str]:
    """The items an annotator works through, in order: the whole sample, or a classroom seat's."""
    order = list(s.items.sort_values("order")["item_id"])
    return seat_items(order, int(seat["first"]), int(seat["size"])) if seat else order


def my_labels(sample_id: str, annotator: str) -> pd.DataFrame:
    """One annotator's current labels of a sample (read fresh: never cached)."""
    return store().labels(sample_id, annotator)


@st.cache_data(show_spinner=False, max_entries=32)
def _judge_labels(root: str, sample_id: str, stamp: int, results_stamp: tuple) -> tuple[dict, dict]:
    from pipeline.audit.ppi_population import drawn_answers, open_population

    s = load_sample(sample_id, Path(root))
    # the sample's answers from the copy kept beside the stored population (`aee audit sample` makes
    # it): a few hundred answers lie in most row groups of a large set (4 s to read there at 140k)
    population = open_population(s.meta["dataset"], s.meta["judge"], Path(root))
    if population is not None:
        answers = drawn_answers(population, [s])
    else:
        answers = data.answers_of(s.meta["dataset"], s.meta["judge"], set(s.items["answer_id"]))
    return judge_labels(s.items, answers, s.unit)


def judge_item_labels(s: Sample) -> tuple[dict[str, dict[str, str]], dict[str, float]]:
    """The sampled judge's current labels and scores of a sample's items."""
    stamp = data._stamp(s.meta["dataset"], s.meta["judge"])
    return _judge_labels(str(data.results_root()), s.sample_id, _sample_stamp(s.sample_id), stamp)


def has_experts(s: Sample) -> bool:
    """True on a pair sample of a dataset whose `human` judge carries expert labels (ExpertQA)."""
    return s.unit == "pair" and "human" in list_judges(s.meta["dataset"], data.results_root())


@st.cache_data(show_spinner="Comparing the judge with the people…", max_entries=32)
def _agreement(root: str, sample_id: str, field: str, labels_version: tuple, results_stamp: tuple,
               with_experts: bool, people_filter: tuple[str, ...]) -> dict[str, Any]:
    s = load_sample(sample_id, Path(root))
    judge, scores = judge_item_labels(s)
    people = per_person(LabelStore(labels_path(Path(root))).labels(sample_id), field)
    if people_filter:
        people = {k: v for k, v in people.items() if k in people_filter}
    if with_experts:
        carried = data.answers_of(s.meta["dataset"], "human", set(s.items["answer_id"]))
        experts = expert_labels(s.items, [v for a in carried.values() for v in a.verdicts])
        got = {item: labels[field] for item, labels in experts.items() if labels.get(field)}
        if got:
            people[EXPERTS] = {k: str(v) for k, v in got.items()}
    return audit_agreement(s.items, s.frame, judge.get(field, {}), people, field, scores if field == "support" else None)


def agreement(s: Sample, field: str, with_experts: bool = False, people: tuple[str, ...] = ()) -> dict[str, Any]:
    """Judge vs people and people vs people on one field of a sample (cached per labels version)."""
    stamp = data._stamp(s.meta["dataset"], s.meta["judge"])
    return _agreement(str(data.results_root()), s.sample_id, field, version(), stamp, with_experts, tuple(sorted(people)))


@st.cache_data(show_spinner="Correcting the scorecard with the audit's labels…", max_entries=16)
def _ppi(root: str, dataset: str, judge: str, query_type: str, human: str, labels_version: tuple,
         results_stamp: tuple, samples_stamp: tuple) -> dict[str, Any]:
    from pipeline.audit.scorecard import ppi_scorecard

    return ppi_scorecard(dataset, judge, human=human, query_type=query_type, root=Path(root))


def ppi(dataset: str, judge: str, query_type: str, human: str = "all") -> dict[str, Any]:
    """The prediction-powered rows of a dataset x judge (cached until a label, a sample or a result changes)."""
    stamps = tuple((m["sample_id"], _sample_stamp(str(m["sample_id"]))) for m in samples(dataset))
    return _ppi(str(data.results_root()), dataset, judge, query_type, human, version(), data._stamp(dataset, judge), stamps)


def cited_only(dataset: str, judge: str) -> bool | None:
    """True when every answer's labels cover cited pairs only (ExpertQA), False when some cover more,
    None when the dataset has no answer; from the answer index when the set has one."""
    from dashboard import answer_store

    index = answer_store.index(dataset, data.results_root()) if data._shown(dataset) else None
    if index is not None:
        return None if index.empty else bool((index["support_scope"] == "cited_only").all())
    answers = data.annotated_answers(dataset, judge)
    return bool(answers) and all(a.answer.meta.get("support_scope") == "cited_only" for a in answers.values()) \
        if answers else None


def population(dataset: str, judge: str, unit: str, scope: str, relevance: bool):
    """The audit frame a sample of these choices would be drawn from: its clusters only (what the
    Audit page needs to draft the sample's size) from the records `aee run` wrote, else the whole
    frame built from every answer."""
    from dashboard import answer_store
    from pipeline.audit.population import build_frame, clusters_frame, variant_name

    found = answer_store.clusters(dataset, judge, variant_name(unit, scope, relevance), data.results_root()) \
        if data._shown(dataset) else None
    if found is not None:
        return clusters_frame(unit, scope if unit == "pair" else "all", relevance and unit == "pair", found)
    return build_frame(dataset, data.annotated_answers(dataset, judge), unit, scope, relevance and unit == "pair")


def main_field(s: Sample) -> str:
    """The field a sample is mostly about: support for pairs, relevance for statements."""
    return UNIT_FIELDS[s.unit][0]


def item_asks_map(s: Sample) -> dict[str, str]:
    """item -> what it asks, on a pair sample ("support", or "relevant" for the statement items of a
    sample asking relevance too); {} on a statement sample."""
    if s.unit != "pair":
        return {}
    return {str(r["item_id"]): item_asks(r) for r in s.items.to_dict("records")}


def item_field(s: Sample, item_id: str) -> str:
    """The main question of one item: its own on a pair sample asking relevance too, else the sample's."""
    return item_asks_map(s).get(item_id, main_field(s)) if asks_relevance(s) else main_field(s)
