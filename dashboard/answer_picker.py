"""The first choices of the pages that show one answer (inspector, compare): which dataset and
which judge, seeded from a shared link (`url_state`), and the answers they offer.

A reader who left such a page and comes back through the sidebar sees it as they left it, unless
another page switched the dataset meanwhile: then the page follows that dataset.
"""

from __future__ import annotations

from typing import Any, Iterable, NamedTuple, Sequence

import pandas as pd
import streamlit as st

from dashboard import data, url_state

__all__ = ["Picked", "incoming", "pick_dataset_and_judge"]


class Picked(NamedTuple):
    dataset: str
    judges: list[str]  # every judge with results on the dataset
    judge: str
    index: pd.DataFrame  # the dataset's answers under that judge (`data.answer_index`)


def incoming(page: str, datasets: Sequence[str], keep: Iterable[str] = ()) -> url_state.Wanted:
    """`url_state.incoming(page)`; but when that is the page's memory and the dataset shared by the
    pages has changed since, the shared dataset, with only the `keep` parameters of the memory."""
    wanted = url_state.incoming(page)
    shared = st.session_state.get("shared_dataset")
    if wanted.source == "memory" and shared in datasets and wanted.get(url_state.DATASET) != shared:
        wanted = url_state.Wanted({**{name: wanted.get(name) for name in keep}, url_state.DATASET: shared})
    return wanted


def pick_dataset_and_judge(prefix: str, datasets: list[str], wanted: url_state.Wanted, *, fallback: Any,
                           judge_label: str = "Judge") -> Picked:
    """Dataset and judge boxes side by side (keys `<prefix>_dataset`, `<prefix>_judge`), seeded with
    what `wanted` asks for (the dataset: else `fallback`). Stops the page with a warning when the
    dataset has no scored judge or the judge no answers."""
    url_state.seed(f"{prefix}_dataset", datasets, wanted.get(url_state.DATASET), fallback=fallback)
    c1, c2 = st.columns(2)
    dataset = c1.selectbox("Dataset", datasets, key=f"{prefix}_dataset", on_change=data.remember_dataset,
                           args=(f"{prefix}_dataset",), format_func=data.dataset_label)
    judges = data.judges(dataset)
    if not judges:
        st.warning("This dataset has no scored judge results yet.")
        st.stop()
    # every page opens a dataset with the same judge (`data.default_judge`: the teaching corpus's
    # hand-checked labels, for instance), unless a link names another
    url_state.seed(f"{prefix}_judge", judges, wanted.get(url_state.JUDGE), fallback=data.default_judge(dataset))
    judge = c2.selectbox(judge_label, judges, key=f"{prefix}_judge")
    index = data.answer_index(dataset, judge)
    if note := data.records_note(dataset, judge):
        st.caption(note)
    if index.empty:
        st.warning("This dataset has no answers.")
        st.stop()
    return Picked(dataset, judges, judge, index)
