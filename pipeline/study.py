"""Usability-study statistics: log schema and loader, descriptive tables, two-sample tests,
and a reproduction of the published tables from their summary statistics.

Everything here is a pure function of its inputs (the reference CSVs are read only by the
explicitly named loaders), so the CLI and the Streamlit page share one implementation.

Two log levels are accepted:

* event level: one row per logged event (a source displayed or cited by the engine, or a
  hover/click by the participant); counts are derived from these;
* count level: one row per participant x query with the four counts already summed.
"""

from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from pipeline import paths

# ---------------------------------------------------------------------------------------------
# Schema
# ---------------------------------------------------------------------------------------------

BASELINE = "Google"
ANSWER_ENGINES = ("Perplexity", "Bing Copilot", "YouChat")
ALL_ENGINES_LABEL = "All answer engines"
ALIGNMENTS = ("aligned", "disaligned", "none")
EVENT_TYPES = ("displayed", "cited", "hover", "click")
# Event name -> count column it feeds.
EVENT_TO_COUNT = {"displayed": "displayed", "cited": "cited", "hover": "hovered", "click": "clicked"}
COUNT_MEASURES = ("displayed", "cited", "hovered", "clicked")
KEY_COLUMNS = ("participant", "session", "engine", "query_id")
EVENT_COLUMNS = (*KEY_COLUMNS, "query_type", "alignment", "event", "source_rank", "timestamp")
COUNT_COLUMNS = (*KEY_COLUMNS, "query_type", "alignment", *COUNT_MEASURES)
SIMULATED_LABEL = "simulated from published summary statistics"

# Participant codes, session ids and study ids become file names and dashboard labels, so only
# a conservative character set is allowed (no path separators, no dots, no e-mail addresses).
SAFE_CODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
# Engine names and query ids are shown but never used as paths; allow spaces and dots too.
SAFE_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.:-]{0,127}$")


class StudyLogError(ValueError):
    """A log row that does not fit the schema; `row` is 1-based over data rows (header excluded)."""

    def __init__(self, message: str, row: int | None = None, column: str | None = None):
        self.row = row
        self.column = column
        where = []
        if row is not None:
            where.append(f"row {row}")
        if column is not None:
            where.append(f"column '{column}'")
        super().__init__((", ".join(where) + ": " if where else "") + message)


def is_safe_code(value: object) -> bool:
    return isinstance(value, str) and bool(SAFE_CODE.match(value))


def _blank(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    if value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, str) and value.strip() == ""


def _as_text(value: object, row: int, column: str, pattern: re.Pattern, what: str) -> str:
    if _blank(value):
        raise StudyLogError("value is missing", row, column)
    text = str(value).strip()
    if not pattern.match(text):
        raise StudyLogError(f"{text[:40]!r} is not a valid {what}", row, column)
    return text


def _as_choice(value: object, row: int, column: str, choices: Sequence[str]) -> str:
    if _blank(value):
        raise StudyLogError("value is missing", row, column)
    text = str(value).strip().lower()
    if text not in choices:
        raise StudyLogError(f"{str(value)[:40]!r} is not one of {', '.join(choices)}", row, column)
    return text


def _as_count(value: object, row: int, column: str, *, nullable: bool, minimum: int = 0) -> int | None:
    if _blank(value):
        if nullable:
            return None
        raise StudyLogError("value is missing", row, column)
    try:
        number = float(str(value).strip()) if not isinstance(value, (int, float, np.number)) else float(value)
    except ValueError:
        raise StudyLogError(f"{str(value)[:40]!r} is not a whole number", row, column) from None
    if not math.isfinite(number) or number != int(number):
        raise StudyLogError(f"{str(value)[:40]!r} is not a whole number", row, column)
    if number < minimum:
        raise StudyLogError(f"{int(number)} is below the minimum {minimum}", row, column)
    return int(number)


def _as_timestamp(value: object, row: int, column: str) -> pd.Timestamp:
    if _blank(value):
        raise StudyLogError("value is missing", row, column)
    try:
        stamp = pd.Timestamp(value)
    except (ValueError, TypeError):
        raise StudyLogError(f"{str(value)[:40]!r} is not an ISO 8601 timestamp", row, column) from None
    if stamp is pd.NaT:
        raise StudyLogError(f"{str(value)[:40]!r} is not an ISO 8601 timestamp", row, column)
    # Naive stamps are taken as UTC so logs from different machines compare.
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")


def _check_columns(frame: pd.DataFrame, required: Sequence[str]) -> None:
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise StudyLogError(f"missing column(s): {', '.join(missing)}")


def _text_fields(raw: dict, row: int) -> dict:
    return {
        "participant": _as_text(raw["participant"], row, "participant", SAFE_CODE, "participant code"),
        "session": _as_text(raw["session"], row, "session", SAFE_CODE, "session id"),
        "engine": _as_text(raw["engine"], row, "engine", SAFE_LABEL, "engine name"),
        "query_id": _as_text(raw["query_id"], row, "query_id", SAFE_LABEL, "query id"),
        "query_type": _as_text(raw["query_type"], row, "query_type", SAFE_LABEL, "query type"),
        "alignment": _as_choice(raw["alignment"], row, "alignment", ALIGNMENTS),
    }


def validate_events(frame: pd.DataFrame) -> pd.DataFrame:
    """Check an event-level table row by row and return it with normalised types."""
    _check_columns(frame, EVENT_COLUMNS)
    rows = []
    for i, raw in enumerate(frame[list(EVENT_COLUMNS)].to_dict("records"), start=1):
        rec = _text_fields(raw, i)
        rec["event"] = _as_choice(raw["event"], i, "event", EVENT_TYPES)
        rec["source_rank"] = _as_count(raw["source_rank"], i, "source_rank", nullable=False, minimum=1)
        rec["timestamp"] = _as_timestamp(raw["timestamp"], i, "timestamp")
        rows.append(rec)
    out = pd.DataFrame(rows, columns=list(EVENT_COLUMNS))
    _check_query_attributes(out)
    out["source_rank"] = out["source_rank"].astype("int64")
    out["timestamp"] = pd.to_datetime(out["timestamp"], utc=True)
    return out


def validate_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """Check a count-level table row by row; displayed/cited may be blank (not recorded)."""
    _check_columns(frame, (*KEY_COLUMNS, "query_type", "alignment", "hovered", "clicked"))
    frame = frame.copy()
    for col in ("displayed", "cited"):
        if col not in frame.columns:
            frame[col] = None
    rows, seen = [], {}
    for i, raw in enumerate(frame[list(COUNT_COLUMNS)].to_dict("records"), start=1):
        rec = _text_fields(raw, i)
        for col in ("displayed", "cited"):
            rec[col] = _as_count(raw[col], i, col, nullable=True)
        for col in ("hovered", "clicked"):
            rec[col] = _as_count(raw[col], i, col, nullable=False)
        key = tuple(rec[k] for k in KEY_COLUMNS)
        if key in seen:
            raise StudyLogError(f"duplicate participant x query (first seen in row {seen[key]})", i, "query_id")
        seen[key] = i
        rows.append(rec)
    out = pd.DataFrame(rows, columns=list(COUNT_COLUMNS))
    for col in COUNT_MEASURES:
        out[col] = out[col].astype("Int64")
    return out


