"""Study logs: the schema, row-by-row validation, and reading and writing log files.

Two log levels are accepted:

* event level: one row per logged event: a source displayed or cited by the engine, a hover or
  click by the participant, or (answer-level, no source rank) the answer being shown and how long
  it stayed on screen; counts are derived from these;
* count level: one row per participant x query with the four counts already summed (and, when
  measured, the dwell time).

An answer shown to a participant who never touched a citation is data (zero hovers, zero clicks:
the trust signal the seed study measures), so the inspector's study mode records a "shown" row and
the answer's displayed and cited sources for every answer it shows, not only for interactions.

Every row is checked before anything is computed, and a bad cell is reported by row and column
(`StudyLogError`), so the CLI and the dashboard can show one clear line for bad input.
"""

from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

# ---------------------------------------------------------------------------------------------
# Schema
# ---------------------------------------------------------------------------------------------

BASELINE = "Google"
ANSWER_ENGINES = ("Perplexity", "Bing Copilot", "YouChat")
ALL_ENGINES_LABEL = "All answer engines"
ALIGNMENTS = ("aligned", "disaligned", "none")
EVENT_TYPES = ("displayed", "cited", "hover", "click")  # events about one source (source_rank required)
# Answer-level events (source_rank blank): "shown" = the answer appeared on the participant's
# screen; "dwell" = how long it stayed visible before they moved on (dwell_seconds).
ANSWER_EVENTS = ("shown", "dwell")
ALL_EVENTS = (*EVENT_TYPES, *ANSWER_EVENTS)
# Event name -> count column it feeds.
EVENT_TO_COUNT = {"displayed": "displayed", "cited": "cited", "hover": "hovered", "click": "clicked"}
COUNT_MEASURES = ("displayed", "cited", "hovered", "clicked")
KEY_COLUMNS = ("participant", "session", "engine", "query_id")
EVENT_COLUMNS = (*KEY_COLUMNS, "query_type", "alignment", "event", "source_rank", "timestamp", "dwell_seconds")
COUNT_COLUMNS = (*KEY_COLUMNS, "query_type", "alignment", *COUNT_MEASURES, "dwell_seconds")
OPTIONAL_COLUMNS = ("dwell_seconds",)  # older logs and hand-made ones may leave it out
MAX_DWELL_SECONDS = 24 * 3600.0
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


def _as_seconds(value: object, row: int, column: str) -> float:
    if _blank(value):
        raise StudyLogError("value is missing (a dwell row says how many seconds)", row, column)
    try:
        number = float(str(value).strip()) if not isinstance(value, (int, float, np.number)) else float(value)
    except ValueError:
        raise StudyLogError(f"{str(value)[:40]!r} is not a number of seconds", row, column) from None
    if not math.isfinite(number) or number < 0 or number > MAX_DWELL_SECONDS:
        raise StudyLogError(f"{str(value)[:40]!r} is not between 0 and {MAX_DWELL_SECONDS:g} seconds", row, column)
    return number


def _with_optional(frame: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in OPTIONAL_COLUMNS if c not in frame.columns]
    return frame.assign(**{c: None for c in missing}) if missing else frame


def validate_events(frame: pd.DataFrame) -> pd.DataFrame:
    """Check an event-level table row by row and return it with normalised types.

    Source events need a source rank (from 1); answer-level events ("shown", "dwell") leave it
    blank, and a "dwell" row says its seconds in dwell_seconds (blank on every other row)."""
    _check_columns(frame, [c for c in EVENT_COLUMNS if c not in OPTIONAL_COLUMNS])
    frame = _with_optional(frame)
    rows = []
    for i, raw in enumerate(frame[list(EVENT_COLUMNS)].to_dict("records"), start=1):
        rec = _text_fields(raw, i)
        rec["event"] = _as_choice(raw["event"], i, "event", ALL_EVENTS)
        if rec["event"] in ANSWER_EVENTS:
            if not _blank(raw["source_rank"]):
                raise StudyLogError(f"a {rec['event']!r} row is about the whole answer: leave source_rank blank",
                                    i, "source_rank")
            rec["source_rank"] = None
        else:
            rec["source_rank"] = _as_count(raw["source_rank"], i, "source_rank", nullable=False, minimum=1)
        rec["timestamp"] = _as_timestamp(raw["timestamp"], i, "timestamp")
        if rec["event"] == "dwell":
            rec["dwell_seconds"] = _as_seconds(raw["dwell_seconds"], i, "dwell_seconds")
        elif not _blank(raw["dwell_seconds"]):
            raise StudyLogError("only a 'dwell' row has dwell seconds", i, "dwell_seconds")
        else:
            rec["dwell_seconds"] = None
        rows.append(rec)
    out = pd.DataFrame(rows, columns=list(EVENT_COLUMNS))
    _check_query_attributes(out)
    out["source_rank"] = out["source_rank"].astype("Int64")
    out["timestamp"] = pd.to_datetime(out["timestamp"], utc=True)
    out["dwell_seconds"] = out["dwell_seconds"].astype("Float64")
    return out


