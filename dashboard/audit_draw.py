"""The words of the Audit page's draw form for a support sample asking relevance too (docs/audit.md,
"Asking relevance with support"): what such a sample costs on this dataset, and the draw's errors
about the number of items said with the form's own field names instead of the command line's."""

from __future__ import annotations

import re

import streamlit as st

from dashboard import data
from pipeline.audit.population import audited_sources

ITEMS_FIELD = "Items (about)"  # the form's label of `aee audit sample --n`


@st.cache_data(show_spinner=False, max_entries=16)
def _items_per_answer(root: str, dataset: str, judge: str, scope: str, stamp: tuple) -> tuple[int, float] | None:
    from pathlib import Path

    from dashboard import answer_store
    from pipeline.audit.population import variant_name

    clusters = answer_store.clusters(dataset, judge, variant_name("pair", scope, True), Path(root))
    if clusters is not None:  # the answer clusters of that frame, written by `aee run`
        return (len(clusters), float(clusters["n_items"].mean())) if len(clusters) else None
    answers = data.annotated_answers(dataset, judge)
    # as pipeline.audit.population.pair_frame counts a whole answer asked relevance too: one item per
    # statement, one per source in scope that has text
    sizes = [sum(1 + len(audited_sources(st_, {s.index: s for s in a.answer.sources}, scope)) for st_ in a.statements)
             for a in answers.values()]
    sizes = [n for n in sizes if n]
    return (len(sizes), sum(sizes) / len(sizes)) if sizes else None


def items_per_answer(dataset: str, judge: str | None, scope: str) -> tuple[int, float] | None:
    """(answers, mean items per answer) of a relevance-asking support sample of this dataset; None
    when there is nothing to count."""
    if not judge:
        return None
    return _items_per_answer(str(data.results_root()), dataset, judge, scope, data._stamp(dataset, judge))


SCOPE_WORDS = {"cited": "with the sources each statement cites", "all": "with every listed source"}


def cost_words(dataset: str, judge: str | None, scope: str) -> str:
    """"about 26.5 items each here with every listed source (24 answers)", or "many items per answer"
    when the data has none to count."""
    got = items_per_answer(dataset, judge, scope)
    return f"about {got[1]:.1f} items each here {SCOPE_WORDS[scope]} ({got[0]} answers)" if got else "many items per answer"


def relevance_help(dataset: str, judge: str | None, scope: str) -> str:
    """The relevance box's help: the cost in items (from the data when it has answers), that filler
    is asked about too, and how many answers a corrected value per engine needs."""
    return ("Whole answers: every statement is asked whether it is relevant or filler, then its sources whether "
            f"they support it; {cost_words(dataset, judge, scope)}. Every statement's sources are asked, even a "
            "statement the judge or you call filler (another person may count it). A corrected value per engine "
            "needs 20 answers of that engine labelled completely (or all of them); the corrected support metrics "
            "then estimate what people say about both relevance and support (docs/audit.md).")


def items_error(message: str) -> str:
    """A draw error about the number of items in the form's words ("Items (about): ... set it to 239 or
    more"); any other error unchanged."""
    prefix = "field '--n': "
    if not message.startswith(prefix):
        return message
    text = message[len(prefix):]
    text = re.sub(r"from each of the (\d+) strata", r"of each of the \1 groups (engine and the judge's label)", text)
    text = re.sub(r"; ask for at least (\d+) items", rf": set {ITEMS_FIELD} to \1 or more", text)
    return f"{ITEMS_FIELD}: {text}"


def from_records(dataset: str, judge: str, unit: str, scope: str, relevance: bool) -> dict:
    """What `pipeline.audit.sample.draw_sample` needs to draw from the set's records: the frame's
    clusters as `aee run` wrote them and a reader of the chosen answers' rows (so a draw reads the
    answers it picked, not every answer); {} for a set without them (the draw reads every answer)."""
    from dashboard import answer_store
    from pipeline.audit.population import variant_name

    if not data._shown(dataset):
        return {}
    clusters = answer_store.clusters(dataset, judge, variant_name(unit, scope, relevance and unit == "pair"),
                                     data.results_root())
    if clusters is None:
        return {}
    return {"clusters": clusters, "answers_of": lambda ids: data.answers_of(dataset, judge, ids)}