def _check_query_attributes(events: pd.DataFrame) -> None:
    # A query has one type and one alignment; disagreeing rows are a logging bug worth stopping on.
    first: dict[tuple, tuple[int, str, str]] = {}
    for i, rec in enumerate(events.to_dict("records"), start=1):
        key = tuple(rec[k] for k in KEY_COLUMNS)
        if key not in first:
            first[key] = (i, rec["query_type"], rec["alignment"])
            continue
        row0, qtype, align = first[key]
        if rec["query_type"] != qtype:
            raise StudyLogError(f"query_type {rec['query_type']!r} differs from {qtype!r} in row {row0} for the same query", i, "query_type")
        if rec["alignment"] != align:
            raise StudyLogError(f"alignment {rec['alignment']!r} differs from {align!r} in row {row0} for the same query", i, "alignment")


def counts_from_events(events: pd.DataFrame) -> pd.DataFrame:
    """One row per participant x query. A source hovered twice counts once (distinct ranks),
    because the paper counts sources hovered, not hover gestures. hovered/clicked are 0 when a
    logged query has no such events; displayed/cited stay null when none were logged, since
    that means the recorder did not capture them, not that zero sources were shown."""
    events = validate_events(events) if not _is_validated_events(events) else events
    if events.empty:
        return pd.DataFrame({c: pd.Series(dtype="Int64" if c in COUNT_MEASURES else "object") for c in COUNT_COLUMNS})
    keys = list(KEY_COLUMNS)
    meta = events.groupby(keys, sort=True)[["query_type", "alignment"]].first()
    distinct = events.drop_duplicates([*keys, "event", "source_rank"])
    table = distinct.groupby([*keys, "event"]).size().unstack("event")
    out = meta.join(table, how="left").reset_index()
    for event, col in EVENT_TO_COUNT.items():
        values = out[event] if event in out.columns else pd.Series(np.nan, index=out.index)
        if col in ("hovered", "clicked"):
            values = values.fillna(0)
        out[col] = values.astype("Int64")
    return out[list(COUNT_COLUMNS)]


def _is_validated_events(frame: pd.DataFrame) -> bool:
    return (
        list(frame.columns) == list(EVENT_COLUMNS)
        and str(frame["source_rank"].dtype) == "int64"
        and isinstance(frame["timestamp"].dtype, pd.DatetimeTZDtype)
    )


@dataclass(frozen=True)
class StudyLog:
    level: str  # "events" or "counts"
    counts: pd.DataFrame
    events: pd.DataFrame | None = None
    label: str = ""


def _read_table(data: bytes | Path | str, name: str) -> pd.DataFrame:
    suffix = Path(name).suffix.lower()
    source = io.BytesIO(data) if isinstance(data, bytes) else data
    try:
        if suffix == ".csv":
            # Strings throughout: the validator does the typing and can then name the bad cell.
            return pd.read_csv(source, dtype=str, keep_default_na=False)
        if suffix in (".parquet", ".pq"):
            return pd.read_parquet(source)
    except (ValueError, OSError, pd.errors.ParserError) as exc:
        raise StudyLogError(f"cannot read {Path(name).name}: {exc}") from None
    raise StudyLogError(f"unsupported file type {suffix or '(none)'}; use .csv or .parquet")


def parse_log(frame: pd.DataFrame, label: str = "") -> StudyLog:
    """Decide the level from the columns and validate accordingly."""
    if "event" in frame.columns:
        events = validate_events(frame)
        return StudyLog("events", counts_from_events(events), events, label)
    if "hovered" in frame.columns or "clicked" in frame.columns:
        return StudyLog("counts", validate_counts(frame), None, label)
    raise StudyLogError("not a study log: expected an 'event' column (event level) or 'hovered'/'clicked' columns (count level)")


def load_log(path: Path | str, label: str = "") -> StudyLog:
    path = Path(path)
    if not path.is_file():
        raise StudyLogError(f"no such file: {path}")
    return parse_log(_read_table(path, path.name), label or path.name)


def load_log_bytes(data: bytes, name: str, label: str = "") -> StudyLog:
    return parse_log(_read_table(data, name), label or name)


