"""The people's labels as a judge the other pages can pick: whether `human:audit` is published and
up to date, and the button that publishes it (docs/audit.md, "The people as a judge").

Publishing runs `aee audit publish` in a child process (`python -m pipeline audit publish`), the
same command as in a terminal: it writes through the runner, which takes the dataset's lock and
replaces the judge's tables whole, and the page never imports the runner (only the command lines
do). A page waits for it; on the teaching corpus that is about three seconds, on all of ExpertQA
about fifteen.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pyarrow.parquet as pq
import streamlit as st

from dashboard import data
from dashboard.render import md_escape
from dashboard.url_state import page_link_to
from pipeline.audit.labels import LabelStore, labels_path
from pipeline.audit.publish import labels_since, published
from pipeline.audit.sample import list_samples
from pipeline.judges.carried import AUDIT_JUDGE
from pipeline.storage.store import table_path

PUBLISH_TIMEOUT = 900  # seconds; ExpertQA's 666 answers take ~15 s on two cores
AUTO_PUBLISH_MAX_ANSWERS = 2_000  # an import publishes by itself up to this size; beyond, a button does


def answer_count(dataset: str) -> int:
    """How many answers the dataset holds (the publishing run reads them all)."""
    try:
        return int(pq.ParquetFile(table_path(dataset, "answers", root=data.results_root())).metadata.num_rows)
    except (OSError, ValueError):
        return 0


def run_publish(dataset: str) -> tuple[bool, str]:
    """`aee audit publish --dataset D` in a child process on this app's results folder: (it worked,
    what it printed in one line)."""
    env = dict(os.environ, AEE_RESULTS_DIR=str(data.results_root()))
    try:
        done = subprocess.run([sys.executable, "-m", "pipeline", "audit", "publish", "--dataset", dataset],
                              capture_output=True, text=True, timeout=PUBLISH_TIMEOUT, env=env, check=False)
    except subprocess.TimeoutExpired:
        return False, f"publishing took more than {PUBLISH_TIMEOUT} s and was stopped"
    lines = [x for x in ((done.stdout or "") + "\n" + (done.stderr or "")).splitlines() if x.strip()]
    if done.returncode == 0:
        return True, next((x for x in reversed(lines) if x.startswith("published ")), lines[-1] if lines else "published")
    error = next((x for x in lines if x.startswith("error: ")), lines[-1] if lines else f"exit code {done.returncode}")
    return False, error.removeprefix("error: ")


def status(dataset: str) -> dict[str, Any]:
    """{"record": what the published judge holds or None, "since": label events after it or None,
    "events": label events on the dataset's samples so far}."""
    root = data.results_root()
    events, _ = LabelStore(labels_path(root)).state(str(m["sample_id"]) for m in list_samples(dataset, root))
    return {"record": published(dataset, root), "since": labels_since(dataset, root), "events": events}


def _publish_now(dataset: str, where: Any) -> None:
    """Publish (the page waits, with a spinner), then draw the page again with the outcome on top."""
    with where, st.spinner(f"Publishing the labels as judge {AUDIT_JUDGE}…"):
        ok, said = run_publish(dataset)
    st.session_state[f"audit_published_{dataset}"] = (ok, said)
    st.rerun()


def publish_panel(dataset: str, key: str, audited_judge: str | None = None, where: Any = None) -> None:
    """One line on whether the people's labels are the judge `human:audit` of this dataset yet, the
    button that (re)publishes them, and links to the pages that show that judge."""
    where = where or st.container()
    outcome = st.session_state.pop(f"audit_published_{dataset}", None)
    if outcome is not None:
        ok, said = outcome
        (where.success if ok else where.error)(md_escape(said), icon=":material/how_to_reg:" if ok else ":material/error:")
    state = status(dataset)
    record, since = state["record"], state["since"]
    if record is None and not state["events"]:
        where.caption(f"Once people have labelled items of a sample, their labels can be published here as the judge "
                      f"{AUDIT_JUDGE}, to pick in the Scorecard, the Answer inspector and Compare.")
        return
    if record is None:
        where.markdown(f"These labels are not a judge yet. Publish them as judge **{AUDIT_JUDGE}** to pick them in the "
                       "Scorecard, the Answer inspector and Compare: each item gets the majority of the people who "
                       "labelled it; everything nobody audited reads *not checked*.")
        label, kind = f"Publish as judge {AUDIT_JUDGE}", "primary"
    else:
        people = ", ".join(record.get("annotators") or []) or "nobody"
        when = str(record.get("published", ""))[:16].replace("T", " ")
        line = f"Published as judge **{AUDIT_JUDGE}** ({md_escape(when)} UTC): labels of {md_escape(people)}. "
        if since:
            line += f"**{since} answer(s) given since** are not in it yet."
            label, kind = "Publish again", "primary"
        else:
            line += "Up to date."
            label, kind = "Publish again", "secondary"
        where.markdown(line)
    # one below the other: side by side, the button and the links were cut off at 800 px
    from dashboard import room_gate  # a served room: only its members publish

    if where.button(label, key=f"{key}_publish", type=kind, icon=":material/publish:",
                    disabled=not room_gate.can_write(),
                    help="Runs `aee audit publish` on this dataset: the judge's tables are written beside the others"
                         + ("" if room_gate.can_write() else " (join the room first)")):
        _publish_now(dataset, where)
    if record is not None:
        # open an answer that holds labels: most answers hold none, and the first one listed may be one of those
        answer = next(iter(record.get("answers") or []), None)
        page_link_to(where, "inspector.py", f"The Answer inspector with {AUDIT_JUDGE}",
                     {"dataset": dataset, "judge": AUDIT_JUDGE, "answer": answer}, icon=":material/search:")
        if audited_judge:
            page_link_to(where, "compare.py", f"Compare: {audited_judge} beside the people, item by item",
                         {"dataset": dataset, "view": "judges", "judge": audited_judge, "judge_b": AUDIT_JUDGE,
                          "answer": answer}, icon=":material/compare_arrows:")


def after_import(dataset: str, written: int, where: Any) -> None:
    """Publish right after an import landed labels, when the dataset is small enough for a page to
    wait (AUTO_PUBLISH_MAX_ANSWERS); a larger one gets the button."""
    if not written or answer_count(dataset) > AUTO_PUBLISH_MAX_ANSWERS:
        return
    _publish_now(dataset, where)
