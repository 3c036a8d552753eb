"""The answer inspector's source-stance panel (debate queries): the listed sources by the side they
take, which ones the answer's statements follow, and the source-stance metrics of this answer.

Self-contained: the inspector calls `show_source_stance_panel(annotated, report, key=...)`. Values
come from the report (`pipeline.report.scoring.answer_report`) and the per-source detail from
`pipeline.metrics.source_stance.source_stance_rows`; nothing is computed here. All text goes into
`st.dataframe` cells or through `md_escape`, so titles and evidence never render as markup.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd
import streamlit as st

from dashboard.render import fmt_value, md_escape
from pipeline.metrics import METRICS
from pipeline.metrics.source_stance import source_stance_rows
from pipeline.records import AnnotatedAnswer

GROUP = "source stance"
STANCE_WORDS = {"agree": "agrees with the question's side", "disagree": "disagrees", "neutral": "neutral / both sides",
                "unknown": "judge could not tell", None: "not labelled"}
SIDE_WORDS = {"agree": "the question's side", "disagree": "the opposite side", "balanced": "both sides equally", None: "no side"}


def _yes_no(value: Any) -> str:
    return "–" if value is None else "yes" if value else "no"


def source_table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The panel's table: one row per listed source, every cell plain text."""
    return pd.DataFrame([{
        "source": f"[{r['source_index']}]", "site": r["domain"] or "(no address)", "type": r["source_type"],
        "stance": STANCE_WORDS.get(r["stance"], str(r["stance"])),
        "cited by statements": ", ".join(f"S{i + 1}" for i in r["cited_by"]) or "–",
        "citing: agree / disagree / neutral": f"{r['citing_agree']} / {r['citing_disagree']} / {r['citing_neutral']}",
        "statements follow it": _yes_no(r["follows"]), "on the answer's side": _yes_no(r["on_answer_side"]),
        "judge's evidence": r["evidence"] or "–", "labelled by": r["judge"] or "–",
    } for r in rows])


def metric_table(report: dict[str, Any]) -> pd.DataFrame:
    """The source-stance metrics of this answer from its report (reason shown where null)."""
    out = []
    for name, info in METRICS.items():
        if info.group != GROUP or name not in report["metrics"]:
            continue
        m = report["metrics"][name]
        shown = fmt_value(m["display"]) + ("%" if info.unit == "percent" and m["display"] is not None else "")
        out.append({"metric": info.label, "value": shown if m["display"] is not None else "not scorable",
                    "over": m["n"], "note": m["reason"] or "–"})
    return pd.DataFrame(out)


def show_source_stance_panel(annotated: AnnotatedAnswer, report: dict[str, Any], *, key: str) -> None:
    """Render the panel for one answer (a short note for non-debate queries)."""
    st.subheader("Sources by stance")
    if annotated.answer.query_type != "debate":
        st.caption("Source stance is measured on debate questions only; this is an expertise question.")
        return
    rows = source_stance_rows(annotated)
    labelled = [r for r in rows if r["stance"] is not None]
    if not labelled:
        st.info("This answer has no source-stance labels. Judges that give them: `offline` (word cues, says unknown "
                "when unsure) and `openai`; recorded data can carry them as `labels.sources[].stance`. Results built "
                "before source stance existed need a fresh run.")
        return
    counts = Counter(r["stance"] or "not labelled" for r in rows)
    side = rows[0]["answer_side"] if rows else None
    parts = [f"{counts[s]} {s}" for s in ("agree", "disagree", "neutral", "unknown", "not labelled") if counts[s]]
    st.markdown(md_escape(f"{len(rows)} listed sources: " + ", ".join(parts) + f". The answer's statements lean to "
                          f"{SIDE_WORDS.get(side, str(side))}."))
    st.dataframe(source_table(rows), hide_index=True, width="stretch", key=f"{key}_sources")
    st.caption("Stance is relative to the side the question's wording takes. A source is followed when most "
               "statements citing it that take a side take its side.")
    metrics = metric_table(report)
    if not metrics.empty:
        st.dataframe(metrics, hide_index=True, width="stretch", key=f"{key}_metrics")
