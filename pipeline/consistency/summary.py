"""The precomputed over-time summaries: written by `aee run` beside a judge's other tables when the
dataset holds repeats or several waves, and read (never recomputed) by the "Over time" page.

    <judge>/over_time.json            waves, engines, answer and source stability, metric ICCs,
                                      variance shares, each metric per engine and wave with its
                                      interval, and each engine's change from the previous wave, the models the replies name
    <judge>/over_time_flips.parquet   queries whose rating band flips between repeats

`load_values` is also what `aee compare` reads: per-answer metric values (display scale) with each
answer's engine, wave, query and repeat.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq
from scipy.special import stdtrit  # = scipy.stats.t.ppf; importing scipy.stats costs each `aee run` ~2 s

from pipeline.consistency.captures import capture_frame, has_repeats_or_waves, model_changes, reply_models, wave_order
from pipeline.consistency.change import MEASURE_LABELS, MIN_QUERIES, engine_stability, pair_changes
from pipeline.consistency.differences import ALPHA, JUDGE_NOTE, METHOD, as_json, compare_sides
from pipeline.consistency.spread import icc_table, rating_flips, variance_shares
from pipeline.metrics import METRICS
from pipeline.storage.store import judge_dirname, write_json_atomic

SUMMARY_FILE = "over_time.json"
FLIPS_FILE = "over_time_flips.parquet"
MODE, NECESSITY = "strict", "exact"  # the scoring configuration the figures use (ScoreConfig's default)
ENCODER_MAX_ANSWERS = 1_000  # above this, meaning similarity uses the lexical stand-in (time grows with text)
SUMMARY_VERSION = 2  # 2: t and F intervals with notes, reply models, the wave changes' method


def _read(path: Path, columns: list[str], filters: Any = None) -> pd.DataFrame:
    table = pq.read_table(path, columns=columns)
    if filters is not None:
        table = table.filter(filters(table))
    return table.to_pandas()


def load_values(base: Path, judge: str, captures: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(captures, values): values has answer_id, engine, wave, query, repeat, metric, value (display
    scale, nulls left out) for the default scoring configuration."""
    if captures is None:
        captures = capture_frame(_read(base / "answers.parquet", ["answer_id", "engine", "query", "meta"]))
    # the predicate is applied while reading, row group by row group: the other scoring
    # configurations (three quarters of the table) are never held in memory
    table = pq.read_table(base / judge_dirname(judge) / "metrics.parquet", columns=["answer_id", "metric", "value"],
                          filters=[("mode", "=", MODE), ("necessity", "=", NECESSITY)])
    metrics = table.filter(pc.is_valid(table["value"])).to_pandas()
    scale = {name: (100.0 if info.unit == "percent" else 1.0) for name, info in METRICS.items()}
    metrics["value"] = metrics["value"] * metrics["metric"].map(scale).fillna(1.0)
    values = metrics[["answer_id", "metric", "value"]].merge(captures[["answer_id", "engine", "wave", "query", "repeat"]],
                                                             on="answer_id", how="inner")
    values = values[np.isfinite(values["value"].to_numpy(float))].reset_index(drop=True)
    for column in ("engine", "wave", "query", "metric"):  # grouped over and over: codes, not strings
        values[column] = values[column].astype("category")
    return captures, values


def metric_by_wave(values: pd.DataFrame) -> pd.DataFrame:
    """Per engine, wave and metric: the mean over queries of each query's mean over repeats, with a
    95% Student's t interval over queries (none below MIN_QUERIES queries: `note` says why), as the
    stability figures have it."""
    per_query = values.groupby(["engine", "wave", "metric", "query"], sort=True, observed=True)["value"].mean().reset_index()
    rows = []
    for (engine, wave, metric), group in per_query.groupby(["engine", "wave", "metric"], sort=True, observed=True):
        v = group["value"].to_numpy(float)
        info = METRICS.get(str(metric))
        mean = float(v.mean())
        low = high = float("nan")
        if v.size >= MIN_QUERIES:
            half = float(stdtrit(v.size - 1, 0.975)) * float(v.std(ddof=1)) / math.sqrt(v.size)
            low, high = mean - half, mean + half
        rows.append({"engine": engine, "wave": wave, "metric": metric, "value": mean, "ci_low": low, "ci_high": high,
                     "queries": int(v.size), "rating": (info.rate(mean) or "") if info else "",
                     "note": "" if v.size >= MIN_QUERIES else f"{v.size} queries: too few for an interval (at least {MIN_QUERIES})"})
    return pd.DataFrame(rows, columns=["engine", "wave", "metric", "value", "ci_low", "ci_high", "queries", "rating", "note"])


