"""Methodology: generated from the metric registry, the judge registry, the importer registry and
the run manifests, so it cannot drift from the code that produces the numbers."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import data
from dashboard.metric_text import DIRECTION_SHORT, DIRECTION_WORDS, UNIT_MARKS, UNIT_WORDS, thresholds_text
from dashboard.render import ensure_router, group_title, md_escape
from pipeline.importers import IMPORTERS, known_datasets
from pipeline.judges import JUDGES
from pipeline.metrics import GROUP_ORDER, METRICS
from pipeline.metrics.registry import MAX_UNKNOWN_SHARE, POOL_UNITS

# Our own summary of how paper-parity differs from strict (spec: METRICS.md, "Paper-parity details").
PARITY_DIFFERENCES: tuple[tuple[str, str, str], ...] = (
    ("Which sources count",
     "Only sources whose page text was fetched enter the citation and support matrices and the necessity denominator.",
     "Every listed source counts. A pair whose source has no text (or was not judged for any other reason) is "
     "not checked: it counts neither as support nor against it, and a metric built mostly on such pairs is n/a."),
    ("A pair without a label",
     "Counts as not supporting (the notebook's matrices start at 0).",
     "Not checked: statements and citations that rest on it are left out, and the value says how many."),
    ("Answers that cannot be analysed",
     "An answer with no relevant statement or no fetched source is dropped from every metric and count "
     "(only the confidence distribution keeps it).",
     "Each metric decides for itself; an answer is left out only of the metrics that are undefined for it."),
    ("Citation accuracy with no citations",
     "The answer scores 1.0 (full marks).",
     "Undefined, so the answer is left out of the mean."),
    ("Citation thoroughness with nothing supported",
     "A tiny constant is added to the denominator, so the answer scores 0.",
     "Undefined, so the answer is left out of the mean."),
    ("Uncited sources",
     "Counts source slots 1..m, m being the highest listed or cited number, using citation markers anywhere in the "
     "text, with no fetch filter.",
     "Counts the listed sources that no marker in the answer points to."),
    ("Source necessity",
     "Always the greedy set cover, as in the released notebook.",
     "The exact minimum set cover by default; greedy and the bipartite vertex cover are options."),
    ("Corpus value",
     "Macro mean of the per-answer values, times 100.",
     "The same, with a seeded bootstrap 95% interval and the number of answers averaged; pooled over units on "
     "request (below)."),
)


def bands_text(name: str) -> str:
    return thresholds_text(name, exact=True)


ensure_router()
st.title("Methodology")
st.markdown(
    "How every number in this dashboard is produced. Answers are split into statements; a **judge** labels "
    "each statement (relevant or filler, its stance on debate questions), the answer's confidence, and whether "
    "each source supports each statement. Metrics are pure functions of those labels, computed per answer; a "
    "corpus value is the mean over answers (as the AEE paper reports it) or, on request, pooled over the metric's "
    "units (as Liu et al., ALCE and ExpertQA report theirs; see *Two ways to form a corpus value* below). This page "
    "is generated from the code's registries."
)

st.header("Metrics")
overview = pd.DataFrame([
    {"metric": name, "label": info.label, "group": group_title(info.group),
     "unit": UNIT_MARKS[info.unit], "direction": DIRECTION_SHORT[info.direction], "thresholds": bands_text(name),
     "debate only": "yes" if info.debate_only else "no"}
    for name, info in METRICS.items()
])
# A table wraps its cells, so every threshold is readable in full. Short unit and direction marks (as on
# the Scorecard) and no finding, recommendation or version columns keep it inside the page: with ten
# columns of long words the last one was cut off and every row stood five lines tall. The sections
# below carry all of it in words.
st.table(overview, hide_index=True)
st.caption("Unit: % = share from 0 to 100; per answer = a count averaged over answers; ratio = a ratio averaged "
           "over answers; 1–5 = the confidence scale. ↑ higher or ↓ lower: which way is better; descriptive "
           "metrics are not rated. Each metric's section below spells these out and adds its formula, the "
           "study finding and design recommendation of Table 6 it answers, and its version.")

for group in GROUP_ORDER:
    names = [n for n, i in METRICS.items() if i.group == group]
    if not names:
        continue
    st.subheader(group_title(group))
    for name in names:
        info = METRICS[name]
        lines = [
            f"**{md_escape(info.label)}** (`{name}`, version {info.version})",
            f"- What it measures: {md_escape(info.description)}",
            f"- Formula: `{info.formula.replace('`', chr(39))}`",
            f"- Reported as: {md_escape(UNIT_WORDS.get(info.unit, info.unit))}; {md_escape(DIRECTION_WORDS[info.direction])}"
            + ("; debate questions only" if info.debate_only else ""),
            f"- Thresholds (Table 7): {md_escape(bands_text(name))}",
        ]
        if info.harmonic_of:
            lines.append(f"- Corpus value: harmonic mean of the corpus values of `{info.harmonic_of[0]}` and "
                         f"`{info.harmonic_of[1]}` (not a mean of per-answer values), both means or both pooled")
        elif info.pool_unit != "answer":
            lines.append(f"- Pooled corpus value: over {md_escape(POOL_UNITS[info.pool_unit])}, every one of them "
                         "weighing the same across the engine's answers")
        else:
            lines.append("- Pooled corpus value: the same as the mean (a property of the whole answer)")
        if info.finding or info.recommendation:
            lines.append(f"- Why it matters (Table 6): study finding {md_escape(info.finding or '–')}, "
                         f"design recommendation: {md_escape(info.recommendation or '–')}")
        if info.max_unknown_share is not None:
            unit = md_escape(info.unknown_unit or "units")
            lines.append(f"- Labels nobody gave: {unit} that no label decides (a source without text, a judge that "
                         f"could not tell) are left out; when they are more than {info.max_unknown_share:.0%} of the "
                         f"{unit}, the value is n/a with the judged share and the reason, for one answer and for a "
                         "scorecard cell alike, rather than built on guesses")
        if info.reference_column:
            lines.append(f"- Column in the published scorecards: `{info.reference_column}`")
        st.markdown("\n".join(lines))

st.header("Two ways to form a corpus value")
st.markdown(
    "A per-answer value such as citation accuracy is a share of that answer's units (its citations). Over a "
    "corpus the papers combine them in two ways, and the two can differ by several points on the same labels:\n"
    "- **Mean over answers** (the AEE paper): average the per-answer shares; an answer with two citations weighs as "
    "much as one with twenty. The Scorecard shows this by default.\n"
    "- **Pooled over units** (Liu et al., ALCE, ExpertQA): add every answer's numerator and every answer's "
    "denominator, then divide; each citation (or statement) weighs the same. An answer with no unit adds nothing, "
    "so paper parity's 1.0 for an answer without citations does not enter a pooled value.\n\n"
    "Both intervals come from the same bootstrap over answers (answers are what was sampled), so a pooled "
    "interval accounts for statements of one answer being alike. Metrics of the whole answer (one-sided, "
    "overconfident, confidence, counts) have one value either way. Every number says which it is: the Scorecard's "
    "*Corpus value* switch, the hover text of each cell, the exports' `aggregation` and `aggregated_as` columns and "
    "`aee scorecard --aggregation pooled`."
)

st.header("Not checked is not unsupported")
st.markdown(
    "A (statement, source) pair is **judged** when a judge (or the data's annotators) labelled it *full*, "
    "*partial* or *none*. A pair nobody could judge is **not checked**, with the reason: the source has no text "
    "here (only its address), the page could not be fetched, the judge's call failed or it could not tell, the "
    "data carries no label for it (ExpertQA's *N/A*: the expert could not open the page). Not checked never "
    "means \"does not support\": the page may well back the statement; nobody here has read it.\n\n"
    "So a statement is **unsupported** only when every pair that could support it was judged and none does; a "
    "citation is **inaccurate** only when its pair was judged. Units that rest on a pair not checked are left out "
    f"of a metric's value, and the note says how many. When more than {MAX_UNKNOWN_SHARE:.0%} of the units a "
    "metric needs are not judged, it is **n/a** with the judged share and the reason (\"only 12% of statements "
    "judged (sources without text)\"), for one answer and for a scorecard cell alike: a value built on the few "
    "judged ones would describe which sources had text, not the engine. Stance metrics use their own, stricter "
    "share (a third), listed with each metric above. Paper parity keeps the released notebook's rule instead: "
    "only sources whose text was fetched count, and a pair without a label counts as not supporting."
)

st.header("Paper parity versus strict")
st.markdown(
    "The released evaluation notebook differs from the paper's definitions in a few places. **Paper parity** "
    "reproduces the notebook, so published numbers can be matched; **strict** follows the definitions. The "
    "scorecard switches between them."
)
st.dataframe(pd.DataFrame(PARITY_DIFFERENCES, columns=["topic", "paper parity (released notebook)", "strict"]),
             hide_index=True, width="stretch", key="methodology_parity")

st.header("Ratings")
st.markdown(
    "A corpus value is rated with the thresholds of the paper's Table 7 after rounding to two decimals, so the "
    "symbol always matches the number shown: ▲ acceptable, ● borderline, ▼ problematic. Metrics without "
    "thresholds are shown unrated. Colour repeats the symbol; it never carries meaning on its own. Where a "
    "published table prints a rating that its own value does not earn under these thresholds, the scorecard's "
    "comparison view flags it."
)

st.header("Judges")
st.dataframe(pd.DataFrame([{"judge": j.name, "how it works": j.description,
                            "labels computed or carried": "carried by the data" if not j.target else "computed",
                            "needs network": j.needs_network} for j in JUDGES.values()]),
             hide_index=True, width="stretch", key="methodology_judges")
st.markdown("Each label keeps the judge's id, its prompt version and its raw output, so any number can be traced "
            "back to what the judge said. The Judges page shows how each judge agrees with expert labels.")

st.header("Data provenance")
known = known_datasets()
rows = []
for name in sorted(set(known) | set(data.datasets())):
    info = known.get(name)
    judge_list = data.judges(name) if name in data.datasets() else []
    manifests = [data.manifest(name, j) for j in judge_list]
    first = manifests[0] if manifests else {}
    config = first.get("config", {})
    importer = config.get("importer") or (info.importer if info else "")
    rows.append({
        "dataset": data.dataset_label(name) if name in data.datasets() else (info.title if info and info.title else name),
        "id": name,
        "format": importer,
        "about the format": IMPORTERS[importer].description if importer in IMPORTERS else "",
        "illustrative": data.is_illustrative(name) if name in data.datasets() else bool(info and info.illustrative),
        "results on disk": name in data.datasets(),
        "judges": ", ".join(judge_list) or "none yet",
        "imported from": config.get("path", "") or (str(info.path) if info and info.path else "not found on this machine"),
        "how to get it": info.how_to_get.replace("`", "") if info else "added with --path",
        "run at": first.get("created", "") or "not run on this machine",
        "code version": (first.get("git_sha") or "")[:12],
        "prompt versions": ", ".join(sorted({p for m in manifests for p in m.get("prompt_versions", [])})),
    })
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="methodology_provenance")
st.caption("Published figures shown for comparison come from data/reference/*.csv, each row naming its paper and "
           "table or figure.")
