"""Cached loaders for everything the dashboard shows.

Every loader is keyed by the file's path and modification time, so a pipeline run that rewrites a
Parquet file is picked up on the next rerun without clearing any cache. Tables are read from each
dataset's current result set (`pipeline.storage.result_sets`); a dataset whose set does not match the list
its run wrote is not shown at all: it is missing from `datasets()`, its tables read as empty, and
`broken_datasets()` gives the reason the sidebar shows. The results folder is
`pipeline.storage.paths.results_dir()` (env `AEE_RESULTS_DIR`), read on every call so tests can point it
at fixture Parquet. Nothing here computes a metric: corpus values come from the exported summary
table or from `pipeline.aggregate.summarize`, ratings from the registry's `rate()`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pandas as pd
import streamlit as st

from dashboard import answer_store, table_facts
from pipeline.aggregate import QUERY_TYPES, summarize
from pipeline.importers import known_datasets
from pipeline.metrics import GROUP_ORDER, METRICS, ScoreConfig
from pipeline.records import CONFIDENCE_NAMES, AnnotatedAnswer
from pipeline.report.scoring import answer_report
from pipeline.storage.paths import reference_dir, results_dir
from pipeline.storage.store import broken_datasets as store_broken_datasets
from pipeline.storage.store import list_datasets, list_judges, read_table, result_set, table_path
from pipeline.storage.tables import load_annotated

# Columns of the published confidence table (data/reference/aee_confidence_counts.csv), level order.
CONFIDENCE_COLUMNS = tuple(name.lower().replace(" ", "_") for name in CONFIDENCE_NAMES)
RATED_GROUPS = ("answer text", "sources", "citation")
RATING_LETTERS = {"A": "acceptable", "B": "borderline", "P": "problematic"}


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime_ns / 1e9
    except OSError:
        return -1.0


# ---- raw file loaders (cache keys: path + mtime) ------------------------------------------------


@st.cache_data(show_spinner=False, max_entries=128)
def _parquet(path: str, mtime: float, table: str | None) -> pd.DataFrame:
    return read_table(Path(path), table)


@st.cache_data(show_spinner=False, max_entries=64)
def _csv(path: str, mtime: float) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


@st.cache_data(show_spinner=False, max_entries=64)
def _json(path: str, mtime: float) -> dict:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def parquet(path: Path, table: str | None = None) -> pd.DataFrame:
    """A Parquet file (an empty frame with the declared columns when it is missing)."""
    if not path.exists():
        return read_table(path, table)
    return _parquet(str(path), _mtime(path), table)


# ---- results ------------------------------------------------------------------------------------


def results_root() -> Path:
    """Where the pipeline's Parquet lives right now."""
    return results_dir()


def datasets() -> list[str]:
    """Datasets with results on disk."""
    return list_datasets(results_root())


def broken_datasets() -> dict[str, str]:
    """Datasets whose results are not shown, with the reason (a set that does not match its list)."""
    return store_broken_datasets(results_root())


def _shown(dataset: str) -> bool:
    """False when the dataset's current result set does not match the list its run wrote."""
    from pipeline.storage.result_sets import set_problem
    from pipeline.storage.store import dataset_dir

    try:
        return set_problem(dataset_dir(dataset, results_root())) is None
    except ValueError:  # not a valid dataset name
        return False


def judges(dataset: str) -> list[str]:
    """Judges with a summary for this dataset."""
    return list_judges(dataset, results_root())


def default_judge(dataset: str) -> str | None:
    """The judge a dataset opens with: the registry's (labels that come with the data, such as the
    teaching corpus's hand-checked ones), else the first with results."""
    names = judges(dataset)
    info = known_datasets().get(dataset)
    if info and info.default_judge in names:
        return info.default_judge
    return names[0] if names else None


