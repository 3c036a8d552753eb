"""Over time: how much each engine's answers and sources change when the same question is asked
again, each metric across audit waves with its interval, and the queries whose rating flipped
between repeats. Reads the summaries `aee run` wrote (pipeline/consistency/summary.py)."""

from __future__ import annotations

import json

import altair as alt
import pandas as pd
import streamlit as st

from dashboard import over_time_data as otd
from dashboard.render import (
    ensure_router,
    fmt_ci,
    md_escape,
    metric_label,
    pick_dataset_and_judge,
    url_choice,
    url_remember,
)
from dashboard.url_state import page_link
from pipeline.consistency.captures import model_change_words
from pipeline.consistency.change import MEASURES
from pipeline.metrics import METRICS

ensure_router()
st.title("Over time")
st.caption("Answer engines give other answers, with other sources, to the same question asked again. Here: how much "
           "they change between repeats, each metric across audit waves with its 95% interval, and the queries whose "
           "rating flips from one asking to the next.")



def _switch_to(name: str) -> None:
    st.session_state["over_time_dataset"] = name
    st.session_state["shared_dataset"] = name


cols = st.columns([1.2, 1, 1.8])
dataset, judge = pick_dataset_and_judge("over_time", cols[0], cols[1],
                                        prefer=lambda n: n in otd.datasets_over_time())  # one with repeats or waves
summary, tables = otd.summary(dataset, judge)
if not summary:
    st.info(f"{md_escape(dataset)} has one answer per engine and query, so there is nothing to follow over time. "
            "Ask each query several times, or audit the same queries again later, then run the dataset:",
            icon=":material/info:")
    st.code(f"aee collect --engine perplexity --queries my.jsonl --out captures/{dataset} --repeat 3 --spacing 3600\n"
            f"aee run --dataset {dataset} --path captures/{dataset}", language="bash")
    for other in otd.datasets_over_time()[:3]:
        if other != dataset:
            st.button(f"Show {md_escape(other)} instead", key=f"over_time_switch_{other}", on_click=_switch_to, args=(other,),
                      icon=":material/swap_horiz:")
    st.stop()

engines: list[str] = summary["engines"]
waves: list[str] = summary["waves"]
metric_waves = tables["metric_waves"]
metrics = [m for m in METRICS if m in set(metric_waves.get("metric", []))]
cols = st.columns([1, 1.4, 1])
url_choice("engine", "over_time_engine", engines)
engine = cols[0].selectbox("Engine", engines, key="over_time_engine")
url_remember("engine", engine)
url_choice("metric", "over_time_metric", metrics, "citation_accuracy")
metric = cols[1].selectbox("Metric", metrics, key="over_time_metric", format_func=metric_label)
url_remember("metric", metric)
url_choice("wave", "over_time_wave", waves, waves[-1])
wave = cols[2].selectbox("Wave", waves, key="over_time_wave", help="the audit wave whose repeats are compared")
url_remember("wave", wave)
info = METRICS[metric]
unit = " (points)" if info.unit == "percent" else ""

st.markdown(f"**{md_escape(dataset)}** · judge {md_escape(judge)} · {summary['answers']:,} answers to "
            f"{summary['queries']:,} queries · {len(waves)} wave(s) · {summary['repeats']['min']}–{summary['repeats']['max']} "
            f"asking(s) per query and wave")
for change in summary.get("model_changes") or []:
    # an engine is what was asked for; its replies naming another model is a change to know about
    st.warning(md_escape(model_change_words(change)) + ".",
               icon=":material/swap_horiz:")

def _num(value: object, decimals: int) -> str:
    """A number as a phone card shows it; n/a where there is none (the caption below says why)."""
    return "n/a" if value is None or pd.isna(value) else f"{float(value):.{decimals}f}"  # type: ignore[arg-type]


def _grid_or_cards(grid: pd.DataFrame, cards: pd.DataFrame, key: str, column_config: dict) -> None:
    """The data grid from 641 px up; on a phone, where the grid showed only its first column or two and
    hid the rest off to the right, a card per engine whose every cell names what it holds (layout.css,
    "phone_hidden_" and "cards_phone_"). Each card's cells are Markdown, escaped here."""
    with st.container(key=f"phone_hidden_{key}"):
        st.dataframe(grid, hide_index=True, width="stretch", key=key, column_config=column_config)
    with st.container(key=f"cards_phone_{key}"):
        st.table(cards, hide_index=True)


WAVE_LABEL_PX = 72  # room a wave's date ("2026-01-05") needs on the chart's axis to stand level


def _too_small(rows: pd.DataFrame, column: str = "note") -> None:
    """Say once where a design is too small for an interval (the rows carry why)."""
    notes = sorted({str(n) for n in rows.get(column, pd.Series(dtype=str)).fillna("") if n})
    if notes:
        st.caption("No interval where a design is too small for one: " + md_escape("; ".join(notes[:3])) + ".")


# ---- stability of answers and sources --------------------------------------------------------------
st.subheader("How much answers and sources change between repeats")
stability = tables["stability"]
labels: dict[str, str] = {m: summary["measures"][m] for m in MEASURES if m in summary["measures"]}  # in MEASURES order
if stability.empty:
    st.caption("No query was asked more than once within a wave.")