def build(base: Path, judge: str, meaning: str = "auto", samples: int = 500) -> tuple[dict, pd.DataFrame] | None:
    """The summary and the flips of a result set's judge, or None when the dataset has neither
    repeats nor several waves."""
    answers = _read(base / "answers.parquet", ["answer_id", "engine", "query", "meta", "text"])
    captures = capture_frame(answers)
    if not has_repeats_or_waves(captures):
        return None
    _, values = load_values(base, judge, captures)
    statements = _read(base / judge_dirname(judge) / "statements.parquet", ["answer_id", "statement_index", "text"])
    sources = _read(base / "sources.parquet", ["answer_id", "source_index", "url"])
    method = meaning
    if meaning == "auto" and len(answers) > ENCODER_MAX_ANSWERS:
        method = "lexical"
    per_query, used = pair_changes(captures, answers.set_index("answer_id")["text"], statements, sources, method)
    waves = wave_order(captures)
    engines = sorted(captures["engine"].unique())
    repeats = captures.groupby(["engine", "wave", "query"]).size()
    changes = []
    if len(waves) >= 2:
        previous, latest = waves[-2], waves[-1]
        for engine in engines:
            diffs = compare_sides(values, {"engine": engine, "wave": latest}, {"engine": engine, "wave": previous},
                                  f"{engine} ({latest})", f"{engine} ({previous})")
            changes += [{**row, "engine": engine, "from_wave": previous, "to_wave": latest} for row in as_json(diffs)]
    summary = {
        "version": SUMMARY_VERSION, "judge": judge, "mode": MODE, "necessity": NECESSITY,
        "waves": waves, "engines": engines, "answers": int(len(captures)),
        "queries": int(captures["query"].nunique()),
        "repeats": {"min": int(repeats.min()), "max": int(repeats.max()), "mean": float(repeats.mean())},
        "meaning_method": used, "measures": MEASURE_LABELS, "judge_note": JUDGE_NOTE,
        "wave_change_method": {"alpha": ALPHA, "method": METHOD},
        "reply_models": [{"engine": e, "wave": w, "models": m} for (e, w), m in sorted(reply_models(captures).items())],
        "model_changes": model_changes(captures, waves),
        "stability": _records(engine_stability(per_query)),
        "icc": _records(icc_table(values)),
        "shares": _records(variance_shares(values, samples=samples)),
        "metric_waves": _records(metric_by_wave(values)),
        "wave_changes": changes,
    }
    return summary, rating_flips(values)


def write(base: Path, judge: str, meaning: str | None = None) -> bool:
    """Write the summaries into a result set being built (before it is published); False when the
    dataset has nothing over time to summarise. `meaning`: auto | encoder | lexical (default: the
    AEE_OVER_TIME_MEANING environment variable, else auto)."""
    meaning = meaning or os.environ.get("AEE_OVER_TIME_MEANING", "auto")
    if meaning not in ("auto", "encoder", "lexical"):
        meaning = "auto"
    built = build(base, judge, meaning)
    if built is None:
        return False
    summary, flips = built
    folder = base / judge_dirname(judge)
    write_json_atomic(folder / SUMMARY_FILE, summary)
    write_table_any(flips, folder / FLIPS_FILE)
    return True


def write_table_any(frame: pd.DataFrame, path: Path) -> None:
    import pyarrow as pa

    from pipeline.storage.store import write_atomic

    write_atomic(path, pa.Table.from_pandas(frame.astype({c: str for c in frame.columns}), preserve_index=False))


def _records(frame: pd.DataFrame) -> list[dict]:
    out = []
    for row in frame.to_dict("records"):
        out.append({k: (None if isinstance(v, float) and not math.isfinite(v) else
                        v.item() if isinstance(v, np.generic) else v) for k, v in row.items()})
    return out


def read_summary(folder: Path) -> dict | None:
    path = folder / SUMMARY_FILE
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


__all__ = ["SUMMARY_FILE", "FLIPS_FILE", "build", "write", "load_values", "read_summary", "metric_by_wave"]
