"""The Audit page's "Fit a judge": the people's labels of a pair sample fit the judge `fitted`
(`aee audit fit`, pipeline/audit/fitted_run.py), and the page says what the labels bought.

Fitting runs `aee audit fit` in a child process, as publishing does (dashboard/audit_publish.py): it
writes through the runner, which takes the dataset's lock, and the page never imports the runner.
Before the button, the guard rails are read from the labels alone (`fitted_run.precheck`): too few
labels for the folds, too few of the rarer kind, a stratum with one labelled answer, each said with
how many more to label; engines without a label are named. After a fit, the sentence "with your N
labels the fitted judge agrees with the held-out labels at kappa ..." is computed from the fit's
record and the two prediction-powered scorecards (`fitted_run.labels_bought`), never typed in.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import streamlit as st

from dashboard import audit_data, data, room_gate
from dashboard.render import md_escape
from dashboard.url_state import page_link_to
from pipeline.audit.fitted_run import FITTED_JUDGE, fit_summary, fitted_record, precheck, reasons_text

FIT_TIMEOUT = 900  # seconds; a fit of ExpertQA rewrites its 666 answers' tables (~20 s on two cores)


def run_fit(dataset: str, judge: str, sample_id: str, human: str) -> tuple[bool, str]:
    """`aee audit fit` in a child process on this app's results folder: (it worked, what it said)."""
    env = dict(os.environ, AEE_RESULTS_DIR=str(data.results_root()))
    cmd = [sys.executable, "-m", "pipeline", "audit", "fit", "--dataset", dataset, "--judge", judge, "--sample",
           sample_id, "--human", human]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=FIT_TIMEOUT, env=env, check=False)
    except subprocess.TimeoutExpired:
        return False, f"the fit took more than {FIT_TIMEOUT} s and was stopped"
    lines = [x for x in ((done.stdout or "") + "\n" + (done.stderr or "")).splitlines() if x.strip()]
    if done.returncode == 0:
        return True, next((x for x in lines if x.startswith("wrote ")), lines[-1] if lines else "fitted").removeprefix("wrote ")
    error = next((x for x in lines if x.startswith("error: ")), lines[-1] if lines else f"exit code {done.returncode}")
    return False, error.removeprefix("error: ")


@st.cache_data(show_spinner="Comparing the corrected intervals through both judges…", max_entries=8)
def _bought(root: str, dataset: str, human: str, labels_version: tuple, stamp: tuple, base_stamp: tuple) -> dict | None:
    from pipeline.audit.fitted_run import labels_bought

    got = labels_bought(dataset, human, Path(root))
    return None if got is None else {k: v for k, v in got.items() if k != "record"}


def _pair_samples(dataset: str) -> list[dict[str, Any]]:
    return [m for m in audit_data.samples(dataset) if m.get("unit") == "pair"]


def fit_panel(dataset: str) -> None:
    """Pick a pair sample and whose labels, see the guard rails, fit; then what the labels bought."""
    st.markdown("Your labels say how *you* judge these engines and sources. A fitted judge learns that from them: a "
                "small model over the audited judge's own signals and what the toolkit knows of each pair (engine, "
                "kind and length of source, statement length, figures, citation), fitted five times, each time "
                "without a fifth of the answers, so no label ever predicts itself. It becomes the judge "
                f"**{FITTED_JUDGE}**, and the Scorecard's corrected values can run through it.")
    outcome = st.session_state.pop(f"audit_fitted_{dataset}", None)
    if outcome is not None:
        ok, said = outcome
        (st.success if ok else st.error)(md_escape(said), icon=":material/model_training:" if ok else ":material/error:")
    metas = _pair_samples(dataset)
    if not metas:
        st.info("No support sample of this dataset yet: draw one (Draw a sample, support) and label it first.",
                icon=":material/info:")
        return
    ids = [str(m["sample_id"]) for m in metas]
    cols = st.columns([1.4, 1])
    sample_id = cols[0].selectbox("Sample whose labels to fit to", ids, key="audit_fit_sample",
                                  format_func=lambda i: audit_data.sample_label(next(m for m in metas if m["sample_id"] == i)))
    meta = next(m for m in metas if m["sample_id"] == sample_id)
    judge = str(meta.get("judge"))
    whose = {"all": "everyone who labelled it (their majority)"}
    if "human" in data.judges(dataset):
        whose["experts"] = "the experts' labels the data carries"
    human = cols[1].radio("Whose labels", list(whose), format_func=whose.get, key="audit_fit_human")
    try:
        check = precheck(dataset, sample_id, human, data.results_root())
    except Exception as exc:  # noqa: BLE001 - a sample that cannot be read says why, the page stays
        st.error(md_escape(f"this sample's labels cannot be read: {exc}"))
        return
    if not check.ok:
        st.warning("**No fit yet.** " + md_escape(reasons_text(check)), icon=":material/front_hand:")
    for note in check.notes:
        st.caption(md_escape(note))
    record = fitted_record(dataset, data.results_root())
    again = record is not None and str(record.get("sample_id")) == sample_id
    if st.button(f"{'Fit again' if again else 'Fit a judge'} to these labels ({judge}'s signals)", key="audit_fit_go",
                 type="secondary" if again else "primary",
                 disabled=not check.ok or not room_gate.can_write(), icon=":material/model_training:",
                 help=f"Runs `aee audit fit --dataset {dataset} --judge {judge} --sample {sample_id} --human {human}`"
                      + ("" if room_gate.can_write() else " (join the room first)")):
        with st.spinner("Fitting the judge and writing its labels…"):
            ok, said = run_fit(dataset, judge, sample_id, human)
        st.session_state[f"audit_fitted_{dataset}"] = (ok, said)
        st.rerun()
    if record is None:
        return
    st.subheader("What your labels bought")
    if str(record.get("sample_id")) != sample_id:
        st.caption(md_escape(f"The fitted judge of this dataset was fitted to sample {record.get('sample_id')}, not to "
                             "the one chosen above."))
    bought = _bought(str(data.results_root()), dataset, human, audit_data.version(), data._stamp(dataset, FITTED_JUDGE),
                     data._stamp(dataset, str(record["base_judge"])))
    if bought and bought.get("sentence"):
        st.markdown(f"**{md_escape(bought['sentence'])}**")
        st.caption(f"Mean width of the corrected 95% intervals over the {bought['cells']} engine cells that show one "
                   f"under both judges: {bought['width_fitted']:.1f} points through {FITTED_JUDGE}, "
                   f"{bought['width_judge']:.1f} through {md_escape(str(record['base_judge']))}. Kappa on the labelled "
                   "pairs, each predicted by the model fitted without its answer.")
    elif bought:
        st.caption(md_escape(bought.get("why") or ""))
    summary = fit_summary(record)
    st.caption(md_escape(summary[:1].upper() + summary[1:]) + ".")
    page_link_to(st, "scorecard.py", f"The Scorecard under {FITTED_JUDGE}", {"dataset": dataset, "judge": FITTED_JUDGE},
                 icon=":material/table:")
    page_link_to(st, "compare.py", f"Compare: {record['base_judge']} beside {FITTED_JUDGE}, item by item",
                 {"dataset": dataset, "view": "judges", "judge": str(record["base_judge"]), "judge_b": FITTED_JUDGE},
                 icon=":material/compare_arrows:")
