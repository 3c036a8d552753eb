"""The labelling panel of "Audit the judge": one item at a time, buttons with keyboard keys, the
judge's own label shown only once the person has answered.

The item itself (question, the statement highlighted in its answer, the source with its
best-matching passage marked and scrolled to) is a `st.components.v2` component built from
`static/audit_item.js` and `.css`: constant code, every text passed as data and inserted as text.
Each label is written to the labels store inside the button's callback, before the page redraws,
so what the person sees as saved is on disk; the position in the sample lives in the session and
is rebuilt from the store after a refresh (the first item not yet answered or skipped).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import audit_data, audit_publish, room_gate
from dashboard.render import md_escape
from pipeline.audit import CANT_TELL, LABEL_WORDS
from pipeline.audit.files import RELEVANCE_QUESTION
from pipeline.audit.population import item_asks
from pipeline.audit.population import item_id as unit_item_id
from pipeline.audit.progress import is_complete, progress, resume_index
from pipeline.audit.sample import Sample, asks_relevance

_STATIC = Path(__file__).resolve().parent / "static"
_component = st.components.v2.component("aee_audit_item", css=(_STATIC / "audit_item.css").read_text(encoding="utf-8"),
                                        js=(_STATIC / "audit_item.js").read_text(encoding="utf-8"))

# (field, value, button text, key): the keys are printed on the buttons and work anywhere on the page
SUPPORT_BUTTONS = (("support", "full", "Fully supports", "1"), ("support", "partial", "Partially supports", "2"),
                   ("support", "none", "Does not support", "3"), ("support", CANT_TELL, "Can't tell", "0"))
RELEVANCE_BUTTONS = (("relevant", "relevant", "Relevant content", "1"), ("relevant", "filler", "Filler", "2"),
                     ("relevant", CANT_TELL, "Can't tell", "0"))
STANCE_BUTTONS = (("stance", "agree", "Agrees", "A"), ("stance", "disagree", "Disagrees", "D"),
                  ("stance", "neutral", "Neutral", "N"), ("stance", CANT_TELL, "Can't tell", "U"))
CONFIDENCE_LEVELS = ("1", "2", "3", "4", "5")


def word(value: Any) -> str:
    """A label as people read it ("partially supports", "can't tell", "no label")."""
    if not isinstance(value, str) or not value:
        return "no label"
    return LABEL_WORDS.get(value, value)


def item_data(row: dict[str, Any], unit: str) -> dict[str, Any]:
    """What the component shows of one item; never the judge's label. The statement item of a pair
    sample asking relevance too shows as a statement does (the statement in its answer, no source)."""
    asks = item_asks(row) if unit == "pair" else "statement"
    unit = "statement" if asks == "relevant" else unit
    out = {"unit": unit, "asks": asks, "query": row["query"], "statement": row["statement"], "answer_text": row["answer_text"],
           "statement_start": int(row["statement_start"]), "statement_end": int(row["statement_end"])}
    if unit == "pair":
        out |= {"source_index": int(row["source_index"]), "cited": bool(row["cited"]), "source_title": row["source_title"],
                "source_url": row["source_url"], "source_text": row["source_text"],
                "passage_start": int(row["passage_start"]), "passage_end": int(row["passage_end"])}
    return out


def _state_key(s: Sample, annotator: str, seat: dict | None) -> str:
    return f"audit_pos::{s.sample_id}::{annotator}::{seat['code'] if seat else ''}"


def _labels_by_item(s: Sample, annotator: str) -> dict[str, dict[str, Any]]:
    frame = audit_data.my_labels(s.sample_id, annotator)
    return {r["item_id"]: r for r in frame.to_dict("records")}


def _save(s: Sample, annotator: str, item_id: str, field: str, value: str, order: list[str], pos_key: str,
          query_type: str, asks: str = "support") -> None:
    """Button callback: write the label now, and move on once the item has every answer it needs."""
    if not room_gate.allow_label_write():  # a served room rate-limits each session's writes
        return
    audit_data.store().record(s.sample_id, item_id, annotator, field, value)
    mine = _labels_by_item(s, annotator).get(item_id) or {}
    if is_complete(s.unit, query_type, mine, asks):
        st.session_state[f"{pos_key}::reveal"] = item_id
        position = order.index(item_id)
        st.session_state[pos_key] = min(position + 1, len(order))


def _skip(s: Sample, annotator: str, item_id: str, order: list[str], pos_key: str, answered: bool) -> None:
    if not answered:
        if not room_gate.allow_label_write():
            return
        audit_data.store().record(s.sample_id, item_id, annotator, "skip", "")
    st.session_state[pos_key] = min(order.index(item_id) + 1, len(order))
    st.session_state.pop(f"{pos_key}::reveal", None)


def _back(pos_key: str) -> None:
    st.session_state[pos_key] = max(0, int(st.session_state.get(pos_key, 0)) - 1)
    st.session_state.pop(f"{pos_key}::reveal", None)


def _go(pos_key: str, index: int) -> None:
    st.session_state[pos_key] = index
    st.session_state.pop(f"{pos_key}::reveal", None)


def _judge_words(s: Sample, item_id: str, field: str) -> str:
    judge, scores = audit_data.judge_item_labels(s)
    label = judge.get(field, {}).get(item_id)
    text = "said nothing (unknown)" if label in (None, "unknown") else f"said “{word(label)}”"
    if field == "support" and item_id in scores:
        text += f" (its support score {scores[item_id]:.2f}, from 0 to 1)"
    return text


def _reveal(s: Sample, item_id: str, mine: dict[str, Any], where: Any, title: str) -> None:
    """What the person answered beside what the judge said, for an item they have answered."""
    judge, _ = audit_data.judge_item_labels(s)
    parts, agree, compared = [], True, False
    fields = (audit_data.item_field(s, item_id),) if s.unit == "pair" else ("relevant", "stance")
    for field in fields:
        if not mine.get(field):
            continue
        theirs = judge.get(field, {}).get(item_id)
        parts.append(f"{field}: you said “{word(mine[field])}”, the judge {_judge_words(s, item_id, field)}")
        if mine[field] != CANT_TELL and theirs not in (None, "unknown"):
            agree = agree and mine[field] == theirs
            compared = True
    text = f"**{md_escape(title)}** · " + " · ".join(md_escape(p) for p in parts)
    if not compared:  # "can't tell", or a judge that said nothing: neither agreement nor disagreement
        where.info(text, icon=":material/radio_button_unchecked:")
    else:
        (where.success if agree else where.warning)(text, icon=":material/check_circle:" if agree else
                                                    ":material/compare_arrows:")


def label_panel(s: Sample, annotator: str, seat: dict | None = None) -> None:
    """The whole labelling flow for one person on one sample (or a classroom seat of it)."""
    order = audit_data.item_order(s, seat)
    items = s.items.set_index("item_id")
    query_types = {i: str(items.loc[i, "query_type"]) for i in order}
    asks = audit_data.item_asks_map(s)
    mine_all = _labels_by_item(s, annotator)
    pos_key = _state_key(s, annotator, seat)
    if pos_key not in st.session_state:
        st.session_state[pos_key] = resume_index(order, query_types, s.unit, mine_all, asks)
    pos = min(int(st.session_state[pos_key]), len(order))
    counts = progress(order, query_types, s.unit, mine_all, asks)
    whole = answer_progress(s, mine_all, asks) if asks_relevance(s) and not seat else None
    st.progress(counts["done"] / max(1, counts["total"]),
                text=f"{counts['done']} of {counts['total']} answered"
                     + (f" · answers complete: {whole['complete']} of {whole['answers']}" if whole else "")
                     + f" · {counts['skipped']} skipped · {counts['cant_tell']} can't tell")
    if whole and whole["waiting"]:
        st.caption(f"{whole['waiting']} answer(s) wait on a skipped item: an answer counts in the corrected values "
                   "only once every one of its items is answered.")
    reveal = st.session_state.get(f"{pos_key}::reveal")
    if reveal and reveal in mine_all:
        _reveal(s, reveal, mine_all[reveal], st, f"Item {order.index(reveal) + 1}")
    if pos >= len(order):
        _finished(s, annotator, order, counts, pos_key, query_types, mine_all, asks)
        return
    item_id = order[pos]
    row = {"item_id": item_id, **items.loc[item_id].to_dict()}
    mine = mine_all.get(item_id) or {}
    answered = is_complete(s.unit, query_types[item_id], mine, asks.get(item_id, "support"))
    kind = {"relevant": " · asks: is the statement relevant?", "support": " · asks: does the source support it?"}
    st.markdown(f"**Item {pos + 1} of {len(order)}** · {md_escape(row['engine'])}"
                + (kind[asks[item_id]] if asks_relevance(s) else ""))
    _component(data=item_data(row, s.unit), key=f"audit_item_{s.sample_id}_{item_id}")
    if asks_relevance(s) and asks.get(item_id) == "support" and _called_filler(s, row, mine_all):
        st.caption("You called this statement filler. Answer it anyway: another person may count this statement.")
    if answered:
        _reveal(s, item_id, mine, st, "Your answer")
    _buttons(s, annotator, row, mine, order, pos_key)
    nav = st.columns([1, 1, 2.2])
    nav[0].button("Back", icon=":material/arrow_back:", key="audit_back", shortcut="B", disabled=pos == 0, on_click=_back, args=(pos_key,),
                  help="The previous item (key: B)")
    nav[1].button("Next" if answered else "Skip", icon=":material/arrow_forward:", key="audit_skip", shortcut="S",
                  on_click=_skip, args=(s, annotator, item_id, order, pos_key, answered),
                  help="Leave this item for later (key: S); a skipped item comes back at the end")
    nav[2].caption("Every answer is saved the moment you give it: you can close the tab and come back. "
                   "Keys work anywhere on the page except inside a text box.")


def _called_filler(s: Sample, row: dict[str, Any], mine_all: dict[str, dict[str, Any]]) -> bool:
    """Whether the person called filler the statement this pair item asks about (its statement item has
    the id a statement sample gives that statement)."""
    asked = unit_item_id(str(s.meta["dataset"]), "statement", str(row["answer_id"]), int(row["statement_index"]))
    return (mine_all.get(asked) or {}).get("relevant") == "filler"


def answer_progress(s: Sample, mine_all: dict[str, dict[str, Any]], asks: dict[str, str]) -> dict[str, int]:
    """Whole answers of a pair sample asking relevance too (its clusters): how many the person has
    answered every item of (only those enter an estimate), of how many, and how many of the rest wait
    on an item they skipped."""
    complete = waiting = 0
    groups = s.items.groupby("cluster_id", sort=False)
    for _, part in groups:
        open_items = [r for r in part.to_dict("records") if not is_complete(
            s.unit, str(r["query_type"]), mine_all.get(r["item_id"]), asks.get(r["item_id"], "support"))]
        complete += not open_items
        waiting += any((mine_all.get(r["item_id"]) or {}).get("skipped") for r in open_items)
    return {"complete": complete, "answers": groups.ngroups, "waiting": waiting}


def _buttons(s: Sample, annotator: str, row: dict[str, Any], mine: dict[str, Any], order: list[str], pos_key: str) -> None:
    query_type = str(row["query_type"])
    groups: list[tuple[str, tuple]] = []
    asks = item_asks(row) if s.unit == "pair" else "statement"
    if asks == "relevant":  # the statement item of a pair sample asking relevance too
        groups.append((RELEVANCE_QUESTION + " Relevant: it gives content that answers the question. Filler: "
                       "greetings, hedges, repeats of the question, talk about the answer itself.", RELEVANCE_BUTTONS))
    elif s.unit == "pair":
        groups.append(("Does the source support the statement? Full: it says everything the statement claims. "
                       "Partially: some of it. Does not: it does not back it, or contradicts it.", SUPPORT_BUTTONS))
    else:
        groups.append(("Is the statement content that answers the question, or filler (greetings, hedges, "
                       "repeats of the question)?", RELEVANCE_BUTTONS))
        if query_type == "debate" and mine.get("relevant") not in ("filler", CANT_TELL):
            groups.append(("Which side does it take on the question as worded?", STANCE_BUTTONS))
    for prompt, buttons in groups:
        st.markdown(md_escape(prompt))
        # four buttons in two rows: in one row their words are cut at 800 px ("Fully su…")
        per_row = 2 if len(buttons) > 3 else len(buttons)
        cols = [c for _ in range(0, len(buttons), per_row) for c in st.columns(per_row)]
        for col, (field, value, text, key) in zip(cols, buttons):
            chosen = mine.get(field) == value
            col.button(f"{text}", key=f"audit_btn_{field}_{value}", shortcut=key, type="primary" if chosen else "secondary",
                       width="stretch", on_click=_save,
                       args=(s, annotator, row["item_id"], field, value, order, pos_key, query_type,
                             asks if s.unit == "pair" else "support"),
                       help=f"key: {key}")
    if s.unit == "statement" and query_type == "debate":
        current = mine.get("confidence")
        picked = st.segmented_control(
            "Optional, once per answer: how confident does the whole answer sound? (1 not at all … 5 strongly)",
            CONFIDENCE_LEVELS, default=current if current in CONFIDENCE_LEVELS else None,
            key=f"audit_conf_{row['item_id']}")
        if picked and picked != current and room_gate.allow_label_write():
            audit_data.store().record(s.sample_id, row["item_id"], annotator, "confidence", picked)


def _finished(s: Sample, annotator: str, order: list[str], counts: dict[str, int], pos_key: str,
              query_types: dict[str, str], mine_all: dict[str, dict[str, Any]], asks: dict[str, str]) -> None:
    st.success(f"Done: {counts['done']} of {counts['total']} answered. Thank you!", icon=":material/task_alt:")
    left = [i for i in order if not is_complete(s.unit, query_types[i], mine_all.get(i), asks.get(i, "support"))]
    if left:
        st.button(f"Go to the {len(left)} skipped item(s)", key="audit_to_skipped", on_click=_go,
                  args=(pos_key, order.index(left[0])))
    judge, _ = audit_data.judge_item_labels(s)
    fields = ("relevant", "support") if asks_relevance(s) else (audit_data.main_field(s),)
    sentences = []
    for field in fields:  # a sample asking relevance too: each question on its own items
        pairs = [(judge.get(field, {}).get(i), (mine_all.get(i) or {}).get(field)) for i in order
                 if not asks_relevance(s) or asks.get(i) == field]
        compared = [(j, m) for j, m in pairs if j not in (None, "unknown") and m not in (None, CANT_TELL)]
        if compared:
            same = sum(j == m for j, m in compared)
            sentences.append(f"the same {md_escape(field)} label on **{same} of {len(compared)}** items "
                             f"({same / len(compared):.0%})")
    if sentences:  # one paragraph, the closing sentence once
        st.markdown(f"You and the judge gave {' and '.join(sentences)}. The Judges page compares the judge with "
                    "everyone who labelled this sample, weighted to stand for all items.")
    st.button("Start again from the first item", key="audit_restart", on_click=_go, args=(pos_key, 0))
    st.divider()
    audit_publish.publish_panel(str(s.meta["dataset"]), "audit_done", str(s.meta["judge"]))


def who_table(seats: pd.DataFrame, order_len: int) -> pd.DataFrame:
    """The classroom codes as a table a teacher can read out (item numbers 1-based)."""
    return pd.DataFrame({"student": seats["seat"], "code": seats["code"],
                         "items": [f"{int(f) + 1}–{int(f) + int(n)}" if int(f) + int(n) <= order_len else
                                   f"{int(f) + 1}–{order_len}, 1–{int(f) + int(n) - order_len}"
                                   for f, n in zip(seats["first"], seats["size"])]})
