"""Loaders and figures of the Conflicting evidence page: which sources the answers side with
(`pipeline.conflict.sides`) and the convincingness probe's runs (`pipeline.conflict.probe_run`).

Loaders are keyed by file modification times like `dashboard.data`; figures take the pipeline's
tables as they are and only draw them. Text from data (domains, paragraph ids, questions) is
escaped for plotly with `plot_escape`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import answer_store, data
from dashboard.render import plot_escape
from pipeline.conflict import probe_run, sides
from pipeline.storage.store import table_path

STANCE_COLOURS = {"yes": "#1f77b4", "no": "#d62728"}


# ---- sources the answers side with --------------------------------------------------------------


@st.cache_data(show_spinner=False, max_entries=8)
def _side_rows(root: str, dataset: str, judge: str, stamp: tuple) -> pd.DataFrame:
    return sides.side_rows(data.annotated_answers(dataset, judge).values())


def side_rows(dataset: str, judge: str) -> pd.DataFrame:
    """Per listed source of every debate answer: stance, answer side, followed (cached by file times)."""
    root = data.results_root()
    if data._shown(dataset):
        stored = answer_store.sides(dataset, judge, root)  # written by `aee run` (pipeline.page_records)
        if stored is not None:
            return stored
    files = [table_path(dataset, "sources", root=root), table_path(dataset, "statements", judge, root),
             table_path(dataset, "labels", judge, root)]
    stamp = tuple(f.stat().st_mtime_ns if f.exists() else 0 for f in files)
    return _side_rows(str(root), dataset, judge, stamp)


def sides_figure(summary: pd.DataFrame, by_label: str) -> go.Figure:
    """Share of sources with a side that are on the answer's side, per group and engine, with intervals."""
    fig = go.Figure()
    for engine, part in summary.groupby("engine", sort=True):
        fig.add_trace(go.Bar(
            x=part["share"] * 100, y=[plot_escape(g) for g in part["group"]], orientation="h", name=plot_escape(engine),
            error_x={"type": "data", "symmetric": False, "array": (part["ci_high"] - part["share"]) * 100,
                     "arrayminus": (part["share"] - part["ci_low"]) * 100},
            customdata=part[["on_answer_side", "sources_with_side"]].to_numpy(),
            hovertemplate="%{y}: %{x:.1f}% on the answer's side (%{customdata[0]} of %{customdata[1]})<extra>%{fullData.name}</extra>",
        ))
    fig.update_layout(barmode="group", xaxis={"title": "sources on the side the answer takes (%)", "range": [0, 100]},
                      yaxis={"title": by_label, "autorange": "reversed"}, height=max(300, 38 * summary["group"].nunique() + 120),
                      legend_title_text="engine", margin={"l": 10, "r": 10, "t": 30, "b": 40})
    return fig


# ---- probe runs ---------------------------------------------------------------------------------


def probe_runs() -> list[Path]:
    """Run folders under the results folder, newest first."""
    return probe_run.list_runs(data.results_root())


@st.cache_data(show_spinner=False, max_entries=16)
def _run(path: str, mtime: float) -> dict[str, Any]:
    return probe_run.load_run(Path(path))


def load_probe(folder: Path) -> dict[str, Any]:
    """A run's summary and tables (cached until its summary is rewritten)."""
    summary = folder / "summary.json"
    return _run(str(folder), summary.stat().st_mtime_ns if summary.exists() else 0)


def run_label(folder: Path) -> str:
    info = load_probe(folder)["summary"]
    tag = " (illustrative data)" if info.get("data", {}).get("illustrative") else ""
    return f"{folder.name}: {info.get('model', '?')}, {str(info.get('created', ''))[:16].replace('T', ' ')}{tag}"


def effects_figure(effects: pd.DataFrame) -> go.Figure:
    """Each perturbation's change in win-rate of the paragraphs it edits, against the control (and
    the control against the original), in percentage points with 95% intervals."""
    rows = effects[(effects["baseline"] == "control") | (effects["perturbation"] == "control")]
    labels = [plot_escape(f"{p} vs {b}") for p, b in zip(rows["perturbation"], rows["baseline"])]
    effect = rows["effect"].astype(float) * 100
    low = rows["ci_low"].astype(float) * 100
    high = rows["ci_high"].astype(float) * 100
    fig = go.Figure(go.Scatter(
        x=effect, y=labels, mode="markers", marker={"size": 11, "color": "#1f77b4"},
        error_x={"type": "data", "symmetric": False, "array": (high - effect).fillna(0), "arrayminus": (effect - low).fillna(0)},
        customdata=rows[["paragraphs", "win_rate", "baseline_win_rate"]].to_numpy(),
        hovertemplate="%{y}: %{x:+.1f} points over %{customdata[0]} paragraphs<extra></extra>",
    ))
    fig.add_vline(x=0, line_dash="dot", line_color="#888")
    fig.update_layout(xaxis_title="change in win-rate of the edited paragraphs (percentage points, 95% interval)",
                      yaxis={"autorange": "reversed"}, height=120 + 45 * len(rows), margin={"l": 10, "r": 10, "t": 20, "b": 40})
    return fig


def winrate_figure(paragraphs: pd.DataFrame) -> go.Figure:
    """Win-rate of each paragraph of one question and variant, with its Wilson interval."""
    part = paragraphs.sort_values(["stance", "win_rate"], ascending=[False, False])
    fig = go.Figure()
    for stance, rows in part.groupby("stance", sort=False):
        rate = rows["win_rate"].astype(float) * 100
        fig.add_trace(go.Scatter(
            x=rate, y=[plot_escape(f"{p} ({stance})") for p in rows["paragraph_id"]], mode="markers",
            name=f"{stance} paragraphs", marker={"size": 11, "color": STANCE_COLOURS.get(stance, "#555")},
            error_x={"type": "data", "symmetric": False, "array": (rows["ci_high"].astype(float) * 100 - rate).fillna(0),
                     "arrayminus": (rate - rows["ci_low"].astype(float) * 100).fillna(0)},
            customdata=rows[["wins", "comparisons"]].to_numpy(),
            hovertemplate="%{y}: %{x:.0f}% (%{customdata[0]} of %{customdata[1]} comparisons)<extra></extra>",
        ))
    fig.add_vline(x=50, line_dash="dot", line_color="#888")
    fig.update_layout(xaxis={"title": "win-rate: answers taking this paragraph's side (%, 95% interval)", "range": [0, 100]},
                      yaxis={"autorange": "reversed"}, height=140 + 34 * len(part), margin={"l": 10, "r": 10, "t": 20, "b": 40})
    return fig
