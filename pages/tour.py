"""Start here: a guided path through the dashboard with the teaching corpus, in four steps a
teacher can run with a class in about 15 minutes (scorecard -> one answer -> re-score your own ->
record a mini study). Every number it quotes is read from the exported results."""

from __future__ import annotations

from datetime import date
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from dashboard import data, room_gate, url_state
from dashboard.metric_text import fmt_metric
from dashboard.pages_registry import page
from dashboard.render import ensure_router, link_to_page, md_escape
from pipeline import study
from pipeline.metrics import METRICS
from pipeline.study import recorder as study_log

TEACHING = "demo"  # the teaching corpus's dataset id
JUDGE = "recorded"  # its hand-checked labels
STEPS = ("Read the scorecard", "Open one answer", "Re-score it yourself", "Record a mini study")
MINUTES = (3, 4, 4, 4)
PAGE = "tour"

ensure_router()
st.title("Start here")
st.markdown(
    "A 15-minute guided path for a class, using the **teaching corpus**: three invented answer engines "
    "(Lumen, Parrot and Quarry) answering the same eight questions, with hand-checked labels. Nothing in it "
    "describes a real product, so students can argue about it freely. Work through the four steps in order; "
    "each opens the page it talks about, and the sidebar brings you back here."
)

if TEACHING not in data.datasets() or JUDGE not in data.judges(TEACHING):
    st.warning("The teaching corpus has no results on this machine yet. Build them first (about 30 seconds):")
    st.code("aee build-default", language="bash")
    st.stop()

# The ticks live in a plain session key (a checkbox's own state is dropped when the class visits
# another page) and in the address (`?done=1&done=2`), so a reload or a bookmark keeps them too.
progress: list[bool] = st.session_state.setdefault("tour_progress", [False] * len(STEPS))
_wanted = url_state.incoming(PAGE)
if _wanted.source == "link":
    _ticked = {str(v) for v in _wanted.get(url_state.DONE, [])}
    for _k in range(len(STEPS)):
        progress[_k] = str(_k + 1) in _ticked
        st.session_state[f"tour_done_{_k}"] = progress[_k]
done = list(progress)
left = sum(m for m, d in zip(MINUTES, done) if not d)
st.progress(sum(done) / len(STEPS), text=f"{sum(done)} of {len(STEPS)} steps done · about {left} minutes left")


def _summary_value(frame: pd.DataFrame, metric: str) -> pd.Series:
    part = frame[(frame["metric"] == metric) & (frame["query_type"] == "all")]
    return part.set_index("engine")["value"].dropna().sort_index()


def _worst_and_best(frame: pd.DataFrame, metric: str) -> str:
    """"Parrot (36.25%) worst, Lumen (8.75%) best" for a rated metric, read from the summary."""
    values = _summary_value(frame, metric)
    if values.empty:
        return "no engine has a value"
    lower_better = METRICS[metric].direction == "lower_is_better"
    worst = values.idxmax() if lower_better else values.idxmin()
    best = values.idxmin() if lower_better else values.idxmax()
    return (f"{md_escape(worst)} is worst ({fmt_metric(values[worst], metric)}), "
            f"{md_escape(best)} is best ({fmt_metric(values[best], metric)})")


def _example_answer() -> dict:
    """The teaching answer with the largest share of unsupported statements (ties: first by id)."""
    metrics = data.table(TEACHING, "metrics", JUDGE)
    part = metrics[(metrics["metric"] == "unsupported_statements") & (metrics["mode"] == "strict")
                   & (metrics["necessity"] == "exact")].dropna(subset=["value"])
    row = part.sort_values(["value", "answer_id"], ascending=[False, True]).iloc[0]
    answers = data.table(TEACHING, "answers").set_index("answer_id")
    return {"answer_id": row["answer_id"], "engine": answers.at[row["answer_id"], "engine"],
            "query": answers.at[row["answer_id"], "query"], "unsupported": row["value"]}


def _tick(k: int) -> None:
    progress[k] = bool(st.session_state.get(f"tour_done_{k}"))
    _publish()


def _publish() -> None:
    url_state.publish(PAGE, {url_state.DONE: [str(k + 1) for k, ticked in enumerate(progress) if ticked]})


def _step(k: int, body) -> None:
    with st.container(border=True):
        mark = "✓ " if done[k] else ""
        st.subheader(f"{mark}Step {k + 1} · {STEPS[k]} ({MINUTES[k]} min)")
        body()
        st.session_state.setdefault(f"tour_done_{k}", progress[k])
        st.checkbox("Done", key=f"tour_done_{k}", on_change=_tick, args=(k,))


summary = data.summary(TEACHING, JUDGE, "strict", "exact")
example = _example_answer()
links = {"dataset": TEACHING, "judge": JUDGE}


def step_scorecard() -> None:
    st.markdown(
        "Open the scorecard of the teaching corpus. Each row is one metric with its unit (% or a count per "
        "answer) and which way is better; each cell is an engine's average over its eight answers, with a symbol "
        "for the paper's thresholds: ▲ acceptable, ● borderline, ▼ problematic."
    )
    link_to_page("scorecard.py", "Open the scorecard (teaching corpus)", ":material/table_chart:", links)
    st.markdown("**Ask the class:** which engine leaves the most of its listed sources uncited? Which one makes "
                "the most claims its sources do not back? Is a high number good or bad on those rows?")
    with st.expander("Answers"):
        st.markdown(f"- Uncited sources (lower is better): {_worst_and_best(summary, 'uncited_sources')}.\n"
                    f"- Unsupported statements (lower is better): "
                    f"{_worst_and_best(summary, 'unsupported_statements')}.\n"
                    "- A row marked n/a has no value for a reason the table states (for example, a metric defined "
                    "for debate questions only when only expertise questions are selected).")


