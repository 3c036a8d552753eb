"""Scorecard: engines across, metrics down in the paper's groups, every value with its rating
symbol, colour, n and (on hover) 95% interval; optional published scorecards beside it."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import charts, data
from dashboard.audit_panels import scorecard_ppi_section
from dashboard.metric_text import ci_text, fmt_metric, judged_text, na
from dashboard.na_notes import partial_blank_notes
from dashboard.render import (
    add_blank_reasons,
    engine_key,
    ensure_router,
    group_title,
    md_escape,
    pick_dataset_and_judge,
    rating_legend,
    records,
    scorecard_cells,
    summary_table,
    symbol,
    url_choice,
    url_choices,
    url_forget,
    url_remember,
    url_remember_list,
    wide_table,
)
from dashboard.scorecard_grid import scorecard_html
from pipeline.aggregate import QUERY_TYPES, with_aggregation
from pipeline.metrics import METRICS, MODE_LABELS, NECESSITY_METHODS, PARITY_NECESSITY

ensure_router()
st.title("Scorecard")
st.caption("Corpus values per engine, rated against the paper's Table 7 thresholds. Each row names its unit "
           "(% = share from 0 to 100; per answer = a count averaged over answers) and which way is better. "
           "Hover a cell for its 95% bootstrap interval and thresholds; the Values with intervals tab lists them all.")

# ---- filters ------------------------------------------------------------------------------------

top = st.columns([1.6, 1.1, 1.3, 1.4])  # the dataset name needs the room at 800 px
dataset, judge = pick_dataset_and_judge("scorecard", top[0], top[1], judge_help="Whose labels the metrics were computed from.")
full_summary = data.table(dataset, "summary", judge)
present_types = [q for q in QUERY_TYPES if q in set(full_summary["query_type"])] or ["all"]
url_choice("type", "scorecard_query_type", present_types)
query_type = top[2].radio("Query type", present_types, horizontal=True, key="scorecard_query_type")
url_remember("type", query_type)
field_options = data.fields(dataset, judge)
url_choices("field", "scorecard_fields", field_options, [])
field_filter = top[3].multiselect(
    "Field", field_options, key="scorecard_fields", placeholder="All fields" if field_options else "No fields in this dataset",
    disabled=not field_options, help="Pick fields to recompute the scorecard on their answers only.")
url_remember_list("field", field_filter)

row2 = st.columns([1.3, 1.1, 1.3, 1.3])
url_choice("mode", "scorecard_mode", list(MODE_LABELS))
mode = row2[0].radio("Scoring rules", list(MODE_LABELS), format_func=MODE_LABELS.get, horizontal=True,
                     key="scorecard_mode",
                     help="Strict: the clean definitions. Paper parity: what the authors' released notebook computed.")
if mode == "parity":
    necessity = PARITY_NECESSITY
    row2[1].selectbox("Source necessity", [necessity], key="scorecard_necessity_parity", disabled=True)
else:
    url_choice("necessity", "scorecard_necessity", list(NECESSITY_METHODS))
    necessity = row2[1].selectbox("Source necessity", list(NECESSITY_METHODS), key="scorecard_necessity",
                                  help="exact: optimal set cover; greedy: the notebook's greedy cover; "
                                       "bipartite: vertex cover on the statement-source graph.")
url_remember("mode", mode)
url_remember("necessity", necessity)
AGGREGATION_LABELS = {"answer": "Mean over answers (AEE)", "pooled": "Pooled over units (Liu et al., ExpertQA)"}
url_choice("agg", "scorecard_aggregation", list(AGGREGATION_LABELS), "answer")
aggregation = row2[2].radio(
    "Corpus value", list(AGGREGATION_LABELS), format_func=AGGREGATION_LABELS.get, key="scorecard_aggregation",
    help="Mean over answers: each answer weighs the same (the AEE paper). Pooled: each statement or citation "
         "weighs the same, summed over the engine's answers (Liu et al., ALCE, ExpertQA). Metrics of a whole "
         "answer (one-sided, confidence, counts) are the same either way.")
if aggregation == "answer":
    url_forget("agg")
else:
    url_remember("agg", aggregation)
# the published scorecard shown beside this one travels in the address as ?published=<key>
published_keys = [p.key for p in data.PUBLISHED]
linked_published = st.query_params.get("published")
if linked_published in published_keys and st.session_state.get("_url_published") != linked_published:
    st.session_state["scorecard_published"] = True
    st.session_state["scorecard_published_source"] = linked_published
show_published = row2[3].toggle("Compare with published scorecards", key="scorecard_published",
                                help="Show the papers' own scorecards beside this one and flag printed ratings "
                                     "that do not match the thresholds.")
if mode == "parity":
    st.caption("Paper parity fixes source necessity to **greedy**, the set cover the released notebook used.")

if (mode, necessity) not in data.configs(dataset, judge):
    st.warning(f"These results have no {MODE_LABELS[mode].lower()} / {necessity} configuration. "
               "Rerun the pipeline to produce it.")
    st.stop()

summary = with_aggregation(data.summary(dataset, judge, mode, necessity, tuple(field_filter)), aggregation)
engines = data.engines(dataset)
shown_engines = [e for e in engines if e in set(summary["engine"])]
has_debate = query_type in ("all", "debate") and "debate" in set(summary["query_type"])
reasons = data.blank_reasons(dataset, judge, mode, necessity, query_type, tuple(field_filter))
groups_present = data.groups_present(full_summary)
every_cell = add_blank_reasons(scorecard_cells(summary, query_type, groups_present, engines=shown_engines), reasons,
                               has_debate=has_debate)
# A group opens shown when some engine has a value in it here; groups that are n/a throughout (ExpertQA
# has no gold answers and no debate questions) start hidden, and one line below says which and why.
with_values = [g for g in groups_present if every_cell.loc[every_cell["group"] == g, "value"].notna().any()]
default_groups = with_values or groups_present
if st.session_state.get("_scorecard_groups_for") != (dataset, judge):
    st.session_state.pop("scorecard_groups", None)  # another dataset: its own default groups
    st.session_state["_scorecard_groups_for"] = (dataset, judge)
url_choices("group", "scorecard_groups", groups_present, default_groups)
groups = st.pills("Metric groups", groups_present, selection_mode="multi", format_func=group_title,
                  key="scorecard_groups") or default_groups
url_remember_list("group", groups, default_groups)
hidden = [g for g in groups_present if g not in groups]
if hidden:
    def _why_hidden(group: str) -> str:
        part = every_cell[every_cell["group"] == group]
        if part["value"].notna().any():
            return "hidden by you"
        why = part["why_blank"].replace("", None).dropna()
        return "no engine has a value here" + (f": {why.value_counts().index[0]}" if len(why) else "")
    st.caption("Not shown: " + "; ".join(f"**{md_escape(group_title(g))}** ({md_escape(_why_hidden(g))})" for g in hidden)
               + ". Turn a group on above to see its rows.")
if st.query_params.get("empty") == "show" and st.session_state.get("_url_empty") != "show":
    st.session_state["scorecard_show_empty"] = True  # a link asks for the rows without a value
show_empty = st.toggle("Show metrics without a value", key="scorecard_show_empty",
                       help="Rows where no engine has a value are listed with their reason below the scorecard; "
                            "turn this on to keep them in the grid too.")
if show_empty:
    url_remember("empty", "show")
else:
    url_forget("empty")

cells = every_cell[every_cell["group"].isin(groups)].reset_index(drop=True)
blank_metrics = [m for m, part in cells.groupby("metric", sort=False) if part["value"].isna().all()]
grid_cells = cells if show_empty else cells[~cells["metric"].isin(blank_metrics)].reset_index(drop=True)

illustrative = data.is_illustrative(dataset)
context = (f"{data.dataset_label(dataset)} · judge {judge} · {query_type} queries · {MODE_LABELS[mode].lower()} rules"
           f" · necessity {necessity} · " + ("pooled over each metric's units" if aggregation == "pooled"
                                              else "means over answers"))
if field_filter:
    context += " · fields: " + ", ".join(field_filter)
if illustrative:
    st.info("Illustrative teaching data: the engines and answers are invented.", icon=":material/school:")
if cells.empty:
    st.warning("No answers match these filters.")
    st.stop()
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
    pub["why_blank"] = ["" if v is not None and v == v else "not printed in this published scorecard"
                        for v in pub["value"]]
    return pub


figure_cells, divider, paper_engines, source = grid_cells, None, [], None
summary_cells = cells
if show_published:
    pick = st.columns([1.6, 3])
    source = pick[0].selectbox("Published scorecard", published_keys, key="scorecard_published_source",
                               format_func=lambda k: next(p.title for p in data.PUBLISHED if p.key == k))
    url_remember("published", source)
    pub = published_cells(source)
    if pub.empty:
        pick[1].warning("This reference file is missing or shares no metric group with the selection.")
    else:
        paper_engines = list(dict.fromkeys(pub["engine"]))
        shown_metrics = set(grid_cells["metric"])
        figure_cells = pd.concat([grid_cells, pub[pub["metric"].isin(shown_metrics) | show_empty]], ignore_index=True)
        summary_cells = pd.concat([cells, pub], ignore_index=True)
        divider = grid_cells["engine"].nunique()
        title = next(p.title for p in data.PUBLISHED if p.key == source)
        pick[1].caption(f"Right of the grey line: {md_escape(title)}, as printed. Where the paper printed its own "
                        f"ratings the symbols are the printed ones, and {charts.FLAG} followed by a symbol marks a "
                        "printed rating that differs from what Table 7's thresholds give for the printed value. "
                        "Otherwise the paper's values are rated here with the same thresholds.")
        if source != dataset:  # a published scorecard scored its own paper's questions, not this dataset's
            pick[1].warning(f"Different questions: the engines right of the grey line answered {md_escape(title)}'s own "
                            f"queries, not those of {md_escape(data.dataset_label(dataset))}, and were labelled by "
                            "that paper's judge. A gap between the two sides mixes engine, question and judge "
                            "differences; compare directions and orders of size, not exact values.",
                            icon=":material/compare_arrows:")

if not show_published:
    url_forget("published")
st.markdown(f"**Computed** · {md_escape(context)}")
st.html(scorecard_html(figure_cells, divider_after=divider, no_n_for=paper_engines))
ratings = summary_table(summary_cells)
if len(ratings):
    st.markdown("**Summary ratings per group**, each symbol beside the metric it rates")
    # engines down, groups across: a row per engine fits any number of engines (the published ones
    # too) at any width, where a column per engine ran off the right edge
    shown = ratings.T.map(md_escape)
    shown.index.name = "Engine"
    shown.columns = [md_escape(c) for c in shown.columns]
    with st.container(key="cards_full_scorecard_summary"):  # on a phone: an engine's card, a group per line
        st.table(shown)
st.caption(rating_legend() + ". Each cell shows the value, its rating symbol and n, the number of answers the "
           "value " + ("pools (hover a cell for the units pooled)" if aggregation == "pooled" else "averages over")
           + "; an n/a cell built on labels nobody could give (sources without text, for instance) "
           "shows instead how much was judged: a cell needs at least half (Methodology, \"Not checked is not "
           "unsupported\"). ↑ better: higher is better; ↓ better: lower is better; rows without an arrow "
           "describe the answers and are not rated.")
if key := engine_key(cells["engine"]):
    st.caption(key)
blank_rows = [(name, part["why_blank"].iloc[0]) for name, part in cells.groupby("metric", sort=False)
              if part["value"].isna().all() and part["why_blank"].nunique() == 1]
partial = partial_blank_notes(grid_cells)
if partial:  # n/a for some engines only: say why here, not only on hover
    st.markdown("**n/a cells, and why**\n" + "\n".join(
        f"- {md_escape(', '.join(engines))} on {md_escape(', '.join(metrics))}: {md_escape(reason)}"
        for reason, engines, metrics in partial))
if blank_rows:
    where = "in the grid" if show_empty else "left out of the grid (turn on “Show metrics without a value” to keep them)"
    st.markdown(f"**Metrics without a value here, and why** ({where})\n" + "\n".join(
        f"- {md_escape(METRICS[name].label)}: {md_escape(reason)}" for name, reason in blank_rows))

if show_published and source:
    flagged = data.published_disagreements(source)
    title = next(p.title for p in data.PUBLISHED if p.key == source)
    st.subheader("Printed ratings that disagree with the thresholds")
    elsewhere = data.published_disagreements()
    elsewhere = elsewhere[elsewhere["scorecard"] != title]
    if flagged.empty:
        st.success(f"Every rating printed in {md_escape(title)} matches Table 7's thresholds.")
    else:
        st.warning(f"{len(flagged)} printed rating(s) differ from what Table 7's thresholds give for the printed value.")
        view = flagged.assign(
            metric=flagged["metric"].map(lambda m: METRICS[m].label),
            published_rating=flagged["published_rating"].map(lambda r: f"{charts.RATING_SYMBOLS[r]} {r}"),
            rating=flagged["rating"].map(lambda r: f"{charts.RATING_SYMBOLS[r]} {r}"),
        ).rename(columns={"published_rating": "printed rating", "rating": "thresholds give"})
        st.dataframe(view.drop(columns=["scorecard"]), hide_index=True, width="stretch", key="scorecard_disagreements")
    if len(elsewhere):
        counts = elsewhere.groupby("scorecard", sort=False).size()
        st.caption("Other published scorecards with printed ratings that disagree: " + "; ".join(
            f"{md_escape(name)} ({n})" for name, n in counts.items()) + ". Choose one above to see them.")

TABS = ["Table", "Values with intervals", "Necessity variants"]
url_choice("tab", "scorecard_tab", TABS, TABS[0])
tab_table, tab_detail, tab_variants = st.tabs(TABS, key="scorecard_tab", on_change="rerun")
if st.session_state.get("scorecard_tab", TABS[0]) == TABS[0]:
    url_forget("tab")
else:
    url_remember("tab", st.session_state["scorecard_tab"])
if tab_table.open is not False:  # only the open tab is drawn (the others cost a rerun to open)
    with tab_table:
        table = wide_table(cells)
        column_help = {e: st.column_config.TextColumn(e, help="value, rating symbol and (n = answers averaged)")
                       for e in table.columns[4:-2]}
        column_help |= {"Group": st.column_config.TextColumn(width=120), "Metric": st.column_config.TextColumn(width=170, pinned=True),
                        "Unit": st.column_config.TextColumn(width=80), "Better": st.column_config.TextColumn(width=95)}
        # most important first on a narrow screen: the metric (pinned), then each engine's value
        order = ["Metric", *table.columns[4:-2], "Better", "Unit", "Group", *table.columns[-2:]]
        st.dataframe(table, hide_index=True, width="stretch", column_config=column_help, key="scorecard_table",
                     column_order=order)
if tab_detail.open is not False:  # only the open tab is drawn (the others cost a rerun to open)
    with tab_detail:
        detail = pd.DataFrame([{
            "group": group_title(r["group"]), "metric": METRICS[r["metric"]].label, "engine": r["engine"],
            "value": fmt_metric(r["value"], r["metric"]) if r["value"] is not None else na(r["why_blank"]),
            "95% interval": ci_text(r["ci_low"], r["ci_high"], r["metric"], r["value"], r["n_answers"]),
            "aggregated as": r["aggregated_as"],
            "n answers": str(int(r["n_answers"])) if r["n_answers"] is not None else "0",
            "units pooled": (str(int(r["pooled_units"])) if aggregation == "pooled" and r["pooled_units"] is not None
                             else "–"),
            "judged": judged_text(r.get("judged_share"), r["metric"]) or "–",
            "rating": f"{r['symbol']} {r['rating']}" if r["rating"] else ("not rated" if r["value"] is not None else "n/a"),
        } for r in records(cells)])
        st.dataframe(detail, hide_index=True, width="stretch", key="scorecard_detail",
                     column_order=["metric", "engine", "value", "95% interval", "n answers", "rating", "judged", "group"])
if tab_variants.open is not False:  # only the open tab is drawn (the others cost a rerun to open)
    with tab_variants:
        variants = data.necessity_comparison(dataset, judge)
        if variants.empty or variants.isna().all().all():
            st.info("No source-necessity values to compare: "
                    + (cells.loc[cells["metric"] == "source_necessity", "why_blank"].iloc[0]
                       if (cells["metric"] == "source_necessity").any() else "this selection has none") + ".")
        else:
            st.caption("Source necessity (all queries, strict rules, % of answers' sources) under each way of finding "
                       "the smallest supporting source set. Greedy can only overestimate the minimum; bipartite counts "
                       "a vertex cover, which is a different quantity.")
            shown = variants.apply(lambda col: col.map(lambda v: fmt_metric(v, "source_necessity")))
            st.dataframe(shown.reset_index(), hide_index=True, width="stretch", key="scorecard_variants")

scorecard_ppi_section(dataset, judge, query_type, mode)

# ---- exports --------------------------------------------------------------------------------------

st.subheader("Export")
export = cells.drop(columns=["published_rating", "disagrees"]).assign(
    dataset=dataset, dataset_label=data.dataset_label(dataset), illustrative=illustrative, judge=judge,
    query_type=query_type, mode=mode, necessity=necessity, fields="; ".join(field_filter), aggregation=aggregation)
stem = f"scorecard_{dataset}_{query_type}_{mode}_{necessity}" + ("_pooled" if aggregation == "pooled" else "")
title = ("ILLUSTRATIVE TEACHING DATA · " if illustrative else "") + context
ex = st.columns(5)
ex[0].download_button("CSV", export.to_csv(index=False).encode("utf-8"), f"{stem}.csv", "text/csv",
                      key="scorecard_dl_csv", on_click="ignore", icon=":material/download:")
ex[1].download_button("Parquet", lambda: charts.parquet_bytes(export), f"{stem}.parquet", "application/octet-stream",
                      key="scorecard_dl_parquet", on_click="ignore", icon=":material/download:")
ex[2].download_button("LaTeX", lambda: charts.scorecard_latex(cells, caption=context, illustrative=illustrative),
                      f"{stem}.tex", "text/x-tex", key="scorecard_dl_latex", on_click="ignore", icon=":material/download:")
ex[3].download_button("SVG", lambda: charts.scorecard_svg(cells, title=title, illustrative=illustrative),
                      f"{stem}.svg", "image/svg+xml", key="scorecard_dl_svg", on_click="ignore", icon=":material/download:")
ex[4].download_button("PNG", lambda: charts.scorecard_png(cells, title=title, illustrative=illustrative),
                      f"{stem}.png", "image/png", key="scorecard_dl_png", on_click="ignore", icon=":material/download:")
st.caption("The LaTeX table needs `booktabs` and `amssymb`. SVG and PNG are drawn without a browser. "
           + ("Every export of this dataset says it is illustrative teaching data (a banner, the caption, and an "
              "`illustrative` column in CSV and Parquet)." if illustrative else
              "CSV and Parquet carry an `illustrative` column (false here: real data)."))
