"""Compare side by side: two engines' answers to the same query, or one answer under two judges.

Metrics come from the pipeline's per-answer reports; verdicts from the stored labels. What the
page shows lives in the URL (dataset, view, answer, second engine or judge, rules)."""

from __future__ import annotations

import streamlit as st

from dashboard import answer_model, answer_picker, compare_model, data, url_state
from dashboard.answer_view import answer_view, scoring_controls
from dashboard.render import ensure_router, md_escape
from pipeline.metrics import MODE_LABELS, MODES, NECESSITY_METHODS, effective_necessity

PAGE = "compare"
VIEWS = {"engines": "Two engines, same query", "judges": "One answer, two judges"}

ensure_router()
st.title("Compare side by side")
st.caption("Put two engines' answers to the same query next to each other, or see where two judges disagree "
           "on one answer. Every value comes from the same pipeline report the inspector shows.")

datasets = data.datasets()
if not datasets:
    st.info("No results yet. Run the pipeline first, for example `aee run --dataset demo`.")
    st.stop()

wanted = answer_picker.incoming(PAGE, datasets, keep=(url_state.VIEW,))
url_state.seed("cmp_view", list(VIEWS), wanted.get(url_state.VIEW))
view = st.radio("Compare", list(VIEWS), format_func=VIEWS.get, horizontal=True, key="cmp_view")


def _multi_engine_queries(name: str, judge_name: str) -> list[str]:
    """Queries of a dataset that two or more engines answered."""
    idx = data.answer_index(name, judge_name)
    counts = idx.groupby("query")["engine"].nunique() if len(idx) else idx
    return sorted(counts[counts >= 2].index) if len(idx) else []


def _can_compare(name: str) -> bool:
    """Whether the chosen view has something to show on this dataset."""
    judges_of = data.judges(name)
    if view == "judges":
        return len(judges_of) >= 2
    return bool(judges_of) and bool(_multi_engine_queries(name, judges_of[0]))


def _opening_rank(name: str) -> tuple:
    """Which dataset Compare opens on when the one the other pages show has nothing to compare: each
    engine asked each query once (with repeats one asking is one draw, the Over time page's matter),
    real before illustrative, then the most queries two or more engines answered (never the build
    order, nor a size that repeats inflate)."""
    judges_of = data.judges(name)
    idx = data.answer_index(name, judges_of[0]) if judges_of else None
    repeats = bool(idx is not None and len(idx) and idx.groupby(["query", "engine"]).size().max() > 1)
    return (not repeats, not data.is_illustrative(name), len(_multi_engine_queries(name, judges_of[0])) if judges_of else 0,
            len(judges_of), name == "demo")


shared = st.session_state.get("shared_dataset")
showable = [n for n in datasets if _can_compare(n)]
if wanted.source != "link" and showable and wanted.get(url_state.DATASET) not in (None, *showable):
    # the page's memory, or the dataset another page switched to, has nothing to compare: open as fresh
    kept = url_state.Wanted({k: v for k, v in wanted.items() if k != url_state.DATASET})
    kept.source, wanted = wanted.source, kept
opening = shared if shared in showable else (max(showable, key=_opening_rank) if showable else shared)
dataset, judges, judge, index = answer_picker.pick_dataset_and_judge(
    "cmp", datasets, wanted, fallback=opening, judge_label="Judge" if view == "engines" else "Judge A")
if shared in datasets and shared not in showable and dataset != shared:
    # say why this page is not on the dataset the other pages show
    why = "no query two engines answered" if view == "engines" else "one judge's labels only"
    st.caption(f"The other pages show {answer_model.md_text(data.dataset_label(shared))}, which has {why}: "
               f"Compare opened on {answer_model.md_text(data.dataset_label(dataset))} instead.")

linked = index[index["answer_id"] == wanted.get(url_state.ANSWER)]
if view == "engines":
    queries = _multi_engine_queries(dataset, judge)
    if not queries:
        st.info(f"No query in {answer_model.md_text(dataset)} was answered by two engines (ExpertQA, for instance, "
                "put each question to one system). Choose another dataset, or compare two judges on one answer.")
        url_state.publish(PAGE, {url_state.VIEW: view, url_state.DATASET: dataset, url_state.JUDGE: judge})
        st.stop()
    label = f"Query ({len(queries)} answered by two or more engines)"
else:
    queries = sorted(index["query"].unique())
    label = f"Query ({len(queries)})"
url_state.seed("cmp_query", queries, linked["query"].iloc[0] if len(linked) else None)
query = st.selectbox(label, queries, key="cmp_query")
engines = sorted(index.loc[index["query"] == query, "engine"].unique())
url_state.seed("cmp_engine_a", engines, linked["engine"].iloc[0] if len(linked) else None)