def table(dataset: str, name: str, judge: str | None = None) -> pd.DataFrame:
    """One exported table of a dataset (judge tables need the judge); empty, with the declared
    columns, when the dataset's results are not a whole set."""
    path = table_path(dataset, name, judge, results_root())
    if not _shown(dataset):
        return read_table(path.with_name(".not-shown.parquet"), name)
    return parquet(path, name)


def manifest(dataset: str, judge: str) -> dict:
    """The run manifest of a dataset x judge ({} when absent or not a whole set)."""
    path = table_path(dataset, "summary", judge, results_root()).with_name("manifest.json")
    return _json(str(path), _mtime(path)) if path.exists() and _shown(dataset) else {}


def import_report(dataset: str) -> pd.DataFrame:
    """The import report of a dataset's latest run (one row per input file; empty when its runs
    predate the report), with the column names people read and "why dropped" in words."""
    from pipeline.importers.import_report import COLUMN_LABELS, refused_text, why_text

    runs = [manifest(dataset, j) for j in judges(dataset)]
    runs = [m for m in runs if (m.get("config") or {}).get("import_report")]
    if not runs:
        return pd.DataFrame()
    latest = max(runs, key=lambda m: str(m.get("created", "")))
    rows = [{"file": name, **{k: row.get(k, 0) for k in
             ("answers", "statements", "sources", "by_markers", "by_offsets", "by_text", "dropped", "dangling")},
             "formats": ", ".join(row.get("formats", {})), "why_dropped": why_text(row.get("why_dropped") or {}),
             "refused": len(row.get("refused") or ()), "why_refused": "; ".join(refused_text(row.get("refused") or []))}
            for name, row in latest["config"]["import_report"].items()]
    return pd.DataFrame(rows).rename(columns=COLUMN_LABELS)


def is_illustrative(dataset: str) -> bool:
    """True for teaching data that is not real engine output (from the manifest or the registry)."""
    for judge in judges(dataset):
        if manifest(dataset, judge).get("config", {}).get("illustrative"):
            return True
    info = known_datasets().get(dataset)
    return bool(info and info.illustrative)


def illustrative_datasets() -> list[str]:
    """Datasets on disk that are illustrative."""
    return [d for d in datasets() if is_illustrative(d)]


def dataset_label(dataset: str) -> str:
    """What the dashboard calls a dataset: the registry's title ("Teaching corpus" for `demo`), else
    its id, marked "(illustrative)" when it is invented teaching data without a title."""
    info = known_datasets().get(dataset)
    if info and info.title:
        return info.title
    return f"{dataset} (illustrative)" if is_illustrative(dataset) else dataset


def default_dataset(names: list[str] | None = None, prefer: Callable[[str], bool] | None = None) -> str | None:
    """The dataset every page opens with: the one shared across pages (set by the router from the
    URL or by the last page that changed it), else the largest real one, else the largest.
    `prefer` (a predicate) narrows the choice to datasets a page can show, when any qualifies."""
    names = datasets() if names is None else names
    if not names:
        return None
    if prefer is not None:
        names = [n for n in names if prefer(n)] or names
    shared = st.session_state.get("shared_dataset")
    if shared in names:
        return shared
    sizes = {n: len(table(n, "answers")) for n in names}
    real = [n for n in names if not is_illustrative(n)] or names
    return max(real, key=lambda n: (sizes[n], n == "demo"))


def remember_dataset(key: str) -> None:
    """on_change callback: make a page's dataset choice the shared default for other pages."""
    st.session_state["shared_dataset"] = st.session_state.get(key)


def _file(dataset: str, name: str, judge: str | None = None) -> Path | None:
    """A table's file when it exists and belongs to a whole result set, else None (for the
    column-wise readers of dashboard/table_facts.py)."""
    path = table_path(dataset, name, judge, results_root())
    return path if _shown(dataset) and path.exists() else None


