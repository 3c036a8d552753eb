"""Across a dataset: which domains and source types the engines' answers side with.

For every debate answer whose statements lean one way (more agree than disagree statements, or the
reverse), each listed source with a side (agree or disagree) is either on the answer's side or
against it. Grouped by engine and source type (or domain), the share on the answer's side says
which kinds of source an engine follows when it takes a side; "followed" counts the sources whose
citing statements go their way (`pipeline.metrics.source_stance.source_stance_rows`). Shares carry
Wilson 95% intervals. Pure functions of annotated answers.
"""

from __future__ import annotations

from typing import Iterable

import pandas as pd

from pipeline.conflict.probe_stats import wilson
from pipeline.metrics.source_stance import SIDES, source_stance_rows
from pipeline.records import AnnotatedAnswer

ROW_COLUMNS = ["answer_id", "engine", "query", "source_index", "url", "domain", "source_type", "stance", "answer_side",
               "on_answer_side", "follows", "cited"]
SUMMARY_COLUMNS = ["engine", "group", "sources_with_side", "on_answer_side", "share", "ci_low", "ci_high", "cited",
                   "followed", "followed_of"]


def side_rows(answers: Iterable[AnnotatedAnswer]) -> pd.DataFrame:
    """One row per listed source of every debate answer (stance None when unlabelled)."""
    return pd.DataFrame(side_records(answers), columns=ROW_COLUMNS)


def side_records(answers: Iterable[AnnotatedAnswer]) -> list[dict]:
    """`side_rows` as a list of dicts (what `aee run` writes chunk by chunk, pipeline/page_records)."""
    rows = []
    for a in answers:
        if a.answer.query_type != "debate":
            continue
        for r in source_stance_rows(a):
            rows.append({"answer_id": a.answer.answer_id, "engine": a.answer.engine, "query": a.answer.query,
                         "source_index": r["source_index"], "url": r["url"], "domain": r["domain"] or "(no address)",
                         "source_type": r["source_type"], "stance": r["stance"], "answer_side": r["answer_side"],
                         "on_answer_side": r["on_answer_side"], "follows": r["follows"], "cited": bool(r["cited_by"])})
    return rows


def side_summary(rows: pd.DataFrame, by: str = "source_type", min_sources: int = 1) -> pd.DataFrame:
    """Per engine and `by` (source_type or domain): sources with a side in answers that take one,
    how many are on the answer's side (share, interval), and how many the citing statements follow.
    Sorted by engine, then by the number on the answer's side."""
    if by not in ("source_type", "domain"):
        raise ValueError("by must be source_type or domain")
    usable = rows[rows["stance"].isin(SIDES) & rows["answer_side"].isin(SIDES)] if not rows.empty else rows
    out = []
    for (engine, group), part in (usable.groupby(["engine", by], sort=True) if not usable.empty else []):
        n = len(part)
        if n < min_sources:
            continue
        on_side = int(part["on_answer_side"].sum())
        low, high = wilson(on_side, n)
        decided = part[part["follows"].notna()]
        out.append({"engine": engine, "group": group, "sources_with_side": n, "on_answer_side": on_side,
                    "share": on_side / n, "ci_low": low, "ci_high": high, "cited": int(part["cited"].sum()),
                    "followed": int(decided["follows"].astype(bool).sum()), "followed_of": len(decided)})
    frame = pd.DataFrame(out, columns=SUMMARY_COLUMNS)
    return frame.sort_values(["engine", "on_answer_side", "sources_with_side"], ascending=[True, False, False], ignore_index=True)


def coverage(rows: pd.DataFrame) -> dict[str, int]:
    """How much of the dataset the side tables rest on: debate answers, sources, labelled sources,
    sources with a side, answers that take a side."""
    if rows.empty:
        return {"answers": 0, "sources": 0, "labelled": 0, "with_side": 0, "answers_with_side": 0}
    labelled = rows["stance"].isin(("agree", "disagree", "neutral"))
    return {"answers": int(rows["answer_id"].nunique()), "sources": len(rows), "labelled": int(labelled.sum()),
            "with_side": int(rows["stance"].isin(SIDES).sum()),
            "answers_with_side": int(rows.loc[rows["answer_side"].isin(SIDES), "answer_id"].nunique())}