def step_answer() -> None:
    st.markdown(
        f"Now look at one answer up close: **{md_escape(example['engine'])}**'s answer to "
        f"“{md_escape(example['query'])}” In the inspector, pick that query and engine (the link opens the "
        "teaching corpus). Hover a citation marker such as [1] to see the source passage the judge relied on."
    )
    link_to_page("inspector.py", "Open this answer in the Answer inspector", ":material/manage_search:",
                 {**links, "answer": example["answer_id"]})
    st.markdown("**Ask the class:** find a sentence whose cited source does not say what the sentence claims. "
                "Would a reader who did not click the source notice?")
    with st.expander("Answer"):
        share = METRICS["unsupported_statements"].scale(example["unsupported"])
        st.markdown(f"The hand-checked labels find {fmt_metric(share, 'unsupported_statements')} "
                    "of this answer's relevant statements unsupported by any of its sources: the citations look "
                    "like evidence but do not carry the claim.")


def _open_rescore() -> None:
    st.session_state["rs_example"] = example["answer_id"]


def step_rescore() -> None:
    st.markdown(
        f"Re-score lets anyone paste an answer and its sources and have a judge label them. The button below "
        f"opens it with the same answer ({md_escape(example['answer_id'])}) chosen as the teaching example: press "
        "**Load example**, then **Score** with the offline judge. Then edit the answer (delete a citation "
        "marker, or point one at another source) and score again."
    )
    if st.button("Open Re-score with this answer", key="tour_open_rescore", on_click=_open_rescore,
                 icon=":material/tune:"):
        st.switch_page(str(page("rescore.py").path))
    st.markdown("**Ask the class:** does the offline judge agree with the hand-checked labels from step 2? "
                "Which metrics moved when you changed one citation?")
    with st.expander("What to expect"):
        st.markdown("An automatic judge disagrees with careful human labels on some pairs; the Judges page shows "
                    "how often, measured on ExpertQA's expert labels. Removing a marker moves the rows that read "
                    "the citations: the source it pointed to may become uncited, citations per statement drops, "
                    "citation accuracy and thoroughness change, and a statement left without a citation counts "
                    "against the citation-based recall rows. Rows that read every listed source, cited or not "
                    "(unsupported statements, source necessity), stay where they were, because the sources "
                    "and what they say did not change.")


def _study_status(study_id: str) -> tuple[int, int, int]:
    """(answers shown, participants, events) recorded so far in the class study (zeros when none)."""
    if study_id not in study_log.list_studies():
        return 0, 0, 0
    try:
        recorded = study_log.load_study(study_id)
    except study.StudyLogError:
        return 0, 0, 0
    return len(recorded.counts), int(recorded.counts["participant"].nunique()), len(recorded.events)


def step_study() -> None:
    today = date.today().strftime("%Y%m%d")
    study_id = f"class-{today}"
    st.markdown(
        "Finally, measure how people use citations, as the paper's usability study did. In the Answer inspector, "
        f"turn on **Study mode** with the study id `{study_id}`; each student types their own participant "
        "code (P01, P02, ...; no names) and reads two answers from each of two engines, hovering and clicking the "
        "sources they check. Every answer shown is recorded, with how long it stayed on screen, even when nobody "
        "touches a citation: reading without checking is what the study measures. Then open the recorded study "
        "here and compare the two engines."
    )
    c1, c2 = st.columns(2)
    link_to_page("inspector.py", "Answer inspector in study mode", ":material/manage_search:",
                 {**links, url_state.STUDY: study_id}, where=c1)
    c1.caption(f"The link turns Study mode on with the study id `{study_id}` filled in.")
    room_gate.show_addresses("inspector", urlencode({**links, url_state.STUDY: study_id}),
                             what="the inspector in study mode")
    answers, people, _ = _study_status(study_id)
    if answers:
        link_to_page("study.py", f"Open the recorded study ({answers} answers, {people} participants)",
                     ":material/groups:", {url_state.LOG: "recorded", url_state.STUDY: study_id}, where=c2)
    else:
        c2.button("Open the recorded study", key="tour_open_study", icon=":material/groups:", disabled=True,
                  help="Enabled once study mode has recorded an answer.")
        c2.caption(f"Nothing recorded in `{study_id}` yet: turn on Study mode in the inspector and open an answer.")
        latest = study_log.latest_study()
        if latest:
            link_to_page("study.py", f"Open the last study recorded on this machine ({latest})", ":material/history:",
                         {url_state.LOG: "recorded", url_state.STUDY: latest}, where=c2)
    st.caption("No computers for everyone? Record on paper with the count log template and upload it on the "
               "Usability study page.")
    st.download_button("Count log template (CSV)", study.template_csv("counts"), "study_counts_template.csv",
                       "text/csv", key="tour_template", on_click="ignore", icon=":material/download:")
    st.markdown("**Ask the class:** did people hover and click more with one engine? With a handful of students "
                "the test may not be possible or not significant; the study page says which and why.")


for k, body in enumerate((step_scorecard, step_answer, step_rescore, step_study)):
    _step(k, body)

_publish()

if all(done):
    st.success("All four steps done. The Methodology page explains every metric in more depth.",
               icon=":material/celebration:")
