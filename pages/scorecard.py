"""Scorecard: engines across, metrics down in the paper's groups, every value with its rating
symbol, colour, n and (on hover) 95% interval; optional published scorecards beside it."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import charts, data
from dashboard.render import (
    ensure_router,
    group_title,
    md_escape,
    no_results_message,
    pick_dataset,
    rating_legend,
    scorecard_cells,
    symbol,
    wide_table,
)
from pipeline.aggregate import QUERY_TYPES
from pipeline.metrics import METRICS, NECESSITY_METHODS, PARITY_NECESSITY

MODE_LABELS = {"strict": "Strict", "parity": "Paper parity"}

ensure_router()
st.title("Scorecard")
st.caption("Corpus values per engine, rated against the paper's Table 7 thresholds. "
           "Hover a cell for its 95% bootstrap interval.")

# ---- filters ------------------------------------------------------------------------------------

top = st.columns([1.2, 1, 1.6, 1.6])
dataset = pick_dataset("scorecard_dataset", where=top[0])
if dataset is None:
    no_results_message()
    st.stop()
judge_list = data.judges(dataset)
if not judge_list:
    st.warning(f"Dataset {md_escape(dataset)} has no scored results yet.")
    st.stop()
judge = top[1].selectbox("Judge", judge_list, key="scorecard_judge",
                         help="Whose labels the metrics were computed from.")
full_summary = data.table(dataset, "summary", judge)
present_types = [q for q in QUERY_TYPES if q in set(full_summary["query_type"])] or ["all"]
query_type = top[2].radio("Query type", present_types, horizontal=True, key="scorecard_query_type")
field_options = data.fields(dataset, judge)
field_filter = top[3].multiselect(
    "Field", field_options, key="scorecard_fields", placeholder="All fields" if field_options else "No fields in this dataset",
    disabled=not field_options, help="Pick fields to recompute the scorecard on their answers only.")

row2 = st.columns([1.2, 1, 2.8])
mode = row2[0].radio("Scoring rules", list(MODE_LABELS), format_func=MODE_LABELS.get, horizontal=True,
                     key="scorecard_mode",
                     help="Strict: the clean definitions. Paper parity: what the authors' released notebook computed.")
if mode == "parity":
    necessity = PARITY_NECESSITY
    row2[1].selectbox("Source necessity", [necessity], key="scorecard_necessity_parity", disabled=True)
else:
    necessity = row2[1].selectbox("Source necessity", list(NECESSITY_METHODS), key="scorecard_necessity",
                                  help="exact: optimal set cover; greedy: the notebook's greedy cover; "
                                       "bipartite: vertex cover on the statement-source graph.")
show_published = row2[2].toggle("Compare with published scorecards", key="scorecard_published",
                                help="Show the papers' own scorecards beside this one and flag printed ratings "
                                     "that do not match the thresholds.")
groups_present = data.groups_present(full_summary)
groups = st.pills("Metric groups", groups_present, selection_mode="multi", default=groups_present,
                  format_func=group_title, key="scorecard_groups") or groups_present
if mode == "parity":
    st.caption("Paper parity fixes source necessity to **greedy**, the set cover the released notebook used.")

if (mode, necessity) not in data.configs(dataset, judge):
    st.warning(f"These results have no {MODE_LABELS[mode].lower()} / {necessity} configuration. "
               "Rerun the pipeline to produce it.")
    st.stop()

summary = data.summary(dataset, judge, mode, necessity, tuple(field_filter))
engines = data.engines(dataset)
cells = scorecard_cells(summary, query_type, groups, engines=[e for e in engines if e in set(summary["engine"])])

context = f"{dataset} · judge {judge} · {query_type} queries · {MODE_LABELS[mode].lower()} rules · necessity {necessity}"
if field_filter:
    context += " · fields: " + ", ".join(field_filter)
if data.is_illustrative(dataset):
    st.info("Illustrative teaching data: the engines and answers are invented.", icon=":material/school:")
if cells.empty:
    st.warning("No answers match these filters.")
    st.stop()
if query_type == "expertise":
    debate_only = ", ".join(i.label.lower() for i in METRICS.values() if i.debate_only)
    st.caption(f"Defined for debate queries only, so blank here: {debate_only}.")
_run_sources = data.manifest(dataset, judge).get("config", {}).get("sources") or {}
if isinstance(_run_sources, dict) and _run_sources:  # engine answers: where the source text came from (collect --sources)
    _how = {"fetch": "pages fetched by the toolkit", "snippet": "the engines' own snippets (not the pages)"}
    st.caption("Source text judged: " + "; ".join(f"{_how.get(str(k), md_escape(str(k)))} for {int(n)} answer(s)"
                                                  for k, n in sorted(_run_sources.items()) if isinstance(n, int)) + ".")

# ---- the scorecard --------------------------------------------------------------------------------


PAPER_SUFFIX = " (paper)"


def published_cells(source: str) -> pd.DataFrame:
    """Cells of a published scorecard, engines marked as the paper's, symbols as printed."""
    frame = data.published_scorecard(source)
    if frame.empty:
        return scorecard_cells(frame.assign(query_type="all"), "all", groups)
    pub = scorecard_cells(frame, "all", groups)
    pub["engine"] = pub["engine"] + PAPER_SUFFIX
    pub["symbol"] = [symbol(p or r) for p, r in zip(pub["published_rating"], pub["rating"])]
    return pub


