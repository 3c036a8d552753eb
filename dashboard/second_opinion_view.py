"""Re-score's second opinion: the same pasted answer under another judge, shown beside the first.

Which judges can give one here (`judge_choices`: offline and offline:lexical always, as they need
nothing; nli, minicheck and openai only when configured, otherwise one line saying why), running it
(the pipeline's `annotate_answer`,
cached per answer and judge in the session, a bounded number kept), and the side-by-side tables
(`pipeline.report.second_opinion.compare_judges` computes every number; this module lays them out).
"""

from __future__ import annotations

import os
from typing import Any

import pandas as pd
import streamlit as st

from dashboard.answer_model import UNCERTAIN_MARK, md_text, metric_value_text
from dashboard.render import md_escape
from pipeline.annotate import annotate_answer
from pipeline.judges import JUDGES, JudgeError, get_judge, registry_entry
from pipeline.metrics import ScoreConfig
from pipeline.records import AnnotatedAnswer
from pipeline.report.second_opinion import compare_judges

# Registry names, in the order offered: the two that need nothing first, so that on a fresh clone
# the other one of them is the default choice and a second opinion is one click away.
CANDIDATES = ("offline", "offline:lexical", "nli", "minicheck", "openai")
KEEP = 6  # second opinions kept per session (each holds one labelled answer)
STATE = "rs_second"


@st.cache_resource(show_spinner=False)
def _built(name: str, environment: tuple) -> Any:
    """A judge built by the factory, once per name and configuration (an NLI model loads once)."""
    return get_judge(name)


def _environment() -> tuple:
    keys = ("AEE_NLI_MODEL", "AEE_MINICHECK_BASE_URL", "AEE_MINICHECK_MODEL", "AEE_OPENAI_BASE_URL",
            "AEE_OPENAI_API_KEY", "OPENAI_API_KEY", "AEE_OPENAI_MODEL")
    return tuple(bool(os.environ.get(k)) if "KEY" in k else os.environ.get(k, "") for k in keys)


def judge_name(base: str) -> str:
    """The factory name for a candidate: nli takes its model from AEE_NLI_MODEL."""
    if base == "nli":
        model = os.environ.get("AEE_NLI_MODEL", "").strip()
        return f"nli:{model}" if model else "nli"
    return base


def is_first_judge(candidate: str, first: str) -> bool:
    """True when a candidate is the judge that gave the first labels: the same registered name, or
    the backend of a name with an argument ("openai:gpt-4o" is the `openai` candidate)."""
    return candidate == first or (first not in JUDGES and candidate == first.partition(":")[0])


def judge_choices(first: str) -> list[tuple[str, str]]:
    """(candidate, "" when usable here else the reason in one line), the first judge left out."""
    out = []
    for base in CANDIDATES:
        if is_first_judge(base, first):
            continue
        if base == "nli" and not os.environ.get("AEE_NLI_MODEL", "").strip():
            out.append((base, "set AEE_NLI_MODEL to a Hugging Face entailment model id or folder (docs/judges/nli.md)"))
            continue
        try:
            _built(judge_name(base), _environment())
        except JudgeError as exc:
            out.append((base, " ".join(str(exc).split())[:300]))
            continue
        out.append((base, ""))
    return out


def run_second_opinion(parsed: AnnotatedAnswer, base: str) -> None:
    """Label the answer with another judge; the result (or a one-line error) goes into the
    session under the answer and judge, the first result is never touched."""
    store: dict = st.session_state.setdefault(STATE, {})
    key = f"{parsed.answer.answer_id}|{judge_name(base)}"
    st.session_state["rs_second_key"] = key
    if key in store and "annotated" in store[key]:
        return  # cached: same input, same judge
    try:
        judge = _built(judge_name(base), _environment())
        with st.spinner(f"Labelling the answer with the {base} judge…"):
            labelled = annotate_answer(parsed, judge)
        store[key] = {"annotated": labelled, "judge": judge.name}
    except Exception as exc:  # noqa: BLE001 - a network or model error: one line, the first result stays
        store[key] = {"error": f"{base} judge: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"}
    while len(store) > KEEP:
        store.pop(next(iter(store)))


def description(name: str) -> str:
    """The registry's description of a candidate, as plain text for a caption."""
    info = registry_entry(name)
    return info.description.replace("`", "") if info else ""


def shared_rules_note(first: str, second: str) -> str:
    """One sentence when both judges label relevance, stance and confidence with the offline judge's
    rules: then only support labels, and the metrics built on them, can differ ("" otherwise)."""
    one, two = registry_entry(first), registry_entry(second)
    if one is None or two is None or not (one.offline_rules and two.offline_rules):
        return ""
    return ("Both judges label relevance, stance and confidence with the same offline rules, so those labels "
            "agree by construction: only support labels, and the metrics built on them, can differ.")


