"""Overview: which datasets, engines and judges are loaded, and how to add more data."""

from __future__ import annotations

from datetime import datetime, timezone

import pandas as pd
import streamlit as st

from dashboard import data
from dashboard.render import engine_key, ensure_router, link_to_page, md_escape, md_with_code, no_results_message
from pipeline.importers import known_datasets
from pipeline.judges import registry_entry

ensure_router()
st.title("Answer-engine audit")
st.markdown(
    "This dashboard shows how answer engines (search tools that write an answer and cite sources) "
    "score on the eight metrics of the Answer Engine Evaluation framework, plus citation recall and "
    "precision in the style of Liu et al. Every number comes from the pipeline's exported results; "
    "the pages only display them."
)
link_to_page("tour.py", "New here or teaching? **Start here** (a 15-minute tour)", ":material/school:")

names = data.datasets()
if not names:
    no_results_message()
    st.stop()

rows = []
for name in names:
    answers = data.table(name, "answers")
    judge_list = data.judges(name)
    rows.append({
        "dataset": data.dataset_label(name),
        "id": name,
        "kind": "illustrative" if data.is_illustrative(name) else "real data",
        "answers": len(answers),
        "engines": answers["engine"].nunique() if len(answers) else 0,
        "queries": answers["query"].nunique() if len(answers) else 0,
        "judges": ", ".join(judge_list) or "none",
    })
summary = pd.DataFrame(rows)

c1, c2, c3 = st.columns(3)
c1.metric("Datasets loaded", len(names))
c2.metric("Answers", int(summary["answers"].sum()))
c3.metric("Engines (all datasets)", int(sum(len(data.engines(n)) for n in names)))

st.subheader("Datasets")
st.dataframe(summary, hide_index=True, width="stretch")
st.caption("The id is the name commands use (`aee run --dataset ID`).")
illustrative = [n for n in names if data.is_illustrative(n)]
if illustrative:
    st.info(
        "Illustrative: " + ", ".join(md_escape(data.dataset_label(n)) for n in illustrative) + ". Invented engines "
        "and answers with hand-checked labels. Use it to learn how the metrics behave, never to rank real engines.",
        icon=":material/school:",
    )

def _when(stamp: object) -> str:
    """An ISO time from a manifest as the HTML report writes times ("2026-11-24 03:34 UTC")."""
    try:
        return datetime.fromisoformat(str(stamp)).astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        return "at an unknown time"


st.subheader("Answers per engine")
for name in names:
    label = data.dataset_label(name) + (" (illustrative)" if data.is_illustrative(name) else "")
    with st.expander(md_escape(label), expanded=len(names) == 1 or name == data.default_dataset(names)):
        counts = data.overview(name)
        st.dataframe(counts.rename(columns={"debate": "debate queries", "expertise": "expertise queries"}),
                     hide_index=True, width="stretch")
        if key := engine_key(counts["engine"]):
            st.caption(key)
        imported = data.import_report(name)
        if len(imported):
            st.markdown("**Import report** (per input file: how each citation reached its statement)")
            table = imported.drop(columns=["why dropped", "why refused"])
            narrow = {c: st.column_config.NumberColumn(c, width="small") for c in table.columns if c not in ("file", "format")}
            st.dataframe(table, hide_index=True, width="stretch", height=min(35 * (len(table) + 1) + 8, 640),
                         column_config={**narrow, "file": st.column_config.TextColumn("file", width="medium")})
            for _, row in imported[imported["why dropped"] != ""].iterrows():
                st.markdown(f"- **{md_escape(row['file'])}**, dropped: {md_escape(row['why dropped'])}")
            for _, row in imported[imported["why refused"] != ""].iterrows():  # records the importer could not read
                st.markdown(f"- **{md_escape(row['file'])}**, refused (not run): {md_escape(row['why refused'])}")
            st.caption("Citations, per file. **markers**: a [n] marker or a link in the text. **offsets**: placed by the "
                       "engine's own positions, checked against the words they cover. **by text**: positions missing or "
                       "wrong, so found again by the cited text or URL. **dropped**: could not be placed on any statement "
                       "(never moved to a neighbour; the reason is given). **dangling**: a marker number with no listed source. "
                       "**refused**: records that could not be read, each named with its line, field and why; the "
                       "others were run.")
        for judge in data.judges(name):
            info = registry_entry(judge)
            made = _when(data.manifest(name, judge).get("created"))
            st.caption(f"Judge **{md_escape(judge)}**: {md_escape(info.description if info else 'custom judge')} "
                       f"Results written {md_escape(made)}.")

st.subheader("Adding data")
known = known_datasets()
st.markdown(
    "Each dataset is produced by one command; the dashboard picks new results up on the next page "
    "load (its caches are keyed by file modification time)."
)
for name, info in known.items():
    status = "results loaded" if name in names else ("found on this machine" if info.path else "not found on this machine")
    title = f"{info.title} (`{name}`)" if info.title else f"`{name}`"
    st.markdown(f"- **{md_with_code(title)}** ({md_escape(status)}): {md_with_code(info.how_to_get)}.")
st.code(  # a code block: monospaced, scrolls on a phone, copy button
    "# ExpertQA (expert-labelled answers from six systems; labels come from human annotators)\n"
    "export EXPERTQA_DIR=/path/to/expertqa   # folder with the *.jsonl files\n"
    "aee run --dataset expertqa\n\n"
    "# AEE release (answers of You.com, Perplexity and BingChat with GPT-4o labels)\n"
    "export AEE_RELEASE_PATH=/path/to/ans_eng_eval_0.1.json\n"
    "aee run --dataset aee\n\n"
    "# Your own answers in the canonical JSON / JSONL format\n"
    "aee run --dataset mine --path my_answers.jsonl --judge offline",
    language="bash",
)