methods = list(NECESSITY_METHODS)
url_state.seed("cmp_mode", list(MODES), wanted.get(url_state.MODE))
if wanted.get(url_state.NECESSITY) in methods:
    st.session_state["cmp_necessity"] = st.session_state["cmp_necessity_kept"] = wanted[url_state.NECESSITY]


def _answer_id(engine: str) -> str:
    return str(index.loc[(index["query"] == query) & (index["engine"] == engine), "answer_id"].iloc[0])


def _md_table(frame) -> None:
    """A static table (wraps long notes); st.table reads Markdown, so every cell and header is escaped.
    On a phone each metric is a card, its values named A and B and its note on a line of its own
    (layout.css, "cards_cmp")."""
    shown = frame.map(md_escape)
    shown.columns = [md_escape(c) for c in frame.columns]
    with st.container(key="cards_cmp_metrics"):
        st.table(shown, hide_index=True)


def _side(column, annotated, rep, title: str, key: str) -> None:
    """One side: its heading, the answer component, its flags."""
    column.markdown(f"##### {answer_model.md_text(title, 200)}")
    column.caption(f"answer id {answer_model.md_text(annotated.answer.answer_id)} · "
                   f"{answer_model.statement_count_text(annotated, rep)} · {len(annotated.answer.sources)} sources")
    rows = answer_model.source_view_rows(data.answer_source_rows(dataset, annotated.answer.answer_id))
    with column:
        answer_view(answer_model.component_data(annotated, rep, rows, no_text=answer_model.no_text_hint(dataset)),
                    key=key)
        flags = answer_model.answer_flags(annotated, rep, rows)
        if flags:
            st.dataframe([{"kind": f["kind"], "where": f["where"], "message": f["message"]} for f in flags],
                         hide_index=True, width="stretch", key=f"{key}_flags")
        else:
            st.caption("No flags: no dangling citations, dead, duplicate or injection-flagged sources.")


if view == "engines":
    e1, e2 = st.columns(2)
    engine_a = e1.selectbox("Engine A", engines, key="cmp_engine_a")
    others = [e for e in engines if e != engine_a]
    url_state.seed("cmp_engine_b", others, wanted.get(url_state.ENGINE_B))
    engine_b = e2.selectbox("Engine B", others, key="cmp_engine_b")
    o1, o2 = st.columns(2)
    mode, necessity = scoring_controls("cmp", (o1, o2))
    used = effective_necessity(mode, necessity)
    id_a, id_b = _answer_id(engine_a), _answer_id(engine_b)
    url_state.publish(PAGE, {url_state.VIEW: view, url_state.DATASET: dataset, url_state.JUDGE: judge,
                             url_state.ANSWER: id_a, url_state.ENGINE_B: engine_b, url_state.MODE: mode,
                             url_state.NECESSITY: necessity})
    # one at a time, as the reports below read them: each answer's rows are read once, not as a pair and again alone
    answers = {i: data.annotated_answer(dataset, judge, i) for i in (id_a, id_b)}
    rep_a = data.answer_report_cached(dataset, judge, id_a, mode, used)
    rep_b = data.answer_report_cached(dataset, judge, id_b, mode, used)
    st.markdown(f"**Query** ({answers[id_a].answer.query_type}): {answer_model.md_text(query)}")
    askings = {e: int(((index["query"] == query) & (index["engine"] == e)).sum()) for e in (engine_a, engine_b)}
    if max(askings.values()) > 1:
        # one asking of each is one draw: a reader must not take its gap for the engines'
        over_time = url_state.page_link("over_time", {url_state.DATASET: dataset, url_state.JUDGE: judge})
        st.info(f"{answer_model.md_text(engine_a)} answered this query {askings[engine_a]} times and "
                f"{answer_model.md_text(engine_b)} {askings[engine_b]} times (repeats or waves). One asking of each is "
                f"shown, and one asking is one draw: whether the engines differ beyond the change between askings is "
                f"on the [Over time]({over_time}) page and in `aee compare`.", icon=":material/info:")
    st.markdown("#### Metrics side by side")
    st.caption(f"Both answers labelled by the {answer_model.md_text(judge)} judge and scored with {MODE_LABELS[mode].lower()} rules "
               f"(necessity: {used}). 'favours' names the side the metric's direction prefers; "
               "n/a: not scorable for that answer (the note says why).")
    _md_table(compare_model.metrics_side_by_side(rep_a, rep_b, engine_a, engine_b))
    st.markdown("#### The two answers")
    left, right = st.columns(2)
    _side(left, answers[id_a], rep_a, f"A: {engine_a}", "cmp_a")
    _side(right, answers[id_b], rep_b, f"B: {engine_b}", "cmp_b")