else:
    part = stability[stability["wave"] == wave]
    table = pd.DataFrame({
        "engine": part["engine"], "measure": part["measure"].map(labels),
        "value": part["value"], "95% interval": [fmt_ci(lo, hi) for lo, hi in zip(part["ci_low"], part["ci_high"])],
        "queries": part["queries"]})
    wide = table.pivot_table(index="engine", columns="measure", values="value", aggfunc="first").reindex(
        columns=[labels[m] for m in labels if labels[m] in set(table["measure"])])
    measures = list(wide.columns)
    cards = pd.DataFrame({"engine": [f"**{md_escape(e)}**" for e in wide.index],
                          **{md_escape(m): [f"{md_escape(m)} **{_num(v, 2)}**" for v in wide[m]] for m in measures}})
    _grid_or_cards(wide.reset_index(), cards, "over_time_stability",
                   {c: st.column_config.NumberColumn(c, format="%.2f") for c in measures})
    st.caption(f"1 = the same every time, 0 = nothing kept. Means over queries of every pair of repeats in wave {md_escape(wave)}; "
               f"meaning similarity by the {md_escape(summary['meaning_method'])} method "
               "(encoder: the offline model's embeddings; lexical: word counts, when the model is absent or the corpus is "
               "large). Their 95% intervals (Student's t over queries) are in the export.")
    _too_small(part)

# ---- each metric across waves ------------------------------------------------------------------------
st.subheader(f"{metric_label(metric)} across waves")
series = metric_waves[metric_waves["metric"] == metric].copy()
if series.empty:
    st.caption("No values for this metric.")
else:
    series["wave"] = pd.Categorical(series["wave"], categories=waves, ordered=True)
    colour = alt.Color("engine:N", title="engine", scale=alt.Scale(scheme="category10"))
    # a wave's date level where there is room for it, slanted where the dates would print over each other
    # (a phone: the legend leaves the plot ~170 px, two dates need ~140 side by side)
    crowded = f"width / {max(1, len(waves))} < {WAVE_LABEL_PX}"
    axis = alt.Axis(labelAngle=alt.ExprRef(f"{crowded} ? -40 : 0"), labelAlign=alt.ExprRef(f"{crowded} ? 'right' : 'center'"),
                    labelLimit=120)
    base = alt.Chart(series).encode(x=alt.X("wave:O", sort=waves, title="wave", axis=axis), color=colour)
    chart = (base.mark_rule().encode(y=alt.Y("ci_low:Q", title=f"{metric_label(metric)}{unit}"), y2="ci_high:Q")
             + base.mark_line(point=True).encode(y="value:Q", tooltip=["engine", "wave", alt.Tooltip("value:Q", format=".1f"),
                                                                       alt.Tooltip("ci_low:Q", format=".1f"),
                                                                       alt.Tooltip("ci_high:Q", format=".1f")]))
    st.altair_chart(chart.properties(height=260), width="stretch")
    st.caption("Each point is the mean over queries (each query's repeats averaged first); the bar is its 95% interval "
               "over queries (Student's t).")
    _too_small(series)
    wave_changes = tables["wave_changes"]
    changes = wave_changes[wave_changes["metric"] == metric].to_dict("records") if not wave_changes.empty else []
    if changes:
        family = int((wave_changes["engine"] == changes[0]["engine"]).sum())
        method = summary.get("wave_change_method") or {}
        how = (f"a paired t over the queries both waves answered, Holm-adjusted over the {family} metrics compared, "
               f"alpha {float(method.get('alpha', changes[0].get('alpha', 0.05))):g}")
        st.markdown(f"**From {md_escape(changes[0]['from_wave'])} to {md_escape(changes[0]['to_wave'])}** ({md_escape(how)}):")
        for c in changes:
            st.markdown(f"- {md_escape(c['words'])}")
        st.caption("`aee compare --waves` gives every metric's row, with its p-values.")
    st.caption(md_escape(summary["judge_note"]).capitalize() + ".")

# ---- spread: is the engine gap larger than the noise -------------------------------------------------
st.subheader("Repeats against queries and engines")
icc, shares = tables["icc"], tables["shares"]
icc_part = icc[(icc["metric"] == metric) & (icc["wave"] == wave)] if not icc.empty else icc
if not icc_part.empty:
    within, between = f"spread between repeats{unit}", f"spread between queries{unit}"
    intervals = [fmt_ci(lo, hi) for lo, hi in zip(icc_part["icc_low"], icc_part["icc_high"])]
    cards = pd.DataFrame({
        "engine": [f"**{md_escape(e)}**" for e in icc_part["engine"]],
        "ICC": [f"ICC **{_num(v, 2)}**" for v in icc_part["icc"]],
        "95% interval": [f"95% interval {i}" if i.startswith("[") else i for i in intervals],
        within: [f"{within} **{_num(v, 1)}**" for v in icc_part["within_sd"]],
        between: [f"{between} **{_num(v, 1)}**" for v in icc_part["between_sd"]],
        "queries": [f"**{_num(q, 0)}** queries" for q in icc_part["queries"]]})
    _grid_or_cards(pd.DataFrame({
        "engine": icc_part["engine"], "ICC": icc_part["icc"], "95% interval": intervals,
        within: icc_part["within_sd"], between: icc_part["between_sd"], "queries": icc_part["queries"]}),
        cards, "over_time_icc",
        {"ICC": st.column_config.NumberColumn(format="%.2f"), within: st.column_config.NumberColumn(format="%.1f"),
         between: st.column_config.NumberColumn(format="%.1f")})
    st.caption("ICC: the share of the variation that lies between queries rather than between repeats of one query "
               "(1: every asking scores the same; 0: repeats differ as much as different queries). The estimate can "
               "fall below 0 when repeats of a query differ more than the queries do; read it as 0. The interval is "
               "the F-based one for a one-way random-effects design.")
    _too_small(icc_part, "icc_note")


