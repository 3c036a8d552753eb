"""What the "Engine vs engine" page shows: `aee compare --engines A,B` for any two engines of a
dataset, computed by the same pipeline functions the command calls (`pipeline.consistency`: the
metric values of the two engines, the audit of the judge when there is one, the paired t over shared
queries with Holm's adjustment, the verdicts in words). Nothing here computes a metric; it lays the
result out. The values are read from the two engines' row groups of the judge's values record, which
`aee run` writes (`pipeline.page_records`); a set written before it is read whole, once per server
process, and the page says so with the command that adds the record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from dashboard import answer_store, data
from pipeline.metrics import METRICS

ALPHA = 0.05  # the command's default, so the page and `aee compare` print the same numbers


@st.cache_resource(show_spinner="Reading every metric value of the set (written before its values record)…", max_entries=4)
def _every_value(root: str, dataset: str, judge: str, stamp: tuple) -> Any:
    # a set without the values record: every value read once per server process (cache_resource:
    # one shared frame, never changed in place)
    from pipeline.consistency.summary import load_values
    from pipeline.storage.store import result_set

    return load_values(result_set(dataset, Path(root)), judge)


def _values(root: Path, dataset: str, judge: str, engines: tuple[str, str], wave: str) -> Any:
    """The values `compare_sides` reads for two engines in one wave: from their row groups of the
    judge's values record, else from every value of the set."""
    found = answer_store.values(dataset, judge, engines, wave, root)
    if found is not None:
        return found
    return _every_value(str(root), dataset, judge, data._stamp(dataset, judge))[1]


@st.cache_data(show_spinner="Comparing the two engines query by query…", max_entries=16)
def _comparison(root: str, dataset: str, judge: str, a: str, b: str, wave: str, stamp: tuple) -> dict[str, Any]:
    from pipeline.consistency.differences import JUDGE_NOTE, as_json, compare_sides, judge_summary, method_words, summary_words
    from pipeline.consistency.judge_error import Audit

    values = _values(Path(root), dataset, judge, (a, b), wave)
    audit = Audit.load(dataset, judge, root=Path(root))
    diffs = compare_sides(values, {"engine": a, "wave": wave}, {"engine": b, "wave": wave}, a, b,
                          alpha=ALPHA, audit=audit)
    return {"summary": summary_words(diffs), "judge_summary": judge_summary(diffs), "rows": as_json(diffs),
            "method": method_words(diffs) if diffs else "",
            "queries": diffs[0].queries if diffs else 0, "audited": audit is not None,
            "judge_note": JUDGE_NOTE if audit is None else ""}


def engines_and_waves(dataset: str, judge: str) -> tuple[list[str], list[str]]:
    """The dataset's engines (sorted) and waves (in time order), as `aee compare` names them."""
    return _engines_and_waves(str(data.results_root()), dataset, judge, data._stamp(dataset, judge))


@st.cache_data(show_spinner=False, max_entries=16)
def _engines_and_waves(root: str, dataset: str, judge: str, stamp: tuple) -> tuple[list[str], list[str]]:
    # from the set's answer index; a set written before it: from every value of the set
    from pipeline.consistency.captures import wave_order

    captures = answer_store.captures(dataset, Path(root))
    if captures is None:
        captures = _every_value(root, dataset, judge, stamp)[0]
    return sorted(captures["engine"].unique()), wave_order(captures)


def comparison(dataset: str, judge: str, a: str, b: str, wave: str) -> dict[str, Any]:
    """`aee compare --dataset D --judge J --engines A,B --wave W --json`'s comparison, as a dict."""
    return _comparison(str(data.results_root()), dataset, judge, a, b, wave, data._stamp(dataset, judge))


def records_note(dataset: str, judge: str) -> str:
    """The line the page shows when the set was written before its values record ("" when it has it)."""
    return data.records_note(dataset, judge, ("answer_index", "values"))


JUDGE_WORDS = {"corrected": "corrected by people's labels", "no_audit": "taken as given",
               "no_judge": "no judge label enters", "not_audited": "not audited, as given",
               "audit_unusable": "audit unusable, as given", "too_few_labels": "too few people's labels",
               "held_by_audit": "not corrected; held: the corrected metric on the same labels is not real"}


def _difference_text(r: dict[str, Any], unit: str) -> str:
    """The difference with its interval; a difference without an interval (no spread over the queries,
    or too few of them) says so instead of printing a missing number."""
    if r.get("diff") is None:
        return "no value"
    if r.get("ci_low") is None or r.get("ci_high") is None:
        return f"{r['diff']:+.1f}{unit} (no interval: no spread over the shared queries)"
    return f"{r['diff']:+.1f}{unit} [{r['ci_low']:.1f}, {r['ci_high']:.1f}]"


def _p_text(p: float) -> str:
    """A p-value as a reader takes it: "< 0.001" rather than a rounded "0.000" that reads as zero."""
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def rows_view(result: dict[str, Any]) -> list[dict[str, str]]:
    """One row per metric in words: the verdict first (a phone shows the first columns)."""
    out = []
    for r in result["rows"]:
        unit = " points" if r["unit"] == "percent" else ""
        info = METRICS.get(r["metric"])
        direction = {"higher_is_better": "↑ higher is better", "lower_is_better": "↓ lower is better"}.get(
            info.direction if info else "", "neither way is better")
        out.append({
            "metric": r["label"],
            "verdict": ("real difference" if r["real"] else "within noise"),
            f"{r['a']} − {r['b']} [95% interval]": _difference_text(r, unit),
            "Holm p": "no test (no spread to test)" if r.get("p_holm") is None else _p_text(r["p_holm"]),
            "means": f"{r['a']} {r['a_mean']:.1f} · {r['b']} {r['b_mean']:.1f}",  # self-describing on a phone card
            "better": direction,
            "judge": JUDGE_WORDS.get(r["judge_status"], r["judge_status"]),
        })
    return out