def _value(value: float | None, unit: str, reason: str) -> str:
    shown = metric_value_text(value, unit)
    return f"{shown} ({reason})" if shown == "n/a" and reason else shown


def _difference(diff: float | None, unit: str) -> str:
    if diff is None:
        return "n/a: not scorable under one of the judges"
    if abs(diff) < 1e-9:
        return "0"
    sign = "+" if diff > 0 else "−"
    number = abs(diff)
    return f"{sign}{number:.2f}" + (" points" if unit == "percent" else "")


def _highlight(frame: pd.DataFrame):
    """Rows where the judges differ on a tinted background (the `differs` column says it in words)."""
    def row_style(row: pd.Series) -> list[str]:
        tint = "background-color: rgba(255, 164, 33, 0.22)" if row["differs"] == "≠ differs" else ""
        return [tint] * len(row)
    return frame.style.apply(row_style, axis=1)


def _differing_table(frame: pd.DataFrame, what: str, all_same: str, toggle_key: str, table_key: str) -> pd.DataFrame:
    """A side-by-side table with an "only the differing rows" toggle (on at first); returns the rows shown."""
    only = st.toggle(f"Only the {what} that differ", value=True, key=toggle_key)
    if only:
        frame = frame[frame["differs"] == "≠ differs"]
    if frame.empty:
        st.caption(all_same if only else f"No {what}.")
    else:
        st.dataframe(_highlight(frame), hide_index=True, width="stretch", key=table_key)
    return frame


def show_second_opinion(first: AnnotatedAnswer, first_judge: str, config: ScoreConfig, key: str) -> None:
    """The comparison tables for the current second opinion, or its error line."""
    entry = st.session_state.get(STATE, {}).get(st.session_state.get("rs_second_key", ""))
    if not entry or entry.get("annotated") is None and not entry.get("error"):
        return
    if entry.get("error"):
        st.error(md_text(entry["error"], limit=400))
        return
    second = entry["annotated"]
    if second.answer.answer_id != first.answer.answer_id:
        return  # an opinion on an earlier paste: not this answer
    diff = compare_judges(first, second, config, (first_judge, entry["judge"]))
    a, b = diff["judges"]
    st.markdown(f"##### Second opinion: {md_escape(a)} vs {md_escape(b)}")
    st.caption(f"{diff['metrics_differing']} of {len(diff['metrics'])} metrics and {diff['labels_differing']} of "
               f"{len(diff['labels'])} labels differ between the two judges (≠, tinted). Difference = "
               f"{md_escape(b)} minus {md_escape(a)}.")
    note = shared_rules_note(a, b)
    if note:
        st.caption(note)
    rows = [{"metric": m["label"], a: _value(m["first"], m["unit"], m["first_reason"]),
             b: _value(m["second"], m["unit"], m["second_reason"]),
             "difference": _difference(m["difference"], m["unit"]), "differs": "≠ differs" if m["differs"] else "same"}
            for m in diff["metrics"]]
    # the differing rows first in view: scattered among 39 in a scrolling table, they were easy to miss
    _differing_table(pd.DataFrame(rows, columns=["metric", a, b, "difference", "differs"]), "metrics",
                     "The two judges give every metric the same value.", f"{key}_only_metrics", f"{key}_metrics")
    # (statement, source) pairs whose support score sits in that judge's uncertain band
    unsure = [{(u["statement"], u["source"]) for u in r.get("uncertain_support") or []} for r in diff["reports"]]
    labels = [{"statement": f"S{x['statement'] + 1}: {' '.join(x['text'].split())[:90]}",
               "source": f"[{x['source']}]" if x["source"] is not None else "",
               "label": x["kind"],
               a: _label(x["first"], x.get("first_score"), (x["statement"], x["source"]) in unsure[0], x["kind"]),
               b: _label(x["second"], x.get("second_score"), (x["statement"], x["source"]) in unsure[1], x["kind"]),
               "differs": "≠ differs" if x["differs"] else "same"}
              for x in diff["labels"]]
    frame = _differing_table(pd.DataFrame(labels, columns=["statement", "source", "label", a, b, "differs"]), "labels",
                             "The two judges give the same labels.", f"{key}_only", f"{key}_labels")
    if not frame.empty:
        if (frame["label"] == "support").any():
            st.caption(f"The number after a support label is that judge's own score. Each judge has its own scale "
                       f"and cut points (Judges page), so a higher score under one judge can come with a weaker "
                       f"label than a lower score under the other. {UNCERTAIN_MARK} after a label: the score sits in "
                       f"that judge's uncertain band, close to a cut point, where its labels are least reliable.")


def _label(label: str | None, score: float | None, uncertain: bool = False, kind: str = "") -> str:
    if label is None:
        return "no label"
    if kind == "support" and label == "unknown":  # nobody judged the pair: never shown as a label
        return "not checked"
    return (label + (f" ({score:.2f})" if score is not None and score == score else "")
            + (f" {UNCERTAIN_MARK}" if uncertain else ""))