FLIPS_SHOWN = 50  # rows of the flips table (a static table grows with its rows); the CSV has them all


def _share_interval(low: object, high: object) -> str:
    """A share's 95% interval in percent, as the share is written."""
    text = fmt_ci(low, high, 2)
    if text.startswith("["):
        return f"95% interval {float(low):.0%} to {float(high):.0%}"  # type: ignore[arg-type]
    return text


share_part = shares[(shares["metric"] == metric) & (shares["wave"] == wave)] if not shares.empty else shares
if not share_part.empty:
    row = share_part.iloc[0]
    st.markdown(f"Of the variation of {md_escape(metric_label(metric))} across answers in wave {md_escape(wave)}, "
                f"**{row['engine_share']:.0%}** ({_share_interval(row['engine_low'], row['engine_high'])}) is between engines, "
                f"**{row['query_share']:.0%}** between queries and **{row['repeat_share']:.0%}** between repeats of a query "
                f"(the {int(row['queries'])} queries all {int(row['engines'])} engines answered; each share rounded).")

# ---- rating flips -----------------------------------------------------------------------------------
st.subheader("Queries whose rating flipped between repeats")
flips = otd.flips(dataset, judge, engine, metric, wave)
if not info.bands:
    st.caption(f"{md_escape(metric_label(metric))} has no rating bands.")
elif flips.empty:
    st.caption(f"None: every query {md_escape(engine)} answered more than once kept its rating on this metric.")
else:
    ids = flips["answer_ids"].map(json.loads)
    askings_shown = 6  # the Inspector puts up to six askings side by side (dashboard.askings.MAX_SIDE)

    def _side_link(answers: list[str]) -> str:
        # the Inspector with every asking of this query in this wave next to each other
        return page_link("inspector", {"dataset": dataset, "judge": judge, "answer": answers[0],
                                       "side": answers[:askings_shown]})

    # a static table (the query wraps, the link is a link), a card per query on a phone (layout.css,
    # "cards_flips"): a data grid showed only the query column at 390 px
    shown = flips.head(FLIPS_SHOWN)
    view = pd.DataFrame({
        "query": [md_escape(q) for q in shown["query"].str.slice(0, 200)],
        "ratings by repeat": [md_escape(r) for r in shown["ratings"]],
        f"values{unit}": [md_escape(v) for v in shown["values"]],
        "side by side": [f"[open in the Inspector]({_side_link(a)})" for a in ids.head(FLIPS_SHOWN)]})
    with st.container(key="cards_flips"):
        st.table(view, hide_index=True)
    more = (f" The first {FLIPS_SHOWN} are listed; the Flips CSV below has all {len(flips):,}."
            if len(flips) > FLIPS_SHOWN else "")
    st.caption(f"{len(flips):,} queries; ratings use the metric's published bands (▲ acceptable, ● borderline, ▼ problematic). "
               "Each link opens the Answer inspector with that query's askings side by side: their metrics in one "
               f"table, each answer with its citation and support matrices.{more}")

# ---- exports ----------------------------------------------------------------------------------------
st.subheader("Export")
stem = f"{dataset}-{judge}-over-time".replace(":", "_")
ex = st.columns(4)
ex[0].download_button("Stability CSV", lambda: stability.to_csv(index=False).encode("utf-8"), f"{stem}-stability.csv", "text/csv",
                      key="over_time_dl_stability", on_click="ignore", icon=":material/download:")
ex[1].download_button("Metrics by wave CSV", lambda: metric_waves.to_csv(index=False).encode("utf-8"), f"{stem}-metrics.csv",
                      "text/csv", key="over_time_dl_metrics", on_click="ignore", icon=":material/download:")
ex[2].download_button("Flips CSV", lambda: flips.to_csv(index=False).encode("utf-8"), f"{stem}-flips-{engine}-{metric}.csv",
                      "text/csv", key="over_time_dl_flips", on_click="ignore", icon=":material/download:")
ex[3].download_button("Summary JSON", lambda: otd.summary_json(dataset, judge), f"{stem}.json",
                      "application/json", key="over_time_dl_json", on_click="ignore", icon=":material/download:")
