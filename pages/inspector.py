"""Answer inspector: one answer, its statements, citations, the judge's evidence and its metrics.

Every number comes from the pipeline (`answer_report` on records rebuilt from the Parquet
results); this page only chooses the answer and the scoring options and displays."""

from __future__ import annotations

import time

import streamlit as st

from dashboard import answer_model, data
from dashboard.answer_view import show_report_views, study_rows
from dashboard.attribution_panel import show_attribution
from dashboard.render import ensure_router
from dashboard.source_stance_panel import show_source_stance_panel
from pipeline import study as _study
from pipeline.metrics import MODES, NECESSITY_METHODS, effective_necessity
from pipeline.study import recorder as _study_log

started = time.perf_counter()
ensure_router()
st.title("Answer inspector")
st.caption("Check one answer: which statements its sources back, what each citation points to, "
           "and the passage the judge relied on. Hover or click a [n] marker to see the source.")

datasets = data.datasets()
if not datasets:
    st.info("No results yet. Run the pipeline first, for example "
            "`python -m pipeline run --dataset demo`, then reload this page.")
    st.stop()



def _valid(key: str, options: list) -> None:
    """Forget a remembered choice that is no longer offered (a dataset removed, a new search)."""
    if key in st.session_state and st.session_state[key] not in options:
        del st.session_state[key]


def _share_dataset() -> None:
    st.session_state["shared_dataset"] = st.session_state.get("ins_dataset")


_valid("ins_dataset", datasets)
if "ins_dataset" not in st.session_state and st.session_state.get("shared_dataset") in datasets:
    st.session_state["ins_dataset"] = st.session_state["shared_dataset"]
c1, c2 = st.columns(2)
dataset = c1.selectbox("Dataset", datasets, key="ins_dataset", on_change=_share_dataset)
judges = data.judges(dataset)
if not judges:
    st.warning("This dataset has no scored judge results yet.")
    st.stop()
_valid("ins_judge", judges)
judge = c2.selectbox("Judge", judges, key="ins_judge")

index = data.answer_index(dataset, judge)
if index.empty:
    st.warning("This dataset has no answers.")
    st.stop()

search = st.text_input("Search queries", key="ins_search", placeholder="words from the query, the engine or the answer id")
view = index
if search.strip():
    needle = search.strip().lower()
    hay = (index["query"].str.lower() + " " + index["engine"].str.lower() + " " + index["answer_id"].str.lower())
    view = index[hay.str.contains(needle, regex=False)]
if view.empty:
    st.warning("No query matches this search.")
    st.stop()

queries = sorted(view["query"].unique())
_valid("ins_query", queries)
c3, c4 = st.columns([3, 1])
query = c3.selectbox(f"Query ({len(queries)} shown)", queries, key="ins_query")
engines = sorted(view.loc[view["query"] == query, "engine"].unique())
_valid("ins_engine", engines)
engine = c4.selectbox("Engine", engines, key="ins_engine")
answer_id = view.loc[(view["query"] == query) & (view["engine"] == engine), "answer_id"].iloc[0]

o1, o2, o3 = st.columns([1.2, 1.2, 1])
mode = o1.radio("Rules", list(MODES), horizontal=True, key="ins_mode",
                help="strict: every listed source counts; parity: the paper's notebook rules (unfetched sources dropped, greedy necessity).")
necessity = o2.radio("Necessity method", list(NECESSITY_METHODS), horizontal=True, key="ins_necessity",
                     disabled=mode == "parity", help="How the minimum set of necessary sources is found.")
study_on = o3.toggle("Study mode", key="ins_study", help="Record hovers and clicks on citations into a study log.")

participant = session = study_id = ""
alignment = "none"
study_ready = False
if study_on:
    s1, s2, s3, s4 = st.columns(4)
    study_id = s1.text_input("Study id", key="ins_study_id", max_chars=64)
    participant = s2.text_input("Participant code", key="ins_participant", max_chars=64,
                                help="A code, never a name or e-mail address.")
    session = s3.text_input("Session", key="ins_session", value="s1", max_chars=64)
    alignment = s4.selectbox("Alignment with the participant's view", ["none", "aligned", "disaligned"], key="ins_alignment")
    bad = [name for name, value in (("study id", study_id), ("participant code", participant), ("session", session))
           if not _study.is_safe_code(value)]
    if bad:
        st.warning("To record, fill in " + ", ".join(bad) + " with letters, digits, '-' or '_' (up to 64, no spaces).")
    else:
        study_ready = True
        st.caption(f"Recording hovers and clicks for participant {participant} into study {study_id}.")

annotated = data.annotated_answers(dataset, judge)[answer_id]
rep = data.answer_report_cached(dataset, judge, answer_id, mode, effective_necessity(mode, necessity))
sources = answer_model.source_view_rows(data.answer_source_rows(dataset, answer_id))

st.markdown(f"**Query** ({annotated.answer.query_type}): {answer_model.md_text(annotated.answer.query)}")
st.caption(f"Engine: {answer_model.md_text(engine)} · answer id: {answer_model.md_text(answer_id)} · "
           f"judge: {answer_model.md_text(judge)} · {len(annotated.statements)} statements, "
           f"{len(annotated.answer.sources)} sources")

events = show_report_views(annotated, rep, sources, key="ins_answer", report_events=study_ready)
show_attribution(annotated, key="ins_attribution")
if events and study_ready:
    # an event sent late (after switching answers) belongs to the answer it happened on
    answers = data.annotated_answers(dataset, judge)
    rows = []
    for aid in dict.fromkeys(e["answer_id"] for e in events):
        context = answer_model.study_context(answers.get(aid, annotated))
        rows += study_rows([e for e in events if e["answer_id"] == aid], participant=participant, session=session,
                           alignment=alignment, context=context)
    if rows:
        try:
            _study_log.append_events(study_id, rows)
            st.session_state["ins_logged"] = st.session_state.get("ins_logged", 0) + len(rows)
        except (_study.StudyLogError, OSError) as exc:
            st.error(f"Could not record the events: {exc}")
if study_ready:
    st.caption(f"Events recorded in this browser session: {st.session_state.get('ins_logged', 0)}")
show_source_stance_panel(annotated, rep, key="ins_source_stance")

st.session_state["ins_server_seconds"] = time.perf_counter() - started
