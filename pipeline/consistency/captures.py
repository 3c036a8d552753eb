"""Which wave and which repeat each answer of a dataset is.

An answer's capture identity comes from its import meta (`wave`, `repeat`, `captured_at`, written
by `aee collect --repeat/--wave` envelopes or given as canonical fields). What is missing is derived:

- wave: answers without a wave name are grouped by capture time; a gap of more than WAVE_GAP
  between consecutive capture times starts a new wave, named by the date of its first capture.
  Answers with neither a wave nor a time form one wave, "all".
- repeat: within (engine, query, wave), answers are numbered 0, 1, ... by capture time (then id)
  unless every one of them carries a distinct repeat index already.

The engine is what was asked for (provider and requested model, `pipeline.importers.engines`); the
model the reply names is kept beside it (`reply_model`), and `model_changes` lists the engines whose
replies name other models from one wave to the next.
"""

from __future__ import annotations

import json
from datetime import timedelta

import numpy as np
import pandas as pd

WAVE_GAP = timedelta(days=2)
NO_WAVE = "all"
CAPTURE_COLUMNS = ("answer_id", "engine", "query", "wave", "repeat", "captured_at", "reply_model")


def _meta_fields(meta: pd.Series) -> pd.DataFrame:
    """wave, repeat, captured_at and the reply's model out of the answers table's JSON meta column."""
    waves, repeats, times, models = [], [], [], []
    for text in meta.fillna("").tolist():
        # most metas are small; only parse those that can hold one of the keys
        if text and ('"wave"' in text or '"repeat"' in text or '"captured_at"' in text or '"model"' in text):
            try:
                obj = json.loads(text)
            except ValueError:
                obj = {}
        else:
            obj = {}
        if not isinstance(obj, dict):
            obj = {}
        waves.append(str(obj.get("wave") or ""))
        rep = obj.get("repeat")
        try:
            repeats.append(int(rep) if rep not in (None, "") else -1)
        except (TypeError, ValueError):
            repeats.append(-1)
        times.append(str(obj.get("captured_at") or ""))
        models.append(str(obj.get("model") or "")[:200])
    return pd.DataFrame({"wave": waves, "repeat": repeats, "captured_at": times, "reply_model": models}, index=meta.index)


def derive_waves(times: pd.Series, gap: timedelta = WAVE_GAP) -> pd.Series:
    """A wave name per capture time (UTC, NaT allowed): runs of times without a gap > `gap`."""
    out = pd.Series(NO_WAVE, index=times.index, dtype=object)
    known = times.dropna()
    if known.empty:
        return out
    order = np.sort(known.unique())
    starts = [order[0]]
    for prev, cur in zip(order[:-1], order[1:]):
        if cur - prev > np.timedelta64(int(gap.total_seconds()), "s"):
            starts.append(cur)
    starts_arr = np.array(starts)
    which = np.searchsorted(starts_arr, known.to_numpy(), side="right") - 1
    names = [pd.Timestamp(s).date().isoformat() for s in starts_arr]
    out.loc[known.index] = [names[i] for i in which]
    return out


def capture_frame(answers: pd.DataFrame) -> pd.DataFrame:
    """One row per answer: answer_id, engine, query, wave, repeat (0-based), captured_at (UTC or NaT)."""
    if answers.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in CAPTURE_COLUMNS})
    fields = _meta_fields(answers["meta"]) if "meta" in answers else pd.DataFrame(
        {"wave": "", "repeat": -1, "captured_at": "", "reply_model": ""}, index=answers.index)
    frame = pd.DataFrame({"answer_id": answers["answer_id"].astype(str), "engine": answers["engine"].astype(str),
                          "query": answers["query"].astype(str)})
    frame["captured_at"] = pd.to_datetime(fields["captured_at"].replace("", None), utc=True, errors="coerce", format="ISO8601")
    named = fields["wave"].str.strip()
    frame["wave"] = named.where(named != "", derive_waves(frame["captured_at"]))
    frame["repeat"] = fields["repeat"].astype(int)
    frame["reply_model"] = fields["reply_model"]
    # the answer says when or which asking it is (a time, a wave name or a repeat index)
    frame["marked"] = (named != "") | (frame["repeat"] >= 0) | frame["captured_at"].notna()
    # renumber the groups whose repeats are missing or clash
    keys = ["engine", "query", "wave"]
    frame = frame.sort_values(keys + ["captured_at", "answer_id"], na_position="last", kind="stable").reset_index(drop=True)
    size = frame.groupby(keys, sort=False)["repeat"].transform("size")
    distinct = frame.groupby(keys, sort=False)["repeat"].transform("nunique")
    missing = frame.groupby(keys, sort=False)["repeat"].transform("min") < 0
    renumber = missing | (distinct < size)
    order = frame.groupby(keys, sort=False).cumcount()
    frame["repeat"] = np.where(renumber, order, frame["repeat"]).astype(int)
    return frame[[*CAPTURE_COLUMNS, "marked"]]


def has_repeats_or_waves(captures: pd.DataFrame) -> bool:
    """True when the data is an audit over time: some engine answered some query more than once,
    and the answers say when they were captured or which repeat or wave they are. A release that
    merely holds the same question twice (ExpertQA's files overlap) carries none of that and is
    not treated as repeats."""
    if captures.empty or "marked" in captures and not captures["marked"].any():
        return False
    return bool(captures.groupby(["engine", "query"]).size().max() > 1)


def reply_models(captures: pd.DataFrame) -> dict[tuple[str, str], list[str]]:
    """(engine, wave) -> the models its replies name, sorted (empty when no reply names one)."""
    named = captures[captures["reply_model"].astype(str) != ""] if "reply_model" in captures else captures.iloc[:0]
    return {(str(e), str(w)): sorted(set(g["reply_model"].astype(str))) for (e, w), g in named.groupby(["engine", "wave"])}


def model_changes(captures: pd.DataFrame, waves: list[str] | None = None) -> list[dict]:
    """Per engine and pair of consecutive waves it answered in: where its replies name other models
    (a provider's dated version moving on, a default model swapped), one record with both lists."""
    waves = waves if waves is not None else wave_order(captures)
    models = reply_models(captures)
    out = []
    for engine in sorted(captures["engine"].astype(str).unique()):
        seen = [w for w in waves if (engine, w) in models]
        for before, after in zip(seen, seen[1:]):
            if models[(engine, before)] != models[(engine, after)]:
                out.append({"engine": engine, "from_wave": before, "to_wave": after,
                            "from_models": models[(engine, before)], "to_models": models[(engine, after)]})
    return out


def model_change_words(change: dict) -> str:
    """One sentence for a flagged change."""
    return (f"{change['engine']}: the replies name {', '.join(change['from_models'])} in wave {change['from_wave']} and "
            f"{', '.join(change['to_models'])} in wave {change['to_wave']}: the engine may have changed between them")


def wave_order(captures: pd.DataFrame) -> list[str]:
    """Waves in time order (by their first capture; names for ties and waves without times)."""
    first = captures.groupby("wave")["captured_at"].min()
    return sorted(first.index, key=lambda w: (pd.isna(first[w]), first[w] if not pd.isna(first[w]) else 0, w))