def validate_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """Check a count-level table row by row; displayed/cited/dwell_seconds may be blank (not recorded)."""
    _check_columns(frame, (*KEY_COLUMNS, "query_type", "alignment", "hovered", "clicked"))
    frame = frame.copy()
    for col in ("displayed", "cited", "dwell_seconds"):
        if col not in frame.columns:
            frame[col] = None
    rows: list[dict] = []
    seen: dict[tuple, int] = {}  # participant x query key -> first row number
    for i, raw in enumerate(frame[list(COUNT_COLUMNS)].to_dict("records"), start=1):
        rec = _text_fields(raw, i)
        for col in ("displayed", "cited"):
            rec[col] = _as_count(raw[col], i, col, nullable=True)
        for col in ("hovered", "clicked"):
            rec[col] = _as_count(raw[col], i, col, nullable=False)
        rec["dwell_seconds"] = None if _blank(raw["dwell_seconds"]) else _as_seconds(raw["dwell_seconds"], i, "dwell_seconds")
        key = tuple(rec[k] for k in KEY_COLUMNS)
        if key in seen:
            raise StudyLogError(f"duplicate participant x query (first seen in row {seen[key]})", i, "query_id")
        seen[key] = i
        rows.append(rec)
    out = pd.DataFrame(rows, columns=list(COUNT_COLUMNS))
    for col in COUNT_MEASURES:
        out[col] = out[col].astype("Int64")
    out["dwell_seconds"] = out["dwell_seconds"].astype("Float64")
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
    logged query has no such events. displayed/cited are 0 when the answer was logged as
    "shown" without any (the recorder saw it on screen, so nothing logged means none), and stay
    null otherwise, since then the recorder did not capture them. dwell_seconds adds up the
    answer's "dwell" rows (null when none was measured)."""
    events = validate_events(events) if not _is_validated_events(events) else events
    if events.empty:
        return pd.DataFrame({c: pd.Series(dtype="Int64" if c in COUNT_MEASURES else
                                          "Float64" if c == "dwell_seconds" else "object") for c in COUNT_COLUMNS})
    keys = list(KEY_COLUMNS)
    meta = events.groupby(keys, sort=True)[["query_type", "alignment"]].first()
    per_source = events[events["event"].isin(EVENT_TYPES)]
    distinct = per_source.drop_duplicates([*keys, "event", "source_rank"])
    table = distinct.groupby([*keys, "event"]).size().unstack("event") if len(distinct) else None
    out = meta.join(table, how="left") if table is not None else meta.copy()
    shown = set(events.loc[events["event"] == "shown", keys].itertuples(index=False, name=None))
    dwell = events[events["event"] == "dwell"].groupby(keys)["dwell_seconds"].sum()
    out = out.join(dwell.rename("dwell_total"), how="left").reset_index()
    was_shown = pd.Series([tuple(r) in shown for r in out[keys].itertuples(index=False, name=None)], index=out.index)
    for event, col in EVENT_TO_COUNT.items():
        values = out[event] if event in out.columns else pd.Series(np.nan, index=out.index)
        if col in ("hovered", "clicked"):
            values = values.fillna(0)
        else:
            values = values.where(values.notna() | ~was_shown, 0)
        out[col] = values.astype("Int64")
    out["dwell_seconds"] = out["dwell_total"].astype("Float64")
    return out[list(COUNT_COLUMNS)]


