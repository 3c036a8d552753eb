"""Confidence: how sure the answers sound, per engine, for all / debate / expertise queries
(the layout of the paper's Figure 8b), next to the published distribution."""

from __future__ import annotations

import streamlit as st

from dashboard import data
from dashboard.light_charts import confidence_bars
from dashboard.render import ensure_router, md_escape, pick_dataset_and_judge, url_forget, url_remember
from pipeline.aggregate import QUERY_TYPES
from pipeline.records import CONFIDENCE_NAMES

ensure_router()
st.title("Answer confidence")
st.caption("How confident each answer's wording sounds, from 1 (strongly not confident) to 5 (strongly "
           "confident). The overconfident-answer metric combines this with one-sidedness.")

cols = st.columns([1.2, 1, 2])
dataset, judge = pick_dataset_and_judge("confidence", cols[0], cols[1], prefer=data.has_confidence)
# shown by default: a link says ?published=off when the reader hid it
linked = st.query_params.get("published")
if linked in ("off", "aee") and st.session_state.get("_url_published") != linked:
    st.session_state["confidence_published"] = linked != "off"
st.session_state.setdefault("confidence_published", True)
show_published = cols[2].toggle("Show the published distribution (AEE Fig. 8b)", key="confidence_published")
if show_published:
    url_forget("published")
else:
    url_remember("published", "off")

counts = data.confidence_counts(dataset, judge)
missing = data.unscored_confidence(dataset, judge)

if data.is_illustrative(dataset):
    st.info("Illustrative teaching data: the engines and answers are invented.", icon=":material/school:")


def _switch_to(name: str) -> None:
    st.session_state["confidence_dataset"] = name
    st.session_state["shared_dataset"] = name


def computed() -> None:
    if counts.empty:
        st.info(f"No answer in {md_escape(data.dataset_label(dataset))} has a confidence label from judge "
                f"{md_escape(judge)}. Confidence comes from an LLM or recorded judge; expert claim labels "
                "(ExpertQA) do not include it.", icon=":material/info:")
        others = [n for n in data.datasets() if n != dataset and data.has_confidence(n)]
        for other in others[:3]:
            st.button(f"Show {md_escape(data.dataset_label(other))} instead", key=f"confidence_switch_{other}",
                      on_click=_switch_to, args=(other,), icon=":material/swap_horiz:")
        return
    st.markdown(f"**Computed** · {md_escape(data.dataset_label(dataset))} · judge {md_escape(judge)}")
    st.html(confidence_bars(counts, CONFIDENCE_NAMES, QUERY_TYPES))
    if missing:
        st.caption(f"{missing} answer(s) without a confidence label are left out.")


def published() -> None:
    pub = data.published_confidence()
    if pub.empty:
        st.warning("data/reference/aee_confidence_counts.csv is missing.")
        return
    st.markdown("**Published** · AEE (Venkit et al. 2024), Fig. 8b")
    st.html(confidence_bars(pub, CONFIDENCE_NAMES, QUERY_TYPES))
    st.caption("Counts of the 301 queries per engine that the paper's figure covers.")


if show_published:
    left, right = st.columns(2)
    with left:
        computed()
    with right:
        published()
else:
    computed()

if not counts.empty:
    st.subheader("Counts")
    table = counts.pivot_table(index=["split", "engine"], columns="level", values="count", aggfunc="sum", fill_value=0)
    table = table.reindex(columns=list(CONFIDENCE_NAMES), fill_value=0)
    table["answers"] = table.sum(axis=1)
    st.dataframe(table.reset_index(), hide_index=True, width="stretch", key="confidence_table")