def _facts(dataset: str, judge: str) -> pd.DataFrame | None:
    """The judge's facts record (`pipeline.page_records.write_facts`), None for a set without it."""
    from pipeline.page_records import record_path

    if not _shown(dataset):
        return None
    path = record_path(result_set(dataset, results_root()), "facts", judge)
    return table_facts.facts(str(path), _mtime(path)) if path.is_file() else None


def engines(dataset: str) -> list[str]:
    """Engines present in a dataset, sorted."""
    path = _file(dataset, "answers")
    return table_facts.distinct(str(path), _mtime(path), "engine") if path else []


def overview(dataset: str) -> pd.DataFrame:
    """Answers per engine and query type (a count for display)."""
    answers = table(dataset, "answers")
    if answers.empty:
        return pd.DataFrame(columns=["engine", "debate", "expertise", "answers"])
    counts = answers.pivot_table(index="engine", columns="query_type", values="answer_id", aggfunc="count", fill_value=0)
    for q in QUERY_TYPES[1:]:
        if q not in counts.columns:
            counts[q] = 0
    counts["answers"] = counts.sum(axis=1)
    return counts.reset_index()[["engine", *QUERY_TYPES[1:], "answers"]]


def fields(dataset: str, judge: str) -> list[str]:
    """Non-empty subject fields in a dataset's metrics table (each answer's field: from the answer
    index where the set has one, not from the metrics table's millions of rows)."""
    index = answer_store.index(dataset, results_root()) if _shown(dataset) else None
    if index is not None and "field" in index.columns:
        return sorted({str(f) for f in index["field"].dropna() if f})
    path = _file(dataset, "metrics", judge)
    return [f for f in table_facts.distinct(str(path), _mtime(path), "field") if f] if path else []


def configs(dataset: str, judge: str) -> list[tuple[str, str]]:
    """(mode, necessity) pairs present in the exported summary."""
    summary = table(dataset, "summary", judge)
    if summary.empty:
        return []
    return sorted({(m, n) for m, n in zip(summary["mode"], summary["necessity"])})


@st.cache_data(show_spinner="Recomputing the scorecard for the chosen fields…", max_entries=32)
def _summarize_filtered(path: str, mtime: float, mode: str, necessity: str, field_filter: tuple[str, ...]) -> pd.DataFrame:
    metrics = read_table(Path(path), "metrics")
    part = metrics[(metrics["mode"] == mode) & (metrics["necessity"] == necessity)]
    if field_filter:
        part = part[part["field"].isin(field_filter)]
    return summarize(part)


def summary(dataset: str, judge: str, mode: str, necessity: str, field_filter: tuple[str, ...] = ()) -> pd.DataFrame:
    """Corpus values for one scoring configuration.

    Without a field filter this is the exported summary table; with one, the pipeline's own
    `summarize` is rerun on the filtered per-answer metrics (cached per filter).
    """
    if field_filter:
        path = table_path(dataset, "metrics", judge, results_root())
        if not path.exists() or not _shown(dataset):
            return table(dataset, "summary", judge).iloc[0:0]
        return _summarize_filtered(str(path), _mtime(path), mode, necessity, tuple(sorted(field_filter)))
    full = table(dataset, "summary", judge)
    return full[(full["mode"] == mode) & (full["necessity"] == necessity)].reset_index(drop=True)


def blank_reasons(dataset: str, judge: str, mode: str, necessity: str, query_type: str,
                  field_filter: tuple[str, ...] = ()) -> dict[tuple[str, str], str]:
    """{(engine, metric): the reason most of its answers give for having no value} under one
    scoring configuration, read from the per-answer metrics table (the pipeline wrote the reasons)."""
    found = _facts(dataset, judge)
    if found is not None:
        return table_facts.blank_reasons_of(found, mode, necessity, query_type, tuple(sorted(field_filter)))
    path = _file(dataset, "metrics", judge)
    if path is None:
        return {}
    return table_facts.blank_reasons(str(path), _mtime(path), mode, necessity, query_type, tuple(sorted(field_filter)))


