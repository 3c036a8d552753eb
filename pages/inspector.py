"""Answer inspector: one answer, its statements, citations, the judge's evidence and its metrics.

Every number comes from the pipeline (`answer_report` on records rebuilt from the Parquet
results); this page only chooses the answer and the scoring options and displays. What it shows
(dataset, judge, answer, rules, search) lives in the URL, so a link reopens the same view."""

from __future__ import annotations

import secrets
import time
from functools import partial

import streamlit as st

from dashboard import answer_html, answer_model, answer_picker, askings, data, room_gate, study_beacon, url_state
from dashboard.answer_view import (
    mark_stored,
    reliability_header,
    report_download,
    scoring_controls,
    show_report_views,
    shown_rows,
    stored_marks,
    study_rows,
)
from dashboard.attribution_panel import show_attribution
from dashboard.render import engine_key, ensure_router
from dashboard.source_stance_panel import show_source_stance_panel
from pipeline import study as _study
from pipeline.errors import InputError
from pipeline.metrics import MODES, NECESSITY_METHODS, effective_necessity
from pipeline.study import recorder as _study_log

PAGE = "inspector"
started = time.perf_counter()
ensure_router()
st.title("Answer inspector")
st.caption("Check one answer: which statements its sources back, what each citation points to, "
           "and the passage the judge relied on. Hover or click a [n] marker to see the source.")

datasets = data.datasets()
if not datasets:
    st.info("No results yet. Run the pipeline first, for example "
            "`aee run --dataset demo`, then reload this page.")
    st.stop()

# A link from outside (pasted, reloaded) names what to show; otherwise the widgets keep their values.
# `seed` puts a valid value into each box before it is drawn, so after a dataset switch every box
# shows a value of the new dataset, never a stale one.
wanted = answer_picker.incoming(PAGE, datasets)
if wanted.source == "link" and wanted.get(url_state.DATASET) in datasets:
    st.session_state["shared_dataset"] = wanted[url_state.DATASET]
if wanted.source == "link" and _study.is_safe_code(str(wanted.get(url_state.STUDY, ""))):
    # a link with ?study= (the tour's step 4) turns study mode on with that study id filled in
    st.session_state["ins_study"] = True
    st.session_state["ins_study_id"] = str(wanted[url_state.STUDY])
# In a served room a study's participants use this page: the researcher's choices (dataset, judge,
# rules) fold away under one closed expander, and the participant view cannot be turned off.
room_study = room_gate.served() and bool(st.session_state.get("ins_study"))
settings = st.expander("Study settings (the researcher's)", icon=":material/tune:") if room_study else st.container()
with settings:
    dataset, _, judge, index = answer_picker.pick_dataset_and_judge("ins", datasets, wanted,
                                                                    fallback=data.default_dataset(datasets))

wanted_answer = wanted.get(url_state.ANSWER)
if wanted:  # a link sets the search box too (empty when it has none, so its answer is listed)
    st.session_state["ins_search"] = str(wanted.get(url_state.SEARCH, ""))
search = st.text_input("Search queries", key="ins_search", placeholder="words from the query, the engine or the answer id")
view = index
if search.strip():
    needle = search.strip().lower()
    hay = (index["query"].str.lower() + " " + index["engine"].str.lower() + " " + index["answer_id"].str.lower())
    view = index[hay.str.contains(needle, regex=False)]
if view.empty:
    st.warning("No query matches this search.")
    st.stop()

wanted_row = view[view["answer_id"] == wanted_answer] if wanted_answer else view.iloc[0:0]
if wanted_answer and wanted_row.empty:
    st.warning(f"The linked answer {answer_model.md_text(str(wanted_answer), 120)} is not in "
               f"{answer_model.md_text(dataset)} under the {answer_model.md_text(judge)} judge; showing another one.")
queries = sorted(view["query"].unique())
url_state.seed("ins_query", queries, wanted_row["query"].iloc[0] if len(wanted_row) else None)
c3, c4 = st.columns([3, 1])
query = c3.selectbox(f"Query ({len(queries)} shown)", queries, key="ins_query")
engines = sorted(view.loc[view["query"] == query, "engine"].unique())
url_state.seed("ins_engine", engines, wanted_row["engine"].iloc[0] if len(wanted_row) else None)
engine = c4.selectbox("Engine", engines, key="ins_engine")
answer_id = view.loc[(view["query"] == query) & (view["engine"] == engine), "answer_id"].iloc[0]
# an engine that answered this query more than once (repeats, waves): choose the asking, or put
# several side by side
asked = askings.askings(dataset, judge, query, engine)
side: list[str] = []
if len(asked) > 1:
    ids = list(asked["answer_id"])
    names = dict(zip(asked["answer_id"], asked["label"]))
    url_state.seed("ins_asking", ids, wanted_answer if wanted_answer in ids else None)
    k1, k2 = st.columns([1, 2])
    answer_id = k1.selectbox(f"Asking ({len(ids)} of this query by this engine)", ids, key="ins_asking",
                             format_func=lambda i: names.get(i, i))
    if wanted:
        url_state.seed_many("ins_side", ids, wanted.get(url_state.SIDE) or [])
    else:
        url_state.seed_many("ins_side", ids)
    side = k2.multiselect("Side by side", ids, key="ins_side", format_func=lambda i: names.get(i, i),
                          max_selections=askings.MAX_SIDE, placeholder="choose two or more askings to compare",
                          help="Put several askings of this query by this engine next to each other: their metrics "
                               "in one table, each answer with its citation and support matrices.")

