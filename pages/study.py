"""Usability study: descriptive tables, Figure 6 style violins, tests between any two conditions
of a log (or the paper's families), a log template, and the reproduction of the paper's Tables
4-5. All statistics come from pipeline.study; this page only displays (dashboard.study_view
formats)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard.render import ensure_router, md_escape
from dashboard.study_view import descriptive_view, flags_view, pairs_text, reproduction_view, significance_view
from pipeline import study
from pipeline.study import recorder as study_log

ensure_router()
st.title("Usability study")
st.caption("How participants hover and click sources with answer engines versus Google (paper Tables 2-5, Figure 6), "
           "and the same tables and tests for a study your own class records.")


@st.cache_data(show_spinner=False)
def _simulated(seed: int) -> pd.DataFrame:
    return study.simulate_counts(seed)


@st.cache_data(show_spinner=False)
def _reproduction(alpha: float) -> dict:
    return study.reproduce(alpha=alpha)


SIM, UPLOAD, RECORDED = "Simulated log", "Upload a log", "Recorded study"
studies = study_log.list_studies()
choices = [SIM, UPLOAD] + ([RECORDED] if studies else [])
if st.session_state.get("study_open_recorded") and studies:
    st.session_state["source"] = RECORDED  # the tour's last step opens the recorded study
    st.session_state.pop("study_open_recorded")
source = st.radio("Log", choices, horizontal=True, key="source",
                  help="Recorded studies appear here once the Answer inspector's study mode has logged an event.")

log: study.StudyLog | None = None
if source == SIM:
    seed = st.number_input("Seed", min_value=0, max_value=2**31 - 1, value=0, step=1, key="seed")
    log = study.StudyLog("counts", study.validate_counts(_simulated(int(seed))), None, study.SIMULATED_LABEL)
    st.warning(f"This log is {study.SIMULATED_LABEL} (seed {int(seed)}); it is not the study's raw data, which was not released.")
elif source == UPLOAD:
    upload = st.file_uploader("Study log (.csv or .parquet, event or count level)", type=["csv", "parquet"], key="upload")
    if upload is not None:
        try:
            # A fixed label: the file name is user text and would otherwise reach markdown and
            # the plotly title (which renders some HTML).
            log = study.load_log_bytes(upload.getvalue(), upload.name, label="uploaded log")
        except study.StudyLogError as exc:
            st.error("Could not read the log; the first problem found is shown below.")
            # st.code shows the message verbatim: it may quote cells from the uploaded file.
            st.code(str(exc), language=None)
else:
    study_id = st.selectbox("Recorded study", studies, key="study_id")
    try:
        log = study_log.load_study(study_id)
        st.caption(f"{len(log.events)} recorded events, {len(log.counts)} participant x query rows, "
                   f"{log.counts['participant'].nunique()} participant(s)")
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

alpha = st.select_slider("Significance level (alpha)", options=[0.001, 0.005, 0.01, 0.05, 0.1], value=0.01, key="alpha")

tab_data, tab_repro = st.tabs(["This log", "Reproduction of the paper"])

PAIR = "pair"
COMPARE_LABELS = {PAIR: "Any two conditions of this log (engines, alignment, query type)", **study.COMPARISONS}


def _violins(counts: pd.DataFrame, label: str) -> go.Figure:
    fig = go.Figure()
    order = study.engine_order(counts["engine"])
    for engine in order:
        part = counts[counts["engine"] == engine]
        for measure, side in (("hovered", "negative"), ("clicked", "positive")):
            colour = "#1f77b4" if measure == "hovered" else "#d62728"
            if len(part) < 3:  # no shape to draw from one or two values: show the values themselves
                fig.add_trace(go.Box(
                    x=[engine] * len(part), y=part[measure].astype(float), name=measure, legendgroup=measure,
                    showlegend=False, boxpoints="all", jitter=0, pointpos=-1.2 if side == "negative" else 1.2,
                    fillcolor="rgba(0,0,0,0)", line_color="rgba(0,0,0,0)", marker={"color": colour, "size": 9},
                    hovertemplate=f"{measure}: %{{y}}<extra>{len(part)} row(s)</extra>"))
                continue
            fig.add_trace(go.Violin(
                x=[engine] * len(part), y=part[measure].astype(float), name=measure, legendgroup=measure,
                side=side, showlegend=engine == order[0], box_visible=True, meanline_visible=True, points=False,
                spanmode="hard",  # counts cannot go below the smallest (or above the largest) observed
                line_color=colour,
            ))
    fig.update_layout(violinmode="overlay", yaxis_title="sources per query", xaxis_title="engine",
                      title=f"Sources hovered (left) and clicked (right) per engine: {label}")
    fig.update_yaxes(rangemode="tozero")
    return fig


def _show_tests(tests: pd.DataFrame, notes: list[str]) -> None:
    main, more = significance_view(tests)
    st.table(main, hide_index=True)
    for note in notes:
        st.info(note, icon=":material/info:")
    with st.expander("Welch's t test and Mann-Whitney U for the same pairs"):
        st.table(more, hide_index=True)


with tab_data:
    if log is None:
        st.info("Choose or upload a log to see its tables and tests.")
    elif log.counts.empty:
        st.info("The log has no rows yet.")
    else:
        counts = log.counts
        st.subheader("Sources hovered and clicked")
        st.caption(f"{log.label}. Mean, median, sample SD, max, min and n (participant x query rows) per engine.")
        st.table(descriptive_view(study.descriptive_table(counts)))

        if counts["displayed"].notna().any():
            st.subheader("Sources displayed versus cited (answer engines)")
            st.table(descriptive_view(study.sources_table(counts)))

        st.plotly_chart(_violins(counts, log.label), key="violins")

        st.subheader("Two-sample tests")
        has_baseline = study.BASELINE in set(counts["engine"]) and counts["engine"].nunique() > 1
        options = [PAIR, *study.COMPARISONS] if has_baseline else [PAIR, "aligned_vs_disaligned"]
        if st.session_state.get("comparison") not in options:
            st.session_state["comparison"] = "google_vs_engines" if has_baseline else PAIR
        comparison = st.selectbox("Comparison", options, format_func=COMPARE_LABELS.get, key="comparison")
        if comparison == PAIR:
            available = {c: v for c, v in study.conditions(counts).items() if len(v) >= 2}
            if not available:
                st.warning("No test is possible: "
                           + "; ".join(study.comparison_unavailable(counts, c) for c in study.CONDITION_COLUMNS) + ".")
            else:
                p1, p2, p3 = st.columns([1, 1.4, 1.4])
                column = p1.selectbox("Compare", list(available), format_func=study.CONDITION_COLUMNS.get, key="pair_column")
                values = available[column]
                first = p2.selectbox("First condition", values, key=f"pair_first_{column}")
                rest = [v for v in values if v != first]
                second = p3.selectbox("Second condition", rest, key=f"pair_second_{column}")
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
