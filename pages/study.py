"""Usability study: descriptive tables, Figure 6 (as a dot and box plot), tests between any two conditions
of a log (or the paper's families), a log template, and the reproduction of the paper's Tables
4-5. All statistics come from pipeline.study; this page only displays (dashboard.study_view
formats)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import url_state
from dashboard.light_charts import study_dots
from dashboard.render import ensure_router, md_escape
from dashboard.study_view import descriptive_view, flags_view, pairs_text, reproduction_view, rows_view, significance_view
from pipeline import study
from pipeline.study import recorder as study_log

ensure_router()
st.title("Usability study")
st.caption("How participants hover and click sources with answer engines versus Google (paper Tables 2-5, Figure 6), "
           "and the same tables and tests for a study your own class records.")


@st.cache_data(show_spinner=False)
def _simulated(seed: int) -> pd.DataFrame:
    return study.cached_counts(seed)  # searched once per seed, then read from the cache folder


@st.cache_data(show_spinner=False)
def _reproduction(alpha: float) -> dict:
    return study.reproduce(alpha=alpha)


SIM, UPLOAD, RECORDED = "simulated", "upload", "recorded"
LOG_LABELS = {SIM: "Simulated log", UPLOAD: "Upload a log", RECORDED: "Recorded study"}
ALPHAS = [0.001, 0.005, 0.01, 0.05, 0.1]
PAGE = "study"
PAIR = "pair"
COMPARE_LABELS = {PAIR: "Any two conditions of this log (engines, alignment, query type)", **study.COMPARISONS}

# What the page shows lives in its address (log, study, seed, alpha, comparison), so a teacher's
# link reopens the same tables; an uploaded file cannot travel in a link, the page says so.
wanted = url_state.incoming(PAGE)
studies = study_log.list_studies()
url_state.seed("source", list(LOG_LABELS), wanted.get(url_state.LOG), fallback=SIM)
source = st.radio("Log", list(LOG_LABELS), format_func=LOG_LABELS.get, horizontal=True, key="source",
                  help="Recorded studies appear here once the Answer inspector's study mode has recorded an answer.")
state: dict = {url_state.LOG: source}

log: study.StudyLog | None = None
if source == SIM:
    seed_wanted = wanted.get(url_state.SEED)
    if seed_wanted is not None and str(seed_wanted).isdigit() and int(seed_wanted) < 2**31:
        st.session_state["seed"] = int(seed_wanted)
    st.session_state.setdefault("seed", 0)
    seed = st.number_input("Seed", min_value=0, max_value=2**31 - 1, step=1, key="seed")
    state[url_state.SEED] = str(int(seed))
    log = study.StudyLog("counts", study.validate_counts(_simulated(int(seed))), None, study.SIMULATED_LABEL)
    st.warning(f"This log is {study.SIMULATED_LABEL} (seed {int(seed)}); it is not the study's raw data, which was not released.")
elif source == UPLOAD:
    upload = st.file_uploader("Study log (.csv or .parquet, event or count level)", type=["csv", "parquet"], key="upload")
    st.caption("An uploaded file stays in this browser session: a link to this page cannot carry it.")
    if upload is not None:
        try:
            # A fixed label: the file name is user text and would otherwise reach markdown and
            # the plotly title (which renders some HTML).
            log = study.load_log_bytes(upload.getvalue(), upload.name, label="uploaded log")
        except study.StudyLogError as exc:
            st.error("Could not read the log; the first problem found is shown below.")
            # st.code shows the message verbatim: it may quote cells from the uploaded file.
            st.code(str(exc), language=None)
elif not studies:
    asked = wanted.get(url_state.STUDY)
    named = f"Study {md_escape(asked)} has" if asked and study.is_safe_code(asked) else "No study has"
    st.info(f"{named} nothing recorded yet on this machine. In the Answer inspector, turn on **Study mode**, fill in "
            "the study id and a participant code, and open the answers to read: every answer shown is recorded, "
            "touched or not. Then come back here.", icon=":material/info:")
    if asked:
        state[url_state.STUDY] = asked
else:
    asked = wanted.get(url_state.STUDY)
    if asked and asked not in studies and study.is_safe_code(asked):
        st.info(f"Study {md_escape(asked)} has nothing recorded yet; showing {md_escape(studies[-1])}, the last one "
                "recorded. Studies appear once an answer has been shown in study mode.", icon=":material/info:")
    url_state.seed("study_id", studies, asked, fallback=studies[-1])
    study_id = st.selectbox("Recorded study", studies, key="study_id")
    state[url_state.STUDY] = study_id
    try:
        log = study_log.load_study(study_id)
        shown = int((log.events["event"] == "shown").sum()) if log.events is not None else 0
        st.caption(f"{len(log.events)} recorded events, {len(log.counts)} participant x question rows "
                   f"({shown} answers recorded as shown), {log.counts['participant'].nunique()} participant(s)")
    except study.StudyLogError as exc:
        st.error("Could not read the recorded study; the first problem found is shown below.")
        st.code(str(exc), language=None)

with st.expander("Log template: record a study on paper or in a spreadsheet", icon=":material/download:"):
    st.markdown("A **count log** has one row per participant and question; an **event log** has one row per "
                "source displayed, cited, hovered or clicked (the Answer inspector's study mode writes this kind). "
                "Upload either above. Every row is checked, and a bad cell is reported by row and column.")
    t1, t2 = st.columns(2)
    t1.download_button("Count log template (CSV)", study.template_csv("counts"), "study_counts_template.csv",
                       "text/csv", key="study_template_counts", on_click="ignore", icon=":material/download:")
    t2.download_button("Event log template (CSV)", study.template_csv("events"), "study_events_template.csv",
                       "text/csv", key="study_template_events", on_click="ignore", icon=":material/download:")
    docs = pd.DataFrame([{"column": c, "count log": "required" if c in study.COUNT_COLUMNS and c not in
                          ("displayed", "cited") else ("optional" if c in study.COUNT_COLUMNS else "–"),
                          "event log": "required" if c in study.EVENT_COLUMNS else "–", "what it holds": text}
                         for c, text in study.COLUMN_DOCS.items()])
    st.table(docs, hide_index=True)

try:
    alpha_wanted = float(wanted.get(url_state.ALPHA, "nan"))
except ValueError:
    alpha_wanted = None
url_state.seed("alpha", ALPHAS, alpha_wanted, fallback=0.01)
alpha = st.select_slider("Significance level (alpha)", options=ALPHAS, key="alpha")
state[url_state.ALPHA] = str(alpha)

TABS = ["This log", "Reproduction of the paper"]
url_state.seed("study_tab", TABS, wanted.get(url_state.TAB), fallback=TABS[0])
tab_data, tab_repro = st.tabs(TABS, key="study_tab", on_change="rerun")
state[url_state.TAB] = st.session_state.get("study_tab", TABS[0])


def _show_tests(tests: pd.DataFrame, notes: list[str]) -> None:
    main, more = significance_view(tests)
    st.table(main, hide_index=True)
    for note in notes:
        st.info(note, icon=":material/info:")
    with st.expander("Welch's t test and Mann-Whitney U for the same pairs"):
        st.table(more, hide_index=True)


if tab_data.open is not False:  # only the open tab is drawn (the others cost a rerun to open)
    with tab_data:
        if log is None:
            st.info("Nothing to show until a study is recorded." if source == RECORDED and not studies
                    else "Choose or upload a log to see its tables and tests.")
        elif log.counts.empty:
            st.info("The log has no rows yet.")
        else:
            counts = log.counts
            st.subheader("Sources hovered and clicked")
            st.caption(f"{log.label}. Mean, median, sample SD, max, min and n (participant x question rows) per engine. "
                       "A row is an answer a participant was shown, whether or not they touched a citation.")
            st.table(descriptive_view(study.descriptive_table(counts)))

            st.subheader("Sources displayed versus cited (answer engines)")
            if counts["displayed"].notna().any():
                st.caption("How many sources each answer listed (displayed) and how many its statements cite; the cited "
                           "share is mean cited over mean displayed.")
                st.table(descriptive_view(study.sources_table(counts)))
            else:
                st.caption("This log does not record which sources were displayed or cited (a count log may leave those "
                           "columns blank; the inspector's study mode records them for every answer shown).")

            if counts["dwell_seconds"].notna().any():
                st.subheader("Time on each answer (seconds)")
                st.caption("How long each answer stayed on screen, measured in the browser while the tab was visible; "
                           "the last answer's time is sent as the participant closes the tab or leaves the app. Rows whose "
                           "time was not measured (an older log, or a browser that sent nothing) are left out.")
                st.table(descriptive_view(study.descriptive_table(counts, measures=("dwell_seconds",))))

            engines_in_log = study.engine_order(counts["engine"])
            st.html(study_dots(counts, engines_in_log, log.label))

            every_row = st.expander(f"Every participant x question row ({len(counts)})", key="study_rows_box",
                                    on_change="rerun")
            if every_row.open:  # drawn only when opened
                every_row.dataframe(rows_view(counts), hide_index=True, width="stretch", key="study_rows")

            st.subheader("Two-sample tests")
            has_baseline = study.BASELINE in set(counts["engine"]) and counts["engine"].nunique() > 1
            options = [PAIR, *study.COMPARISONS] if has_baseline else [PAIR, "aligned_vs_disaligned"]
            url_state.seed("comparison", options, wanted.get(url_state.TEST),
                           fallback="google_vs_engines" if has_baseline else PAIR)
            comparison = st.selectbox("Comparison", options, format_func=COMPARE_LABELS.get, key="comparison")
            state[url_state.TEST] = comparison
            if comparison == PAIR:
                available = {c: v for c, v in study.conditions(counts).items() if len(v) >= 2}
                if not available:
                    st.warning("No test is possible: "
                               + "; ".join(study.comparison_unavailable(counts, c) for c in study.CONDITION_COLUMNS) + ".")
                else:
                    p1, p2, p3 = st.columns([1, 1.4, 1.4])
                    url_state.seed("pair_column", list(available), wanted.get(url_state.CONDITION))
                    column = p1.selectbox("Compare", list(available), format_func=study.CONDITION_COLUMNS.get, key="pair_column")
                    values = available[column]
                    url_state.seed(f"pair_first_{column}", values, wanted.get(url_state.FIRST))
                    first = p2.selectbox("First condition", values, key=f"pair_first_{column}")
                    rest = [v for v in values if v != first]
                    url_state.seed(f"pair_second_{column}", rest, wanted.get(url_state.SECOND))
                    second = p3.selectbox("Second condition", rest, key=f"pair_second_{column}")
                    state.update({url_state.CONDITION: column, url_state.FIRST: first, url_state.SECOND: second})
                    tests = study.pair_tests(counts, column, first, second, alpha=alpha)
                    st.caption(f"{md_escape(first)} vs {md_escape(second)}: Student's t test on participant x query rows "
                               f"(as in the paper), Holm correction over the {len(tests)} measures shown; significant = "
                               f"Holm-adjusted p < {alpha}. Rows from one participant are not independent: with few "
                               "participants, read p values with care.")
                    _show_tests(tests, [f"{r['measure']}: {r['note']}" for r in tests.to_dict("records") if r["note"]])
                    skipped = [study.comparison_unavailable(counts, c) for c in study.CONDITION_COLUMNS if c not in available]
                    if skipped:
                        st.caption("Not offered: " + md_escape("; ".join(skipped)) + ".")
            else:
                tests = study.test_table(counts, comparison, alpha=alpha)
                if tests.empty:
                    st.info("This log has no rows for this comparison.")
                else:
                    st.caption(f"Holm correction over the {len(tests)} tests shown; significant = Holm-adjusted Student "
                               f"p < {alpha}.")
                    _show_tests(tests, study.test_notes(tests))

if tab_repro.open is not False:  # only the open tab is drawn (the others cost a rerun to open)
    with tab_repro:
        st.caption("Recomputed from the printed means and SDs; the paper does not print sample sizes, so they are inferred.")
        rep = _reproduction(float(alpha))
        inf4, inf5 = rep["n_inference"]["table4"], rep["n_inference"]["table5"]
        st.markdown(
            "**Inferred sample sizes (queries):** "
            + ", ".join(f"{md_escape(k)} {v}" for k, v in rep["inferred_n"].items())
        )
        st.caption(
            f"Table 4: {inf4['constraints_satisfied']} of {inf4['constraints_total']} printed t and p values fit within "
            f"rounding; {inf4['tuples_tied']} candidate(s) on the grid fit as well. Table 5: the (aligned + disaligned) "
            f"sizes that fit both printed p values are {pairs_text(inf5['pairs_fitting'])}."
        )
        repro_main, repro_more = reproduction_view(rep["tests"])
        st.table(repro_main, hide_index=True)
        with st.expander("Welch's t test and Cohen's d for the same rows"):
            st.table(repro_more, hide_index=True)
        st.subheader(f"Flags ({len(rep['flags'])})")
        st.table(flags_view(rep["flags"]), hide_index=True)
        for note in rep["notes"]:
            st.caption(note)

url_state.publish(PAGE, state)