methods = list(NECESSITY_METHODS)
url_state.seed("ins_mode", list(MODES), wanted.get(url_state.MODE))
if wanted.get(url_state.NECESSITY) in methods:
    st.session_state["ins_necessity"] = st.session_state["ins_necessity_kept"] = wanted[url_state.NECESSITY]
with settings:
    o1, o2, o3 = st.columns([1.2, 1.2, 1])
    mode, necessity = scoring_controls("ins", (o1, o2))
study_on = o3.toggle("Study mode", key="ins_study",
                     help="Record every answer shown (with how long it stays on screen) and the hovers and clicks "
                          "on its citations into a study log.")



def _participant_is_mine(study_id: str, participant: str) -> bool:
    """In a served room, a participant code belongs to the first browser session that records under it."""
    try:
        room_gate.claim(f"study {study_id}: {participant}")
    except InputError:
        return False
    return True


def _locked_out(study_id: str, participant: str) -> None:
    """A code another browser session records under: the person who started it (a reload makes a new
    session) carries on by typing the key this page showed them while they recorded."""
    st.error(f"Participant {participant} of study {study_id} is already recording in another browser session. If "
             "that was you before a reload, type the key shown while you recorded; otherwise use your own "
             "participant code.", icon=":material/lock:")
    with st.form("ins_reclaim"):
        typed = st.text_input("Your key", max_chars=12, key="ins_reclaim_key", placeholder="e.g. K7QX2M4P")
        go = st.form_submit_button(f"Carry on as {participant}", icon=":material/key:")
    if go:
        before = room_gate.session_key()
        room_gate.use_key(typed)
        if _participant_is_mine(study_id, participant):
            st.rerun()
        st.session_state[room_gate.KEY] = before  # a wrong key changes nothing
        st.error("That key is not the one this participant code was recorded with.")


participant = session = study_id = ""
alignment = "none"
study_ready = False
participant_view = False
if study_on:
    s1, s2, s3, s4 = st.columns(4)
    study_id = s1.text_input("Study id", key="ins_study_id", max_chars=64)
    participant = s2.text_input("Participant code", key="ins_participant", max_chars=64,
                                help="A code, never a name or e-mail address.")
    session = s3.text_input("Session", key="ins_session", value="s1", max_chars=64)
    alignment = s4.selectbox("Alignment with the participant's view", ["none", "aligned", "disaligned"], key="ins_alignment")
    if room_study or "ins_participant_view" not in st.session_state:
        st.session_state["ins_participant_view"] = True  # on by default; locked in a room (no verdicts for participants)
    participant_view = st.toggle("Participant view: show only the answer and its sources",
                                 key="ins_participant_view", disabled=room_study,
                                 help="What a participant should see: no verdicts, statuses, flags or metrics. "
                                      + ("Locked on in a served room: check answers as a researcher on your own "
                                         "machine." if room_study else "Turn it off to check the answer as a researcher."))
    bad = [name for name, value in (("study id", study_id), ("participant code", participant), ("session", session))
           if not _study.is_safe_code(value)]
    if bad:
        st.warning("To record, fill in " + ", ".join(bad) + " with letters, digits, '-' or '_' (up to 64, no spaces).")
    elif not room_gate.join_form("record a study", "study"):
        pass  # served to a network: recording waits for the room's join code
    elif not _participant_is_mine(study_id, participant):
        _locked_out(study_id, participant)
    else:
        study_ready = True
        key_note = (f" Your key is **{room_gate.session_key()}**: after a reload, type it to carry on as {participant}."
                    if room_gate.room() else "")
        st.caption(f"Recording for participant {participant} into study {study_id}: each answer shown, how long it "
                   "stays on screen, and every hover and click on its citations." + key_note)

state = {url_state.DATASET: dataset, url_state.JUDGE: judge, url_state.ANSWER: answer_id, url_state.MODE: mode,
         url_state.NECESSITY: necessity, url_state.SEARCH: search.strip(), url_state.SIDE: side if len(side) > 1 else []}
if study_on and _study.is_safe_code(study_id):
    state[url_state.STUDY] = study_id
url_state.publish(PAGE, state)

if len(side) > 1 and not study_on:  # a study shows one answer at a time
    askings.show_side_by_side(dataset, judge, asked, side, mode, effective_necessity(mode, necessity))
    st.caption("Empty the 'Side by side' box to inspect one asking in full (flags, evidence, the graph).")
    st.session_state["ins_server_seconds"] = time.perf_counter() - started
    st.stop()