figure_cells, divider, paper_engines, source = cells, None, [], None
if show_published:
    pick = st.columns([1.6, 3])
    source = pick[0].selectbox("Published scorecard", [p.key for p in data.PUBLISHED], key="scorecard_published_source",
                               format_func=lambda k: next(p.title for p in data.PUBLISHED if p.key == k))
    pub = published_cells(source)
    if pub.empty:
        pick[1].warning("This reference file is missing or shares no metric group with the selection.")
    else:
        paper_engines = list(dict.fromkeys(pub["engine"]))
        figure_cells = pd.concat([cells, pub], ignore_index=True)
        divider = cells["engine"].nunique()
        title = next(p.title for p in data.PUBLISHED if p.key == source)
        pick[1].caption(f"Right of the grey line: {md_escape(title)}, as printed. Where the paper printed its own "
                        f"ratings the symbols are the printed ones, and {charts.FLAG} followed by a symbol marks a "
                        "printed rating that differs from what Table 7's thresholds give for the printed value. "
                        "Otherwise the paper's values are rated here with the same thresholds.")

st.markdown(f"**Computed** · {md_escape(context)}")
st.plotly_chart(charts.scorecard_figure(figure_cells, divider_after=divider, no_n_for=paper_engines),
                key="scorecard_chart", config={"displayModeBar": False})
st.caption(rating_legend() + ". Each cell shows the value, its rating symbol and n, the number of answers the "
           "value averages over.")

if show_published:
    flagged = data.published_disagreements()
    st.subheader("Printed ratings that disagree with the thresholds")
    if flagged.empty:
        st.success("Every printed rating matches Table 7.")
    else:
        st.warning(f"{len(flagged)} printed rating(s) differ from what Table 7's thresholds give for the printed value.")
        view = flagged.assign(
            metric=flagged["metric"].map(lambda m: METRICS[m].label),
            published_rating=flagged["published_rating"].map(lambda r: f"{charts.RATING_SYMBOLS[r]} {r}"),
            rating=flagged["rating"].map(lambda r: f"{charts.RATING_SYMBOLS[r]} {r}"),
        ).rename(columns={"published_rating": "printed rating", "rating": "thresholds give"})
        st.dataframe(view, hide_index=True, width="stretch", key="scorecard_disagreements")

tab_table, tab_detail, tab_variants = st.tabs(["Table", "Values with intervals", "Necessity variants"])
with tab_table:
    table = wide_table(cells)
    column_help = {e: st.column_config.TextColumn(e, help="value, rating symbol and (n = answers averaged)")
                   for e in table.columns[2:]}
    st.dataframe(table, hide_index=True, width="stretch", column_config=column_help, key="scorecard_table")
with tab_detail:
    detail = cells.assign(group=cells["group"].map(group_title))[
        ["group", "label", "engine", "value", "ci_low", "ci_high", "n_answers", "rating", "symbol"]]
    st.dataframe(detail, hide_index=True, width="stretch", key="scorecard_detail",
                 column_config={"value": st.column_config.NumberColumn(format="%.2f"),
                                "ci_low": st.column_config.NumberColumn("95% CI low", format="%.2f"),
                                "ci_high": st.column_config.NumberColumn("95% CI high", format="%.2f"),
                                "n_answers": st.column_config.NumberColumn("n")})
with tab_variants:
    variants = data.necessity_comparison(dataset, judge)
    if variants.empty:
        st.info("No source-necessity values to compare.")
    else:
        st.caption("Source necessity (all queries, strict rules) under each way of finding the smallest "
                   "supporting source set. Greedy can only overestimate the minimum; bipartite counts a "
                   "vertex cover, which is a different quantity.")
        st.dataframe(variants.reset_index(), hide_index=True, width="stretch", key="scorecard_variants")

# ---- exports --------------------------------------------------------------------------------------

st.subheader("Export")
export = cells.drop(columns=["published_rating", "disagrees"]).assign(
    dataset=dataset, judge=judge, query_type=query_type, mode=mode, necessity=necessity,
    fields="; ".join(field_filter))
stem = f"scorecard_{dataset}_{query_type}_{mode}_{necessity}"
ex = st.columns(5)
ex[0].download_button("CSV", export.to_csv(index=False).encode("utf-8"), f"{stem}.csv", "text/csv",
                      key="scorecard_dl_csv", on_click="ignore", icon=":material/download:")
ex[1].download_button("Parquet", lambda: charts.parquet_bytes(export), f"{stem}.parquet", "application/octet-stream",
                      key="scorecard_dl_parquet", on_click="ignore", icon=":material/download:")
ex[2].download_button("LaTeX", lambda: charts.scorecard_latex(cells, caption=context), f"{stem}.tex", "text/x-tex",
                      key="scorecard_dl_latex", on_click="ignore", icon=":material/download:")
ex[3].download_button("SVG", lambda: charts.scorecard_svg(cells, title=context), f"{stem}.svg", "image/svg+xml",
                      key="scorecard_dl_svg", on_click="ignore", icon=":material/download:")
ex[4].download_button("PNG", lambda: charts.scorecard_png(cells, title=context), f"{stem}.png", "image/png",
                      key="scorecard_dl_png", on_click="ignore", icon=":material/download:")
st.caption("The LaTeX table needs `booktabs` and `amssymb`. SVG and PNG are drawn without a browser.")
