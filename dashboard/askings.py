"""The askings of one query by one engine (its repeats within a wave, and the same query in other
waves), and the Inspector's view that puts several of them side by side: a metrics table with one
column per asking (rows whose rating differs marked), then each answer with its citation and
support matrices. Which wave and repeat an answer is comes from `pipeline.consistency.captures`,
the same code `aee run`'s over-time summaries use; every value shown is the pipeline's per-answer
report (nothing is computed here)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import streamlit as st

from dashboard import answer_model, answer_store, data
from dashboard.answer_view import (
    CELL_CITATION,
    CELL_SUPPORT,
    CITATION_ORDER,
    SUPPORT_ORDER,
    answer_view,
    matrices_html,
    matrix_legend_markdown,
)
from pipeline.consistency.captures import capture_frame, wave_order
from pipeline.metrics import RATING_SYMBOLS

MAX_SIDE = 6  # askings shown side by side at once (each is a full answer with its matrices)
PER_ROW = 2  # answers per row: two stay readable at 800 px; more wrap onto the next row


@st.cache_resource(show_spinner=False, max_entries=8)  # one shared frame: callers filter it, never change it
def _captures(root: str, dataset: str, judge: str, stamp: tuple) -> pd.DataFrame:
    index = answer_store.index(dataset, Path(root))
    if index is not None:  # `aee run` worked out each answer's wave and repeat (pipeline.page_records)
        captures = index[["answer_id", "engine", "query", "wave", "repeat", "captured_at"]].copy()
    else:
        answers = data.annotated_answers(dataset, judge)
        frame = pd.DataFrame({"answer_id": [a.answer.answer_id for a in answers.values()],
                              "engine": [a.answer.engine for a in answers.values()],
                              "query": [a.answer.query for a in answers.values()],
                              "meta": [json.dumps(dict(a.answer.meta), default=str) for a in answers.values()]})
        captures = capture_frame(frame)
    return _shaped(captures)


def _shaped(captures: pd.DataFrame) -> pd.DataFrame:
    """Captures in engine, query, wave and repeat order, with their labels and headings."""
    if captures.empty:
        return captures.assign(label="")
    order = {w: i for i, w in enumerate(wave_order(captures))}
    captures["wave_rank"] = captures["wave"].map(order)
    captures = captures.sort_values(["engine", "query", "wave_rank", "repeat", "answer_id"], kind="stable")
    several_waves = len(order) > 1
    captures["time"] = captures["captured_at"].dt.strftime("%Y-%m-%d %H:%M UTC").fillna("")
    # short: a chip of the side-by-side box and a column of the metrics table, three of which must
    # fit an 800 px window; the heading above each answer says it in words, with the time
    captures["label"] = [f"{w} #{int(r) + 1}" if several_waves else f"asking {int(r) + 1}"
                         for w, r in zip(captures["wave"], captures["repeat"])]
    captures["heading"] = [(f"Wave {w}, asking {int(r) + 1}" if several_waves else f"Asking {int(r) + 1}")
                           for w, r in zip(captures["wave"], captures["repeat"])]
    return captures.reset_index(drop=True)


def askings(dataset: str, judge: str, query: str, engine: str) -> pd.DataFrame:
    """The answers this engine gave to this query, in wave and repeat order: answer_id, wave,
    repeat, captured_at, time (text), label ("2026-01-05 #2", or "asking 2" with one wave) and
    heading ("Wave 2026-01-05, asking 2")."""
    captures = _captures(str(data.results_root()), dataset, judge, data._stamp(dataset, judge))
    if captures.empty:
        return captures
    return captures[(captures["engine"] == engine) & (captures["query"] == query)]


CHANGED = "rating changes"


def metrics_across(reports: list[dict], labels: list[str]) -> pd.DataFrame:
    """One row per metric: its label, whether its rating differs between the askings, and the value
    and rating of each asking; the metrics whose rating changes first."""
    rows = []
    for name, first in reports[0]["metrics"].items():
        row = {"metric": first["label"]}
        ratings = []
        for rep, label in zip(reports, labels):
            m = rep["metrics"].get(name) or {}
            shown = answer_model.metric_value_text(m.get("display"), _unit(name))
            rating = m.get("rating") or ""
            ratings.append(rating)
            row[label] = f"{shown} {RATING_SYMBOLS[rating]}" if rating else shown
        row[CHANGED] = "yes" if len({r for r in ratings if r}) > 1 else ""
        rows.append(row)
    table = pd.DataFrame(rows, columns=["metric", CHANGED, *labels])
    return table.sort_values(CHANGED, ascending=False, kind="stable").reset_index(drop=True)


def _unit(name: str) -> str:
    from pipeline.metrics import METRICS

    info = METRICS.get(name)
    return info.unit if info else "ratio"


def show_side_by_side(dataset: str, judge: str, asked: pd.DataFrame, ids: list[str], mode: str, necessity: str) -> None:
    """Several askings of one query by one engine next to each other (the module doc); `asked` is
    `askings(...)` of that query and engine, `ids` the answers chosen."""
    labels = dict(zip(asked["answer_id"], asked["label"]))
    info = asked.set_index("answer_id")
    answers = data.answers_of(dataset, judge, ids[:MAX_SIDE])
    ids = [i for i in ids if i in answers][:MAX_SIDE]
    reports = [data.answer_report_cached(dataset, judge, i, mode, necessity) for i in ids]
    names = [labels.get(i, i) for i in ids]
    first = answers[ids[0]].answer
    st.markdown(f"**Query** ({first.query_type}): {answer_model.md_text(first.query)}")
    st.caption(f"Engine: {answer_model.md_text(first.engine)} · judge: {answer_model.md_text(judge)} · "
               f"{len(ids)} askings of this query side by side")
    st.markdown("#### Metrics, asking by asking")
    table = metrics_across(reports, names)
    flipped = int((table[CHANGED] == "yes").sum())
    # metrics equal in every asking wait in an expander, so the answers are a short scroll away
    moved = table[names].nunique(axis=1) > 1
    st.caption(f"{flipped} metric(s) change rating between these askings (listed first, shaded) and {int(moved.sum())} "
               "change value. Ratings use the published thresholds: ▲ acceptable, ● borderline, ▼ problematic; n/a: "
               "not scorable for that answer.")
    _metrics_table(table[moved], "ins_side_metrics")
    if (~moved).any():
        with st.expander(f"Metrics with the same value in every asking ({int((~moved).sum())})"):
            _metrics_table(table[~moved], "ins_side_metrics_same")
    st.markdown("#### The answers")
    for start in range(0, len(ids), PER_ROW):
        columns = st.columns(PER_ROW)
        for k, (column, aid, rep) in enumerate(zip(columns, ids[start:start + PER_ROW], reports[start:start + PER_ROW])):
            row = info.loc[aid]
            _one(column, dataset, answers[aid], rep, str(row["heading"]), str(row["time"]), f"ins_side_{start + k}")
    with st.expander("What the matrices' symbols mean"):
        k1, k2 = st.columns(2)
        k1.markdown(matrix_legend_markdown(CELL_CITATION, CITATION_ORDER, "Citations panel"))
        k2.markdown(matrix_legend_markdown(CELL_SUPPORT, SUPPORT_ORDER, "Support panel"))
        st.caption("Rows are the answer's statements (S1, S2, …; hover a row or a cell for its text), columns its "
                   "sources as numbered in the answer.")


def _metrics_table(table: pd.DataFrame, key: str) -> None:
    if table.empty:
        st.caption("None.")
        return
    styled = table.style.apply(lambda row: ["background-color: #fff3cd" if row[CHANGED] == "yes" else ""
                                            for _ in row], axis=1)
    st.dataframe(styled, hide_index=True, width="stretch", key=key, height=35 * (len(table) + 1) + 3,
                 column_config={"metric": st.column_config.TextColumn("metric", pinned=True),
                                CHANGED: st.column_config.TextColumn(CHANGED, width="small")})


def _one(column, dataset: str, annotated, rep: dict, title: str, when: str, key: str) -> None:
    """One asking: heading, the answer with its markers, its citation and support matrices."""
    rows = answer_model.source_view_rows(data.answer_source_rows(dataset, annotated.answer.answer_id))
    with column:
        st.markdown(f"##### {answer_model.md_text(title, 200)}")
        st.caption((f"asked {when} · " if when else "") + f"answer id {answer_model.md_text(annotated.answer.answer_id)} · "
                   f"{answer_model.statement_count_text(annotated, rep)} · {len(annotated.answer.sources)} sources")
        answer_view(answer_model.component_data(annotated, rep, rows, no_text=answer_model.no_text_hint(dataset)), key=key)
        if rep["citation_matrix"]["rows"] and rep["citation_matrix"]["columns"]:
            st.html(matrices_html(rep, compact=True))
        else:
            st.caption("No relevant statement or no usable source: the matrices are empty.")