annotated = data.annotated_answer(dataset, judge, answer_id)
if annotated is None:  # the set changed between the index and this read (a run finished)
    st.warning("This answer is no longer in the results; reload the page.")
    st.stop()
rep = data.answer_report_cached(dataset, judge, answer_id, mode, effective_necessity(mode, necessity))
source_rows = data.answer_source_rows(dataset, answer_id)
sources = answer_model.source_view_rows(source_rows)

st.markdown(f"**Query** ({annotated.answer.query_type}): {answer_model.md_text(annotated.answer.query)}")
judged_by = "" if participant_view else f"judge: {answer_model.md_text(judge)} · "
st.caption(f"Engine: {answer_model.md_text(engine)} · answer id: {answer_model.md_text(answer_id)} · "
           f"{judged_by}{answer_model.statement_count_text(annotated, {} if participant_view else rep)}, {len(annotated.answer.sources)} sources")
if not participant_view and (key := engine_key([engine])):
    st.caption(key)

summary = {} if participant_view else data.judge_reliability_summary(judge)
if not participant_view:
    reliability_header(summary)
    link = url_state.full_url(PAGE, state)
    reliability = data.judge_reliability(dataset, judge)
    a1, a2, a3 = st.columns([1, 1, 1.3], vertical_alignment="center")
    with a1.popover("Share this view", icon=":material/link:", width="stretch"):
        st.caption("This link opens this answer with the same judge and rules:")
        st.code(link, language=None, wrap_lines=True)
    illustrative = data.is_illustrative(dataset)
    report_download(a2, partial(answer_html.answer_report_html,  # built only when someone downloads it
                                annotated, rep, sources, dataset=dataset, reliability=reliability,
                                illustrative=illustrative, link=link),
                    answer_html.report_filename(answer_id), key="ins_report")
    compare = {url_state.DATASET: dataset, url_state.JUDGE: judge, url_state.ANSWER: answer_id,
               url_state.MODE: mode, url_state.NECESSITY: necessity}
    url_state.page_link_to(a3, "compare.py", "Compare with another engine or judge", compare,
                           icon=":material/compare_arrows:")
    with st.expander("How far to trust this judge's labels"):
        for line in reliability:
            st.markdown(f"- {answer_model.md_text(line, 600)}")

beacon = ""
if study_ready and study_beacon.enabled():
    # the time on the answer in view reaches the log even when the participant closes the tab
    beacon = st.session_state.setdefault("ins_beacon", secrets.token_urlsafe(18))
    study_beacon.register(beacon, study_id=study_id, participant=participant, session=session, alignment=alignment,
                          answer_id=answer_id, context=answer_model.study_context(annotated))
events = show_report_views(annotated, rep, sources, key="ins_answer", report_events=study_ready,
                           participant=participant_view, reliability=summary,
                           no_text=answer_model.no_text_hint(dataset), beacon=beacon)
if not participant_view:  # labels are what a study participant must not see
    show_attribution(annotated, key="ins_attribution")
rows: list[dict] = []
# what this session has written, fetched before the write: the marks after it are plain Python, so a
# rerun (the participant choosing the next query while this run is going) cannot stop the run between
# the write and its marks, which wrote an answer's "shown" row twice or lost the events read
already: set = st.session_state.setdefault("ins_shown", set())
marks = stored_marks("ins_answer")
tally: dict[str, int] = st.session_state.setdefault("ins_tally", {"events": 0})
shown_key = (study_id, participant, session, dataset, answer_id)
if study_ready and shown_key not in already:
    # every answer shown is a participant x query row, touched or not: a zero-hover answer is data
    rows += shown_rows(annotated, participant=participant, session=session, alignment=alignment,
                       context=answer_model.study_context(annotated))
if events and study_ready:
    # an event sent late (after switching answers) belongs to the answer it happened on
    answers = data.answers_of(dataset, judge, {e["answer_id"] for e in events})
    for aid in dict.fromkeys(e["answer_id"] for e in events):
        context = answer_model.study_context(answers.get(aid, annotated))
        rows += study_rows([e for e in events if e["answer_id"] == aid], participant=participant, session=session,
                           alignment=alignment, context=context)
if rows:
    try:
        _study_log.append_events(study_id, rows)
    except (_study.StudyLogError, OSError) as exc:
        st.error(f"Could not record the events: {exc}")
    else:  # only once written (a failed write is tried again on the next run), with no Streamlit call
        already.add(shown_key)
        mark_stored(marks, events)
        tally["events"] += len(rows)
if study_ready:
    # marker hovers and clicks sent by beacon were written without a run of this page: counted there
    written = tally["events"] + (study_beacon.recorded(beacon) if beacon else 0)
    st.caption(f"Recorded in this browser session: {len(already)} answer(s) shown, {written} event(s) in all.")
if not participant_view:
    show_source_stance_panel(annotated, rep, key="ins_source_stance")

st.session_state["ins_server_seconds"] = time.perf_counter() - started