def query_types_present(dataset: str) -> set[str]:
    """Query types ("debate", "expertise") that a dataset's answers have."""
    path = _file(dataset, "answers")
    return set(table_facts.distinct(str(path), _mtime(path), "query_type")) if path else set()


def necessity_comparison(dataset: str, judge: str) -> pd.DataFrame:
    """Source necessity per engine under each strict variant (all queries), for the variant note."""
    full = table(dataset, "summary", judge)
    part = full[(full["metric"] == "source_necessity") & (full["mode"] == "strict") & (full["query_type"] == "all")]
    if part.empty:
        return pd.DataFrame()
    return part.pivot_table(index="necessity", columns="engine", values="value", aggfunc="first").round(2)


def confidence_counts(dataset: str, judge: str) -> pd.DataFrame:
    """Answers per engine x split x confidence level, read from the per-answer metric "confidence".

    Confidence does not depend on the scoring configuration, so one configuration's rows are used
    and each answer is counted once.
    """
    found = _facts(dataset, judge)
    if found is not None:
        return table_facts.confidence_counts_of(found)
    path = _file(dataset, "metrics", judge)
    if path is None:
        return pd.DataFrame(columns=table_facts.COUNT_COLUMNS)
    return table_facts.confidence_counts(str(path), _mtime(path))


def has_confidence(dataset: str) -> bool:
    """True when some answer of the dataset (any judge) has a confidence label."""
    for judge in judges(dataset):
        if _confidence_missing(dataset, judge)[0]:
            return True
    return False


def _confidence_missing(dataset: str, judge: str) -> tuple[int, int]:
    found = _facts(dataset, judge)
    if found is not None:
        return table_facts.confidence_missing_of(found)
    path = _file(dataset, "metrics", judge)
    return table_facts.confidence_missing(str(path), _mtime(path)) if path else (0, 0)


def unscored_confidence(dataset: str, judge: str) -> int:
    """Answers with no confidence label (left out of the distribution)."""
    return _confidence_missing(dataset, judge)[1]


# ---- annotated answers (the inspector and re-score) ---------------------------------------------


def _stamp(dataset: str, judge: str) -> tuple:
    """Modification times of the tables an answer is rebuilt from (the cache key)."""
    base = result_set(dataset, results_root())
    files = [table_path(dataset, "answers", base=base), table_path(dataset, "sources", base=base),
             table_path(dataset, "statements", judge, base=base), table_path(dataset, "labels", judge, base=base)]
    return (base.name, *(f.stat().st_mtime_ns if f.exists() else 0 for f in files))


@st.cache_resource(show_spinner=False, max_entries=8)
def _annotated(root: str, dataset: str, judge: str, stamp: tuple) -> dict[str, AnnotatedAnswer]:
    # cache_resource, not cache_data: the records are frozen dataclasses nobody mutates, and a
    # copy per rerun (cache_data unpickles its value every time) costs ~0.15 s on ExpertQA.
    return load_annotated(dataset, judge, Path(root))


def annotated_answers(dataset: str, judge: str) -> dict[str, AnnotatedAnswer]:
    """Every annotated answer of a dataset under one judge, keyed by id (cached until the files change;
    none when the dataset's results are not a whole set). Slow and large on a big set: pages read
    one answer (`annotated_answer`) or a few (`answers_of`) instead; this is their fallback for sets
    written before the pages' records."""
    if not _shown(dataset):
        return {}
    return _annotated(str(results_root()), dataset, judge, _stamp(dataset, judge))


def annotated_answer(dataset: str, judge: str, answer_id: str) -> AnnotatedAnswer | None:
    """One annotated answer (None when the set has no such answer), read from its own rows when the
    set has the pages' records (`pipeline.page_records`), else from every answer built once."""
    if not _shown(dataset):
        return None
    present, found = answer_store.one(dataset, judge, answer_id, results_root())
    return found if present else annotated_answers(dataset, judge).get(answer_id)


