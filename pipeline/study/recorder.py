"""Append-only storage for recorded usability-study events.

Layout: `<studies_dir>/<study_id>/events-<UTC time>-<random>.parquet`, one new file per append,
so earlier data is never rewritten (a crash mid-append can lose only that append). Rows carry a
participant code only; the schema has no field for names or contact details, and codes are
restricted to safe characters so they can never form a path.
"""

from __future__ import annotations

import os
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from pipeline.storage import paths
from pipeline.study.log import EVENT_COLUMNS, StudyLog, StudyLogError, counts_from_events, is_safe_code, validate_events


def studies_dir() -> Path:
    """Root of recorded studies (`pipeline.storage.paths.studies_dir`: beside the results, never inside an
    installed package)."""
    return paths.studies_dir()


def _study_path(study_id: str) -> Path:
    if not is_safe_code(study_id):
        raise StudyLogError(f"invalid study id {str(study_id)[:40]!r}: use letters, digits, '-' and '_' (max 64)")
    root = studies_dir().resolve()
    path = (root / study_id).resolve()
    if path.parent != root:  # belt and braces on top of the character check
        raise StudyLogError(f"invalid study id {study_id!r}")
    return path


def append_events(study_id: str, events: list[dict]) -> Path:
    """Validate and store a batch of events as a new Parquet file; returns its path.
    A missing timestamp is filled with the current UTC time (the recorder's clock)."""
    folder = _study_path(study_id)  # reject a bad id before looking at the events
    if not events:
        raise StudyLogError("no events to append")
    now = datetime.now(timezone.utc)
    rows = []
    for i, ev in enumerate(events, start=1):
        if not isinstance(ev, dict):
            raise StudyLogError("event is not a mapping", i)
        extra = set(ev) - set(EVENT_COLUMNS)
        if extra:
            # Unknown keys could smuggle personal data into the log; refuse rather than drop.
            raise StudyLogError(f"unexpected field(s) {', '.join(sorted(extra))}", i)
        rec = {c: ev.get(c) for c in EVENT_COLUMNS}
        if rec["timestamp"] in (None, ""):
            rec["timestamp"] = now
        rows.append(rec)
    frame = validate_events(pd.DataFrame(rows, columns=list(EVENT_COLUMNS)))
    folder.mkdir(parents=True, exist_ok=True)
    name = f"events-{now.strftime('%Y%m%dT%H%M%S%fZ')}-{uuid.uuid4().hex[:8]}.parquet"
    final = folder / name
    tmp = folder / f".{name}.tmp"
    frame.to_parquet(tmp, index=False)
    # Write-then-rename: readers never see a half-written file. The name is new, so nothing
    # earlier is replaced.
    os.replace(tmp, final)
    return final


def event_files(study_id: str) -> list[Path]:
    return sorted(_study_path(study_id).glob("events-*.parquet"))


def load_study_log(study_id: str) -> pd.DataFrame:
    """All events of a study in append order (validated); empty frame with the schema if none."""
    files = event_files(study_id)
    if not files:
        return validate_events(pd.DataFrame(columns=list(EVENT_COLUMNS)))
    frame = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    return validate_events(frame)


def list_studies() -> list[str]:
    root = studies_dir()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and is_safe_code(p.name) and any(p.glob("events-*.parquet")))


def latest_study() -> str | None:
    """The study that recorded something last (by its newest event file), or None."""
    stamped = [(max(f.stat().st_mtime for f in event_files(name)), name) for name in list_studies()]
    return max(stamped)[1] if stamped else None


def load_study(study_id: str) -> StudyLog:
    events = load_study_log(study_id)
    return StudyLog("events", counts_from_events(events), events, f"recorded study {study_id}")