else:
    e1, e2 = st.columns(2)
    engine = e1.selectbox("Engine", engines, key="cmp_engine_a")
    answer_id = _answer_id(engine)
    others = [j for j in judges if j != judge]
    if not others:
        st.info(f"Only the {answer_model.md_text(judge)} judge has results for {answer_model.md_text(dataset)}. "
                "Label the dataset with a second judge to compare, for example:")
        st.code(f"aee run --dataset {dataset} --judge offline", language="bash")
        url_state.publish(PAGE, {url_state.VIEW: view, url_state.DATASET: dataset, url_state.JUDGE: judge,
                                 url_state.ANSWER: answer_id})
        st.stop()
    url_state.seed("cmp_judge_b", others, wanted.get(url_state.JUDGE_B))
    judge_b = e2.selectbox("Judge B", others, key="cmp_judge_b")
    o1, o2 = st.columns(2)
    mode, necessity = scoring_controls("cmp", (o1, o2))
    used = effective_necessity(mode, necessity)
    url_state.publish(PAGE, {url_state.VIEW: view, url_state.DATASET: dataset, url_state.JUDGE: judge,
                             url_state.ANSWER: answer_id, url_state.JUDGE_B: judge_b, url_state.MODE: mode,
                             url_state.NECESSITY: necessity})
    ann_a, ann_b = data.annotated_answer(dataset, judge, answer_id), data.annotated_answer(dataset, judge_b, answer_id)
    if ann_b is None or ann_a is None:
        st.warning(f"The {answer_model.md_text(judge_b)} judge has not labelled this answer.")
        st.stop()
    if note := data.records_note(dataset, judge_b):
        st.caption(note)
    rep_a = data.answer_report_cached(dataset, judge, answer_id, mode, used)
    rep_b = data.answer_report_cached(dataset, judge_b, answer_id, mode, used)
    st.markdown(f"**Query** ({ann_a.answer.query_type}): {answer_model.md_text(query)} · "
                f"engine {answer_model.md_text(engine)}")
    if not compare_model.statements_match(ann_a, ann_b):
        st.warning("The two judges' records split this answer into different statements; rows are matched by "
                   "statement number, so read the texts before comparing.")
    diffs = compare_model.verdict_differences(ann_a, ann_b)
    n_diff = int((diffs["agreement"] == compare_model.DIFFERENT).sum())
    n_one_side = int((diffs["agreement"] == compare_model.ONE_SIDE).sum())
    st.markdown("#### Verdicts side by side")
    # items only one judge decided (the people's audit covers a sample) are neither agreement nor difference
    one_side = (f" {n_one_side} more item(s) were decided by one judge only ({compare_model.ONE_SIDE}), so they are "
                "not compared." if n_one_side else "")
    st.caption(f"{n_diff} of the {len(diffs) - n_one_side} items both judges decided differ between judge A "
               f"({answer_model.md_text(judge)}) and judge B ({answer_model.md_text(judge_b)}).{one_side} "
               "Rows that differ are highlighted.")
    if wanted.source == "link":
        st.session_state["cmp_only_diff"] = wanted.get(url_state.ONLY_DIFF) == "diff"
    only = st.toggle("Show only the items that differ", key="cmp_only_diff")
    url_state.publish(PAGE, {url_state.VIEW: view, url_state.DATASET: dataset, url_state.JUDGE: judge,
                             url_state.ANSWER: answer_id, url_state.JUDGE_B: judge_b, url_state.MODE: mode,
                             url_state.NECESSITY: necessity, url_state.ONLY_DIFF: "diff" if only else ""})
    shown = diffs[diffs["agreement"] == compare_model.DIFFERENT] if only else diffs
    shown = shown.rename(columns={"judge A": f"A: {judge}", "judge B": f"B: {judge_b}"})
    styled = shown.style.apply(
        lambda row: ["background-color: #ffe3e3; font-weight: 600" if row["agreement"] == compare_model.DIFFERENT
                     else "" for _ in row], axis=1)
    st.dataframe(styled, hide_index=True, width="stretch", key="cmp_verdicts", height=min(35 * (len(shown) + 1) + 3, 600),
                 column_config={"statement": st.column_config.TextColumn("statement", width=70),
                                "text": st.column_config.TextColumn("statement text", width="medium"),
                                "judged": st.column_config.TextColumn("judged", width="medium"),
                                "agreement": st.column_config.TextColumn("agreement", width=80)})
    st.markdown("#### Metrics side by side")
    _md_table(compare_model.metrics_side_by_side(rep_a, rep_b, judge, judge_b))
    st.markdown("#### The answer under each judge")
    left, right = st.columns(2)
    _side(left, ann_a, rep_a, f"A: judge {judge}", "cmp_a")
    _side(right, ann_b, rep_b, f"B: judge {judge_b}", "cmp_b")