def answers_of(dataset: str, judge: str, ids: list[str] | tuple[str, ...] | set[str]) -> dict[str, AnnotatedAnswer]:
    """The annotated answers of `ids` that exist, keyed by id (read as `annotated_answer` reads one)."""
    if not _shown(dataset):
        return {}
    got = answer_store.answers(dataset, judge, list(ids), results_root())
    if got is None:
        every = annotated_answers(dataset, judge)
        got = {i: every[i] for i in ids if i in every}
    return got


def records_note(dataset: str, judge: str | None, names: tuple[str, ...] | None = None) -> str:
    """The line a page shows when the set lacks the pages' records it reads (`names`, default those
    of the answer pages; "" when it has them)."""
    if not judge or not _shown(dataset):
        return ""
    if names is None:
        return answer_store.records_note(dataset, judge, results_root())
    return answer_store.records_note(dataset, judge, results_root(), names)


@st.cache_data(show_spinner=False, max_entries=16)
def _index(root: str, dataset: str, judge: str, stamp: tuple) -> pd.DataFrame:
    answers = _annotated(root, dataset, judge, stamp)
    rows = [{"answer_id": a.answer.answer_id, "engine": a.answer.engine, "query": a.answer.query,
             "query_type": a.answer.query_type, "field": a.answer.field} for a in answers.values()]
    return pd.DataFrame(rows, columns=["answer_id", "engine", "query", "query_type", "field"])


def answer_index(dataset: str, judge: str) -> pd.DataFrame:
    """One row per answer: id, engine, query, query type, field (the set's answer index when it has
    one: a shared frame, never to be changed in place)."""
    if _shown(dataset):
        found = answer_store.index(dataset, results_root())
        if found is not None:
            return found[answer_store.INDEX_COLUMNS]
    return _index(str(results_root()), dataset, judge, _stamp(dataset, judge))


def answer_source_rows(dataset: str, answer_id: str) -> list[dict]:
    """The exported source-analysis rows (type, injection flags, duplicate of) of one answer."""
    found = answer_store.source_rows(dataset, answer_id, results_root()) if _shown(dataset) else None
    if found is not None:
        return found.drop(columns=["text"], errors="ignore").to_dict("records")
    frame = table(dataset, "sources")
    return frame.loc[frame["answer_id"] == answer_id].drop(columns=["text"], errors="ignore").to_dict("records")


@st.cache_data(show_spinner=False, max_entries=256)
def _report(root: str, dataset: str, judge: str, answer_id: str, mode: str, necessity: str, stamp: tuple) -> dict[str, Any]:
    annotated = annotated_answer(dataset, judge, answer_id)
    if annotated is None:
        raise KeyError(answer_id)
    return answer_report(annotated, ScoreConfig(mode, necessity), judge)  # type: ignore[arg-type]


def answer_report_cached(dataset: str, judge: str, answer_id: str, mode: str, necessity: str) -> dict[str, Any]:
    """The pipeline's report of one stored answer (cached per answer and scoring configuration)."""
    return _report(str(results_root()), dataset, judge, answer_id, mode, necessity, _stamp(dataset, judge))


# ---- reference figures ----------------------------------------------------------------------------


def reference(name: str) -> pd.DataFrame:
    """A published-figures CSV from data/reference (all columns as text; empty when missing)."""
    path = reference_dir() / f"{name}.csv"
    if not path.exists():
        return pd.DataFrame()
    return _csv(str(path), _mtime(path))


def _number(text: str) -> float | None:
    text = (text or "").strip().rstrip("%")
    if text in {"", "-", "–"}:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def parse_published_ratings(text: str) -> dict[str, str | None]:
    """DeepTRACE's rating string ("B A B | A P B | B B") -> {metric: rating or None}.

    Groups are separated by "|", in the order answer text, sources, citation; inside a group the
    letters follow the registry order of that group's rated metrics. "-" means no rating.
    """
    chunks = [c.split() for c in (text or "").split("|")]
    out: dict[str, str | None] = {}
    for group, letters in zip(RATED_GROUPS, chunks):
        names = [n for n, info in METRICS.items() if info.group == group and info.bands]
        for name, letter in zip(names, letters):
            out[name] = RATING_LETTERS.get(letter.strip().upper())
    return out