def _is_validated_events(frame: pd.DataFrame) -> bool:
    return (
        list(frame.columns) == list(EVENT_COLUMNS)
        and str(frame["source_rank"].dtype) == "Int64"
        and str(frame["dwell_seconds"].dtype) == "Float64"
        and isinstance(frame["timestamp"].dtype, pd.DatetimeTZDtype)
    )


# What each column holds, for the log template and the study page (the validator's rules in words).
COLUMN_DOCS: dict[str, str] = {
    "participant": "participant code: letters, digits, '-' or '_' (no names or e-mail addresses)",
    "session": "session id, same characters as the participant code",
    "engine": "the engine or condition the participant used (e.g. Lumen, Parrot, Google)",
    "query_id": "an id for the question asked (letters, digits, spaces, '.', ':', '_' or '-')",
    "query_type": "the kind of question, e.g. debate or expertise",
    "alignment": "whether the answer matched the participant's view: aligned, disaligned or none",
    "displayed": "sources the engine showed (whole number; leave blank if not recorded)",
    "cited": "sources the answer cited (whole number; leave blank if not recorded)",
    "hovered": "distinct sources the participant hovered (whole number)",
    "clicked": "distinct sources the participant clicked (whole number)",
    "event": "what happened: displayed, cited, hover or click (about one source); shown or dwell (about the answer)",
    "source_rank": "the source's number in the answer's list, from 1 (blank on shown and dwell rows)",
    "timestamp": "when it happened, ISO 8601 (e.g. 2025-03-01T10:15:00Z; no zone = UTC)",
    "dwell_seconds": "seconds the answer stayed on screen (a dwell row; in a count log, their sum; blank if not measured)",
}

_TEMPLATE_ROWS: dict[str, list[tuple[str, ...]]] = {
    "counts": [
        ("P01", "s1", "Lumen", "q1", "debate", "aligned", "4", "3", "2", "1", "48.5"),
        ("P01", "s1", "Parrot", "q2", "debate", "disaligned", "3", "3", "1", "0", "35"),
        ("P02", "s1", "Lumen", "q2", "expertise", "none", "", "", "3", "1", ""),
        ("P02", "s1", "Parrot", "q1", "expertise", "none", "", "", "0", "0", ""),
    ],
    "events": [
        ("P01", "s1", "Lumen", "q1", "debate", "aligned", "shown", "", "2025-03-01T10:15:00Z", ""),
        ("P01", "s1", "Lumen", "q1", "debate", "aligned", "displayed", "1", "2025-03-01T10:15:00Z", ""),
        ("P01", "s1", "Lumen", "q1", "debate", "aligned", "cited", "1", "2025-03-01T10:15:00Z", ""),
        ("P01", "s1", "Lumen", "q1", "debate", "aligned", "hover", "1", "2025-03-01T10:15:20Z", ""),
        ("P01", "s1", "Lumen", "q1", "debate", "aligned", "click", "1", "2025-03-01T10:15:31Z", ""),
        ("P01", "s1", "Lumen", "q1", "debate", "aligned", "dwell", "", "2025-03-01T10:16:02Z", "62"),
        ("P02", "s1", "Parrot", "q1", "debate", "none", "shown", "", "2025-03-01T10:20:00Z", ""),
        ("P02", "s1", "Parrot", "q1", "debate", "none", "displayed", "1", "2025-03-01T10:20:00Z", ""),
        ("P02", "s1", "Parrot", "q1", "debate", "none", "displayed", "2", "2025-03-01T10:20:00Z", ""),
        ("P02", "s1", "Parrot", "q1", "debate", "none", "dwell", "", "2025-03-01T10:20:41Z", "41"),
    ],
}


def template_csv(level: str = "counts") -> str:
    """A CSV log template with the columns the validator expects and a few example rows that pass
    it ("counts": one row per participant x question, filled in by hand; "events": one row per
    logged event, as the inspector's study mode records)."""
    columns = COUNT_COLUMNS if level == "counts" else EVENT_COLUMNS
    if level not in _TEMPLATE_ROWS:
        raise StudyLogError(f"unknown log level {level!r}; use counts or events")
    lines = [",".join(columns)] + [",".join(row) for row in _TEMPLATE_ROWS[level]]
    return "\n".join(lines) + "\n"


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
