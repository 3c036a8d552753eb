"""Usability study: descriptive tables, Figure 6 style violins, tests, and the reproduction
of the paper's Tables 4-5. All statistics come from pipeline.study; this page only displays."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard.render import ensure_router
from pipeline import study
from pipeline.study import recorder as study_log

ensure_router()
st.title("Usability study")
st.caption("How participants hover and click sources with answer engines versus Google (paper Tables 2-5, Figure 6).")


@st.cache_data(show_spinner=False)
def _simulated(seed: int) -> pd.DataFrame:
    return study.simulate_counts(seed)


@st.cache_data(show_spinner=False)
def _reproduction(alpha: float) -> dict:
    return study.reproduce(alpha=alpha)


SIM, UPLOAD, RECORDED = "Simulated log", "Upload a log", "Recorded study"
studies = study_log.list_studies()
choices = [SIM, UPLOAD] + ([RECORDED] if studies else [])
source = st.radio("Log", choices, horizontal=True, key="source")

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
        st.caption(f"{len(log.events)} recorded events, {len(log.counts)} participant x query rows")
    except study.StudyLogError as exc:
        st.error("Could not read the recorded study; the first problem found is shown below.")
        st.code(str(exc), language=None)

alpha = st.select_slider("Significance level (alpha)", options=[0.001, 0.005, 0.01, 0.05, 0.1], value=0.01, key="alpha")

tab_data, tab_repro = st.tabs(["This log", "Reproduction of the paper"])

with tab_data:
    if log is None:
        st.info("Choose or upload a log to see its tables and tests.")
    elif log.counts.empty:
        st.info("The log has no rows yet.")
    else:
        counts = log.counts
        label = log.label
        st.subheader("Sources hovered and clicked")
        st.caption(label)
        desc = study.descriptive_table(counts)
        desc.columns = [f"{m} | {g}" for m, g in desc.columns]
        st.dataframe(desc.round(2), key="desc_table")

        if counts["displayed"].notna().any():
            st.subheader("Sources displayed versus cited (answer engines)")
            src = study.sources_table(counts)
            src.columns = [f"{m} | {g}" for m, g in src.columns]
            st.dataframe(src.round(2), key="sources_table")

        fig = go.Figure()
        for engine in study.engine_order(counts["engine"]):
            part = counts[counts["engine"] == engine]
            for measure, side in (("hovered", "negative"), ("clicked", "positive")):
                fig.add_trace(go.Violin(
                    x=[engine] * len(part), y=part[measure].astype(float), name=measure, legendgroup=measure,
                    side=side, showlegend=engine == study.engine_order(counts["engine"])[0],
                    box_visible=True, meanline_visible=True, points=False,
                    line_color="#1f77b4" if measure == "hovered" else "#d62728",
                ))
        fig.update_layout(violinmode="overlay", yaxis_title="sources per query", xaxis_title="engine",
                          title=f"Sources hovered (left) and clicked (right) per engine: {label}")
        st.plotly_chart(fig, key="violins")

        comparison = st.selectbox("Comparison", list(study.COMPARISONS), format_func=study.COMPARISONS.get, key="comparison")
        tests = study.test_table(counts, comparison, alpha=alpha)
        st.subheader("Two-sample tests")
        if tests.empty or tests["n2"].min() == 0:
            st.info("Some groups in this comparison are empty; their tests are blank.")
        if not tests.empty:
            st.caption(f"Holm correction over the {len(tests)} tests shown; significant = Holm-adjusted Student p < {alpha}.")
            cols = ["comparison", "measure", "n1", "n2", "mean1", "mean2", "student_t", "student_p", "student_p_holm",
                    "welch_t", "welch_p", "mwu_u", "mwu_p", "cohens_d", "d_ci_low", "d_ci_high", "significant_holm"]
            st.dataframe(tests[cols], key="tests_table")

with tab_repro:
    st.caption("Recomputed from the printed means and SDs; the paper does not print sample sizes, so they are inferred.")
    rep = _reproduction(float(alpha))
    inf4, inf5 = rep["n_inference"]["table4"], rep["n_inference"]["table5"]
    st.markdown(
        "**Inferred sample sizes (queries):** "
        + ", ".join(f"{k} {v}" for k, v in rep["inferred_n"].items())
    )
    st.caption(
        f"Table 4: {inf4['constraints_satisfied']} of {inf4['constraints_total']} printed t and p values fit within rounding; "
        f"{inf4['tuples_tied']} candidate(s) on the grid fit as well. Table 5: pairs fitting both p values "
        f"{inf5['pairs_fitting']}."
    )
    frame = pd.DataFrame(rep["tests"])[["table", "comparison", "measure", "n1", "n2", "printed_t", "recomputed_t",
                                         "printed_p", "recomputed_p", "p_ratio", "recomputed_p_holm", "significant_holm",
                                         "welch_t", "welch_p", "cohens_d"]]
    st.dataframe(frame, key="repro_table")
    st.subheader(f"Flags ({len(rep['flags'])})")
    st.dataframe(pd.DataFrame(rep["flags"])[["severity", "table", "item", "printed", "expected", "reason"]], key="flags_table")
    for note in rep["notes"]:
        st.caption(note)