@dataclass(frozen=True)
class PublishedSource:
    """One published scorecard the comparison can show."""

    key: str
    title: str
    csv: str
    engine_column: str
    filter_column: str = ""
    filter_value: str = ""


PUBLISHED: tuple[PublishedSource, ...] = (
    PublishedSource("aee", "AEE (Venkit et al. 2024), Fig. 8a", "aee_scorecard", "engine"),
    PublishedSource("deeptrace_gs", "DeepTRACE 2025, generative search", "deeptrace_scorecards", "engine",
                    "group", "generative search"),
    PublishedSource("deeptrace_dr", "DeepTRACE 2025, deep research", "deeptrace_scorecards", "engine",
                    "group", "deep research"),
    PublishedSource("liu", "Liu et al. 2023, verifiability", "liu2023_verifiability", "engine"),
    PublishedSource("djeddal", "Djeddal et al. 2024, HAGRID (Table 2)", "djeddal2024_hagrid_table2", "setting"),
)


def published_scorecard(key: str) -> pd.DataFrame:
    """A published scorecard in long form: engine, metric, value, rating (Table 7 bands via the
    registry's rate()), published_rating (when the paper printed one) and disagrees."""
    src = next(p for p in PUBLISHED if p.key == key)
    frame = reference(src.csv)
    cols = ["source", "engine", "metric", "value", "ci_low", "ci_high", "n_answers", "rating", "published_rating", "disagrees"]
    if frame.empty:
        return pd.DataFrame(columns=cols)
    if src.filter_column:
        frame = frame[frame[src.filter_column] == src.filter_value]
    rows = []
    for rec in frame.to_dict("records"):
        printed = parse_published_ratings(rec.get("published_ratings", "")) if "published_ratings" in rec else {}
        n = _number(rec.get("n_answers", ""))
        for name, info in METRICS.items():
            column = info.reference_column
            if not column or column not in rec:
                continue
            value = _number(rec[column])
            rating = info.rate(value)
            published = printed.get(name)
            rows.append({
                "source": rec.get("source", src.title), "engine": rec[src.engine_column], "metric": name,
                "value": value, "ci_low": None, "ci_high": None, "n_answers": int(n) if n is not None else None,
                "rating": rating, "published_rating": published,
                "disagrees": bool(published and rating and published != rating),
            })
    return pd.DataFrame(rows, columns=cols)


def published_disagreements(key: str | None = None) -> pd.DataFrame:
    """Every printed rating that differs from the rating its own value gets under Table 7 (of one
    published scorecard when `key` names it, else of all of them)."""
    frames = [published_scorecard(p.key).assign(scorecard=p.title) for p in PUBLISHED if key in (None, p.key)]
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=["scorecard", "engine", "metric", "value", "published_rating", "rating"])
    allrows = pd.concat(frames, ignore_index=True)
    flagged = allrows[allrows["disagrees"]]
    return flagged[["scorecard", "engine", "metric", "value", "published_rating", "rating"]].reset_index(drop=True)


def published_confidence() -> pd.DataFrame:
    """AEE Fig. 8b counts in the same long form as `confidence_counts`."""
    frame = reference("aee_confidence_counts")
    rows = []
    for rec in frame.to_dict("records"):
        for level, column in zip(CONFIDENCE_NAMES, CONFIDENCE_COLUMNS):
            rows.append({"split": rec["split"], "engine": rec["engine"], "level": level, "count": int(_number(rec[column]) or 0)})
    return pd.DataFrame(rows, columns=["split", "engine", "level", "count"])