def write_log(frame: pd.DataFrame, path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".csv":
        frame.to_csv(path, index=False)
    elif path.suffix.lower() in (".parquet", ".pq"):
        frame.to_parquet(path, index=False)
    else:
        raise StudyLogError(f"unsupported file type {path.suffix or '(none)'}; use .csv or .parquet")
    return path


# ---------------------------------------------------------------------------------------------
# Descriptive statistics
# ---------------------------------------------------------------------------------------------

STAT_ROWS = ("Mean", "Median", "SD", "Max", "Min", "n")


def describe(values: Iterable[float]) -> dict[str, float]:
    """Mean, median, sample SD (n-1, as in the paper's tables), max, min, n; NaN when empty."""
    x = np.asarray([v for v in values if v is not None and not pd.isna(v)], dtype=float)
    if x.size == 0:
        return {"Mean": math.nan, "Median": math.nan, "SD": math.nan, "Max": math.nan, "Min": math.nan, "n": 0}
    return {
        "Mean": float(x.mean()),
        "Median": float(np.median(x)),
        "SD": float(x.std(ddof=1)) if x.size > 1 else math.nan,
        "Max": float(x.max()),
        "Min": float(x.min()),
        "n": int(x.size),
    }


def engine_order(engines: Iterable[str]) -> list[str]:
    present = list(dict.fromkeys(engines))
    known = [e for e in (*ANSWER_ENGINES, BASELINE) if e in present]
    return known + sorted(e for e in present if e not in known)


def descriptive_table(counts: pd.DataFrame, measures: Sequence[str] = ("hovered", "clicked"), by: str = "engine") -> pd.DataFrame:
    """Paper layout (Table 3): statistics as rows, one column per measure x group."""
    groups = engine_order(counts[by]) if by == "engine" else sorted(counts[by].unique())
    cols = {}
    for measure in measures:
        for group in groups:
            cols[(measure, group)] = describe(counts.loc[counts[by] == group, measure])
    table = pd.DataFrame(cols, index=list(STAT_ROWS))
    table.columns = pd.MultiIndex.from_tuples(table.columns, names=["measure", by])
    return table


def sources_table(counts: pd.DataFrame) -> pd.DataFrame:
    """Table 2 layout: displayed and cited per answer engine and all engines, with the cited
    share as the ratio of mean cited to mean displayed (the per-query share is undefined when
    nothing is displayed, so the ratio of means is the stable choice)."""
    ae = counts[counts["engine"] != BASELINE]
    groups = ["All", *engine_order(ae["engine"])]
    cols = {}
    for measure in ("displayed", "cited"):
        for group in groups:
            part = ae if group == "All" else ae[ae["engine"] == group]
            cols[(measure, group)] = describe(part[measure])
    table = pd.DataFrame(cols, index=list(STAT_ROWS))
    share = {}
    for group in groups:
        disp, cited = table[("displayed", group)]["Mean"], table[("cited", group)]["Mean"]
        share[group] = cited / disp if disp and not math.isnan(disp) else math.nan
    table.loc["Cited share"] = [share[g] if m == "cited" else math.nan for (m, g) in table.columns]
    table.columns = pd.MultiIndex.from_tuples(table.columns, names=["measure", "engine"])
    return table


# ---------------------------------------------------------------------------------------------
# Two-sample tests
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TTest:
    t: float
    df: float
    p: float
    mean_diff: float


def t_from_stats(m1: float, s1: float, n1: int, m2: float, s2: float, n2: int, equal_var: bool = True) -> TTest:
    """Two-sided two-sample t test from summary statistics (Student pooled, or Welch)."""
    if n1 < 2 or n2 < 2:
        return TTest(math.nan, math.nan, math.nan, m1 - m2)
    v1, v2 = s1 * s1 / n1, s2 * s2 / n2
    if equal_var:
        df = n1 + n2 - 2
        pooled = ((n1 - 1) * s1 * s1 + (n2 - 1) * s2 * s2) / df
        se = math.sqrt(pooled * (1 / n1 + 1 / n2))
    else:
        se = math.sqrt(v1 + v2)
        df = (v1 + v2) ** 2 / (v1 * v1 / (n1 - 1) + v2 * v2 / (n2 - 1)) if se > 0 else math.nan
    if se == 0:
        return TTest(math.nan, df, math.nan, m1 - m2)
    t = (m1 - m2) / se
    return TTest(t, df, float(2 * stats.t.sf(abs(t), df)), m1 - m2)


def student_t(x: Sequence[float], y: Sequence[float]) -> TTest:
    a, b = np.asarray(x, float), np.asarray(y, float)
    return t_from_stats(a.mean(), a.std(ddof=1), a.size, b.mean(), b.std(ddof=1), b.size, equal_var=True)


def welch_t(x: Sequence[float], y: Sequence[float]) -> TTest:
    a, b = np.asarray(x, float), np.asarray(y, float)
    return t_from_stats(a.mean(), a.std(ddof=1), a.size, b.mean(), b.std(ddof=1), b.size, equal_var=False)


@dataclass(frozen=True)
class MannWhitney:
    u: float  # U for the first sample
    p: float
    method: str


def mann_whitney(x: Sequence[float], y: Sequence[float]) -> MannWhitney:
    """Two-sided Mann-Whitney U. Counts are full of ties, so scipy's exact method is only used
    when there are none; otherwise the normal approximation with tie and continuity correction."""
    a, b = np.asarray(x, float), np.asarray(y, float)
    if a.size == 0 or b.size == 0:
        return MannWhitney(math.nan, math.nan, "none")
    ties = np.unique(np.concatenate([a, b])).size < a.size + b.size
    method = "asymptotic" if ties or a.size + b.size > 50 else "exact"
    res = stats.mannwhitneyu(a, b, alternative="two-sided", method=method, use_continuity=True)
    return MannWhitney(float(res.statistic), float(res.pvalue), method)


@dataclass(frozen=True)
class EffectSize:
    d: float
    ci_low: float
    ci_high: float
    confidence: float


def cohens_d_from_stats(m1: float, s1: float, n1: int, m2: float, s2: float, n2: int, confidence: float = 0.95) -> EffectSize:
    """Cohen's d with the pooled SD, and the usual large-sample normal CI
    (SE = sqrt((n1+n2)/(n1 n2) + d^2 / (2 (n1+n2))), Hedges & Olkin 1985)."""
    if n1 < 2 or n2 < 2:
        return EffectSize(math.nan, math.nan, math.nan, confidence)
    pooled = math.sqrt(((n1 - 1) * s1 * s1 + (n2 - 1) * s2 * s2) / (n1 + n2 - 2))
    if pooled == 0:
        return EffectSize(math.nan, math.nan, math.nan, confidence)
    d = (m1 - m2) / pooled
    se = math.sqrt((n1 + n2) / (n1 * n2) + d * d / (2 * (n1 + n2)))
    z = stats.norm.ppf(0.5 + confidence / 2)
    return EffectSize(d, d - z * se, d + z * se, confidence)


def cohens_d(x: Sequence[float], y: Sequence[float], confidence: float = 0.95) -> EffectSize:
    a, b = np.asarray(x, float), np.asarray(y, float)
    return cohens_d_from_stats(a.mean(), a.std(ddof=1), a.size, b.mean(), b.std(ddof=1), b.size, confidence)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p values (NaNs are left out of the family and stay NaN)."""
    p = np.asarray(pvalues, float)
    out = np.full(p.shape, np.nan)
    idx = np.where(~np.isnan(p))[0]
    m = idx.size
    order = idx[np.argsort(p[idx], kind="stable")]
    running = 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (m - k) * p[i]))
        out[i] = running
    return out.tolist()


COMPARISONS = {
    "google_vs_engines": "Google vs each answer engine and all answer engines (Table 4)",
    "aligned_vs_disaligned": "Aligned vs disaligned questions, answer engines combined (Table 5)",
}


def comparison_groups(counts: pd.DataFrame, comparison: str) -> list[tuple[str, pd.DataFrame, pd.DataFrame]]:
    """(label, first group, second group) pairs making up one test family."""
    if comparison == "google_vs_engines":
        base = counts[counts["engine"] == BASELINE]
        ae = counts[counts["engine"] != BASELINE]
        pairs = [(f"{BASELINE} vs {ALL_ENGINES_LABEL}", base, ae)]
        pairs += [(f"{BASELINE} vs {e}", base, ae[ae["engine"] == e]) for e in engine_order(ae["engine"])]
        return pairs
    if comparison == "aligned_vs_disaligned":
        ae = counts[counts["engine"] != BASELINE]
        return [("aligned vs disaligned", ae[ae["alignment"] == "aligned"], ae[ae["alignment"] == "disaligned"])]
    raise ValueError(f"unknown comparison {comparison!r}; choose one of {', '.join(COMPARISONS)}")


def test_table(counts: pd.DataFrame, comparison: str = "google_vs_engines", measures: Sequence[str] = ("hovered", "clicked"), alpha: float = 0.01, confidence: float = 0.95) -> pd.DataFrame:
    """Student, Welch and Mann-Whitney tests plus Cohen's d for every pair x measure; Holm
    adjustment runs over the whole family (all rows) separately for each test."""
    rows = []
    for measure in measures:
        for label, g1, g2 in comparison_groups(counts, comparison):
            x = g1[measure].dropna().astype(float).to_numpy()
            y = g2[measure].dropna().astype(float).to_numpy()
            st = student_t(x, y) if x.size > 1 and y.size > 1 else TTest(math.nan, math.nan, math.nan, math.nan)
            we = welch_t(x, y) if x.size > 1 and y.size > 1 else TTest(math.nan, math.nan, math.nan, math.nan)
            mw = mann_whitney(x, y)
            es = cohens_d(x, y, confidence) if x.size > 1 and y.size > 1 else EffectSize(math.nan, math.nan, math.nan, confidence)
            rows.append({
                "comparison": label, "measure": measure, "n1": int(x.size), "n2": int(y.size),
                "mean1": float(x.mean()) if x.size else math.nan, "mean2": float(y.mean()) if y.size else math.nan,
                "student_t": st.t, "student_df": st.df, "student_p": st.p,
                "welch_t": we.t, "welch_df": we.df, "welch_p": we.p,
                "mwu_u": mw.u, "mwu_p": mw.p, "mwu_method": mw.method,
                "cohens_d": es.d, "d_ci_low": es.ci_low, "d_ci_high": es.ci_high,
            })
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    for test in ("student", "welch", "mwu"):
        table[f"{test}_p_holm"] = holm(table[f"{test}_p"].tolist())
    table["significant_holm"] = table["student_p_holm"] < alpha
    table.attrs["alpha"] = alpha
    return table


# ---------------------------------------------------------------------------------------------
# Published figures
# ---------------------------------------------------------------------------------------------

REFERENCE_FILES = (
    "study_hover_click.csv",
    "study_sources_displayed_cited.csv",
    "study_alignment.csv",
    "study_ttests_published.csv",
    "study_alignment_ttests_published.csv",
    "study_participants.csv",
    "study_text_claims.csv",
)


def load_reference(name: str, reference_dir: Path | None = None) -> pd.DataFrame:
    folder = reference_dir or paths.reference_dir()
    path = folder / name
    if not path.is_file():
        raise FileNotFoundError(f"published figures missing: {path}")
    return pd.read_csv(path)


@dataclass(frozen=True)
class Published:
    hover_click: pd.DataFrame
    sources: pd.DataFrame
    alignment: pd.DataFrame
    ttests: pd.DataFrame
    alignment_ttests: pd.DataFrame
    participants: pd.DataFrame
    text_claims: pd.DataFrame

    def stat(self, table: str, group: str, measure: str, name: str = "mean") -> float:
        frame = {"hover_click": self.hover_click, "sources": self.sources, "alignment": self.alignment}[table]
        key = "condition" if table == "alignment" else "engine"
        row = frame[(frame[key] == group) & (frame["measure"] == measure)]
        return float(row.iloc[0][name])


def load_published(reference_dir: Path | None = None) -> Published:
    r = lambda n: load_reference(n, reference_dir)  # noqa: E731
    return Published(
        r("study_hover_click.csv"), r("study_sources_displayed_cited.csv"), r("study_alignment.csv"),
        r("study_ttests_published.csv"), r("study_alignment_ttests_published.csv"),
        r("study_participants.csv"), r("study_text_claims.csv"),
    )


# ---------------------------------------------------------------------------------------------
# Reproduction from summary statistics
# ---------------------------------------------------------------------------------------------

HALF_UNIT = 0.005  # the tables print two decimals
PER_ENGINE_PARTICIPANTS = 7
MAIN_PARTICIPANTS = 21
# A participant handled "3-4" prepared questions per part; up to 15 queries per participant and
# engine is a generous ceiling, so the grids below cannot miss a plausible design.
MAX_QUERIES_PER_PARTICIPANT = 15


def pooled_stats(groups: Sequence[tuple[float, float, int]]) -> tuple[float, float, int]:
    """Mean and SD of the union of groups given each group's (mean, SD, n)."""
    n = sum(g[2] for g in groups)
    mean = sum(g[0] * g[2] for g in groups) / n
    ss = sum((g[2] - 1) * g[1] ** 2 + g[2] * (g[0] - mean) ** 2 for g in groups)
    return mean, math.sqrt(ss / (n - 1)), n


def _p_rounding(p: float) -> float:
    """Relative half-unit of a p value printed with three significant figures."""
    mantissa = p / 10 ** math.floor(math.log10(p))
    return 0.005 / mantissa


def _log_p_two_sided(t: float, df: float) -> float:
    return float(stats.t.logsf(abs(t), df) + math.log(2))


def _dlogp_dt(t: float, df: float) -> float:
    h = 1e-4
    return (_log_p_two_sided(t + h, df) - _log_p_two_sided(t - h, df)) / (2 * h)


def _t_tolerance(values: Sequence[float], n1: int, n2: int, func) -> float:
    """First-order bound on how much t moves when each printed statistic moves by half a unit."""
    base = func(values, n1, n2)
    total = 0.0
    for i in range(len(values)):
        up = list(values)
        up[i] += 1e-6
        total += abs((func(up, n1, n2) - base) / 1e-6) * HALF_UNIT
    return total


@dataclass
class Fit:
    """Residuals of one published test at one candidate (n1, n2), in units of rounding slack."""

    t: float
    t_tol: float
    z_t: float | None
    log_p: float  # log p implied by the printed t at df = n1 + n2 - 2
    p_tol: float
    z_p: float


def _pair_stats(pub: Published, table: str, g1: str, g2: str, measure: str) -> tuple[float, float, float, float]:
    return (pub.stat(table, g1, measure, "mean"), pub.stat(table, g1, measure, "sd"),
            pub.stat(table, g2, measure, "mean"), pub.stat(table, g2, measure, "sd"))


def _t_of(values: Sequence[float], n1: int, n2: int) -> float:
    m1, s1, m2, s2 = values
    return t_from_stats(m1, s1, n1, m2, s2, n2).t


def _t_all_of(values: Sequence[float], n_g: int, ns: Sequence[int]) -> float:
    # values: Google mean, Google SD, then (mean, SD) per engine in ANSWER_ENGINES order.
    m, s, n = pooled_stats([(values[2 + 2 * i], values[3 + 2 * i], ns[i]) for i in range(len(ns))])
    return t_from_stats(values[0], values[1], n_g, m, s, n).t


def fit_t_test(t_pub: float, p_pub: float, t_rec: float, t_tol: float, n1: int, n2: int) -> Fit:
    df = n1 + n2 - 2
    log_p = _log_p_two_sided(t_pub, df)
    # Slack on log p: printed t is rounded (+-0.005) and the printed p to three figures.
    p_tol = abs(_dlogp_dt(t_pub, df)) * HALF_UNIT + _p_rounding(p_pub)
    z_t = (t_rec - t_pub) / (t_tol + HALF_UNIT)
    z_p = (log_p - math.log(p_pub)) / p_tol
    return Fit(t_rec, t_tol + HALF_UNIT, z_t, log_p, p_tol, z_p)


def _published_t(pub: Published, comparison: str, measure: str) -> tuple[float, float]:
    row = pub.ttests[(pub.ttests["comparison"] == comparison) & (pub.ttests["measure"] == measure)].iloc[0]
    return float(row["t_statistic"]), float(row["p_value"])


def _student_grid(vals: Sequence[float], n1: np.ndarray, n2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Student t over arrays of sample sizes, and its first-order slack when each of the four
    printed statistics moves by half a unit (analytic partial derivatives:
    dt/dm = +-1/se, dt/ds_i = -t (n_i - 1) s_i / (df sp^2))."""
    m1, s1, m2, s2 = vals
    df = n1 + n2 - 2
    sp2 = ((n1 - 1) * s1 * s1 + (n2 - 1) * s2 * s2) / df
    se = np.sqrt(sp2 * (1 / n1 + 1 / n2))
    t = (m1 - m2) / se
    slack = HALF_UNIT * (2 / se + np.abs(t) * ((n1 - 1) * s1 + (n2 - 1) * s2) / (df * sp2))
    return t, slack


def _log_p_grid(t: np.ndarray | float, df: np.ndarray) -> np.ndarray:
    return stats.t.logsf(np.abs(t), df) + math.log(2)


def _dlogp_dt_grid(t: np.ndarray | float, df: np.ndarray) -> np.ndarray:
    # d/dt log(2 sf(t)) = -pdf(t) / sf(t), computed in logs so tiny p values do not underflow.
    return -np.exp(stats.t.logpdf(np.abs(t), df) - stats.t.logsf(np.abs(t), df))


def _fit_grid(t_pub: float, p_pub: float, vals: Sequence[float], n1: np.ndarray, n2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """z scores (residual / rounding slack) of the printed t and the printed p over a grid."""
    t_rec, slack = _student_grid(vals, n1, n2)
    z_t = (np.abs(t_rec) - t_pub) / (slack + HALF_UNIT)
    df = n1 + n2 - 2
    p_tol = np.abs(_dlogp_dt_grid(t_pub, df)) * HALF_UNIT + _p_rounding(p_pub)
    z_p = (_log_p_grid(t_pub, df) - math.log(p_pub)) / p_tol
    return z_t, z_p


def infer_table4_n(pub: Published) -> dict:
    """Search integer sample sizes (Google n, n per answer engine) that make every Table 4 t
    statistic and p value reproducible within rounding.

    Stage 1, per engine: over the grid, count how many of its four printed numbers (two t, two
    p) fit within rounding; keep candidates missing at most one. Stage 2: combine the engines under
    one Google n (everyone used Google, so the Google group is the same in every comparison) and
    add the 'all answer engines' tests, whose second group is the union of the three engine groups.
    The candidate satisfying the most constraints wins (then the smallest squared misfit); a
    printed value that misses at the winner is flagged by `reproduce`."""
    measures = ("hovered", "clicked")
    n_g_grid = np.arange(MAIN_PARTICIPANTS, MAIN_PARTICIPANTS * MAX_QUERIES_PER_PARTICIPANT + 1)
    n_e_grid = np.arange(PER_ENGINE_PARTICIPANTS, PER_ENGINE_PARTICIPANTS * MAX_QUERIES_PER_PARTICIPANT + 1)
    G, E = np.meshgrid(n_g_grid, n_e_grid, indexing="ij")
    per_engine: dict[str, dict[int, list[tuple[int, int, float]]]] = {}
    t_only: dict[str, np.ndarray] = {}
    for engine in ANSWER_ENGINES:
        ok = np.zeros(G.shape, dtype=int)
        ssq = np.zeros(G.shape)
        t_fit = np.ones(G.shape, dtype=bool)
        for measure in measures:
            t_pub, p_pub = _published_t(pub, f"{BASELINE} vs {engine}", measure)
            z_t, z_p = _fit_grid(t_pub, p_pub, _pair_stats(pub, "hover_click", BASELINE, engine, measure), G, E)
            ok += (np.abs(z_t) <= 1).astype(int) + (np.abs(z_p) <= 1).astype(int)
            ssq += np.minimum(z_t ** 2, 1e6) + np.minimum(z_p ** 2, 1e6)
            t_fit &= np.abs(z_t) <= 1
        t_only[engine] = t_fit
        keep: dict[int, list[tuple[int, int, float]]] = {}
        for i, j in zip(*np.nonzero(ok >= 3)):
            keep.setdefault(int(G[i, j]), []).append((int(E[i, j]), int(ok[i, j]), float(ssq[i, j])))
        per_engine[engine] = keep

    all_specs = []
    for measure in measures:
        t_pub, p_pub = _published_t(pub, f"{BASELINE} vs {ALL_ENGINES_LABEL}", measure)
        vals = [pub.stat("hover_click", BASELINE, measure, "mean"), pub.stat("hover_click", BASELINE, measure, "sd")]
        for engine in ANSWER_ENGINES:
            vals += [pub.stat("hover_click", engine, measure, "mean"), pub.stat("hover_click", engine, measure, "sd")]
        all_specs.append((t_pub, p_pub, vals))

    candidates = []
    common_g = set.intersection(*(set(per_engine[e]) for e in ANSWER_ENGINES))
    for n_g in sorted(common_g):
        for combo in product(*(per_engine[e][n_g] for e in ANSWER_ENGINES)):
            ns = [c[0] for c in combo]
            ok = sum(c[1] for c in combo)
            ssq = sum(c[2] for c in combo)
            for t_pub, p_pub, vals in all_specs:
                t_rec = _t_all_of(vals, n_g, ns)
                fit = fit_t_test(t_pub, p_pub, t_rec, _t_tolerance(vals, n_g, ns, _t_all_of), n_g, sum(ns))
                ok += int(abs(fit.z_t) <= 1) + int(abs(fit.z_p) <= 1)
                ssq += min(fit.z_t ** 2, 1e6) + min(fit.z_p ** 2, 1e6)
            candidates.append((ok, -ssq, n_g, tuple(ns)))
    if not candidates:
        return {"found": False, "reason": "no integer sample sizes on the grid reproduce the published t statistics"}
    candidates.sort(reverse=True)
    top_ok = candidates[0][0]
    best = candidates[0]
    n = {BASELINE: best[2], **{e: best[3][i] for i, e in enumerate(ANSWER_ENGINES)}}
    n[ALL_ENGINES_LABEL] = sum(best[3])

    def spans(rows: list) -> dict:
        out = {BASELINE: _span(c[2] for c in rows)}
        for i, e in enumerate(ANSWER_ENGINES):
            out[e] = _span(c[3][i] for c in rows)
        return out

    tied = [c for c in candidates if c[0] == top_ok]
    near = [c for c in candidates if c[0] >= top_ok - 1]
    # What the t statistics alone allow (p values ignored), holding Google at its inferred n.
    g_idx = int(np.nonzero(n_g_grid == best[2])[0][0])
    t_alone = {e: _span(int(x) for x in n_e_grid[t_only[e][g_idx]]) if t_only[e][g_idx].any() else None for e in ANSWER_ENGINES}
    # And with Google free too: Google sizes for which every engine has some t-fitting size.
    g_any = np.logical_and.reduce([t_only[e].any(axis=1) for e in ANSWER_ENGINES])
    t_alone_google = _span(int(x) for x in n_g_grid[g_any]) if g_any.any() else None
    return {
        "found": True,
        "n": n,
        "t_alone_google_range": t_alone_google,
        "constraints_total": 4 * len(ANSWER_ENGINES) + 4,
        "constraints_satisfied": top_ok,
        "tuples_tied": len(tied),
        "ranges": spans(tied),
        "ranges_one_more_miss": spans(near),
        "tuples_one_more_miss": len(near),
        "t_alone_ranges_at_inferred_google_n": t_alone,
        "grid": {"google": [int(n_g_grid[0]), int(n_g_grid[-1])], "per_engine": [int(n_e_grid[0]), int(n_e_grid[-1])]},
    }


def _span(values: Iterable[int]) -> list[int]:
    vals = list(values)
    return [min(vals), max(vals)]


def infer_table5_n(pub: Published) -> dict:
    """Table 5 prints only p values. Two p values (hovered, clicked) share one pair of sample
    sizes, so search (n_aligned, n_disaligned) for pairs reproducing both within rounding
    (means/SDs +-0.005 propagated to log p, plus three-figure rounding of p)."""
    grid = np.arange(PER_ENGINE_PARTICIPANTS, 3 * PER_ENGINE_PARTICIPANTS * MAX_QUERIES_PER_PARTICIPANT // 2 + 1)
    A, D = np.meshgrid(grid, grid, indexing="ij")
    zs = []
    for measure in ("hovered", "clicked"):
        p_pub = float(pub.alignment_ttests[pub.alignment_ttests["measure"] == measure].iloc[0]["p_value"])
        t, slack = _student_grid(_pair_stats(pub, "alignment", "aligned", "disaligned", measure), A, D)
        df = A + D - 2
        tol = np.abs(_dlogp_dt_grid(t, df)) * slack + _p_rounding(p_pub)
        zs.append((_log_p_grid(t, df) - math.log(p_pub)) / tol)
    worst = np.maximum(np.abs(zs[0]), np.abs(zs[1]))
    ssq = zs[0] ** 2 + zs[1] ** 2
    i, j = np.unravel_index(np.lexsort((ssq.ravel(), worst.ravel()))[0], worst.shape)
    fitting = [(int(A[a, d]), int(D[a, d]), float(ssq[a, d])) for a, d in zip(*np.nonzero(worst <= 1))]
    fitting.sort(key=lambda f: f[2])
    return {
        "n": {"aligned": int(A[i, j]), "disaligned": int(D[i, j])},
        "fits_within_rounding": bool(fitting),
        "pairs_fitting": [[a, d] for a, d, _ in fitting],
        "ranges": {"aligned": _span(f[0] for f in fitting) if fitting else None,
                   "disaligned": _span(f[1] for f in fitting) if fitting else None,
                   "total": _span(f[0] + f[1] for f in fitting) if fitting else None},
        "grid": [int(grid[0]), int(grid[-1])],
    }


def _fmt(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}"


def _sci(x: float) -> str:
    return f"{x:.3g}" if x >= 1e-3 else f"{x:.2e}"


def reproduce(alpha: float = 0.01, pub: Published | None = None) -> dict:
    """Recompute every published test from the printed means/SDs and the inferred sample sizes,
    and list every printed value that does not fit the rest, with the arithmetic."""
    pub = pub or load_published()
    inf4 = infer_table4_n(pub)
    inf5 = infer_table5_n(pub)
    tests: list[dict] = []
    flags: list[dict] = []
    notes: list[str] = []
    n = inf4.get("n", {})

    for _, row in pub.ttests.iterrows():
        comp, measure = row["comparison"], row["measure"]
        t_pub, p_pub = float(row["t_statistic"]), float(row["p_value"])
        engine = comp.split(" vs ", 1)[1]
        m1, s1 = pub.stat("hover_click", BASELINE, measure, "mean"), pub.stat("hover_click", BASELINE, measure, "sd")
        if engine == ALL_ENGINES_LABEL:
            m2, s2, n2 = pooled_stats([(pub.stat("hover_click", e, measure, "mean"), pub.stat("hover_click", e, measure, "sd"), n[e]) for e in ANSWER_ENGINES])
        else:
            m2, s2, n2 = pub.stat("hover_click", engine, measure, "mean"), pub.stat("hover_click", engine, measure, "sd"), n[engine]
        n1 = n[BASELINE]
        tests.append(_test_row("Table 4", comp, measure, t_pub, p_pub, (m1, s1, n1, m2, s2, n2)))

    for _, row in pub.alignment_ttests.iterrows():
        measure, p_pub = row["measure"], float(row["p_value"])
        m1, s1, m2, s2 = _pair_stats(pub, "alignment", "aligned", "disaligned", measure)
        n1, n2 = inf5["n"]["aligned"], inf5["n"]["disaligned"]
        tests.append(_test_row("Table 5", row["comparison"], measure, None, p_pub, (m1, s1, n1, m2, s2, n2)))

    adjusted = holm([t["recomputed_p"] for t in tests])
    for t, adj in zip(tests, adjusted):
        t["recomputed_p_holm"] = adj
        t["significant_holm"] = bool(adj < alpha)

    for t in tests:
        flags.extend(_flags_for_test(t))
    flags.extend(consistency_checks(pub, n, inf5["n"], inf5["ranges"]))
    notes.append(
        "Welch's test does not reproduce Table 4 (see welch_t/welch_p), while Student's equal-variance "
        "test does within rounding: the paper's t tests assume equal variances."
    )
    return {
        "label": "recomputed from the paper's published summary statistics (no raw logs)",
        "alpha": alpha,
        "method": "Student two-sample t test from summary statistics (equal variances, two-sided); Holm over all 10 tests",
        "inferred_n": {**{k: v for k, v in n.items()}, "aligned": inf5["n"]["aligned"], "disaligned": inf5["n"]["disaligned"]},
        "n_inference": {"table4": inf4, "table5": inf5},
        "tests": tests,
        "flags": flags,
        "notes": notes,
    }


def _test_row(table: str, comp: str, measure: str, t_pub: float | None, p_pub: float, s: tuple) -> dict:
    m1, s1, n1, m2, s2, n2 = s
    st = t_from_stats(m1, s1, n1, m2, s2, n2, equal_var=True)
    we = t_from_stats(m1, s1, n1, m2, s2, n2, equal_var=False)
    es = cohens_d_from_stats(m1, s1, n1, m2, s2, n2)
    row = {
        "table": table, "comparison": comp, "measure": measure,
        "n1": n1, "n2": n2, "mean1": m1, "sd1": s1, "mean2": m2, "sd2": s2,
        "printed_t": t_pub, "recomputed_t": abs(st.t), "t_diff": (abs(st.t) - t_pub) if t_pub is not None else None,
        "printed_p": p_pub, "recomputed_p": st.p, "p_ratio": st.p / p_pub,
        "p_from_printed_t": float(2 * stats.t.sf(t_pub, st.df)) if t_pub is not None else None,
        "df": st.df, "welch_t": abs(we.t), "welch_p": we.p, "cohens_d": es.d, "d_ci": [es.ci_low, es.ci_high],
    }
    if table == "Table 5":
        # The sign convention: aligned minus disaligned is negative; report magnitude like Table 4.
        row["cohens_d"] = es.d
    return row


def _flags_for_test(t: dict) -> list[dict]:
    out = []
    if t["printed_t"] is None:
        ratio = t["p_ratio"]
        if not (1 / 1.5 <= ratio <= 1.5):
            out.append({
                "severity": "inconsistent", "table": t["table"], "item": f"{t['comparison']} / {t['measure']} p value",
                "printed": t["printed_p"], "expected": t["recomputed_p"],
                "reason": f"with n = {t['n1']} and {t['n2']}, t = {_fmt(t['recomputed_t'], 3)} on {t['df']} df gives p = {_sci(t['recomputed_p'])}, not {_sci(t['printed_p'])}",
            })
        return out
    t_pub, p_pub, df = t["printed_t"], t["printed_p"], t["df"]
    p_impl = t["p_from_printed_t"]
    tol = abs(_dlogp_dt(t_pub, df)) * HALF_UNIT + _p_rounding(p_pub)
    gap = abs(math.log(p_impl / p_pub))
    if gap > tol:
        # Which df would the printed p need? Solve on a continuous df for the arithmetic line.
        df_needed = _df_for_p(t_pub, p_pub)
        severity = "inconsistent" if gap > math.log(2) else "minor"
        reason = (
            f"two-sided p for t = {t_pub:.2f} on df = {df} (n = {t['n1']} + {t['n2']} - 2) is {_sci(p_impl)}; "
            f"printed {_sci(p_pub)} is {p_impl / p_pub:.3g}x off, beyond the rounding slack of t (+-0.005) and p (3 figures)"
        )
        if df_needed is not None:
            reason += f"; it would need df = {df_needed:.1f}"
            if severity == "inconsistent":
                reason += ", which the other tests on the same groups rule out"
        if severity == "inconsistent":
            mant, expo = f"{p_impl:.2e}".split("e")
            if abs(int(expo) - int(f"{p_pub:.2e}".split("e")[1])) >= 3:
                reason += f" (the recomputed p has exponent {int(expo)}; the printed exponent looks like a typo)"
        out.append({"severity": severity, "table": t["table"], "item": f"{t['comparison']} / {t['measure']} p value",
                    "printed": p_pub, "expected": p_impl, "reason": reason})
    if abs(t["t_diff"]) > 0.1:
        out.append({"severity": "inconsistent", "table": t["table"], "item": f"{t['comparison']} / {t['measure']} t statistic",
                    "printed": t_pub, "expected": t["recomputed_t"],
                    "reason": f"means {t['mean1']:.2f}/{t['mean2']:.2f}, SDs {t['sd1']:.2f}/{t['sd2']:.2f}, n {t['n1']}/{t['n2']} give t = {t['recomputed_t']:.2f}"})
    return out


def _df_for_p(t: float, p: float) -> float | None:
    from scipy.optimize import brentq

    f = lambda d: _log_p_two_sided(t, d) - math.log(p)  # noqa: E731
    try:
        return float(brentq(f, 1.0, 1e5))
    except ValueError:
        return None


def grim_possible(mean: float, n: int, decimals: int = 2) -> bool:
    """GRIM: can a mean printed to `decimals` be the mean of n integers?"""
    half = 0.5 * 10 ** (-decimals)
    lo, hi = math.ceil((mean - half) * n - 1e-9), math.floor((mean + half) * n + 1e-9)
    return any(round(k / n, decimals) == round(mean, decimals) or abs(k / n - mean) <= half + 1e-12 for k in range(lo, hi + 1))


def consistency_checks(pub: Published, n: dict, n5: dict, n5_ranges: dict | None = None) -> list[dict]:
    """Checks of printed descriptive values against each other and against the paper's text."""
    out: list[dict] = []
    # 1. Text claims against tables.
    for _, c in pub.text_claims.iterrows():
        claimed = float(c["value"])
        if c["source_table"] == "computed":
            continue
        if c["group"] == "answer engines (pooled)":
            m, s, _ = pooled_stats([(pub.stat(c["source_table"], e, c["measure"], "mean"), pub.stat(c["source_table"], e, c["measure"], "sd"), n[e]) for e in ANSWER_ENGINES])
            actual = m if c["statistic"] == "mean" else s
            basis = f"pooled over the three engines with n = {', '.join(str(n[e]) for e in ANSWER_ENGINES)}"
        elif c["statistic"] == "cited_share_percent":
            disp = pub.stat("sources", c["group"], "displayed", "mean")
            cited = pub.stat("sources", c["group"], "cited", "mean")
            actual = 100 * cited / disp
            basis = f"{cited:.2f} / {disp:.2f}"
        else:
            actual = pub.stat(c["source_table"], c["group"], c["measure"], c["statistic"])
            basis = f"{c['source_table']} table"
        decimals = int(c["decimals"])
        if round(actual, decimals) == round(claimed, decimals) or abs(actual - claimed) <= 0.5 * 10 ** (-decimals) + 1e-9:
            continue
        if c["statistic"] == "cited_share_percent" and math.floor(actual) == claimed:
            out.append({"severity": "minor", "table": "Table 2", "item": f"cited share {c['group']}",
                        "printed": claimed, "expected": round(actual, 1),
                        "reason": f"{basis} = {actual:.1f}% rounds to {round(actual):.0f}%, printed {claimed:.0f}% (truncated, or a mean of per-answer shares)"})
            continue
        swapped = _find_swap(pub, c, claimed)
        reason = f"{c['where']} says {c['group']} {c['measure']} {c['statistic']} = {claimed:g}; {basis} gives {actual:.2f}"
        if swapped:
            reason += f" ({claimed:g} is the printed {swapped})"
        out.append({"severity": "inconsistent", "table": c["where"], "item": f"{c['group']} {c['measure']} {c['statistic']} in text",
                    "printed": claimed, "expected": round(actual, 4), "reason": reason})

    # 2. 'All' rows of Table 2 against the engine rows, at the Table 4 sample sizes.
    for measure in ("displayed", "cited"):
        groups = [(pub.stat("sources", e, measure, "mean"), pub.stat("sources", e, measure, "sd"), n[e]) for e in ANSWER_ENGINES]
        m, s, _ = pooled_stats(groups)
        pm, ps = pub.stat("sources", "All", measure, "mean"), pub.stat("sources", "All", measure, "sd")
        mean_tol = HALF_UNIT * 2
        if abs(m - pm) > mean_tol:
            out.append({"severity": "inconsistent", "table": "Table 2", "item": f"All {measure} mean", "printed": pm, "expected": round(m, 4),
                        "reason": f"n-weighted mean of the engine means with n = {', '.join(str(g[2]) for g in groups)} is {m:.3f}"})
        if abs(s - ps) > 0.03:
            out.append({"severity": "assumption", "table": "Table 2", "item": f"All {measure} SD", "printed": ps, "expected": round(s, 4),
                        "reason": f"pooling the engine rows (n = {', '.join(str(g[2]) for g in groups)}; total SS = sum((n-1)SD^2 + n(mean-grand mean)^2)) gives SD {s:.3f}, not {ps:.2f}; holds only if Table 2 counts the same answers as Table 4"})

    # 3. Range, SD and GRIM checks on every printed distribution.
    frames = [("Table 3", pub.hover_click, "engine", lambda g: n.get(g)), ("Table 2", pub.sources, "engine", lambda g: n.get(ALL_ENGINES_LABEL) if g == "All" else n.get(g)),
              ("Table 5", pub.alignment, "condition", lambda g: n5.get(g))]
    for table, frame, key, n_of in frames:
        for _, r in frame.iterrows():
            g, m, med, sd, mx, mn = r[key], r["mean"], r["median"], r["sd"], r["max"], r["min"]
            item = f"{g} {r['measure']}"
            if not (mn <= m <= mx and mn <= med <= mx):
                out.append({"severity": "inconsistent", "table": table, "item": item, "printed": m, "expected": None,
                            "reason": f"mean {m} or median {med} outside [min {mn}, max {mx}]"})
            size = n_of(g)
            if size:
                sd_max = math.sqrt(max(0.0, (m - mn) * (mx - m)) * size / (size - 1))
                if sd > sd_max + HALF_UNIT:
                    out.append({"severity": "inconsistent", "table": table, "item": f"{item} SD", "printed": sd, "expected": round(sd_max, 3),
                                "reason": f"values in [{mn:g}, {mx:g}] with mean {m} and n = {size} have SD at most sqrt((mean-min)(max-mean) n/(n-1)) = {sd_max:.3f}"})
                if med != int(med) and size % 2 == 1:
                    out.append({"severity": "assumption", "table": table, "item": f"{item} median", "printed": med, "expected": None,
                                "reason": f"a median of {med} from integer counts needs an even n; inferred n = {size} is odd"})
                sizes = list(range(n5_ranges[g][0], n5_ranges[g][1] + 1)) if table == "Table 5" and n5_ranges and n5_ranges.get(g) else [size]
                if not any(grim_possible(m, k) for k in sizes):
                    lo = math.floor(m * size)
                    if len(sizes) > 1:
                        out.append({"severity": "assumption", "table": table, "item": f"{item} mean (GRIM)", "printed": m, "expected": None,
                                    "reason": f"no n in {sizes[0]}..{sizes[-1]} (the range fitting the p values) lets integer counts average {m:.2f} (e.g. n = {size}: {lo}/{size} = {lo / size:.4f}, {lo + 1}/{size} = {(lo + 1) / size:.4f}); holds only if every row is one integer count"})
                        continue
                    out.append({"severity": "assumption", "table": table, "item": f"{item} mean (GRIM)", "printed": m, "expected": None,
                                "reason": f"no {size} integer counts average {m:.2f}: {lo}/{size} = {lo / size:.4f} and {lo + 1}/{size} = {(lo + 1) / size:.4f}; holds only if every row is one integer count and n = {size}"})
    return out


def _find_swap(pub: Published, claim: pd.Series, claimed: float) -> str | None:
    """Name the printed cell the text value actually matches, when one does (a mix-up)."""
    if claim["source_table"] not in ("alignment", "hover_click"):
        return None
    frame = pub.alignment if claim["source_table"] == "alignment" else pub.hover_click
    key = "condition" if claim["source_table"] == "alignment" else "engine"
    hits = frame[(frame[claim["statistic"]] - claimed).abs() < 1e-9]
    hits = hits[~((hits[key] == claim["group"]) & (hits["measure"] == claim["measure"]))]
    if hits.empty:
        return None
    return " and ".join(f"{h[key]} {h['measure']} {claim['statistic']}" for _, h in hits.iterrows())


# ---------------------------------------------------------------------------------------------
# Simulation
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    mean: float
    sd: float
    median: float
    lo: int
    hi: int
    n: int


def draw_matching(target: Target, rng: np.random.Generator, iterations: int = 40000) -> np.ndarray:
    """Integers in [lo, hi] whose mean, SD and median match the target as closely as integers
    allow: a rounded normal start with the extremes pinned, then seeded local search on the
    squared misfit in units of the printed precision. Sums, sums of squares and a histogram are
    updated in place so each step costs O(range), which keeps `simulate` well under a second."""
    n, lo, hi = target.n, int(target.lo), int(target.hi)
    if target.sd == 0 or lo == hi:
        return np.full(n, int(round(target.mean)), dtype=int)
    x = [int(v) for v in np.clip(np.rint(rng.normal(target.mean, target.sd, n)), lo, hi)]
    x[0], x[1] = lo, hi  # pinned so the published range is attained
    hist = [0] * (hi - lo + 1)
    for v in x:
        hist[v - lo] += 1
    total, squares = sum(x), sum(v * v for v in x)

    def median() -> float:
        # Middle order statistic(s) from the histogram.
        want = [(n - 1) // 2, n // 2]
        found, seen = [], 0
        for k, c in enumerate(hist):
            while len(found) < 2 and want[len(found)] < seen + c:
                found.append(k + lo)
            seen += c
            if len(found) == 2:
                break
        return (found[0] + found[1]) / 2

    def loss(tot: int, sq: int) -> float:
        mean = tot / n
        var = max(0.0, (sq - tot * tot / n) / (n - 1))
        return (((mean - target.mean) / 0.005) ** 2 + ((math.sqrt(var) - target.sd) / 0.005) ** 2
                + ((median() - target.median) / 0.25) ** 2)

    def move(i: int, step: int) -> None:
        nonlocal total, squares
        hist[x[i] - lo] -= 1
        squares += (x[i] + step) ** 2 - x[i] ** 2
        total += step
        x[i] += step
        hist[x[i] - lo] += 1

    cur = loss(total, squares)
    picks = rng.integers(2, n, size=(iterations, 2))
    coins = rng.random((iterations, 2))
    for it in range(iterations):
        if cur < 1:
            break
        i, j = int(picks[it, 0]), int(picks[it, 1])
        step = 1 if coins[it, 0] < 0.5 else -1
        # Single steps move the mean; paired opposite steps keep it and reshape the spread.
        paired = coins[it, 1] < 0.5 and i != j
        if not lo <= x[i] + step <= hi or (paired and not lo <= x[j] - step <= hi):
            continue
        move(i, step)
        if paired:
            move(j, -step)
        new = loss(total, squares)
        if new <= cur:
            cur = new
        else:
            move(i, -step)
            if paired:
                move(j, step)
    out = np.asarray(x, dtype=int)
    rng.shuffle(out)
    return out


def simulate_counts(seed: int = 0, pub: Published | None = None, n: dict | None = None, n5: dict | None = None) -> pd.DataFrame:
    """A count-level log simulated from the published summary statistics (Tables 2, 3, 5) at the
    inferred sample sizes. Marginals per engine match the tables; how measures co-vary within a
    query was never published and is not modelled (measures are paired at random)."""
    pub = pub or load_published()
    if n is None:
        n = infer_table4_n(pub)["n"]
    if n5 is None:
        n5 = infer_table5_n(pub)["n"]
    rng = np.random.default_rng(seed)
    part = pub.participants[pub.participants["phase"] == "main"]
    rows = []
    for engine in ANSWER_ENGINES:
        k = n[engine]
        people = part.loc[part["engine"] == engine, "participant"].tolist()
        who = [people[i % len(people)] for i in range(k)]  # spread queries evenly over the group
        cols = {}
        for table, measures in (("hover_click", ("hovered", "clicked")), ("sources", ("displayed", "cited"))):
            frame = pub.hover_click if table == "hover_click" else pub.sources
            for measure in measures:
                r = frame[(frame["engine"] == engine) & (frame["measure"] == measure)].iloc[0]
                cols[measure] = draw_matching(Target(r["mean"], r["sd"], r["median"], int(r["min"]), int(r["max"]), k), rng)
        # An engine cannot cite more than it displays: pair the two sorted columns so it holds
        # (YouChat's two rows are identical in Table 2, i.e. it cites everything it shows).
        disp_row = pub.sources[(pub.sources["engine"] == engine) & (pub.sources["measure"] == "displayed")].iloc[0]
        cited_row = pub.sources[(pub.sources["engine"] == engine) & (pub.sources["measure"] == "cited")].iloc[0]
        if all(disp_row[c] == cited_row[c] for c in ("mean", "median", "sd", "max", "min")):
            cols["cited"] = cols["displayed"].copy()
        else:
            order = np.argsort(cols["displayed"], kind="stable")
            cols["cited"] = np.sort(cols["cited"])[np.argsort(order, kind="stable")]
            cols["cited"] = np.minimum(cols["cited"], cols["displayed"])
        counters: dict[str, int] = {}
        for i in range(k):
            counters[who[i]] = counters.get(who[i], 0) + 1
            rows.append({"participant": who[i], "session": f"S{who[i][1:]}", "engine": engine,
                         "query_id": f"Q{counters[who[i]]}", "displayed": int(cols["displayed"][i]), "cited": int(cols["cited"][i]),
                         "hovered": int(cols["hovered"][i]), "clicked": int(cols["clicked"][i])})
    ae = pd.DataFrame(rows)
    # Alignment: the debate queries. Give the lower-interaction queries 'aligned' so the published
    # direction holds, with noise so the split is not a hard threshold.
    n_debate = n5["aligned"] + n5["disaligned"]
    score = ae["hovered"] + ae["clicked"] + rng.normal(0, 1.0, len(ae))
    debate = rng.choice(len(ae), size=min(n_debate, len(ae)), replace=False)
    ranked = sorted(debate, key=lambda i: score.iloc[i])
    ae["query_type"], ae["alignment"] = "expert", "none"
    for j, i in enumerate(ranked):
        ae.loc[i, "query_type"] = "debate"
        ae.loc[i, "alignment"] = "aligned" if j < n5["aligned"] else "disaligned"
    g_rows = []
    g_counts = {}
    for measure in ("hovered", "clicked"):
        r = pub.hover_click[(pub.hover_click["engine"] == BASELINE) & (pub.hover_click["measure"] == measure)].iloc[0]
        g_counts[measure] = draw_matching(Target(r["mean"], r["sd"], r["median"], int(r["min"]), int(r["max"]), n[BASELINE]), rng)
    # Every query was run in the answer engine and then in Google, so Google rows mirror them.
    for i, a in enumerate(ae.itertuples(index=False)):
        if i >= n[BASELINE]:
            break
        g_rows.append({"participant": a.participant, "session": a.session, "engine": BASELINE, "query_id": a.query_id,
                       "query_type": a.query_type, "alignment": a.alignment, "displayed": None, "cited": None,
                       "hovered": int(g_counts["hovered"][i]), "clicked": int(g_counts["clicked"][i])})
    out = pd.concat([ae, pd.DataFrame(g_rows)], ignore_index=True)[list(COUNT_COLUMNS)]
    for col in COUNT_MEASURES:
        out[col] = out[col].astype("Int64")
    out.attrs["label"] = SIMULATED_LABEL
    return out


def simulated_log(seed: int = 0) -> StudyLog:
    return StudyLog("counts", validate_counts(simulate_counts(seed)), None, SIMULATED_LABEL)