# ---- judge agreement ---------------------------------------------------------------------------


def agreement_dir() -> Path:
    """Where `pipeline.judges.measure.agreement.save_agreement` writes its Parquet."""
    return results_root() / "agreement"


def agreement() -> pd.DataFrame:
    """Every saved agreement report (dataset, judge, metric, value, value_json), one row per statistic."""
    folder = agreement_dir()
    files = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    frames = [parquet(f) for f in files]
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=["dataset", "judge", "metric", "value", "value_json"])
    return pd.concat(frames, ignore_index=True)


def _report_values(report: pd.DataFrame) -> dict[str, Any]:
    """{flattened metric name: value} of one agreement report (rows that do not parse are skipped)."""
    values = {}
    for rec in report.to_dict("records"):
        try:
            values[rec["metric"] or ""] = json.loads(rec["value_json"])
        except (TypeError, ValueError):
            continue
    return values


def agreement_confusions(report: pd.DataFrame) -> dict[str, dict]:
    """{task: {"rows", "cols", "matrix"}} read back from one report's flattened rows."""
    out: dict[str, dict] = {}
    for metric, value in _report_values(report).items():
        if ".confusion." in metric:
            task, _, part = metric.partition(".confusion.")
            out.setdefault(task, {})[part] = value
    return {k: v for k, v in out.items() if {"rows", "cols", "matrix"} <= set(v)}


def agreement_provenance(report: pd.DataFrame) -> dict[str, Any]:
    """How far one agreement report is held out, read back from its flattened rows: pairs compared,
    pairs whose question the judge was calibrated on, the scores on the other pairs, and the
    judge's own calibration summary (fit size, grouped cross-validation). Missing keys are absent."""
    values = _report_values(report)
    out: dict[str, Any] = {}
    for key, name in (("support.n", "n"), ("support.auc", "auc"), ("support.in_calibration", "in_calibration"),
                      ("support_unseen.n", "unseen_n"), ("support_unseen.auc", "unseen_auc"),
                      ("support_unseen.balanced_accuracy", "unseen_balanced_accuracy")):
        if values.get(key) is not None:
            out[name] = values[key]
    calibration = {k.split(".", 1)[1]: v for k, v in values.items() if k.startswith("calibration.")}
    if calibration:
        out["calibration"] = calibration
    return out


def judge_checks(judge: str) -> pd.DataFrame:
    """A judge's saved behavioural-check results (`aee judges check`; empty when never run)."""
    from pipeline.judges.measure.checks import checks_path

    path = checks_path(judge, results_root())
    return parquet(path) if path.exists() else pd.DataFrame()


def judge_reliability(dataset: str, judge: str) -> list[str]:
    """Sentences on how far a judge's labels can be trusted (agreement with experts, checks)."""
    from dashboard.reliability_text import reliability_lines

    return reliability_lines(judge, agreement(), judge_checks(judge), illustrative=is_illustrative(dataset))


def judge_reliability_summary(judge: str) -> dict[str, str]:
    """A judge's measured reliability in one line and the Judges page's address (for popovers)."""
    from dashboard.pages_registry import page
    from dashboard.reliability_text import reliability_summary

    return {"line": reliability_summary(judge, agreement(), judge_checks(judge)), "url": page("judges.py").url_path}


def saved_check_judges() -> list[str]:
    """Judges whose behavioural-check results are saved (results folder names, sorted)."""
    from pipeline.judges.measure.checks import checks_path

    folder = checks_path("offline", results_root()).parent
    return sorted(p.stem for p in folder.glob("*.parquet")) if folder.is_dir() else []


def groups_present(summary_frame: pd.DataFrame) -> list[str]:
    """Registry groups that have at least one metric in a summary frame, in registry order."""
    present = set(summary_frame["metric"]) if len(summary_frame) else set()
    return [g for g in GROUP_ORDER if any(info.group == g and name in present for name, info in METRICS.items())]
