"""Judges: how closely each automatic judge agrees with expert labels, beside the agreement
figures the papers report, and what that means for trusting a scorecard."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import charts, data
from dashboard.audit_panels import judges_audit_section
from dashboard.metric_text import na
from dashboard.render import engine_key, ensure_router, md_escape
from pipeline.judges import JUDGES
from pipeline.judges.measure.checks import summarize_checks
from pipeline.judges.measure.reliability import SCORED_JUDGES, support_band

STAT_LABELS = {
    "n": "pairs compared",
    "n_positive": "of which the experts mark 'Complete'",  # relevance rows: POSITIVE_RELEVANCE
    "auc": "AUC of the judge's score",
    "balanced_accuracy": "balanced accuracy",
    "kappa": "Cohen's kappa (2 classes)",
    "kappa_3way": "Cohen's kappa (3 classes)",
    "precision": "precision",
    "recall": "recall",
    "f1": "F1",
    "unparsed": "unparsed judge outputs",
    "in_calibration": "pairs from questions the judge was calibrated on",
}
POSITIVE_RELEVANCE = "of which the experts mark filler"  # the positive class of the relevance task
TASK_TITLES = {"support": "Support (does the cited source back the claim?)",
               "relevance": "Relevance (answer content or filler?)"}



COUNT_STATS = ("n", "n_positive", "unparsed", "in_calibration")
# data/reference/expertqa_reference.csv keeps the paper's short field names; people read these.
EXPERTQA_COLUMNS = {
    "sampled_examples": "answers sampled", "abstention_rate": "abstained", "autoais_on_complete_claims":
    "AutoAIS on 'Complete' claims", "autoais_num_claims": "claims", "autoais_zero_shot_p": "zero-shot P",
    "autoais_zero_shot_r": "zero-shot R", "autoais_zero_shot_f1": "zero-shot F1", "autoais_finetuned_p":
    "fine-tuned P", "autoais_finetuned_r": "fine-tuned R", "autoais_finetuned_f1": "fine-tuned F1"}


def _stat_label(task: str, stat: str) -> str:
    """A row name of the agreement table ("support: pairs compared")."""
    label = POSITIVE_RELEVANCE if (task, stat) == ("relevance", "n_positive") else STAT_LABELS[stat]
    return f"{task}: {label}"


def _text_table(frame: pd.DataFrame) -> None:
    """A static table: it wraps long names at any width where a dataframe cuts them off or pushes
    the numbers out of view (cells and headers escaped, as st.table renders markdown)."""
    shown = frame.map(md_escape)
    shown.columns = [md_escape(c) for c in frame.columns]
    st.table(shown, hide_index=True)


def _num(value: object, reason: str, count: bool = False) -> str:
    """A statistic to three decimals (counts as whole numbers), or "n/a: reason"."""
    if value is None or (isinstance(value, float) and value != value):
        return na(reason)
    number = float(value)  # type: ignore[arg-type]
    return str(int(number)) if count else f"{number:.3f}"


ensure_router()
st.title("Judges")
st.caption("Every scorecard number rests on labels from a judge. This page shows how often each judge agrees "
           "with human experts on ExpertQA's claims.")

def _value(report: pd.DataFrame, metric: str) -> float | None:
    part = report.loc[report["metric"] == metric, "value"]
    value = part.iloc[0] if len(part) else None
    return None if value is None or value != value else float(value)


def _verdict_lines(reports: pd.DataFrame) -> list[str]:
    """The page's conclusion in a few sentences, with the measured numbers of each saved comparison."""
    lines = []
    for (dataset, judge), rep in reports.groupby(["dataset", "judge"], sort=False):
        auc, bal, n = _value(rep, "support.auc"), _value(rep, "support.balanced_accuracy"), _value(rep, "support.n")
        if auc is not None and bal is not None and n is not None:
            level = "close to the experts" if bal >= 0.8 else "fair, well short of the experts" if bal >= 0.6 else "weak"
            lines.append(f"**{md_escape(judge)}** on {md_escape(dataset)}: support agreement is {level} "
                         f"(AUC {auc:.2f}, balanced accuracy {bal:.2f}, {int(n)} pairs). Its support-based metrics "
                         "(unsupported statements, source necessity, citation accuracy and thoroughness) carry that "
                         "error on top of the sampling error the scorecard's intervals show.")
    return lines


def _relevance_comment(reports: pd.DataFrame) -> str:
    """Why the relevance row and the behavioural checks seem to disagree, with the numbers ("" when
    there is nothing to compare)."""
    for (dataset, judge), rep in reports.groupby(["dataset", "judge"], sort=False):
        recall, kappa = _value(rep, "relevance.recall"), _value(rep, "relevance.kappa")
        positives = _value(rep, "relevance.n_positive")
        checks = data.judge_checks(judge)
        if recall is None or kappa is None or checks.empty or "kind" not in checks.columns:
            continue
        relevance_checks = checks[checks["kind"] == "relevance"]
        if relevance_checks.empty:
            continue
        share = float(relevance_checks["passed"].astype(bool).mean())
        caught = round(recall * positives) if positives else None
        return (f"**The relevance row ({md_escape(judge)} on {md_escape(dataset)}):** agreement with the experts is near chance (recall "
                f"{recall:.2f}{f', {caught} of {int(positives)} claims' if caught is not None else ''}, kappa {kappa:.2f}) "
                f"while the behavioural checks pass {share:.0%} of {len(relevance_checks)} relevance cases. The two measure "
                "different things. The checks ask for filler in the AEE sense: greetings, sign-offs, restated questions, "
                "offers of more help, which the judge finds. ExpertQA's experts mark a claim as filler when it is a fact "
                "they consider unimportant for the question (\"Not too important\", \"Uninformative\"), which no "
                "wording rule can see. So the Relevant statements metric counts conversational filler well, and says "
                "nothing about whether an answer's facts are the ones an expert would keep.")
    return ""


reports = data.agreement()
st.subheader("In short")
verdict = _verdict_lines(reports) if not reports.empty else []
st.markdown("\n".join(f"- {line}" for line in verdict + [
    "Differences between engines smaller than the disagreement between a judge and the experts should not be "
    "read as real. Where a rating sits near a threshold, check it under a second judge before reporting it.",
    "Expert labels (ExpertQA's `human` judge) are the reference here, but experts disagree with each other too; "
    "no judge can be expected to score perfectly against them. The AEE paper's own judge (GPT-4o) matched two "
    "human annotators only moderately on support (Pearson r 0.62) and better on confidence (0.72)."]))
if comment := (_relevance_comment(reports) if not reports.empty else ""):
    st.info(comment, icon=":material/info:")
st.caption("The details follow: agreement with the experts, whether each measurement is held out, confusion "
           "matrices, the uncertain band, the behavioural checks and what the papers report.")

judges_list = st.expander("The judges this toolkit has", key="judges_list", on_change="rerun")
if judges_list.open:  # drawn only when opened (a table on a long page costs the first view)
    judges_list.dataframe(pd.DataFrame([{"judge": j.name, "how it works": j.description, "needs network": j.needs_network}
                               for j in JUDGES.values()]), hide_index=True, width="stretch")

if reports.empty:
    st.info("No agreement results yet. Compare a judge with the ExpertQA experts first, for example:",
            icon=":material/info:")
    st.code("aee judges evaluate --dataset expertqa --judge offline", language="bash")
    st.caption(f"Results are read from {md_escape(data.agreement_dir())}.")
else:
    keys = reports[["dataset", "judge"]].drop_duplicates().to_records(index=False).tolist()
    summary_rows = []
    for dataset, judge in keys:
        rep = reports[(reports["dataset"] == dataset) & (reports["judge"] == judge)]
        row = {"dataset": dataset, "judge": judge}
        for rec in rep.to_dict("records"):
            metric = rec["metric"] or ""
            task, _, stat = metric.partition(".")
            if task in TASK_TITLES and stat in STAT_LABELS and rec["value"] == rec["value"] and rec["value"] is not None:
                row[_stat_label(task, stat)] = rec["value"]
        summary_rows.append(row)
    st.subheader("Agreement with the experts")
    wide = pd.DataFrame(summary_rows)
    wide.index = [f"{r['judge']} on {r['dataset']}" for r in summary_rows]
    stats = wide.drop(columns=["dataset", "judge"]).T
    counts = {_stat_label(task, k) for task in TASK_TITLES for k in COUNT_STATS}
    stats = pd.DataFrame({col: [_num(v, "not in this report", row in counts) for row, v in stats[col].items()]
                          for col in stats.columns}, index=stats.index)
    stats.index.name = "statistic"
    _text_table(stats.reset_index())
    st.caption("Kappa corrects for chance agreement: 0 is chance, 1 is perfect; above 0.6 is usually called "
               "substantial. AUC is the chance that a randomly chosen expert-'Complete' pair gets a higher "
               "score than a randomly chosen other pair. The relevance rows ask whether a claim is important to "
               "an expert, a different question from the filler checks below: \"In short\" at the top says why "
               "the two disagree.")

    st.subheader("Held out or not")
    st.caption("A judge fitted on expert labels is only tested fairly on answers to questions it never saw. "
               "These rows say, for each measurement above, how many compared pairs come from questions the "
               "judge was calibrated on, and what cross-validation on its calibration data estimated.")
    held_rows = []
    for dataset, judge in keys:
        prov = data.agreement_provenance(reports[(reports["dataset"] == dataset) & (reports["judge"] == judge)])
        cal = prov.get("calibration") or {}
        n, seen = prov.get("n"), prov.get("in_calibration") or 0
        if not cal and not seen:
            held, status, unseen_auc = "n/a", "judge not fitted on expert labels", prov.get("auc")
        elif seen:
            held, status, unseen_auc = "no", f"{seen} of {n} pairs from calibration questions", prov.get("unseen_auc")
        else:
            held, status, unseen_auc = "yes", f"0 of {n} pairs from calibration questions", prov.get("auc")
        if cal.get("cv_auc") is not None and cal.get("cv_balanced_accuracy") is not None:
            cv = f"{cal['cv_auc']:.3f} / {cal['cv_balanced_accuracy']:.3f}"
        else:
            cv = na("no cross-validation" if cal else "judge not fitted on expert labels")
        held_rows.append({
            "measurement": f"{judge} on {dataset}", "held out": held, "status": status,
            "AUC, unseen pairs": _num(unseen_auc, "no pair from unseen questions" if seen else "no AUC in this report"),
            "cross-validated AUC / bal. acc.": cv,
            "calibrated on": (f"{cal.get('fit_pairs')} pairs of {str(cal.get('fit_splits')).replace('+', ' + ')}" if cal
                              else na("judge not fitted on expert labels")),
        })
    st.table(pd.DataFrame(held_rows), hide_index=True)

    st.subheader("Confusion matrices")
    st.caption("A judge that calls too few pairs 'full' makes engines look worse on every support metric at once; one "
               "that is too generous hides misattributed citations. The matrices show which way a judge leans.")
    for dataset, judge in keys:
        rep = reports[(reports["dataset"] == dataset) & (reports["judge"] == judge)]
        matrices = data.agreement_confusions(rep)
        if not matrices:
            continue
        st.markdown(f"**{md_escape(judge)}** on {md_escape(dataset)}")
        cols = st.columns(len(matrices))
        for col, (task, m) in zip(cols, matrices.items()):
            col.markdown(f"*{md_escape(TASK_TITLES.get(task, task))}*")
            col.table(charts.confusion_table(m["rows"], m["cols"], m["matrix"], row_title=f"judge {judge}",
                                             col_title="experts"))

judges_audit_section()

st.subheader("Uncertain labels")
st.caption("A support verdict whose score sits close to one of the judge's cut points (between full and partial, "
           "or partial and none) is marked ≈ uncertain in the inspector, on Re-score and in the downloadable answer "
           "report, and counted apart from the Flags. Each offline judge's band sits around its own calibrated cut "
           "points. Judges without a score (LLM labels, recorded and expert labels) have no such band.")
band_rows = []
for name in SCORED_JUDGES:
    band = support_band(name)
    if band is not None:
        # the offline judges' cut points come from their calibrated parameters; nli and minicheck may be configured
        recorded = "" if name.startswith("offline") else " (the judge's recorded thresholds when set)"
        band_rows.append({"judge": name, "uncertain band": band.text() + recorded,
                          "how it was chosen": band.how()})
st.table(pd.DataFrame(band_rows), hide_index=True)  # a table wraps the long sentences a dataframe cuts off

st.subheader("Behavioural checks")
st.caption("Beside the agreement with experts: small hand-written cases, each probing one capability "
           "(verbatim support, a flipped number, a greeting, a \"critics argue\" frame...), with the label a careful "
           "reader would give. Pass rate per kind and capability; the failed cases are listed below each table.")
checked = data.saved_check_judges()
if not checked:
    st.info("No check results are saved yet. Run the suite for a judge, for example:", icon=":material/info:")
    st.code("aee judges check --judge offline", language="bash")
for name in checked:
    results = data.judge_checks(name)
    if results.empty or not {"kind", "capability", "passed", "expected", "label", "id"} <= set(results.columns):
        continue
    summary = summarize_checks(results)
    judge_label = str(results["judge"].iloc[0]) if "judge" in results.columns else name
    total, passed = len(results), int(results["passed"].sum())
    st.markdown(f"**{md_escape(judge_label)}**: {passed} of {total} cases passed ({passed / total:.0%})"
                + (f", rules {md_escape(results['prompt_version'].iloc[0])}" if "prompt_version" in results.columns else ""))
    table = pd.DataFrame({
        "kind": summary["kind"], "capability": summary["capability"],
        "passed": [f"{p} of {n}" for p, n in zip(summary["passed"], summary["n"])],
        "pass rate": [f"{r:.0%}" for r in summary["pass_rate"]],
        "abstained (unknown)": summary["abstained"].astype(int).astype(str)})
    _text_table(table)
    failed = results.loc[~results["passed"].astype(bool)]
    box = st.expander(f"Failed cases of {judge_label} ({len(failed)})", key=f"judges_failed_box_{name}",
                      on_change="rerun")
    if box.open:  # drawn only when opened
        if failed.empty:
            box.caption("Every case passed.")
        else:
            box.dataframe(pd.DataFrame({"case": failed["id"], "kind": failed["kind"], "capability": failed["capability"],
                                       "expected": failed["expected"].str.replace("|", " or ", regex=False),
                                       "got": failed["label"].fillna("no label (unparsed)")}),
                         hide_index=True, width="stretch", key=f"judges_failed_{name}")

st.subheader("What the papers report")
published = data.reference("judge_agreement_published")
if published.empty:
    st.warning("data/reference/judge_agreement_published.csv is missing.")
else:
    st.table(published, hide_index=True)
expertqa = data.reference("expertqa_reference")
if not expertqa.empty:
    one_source = "source" in expertqa.columns and expertqa["source"].nunique() == 1
    st.caption("ExpertQA's automatic attribution checks (AutoAIS) per system, against its experts"
               + (f" ({md_escape(expertqa['source'].iloc[0])}):" if one_source else ":"))
    shown = expertqa.drop(columns=["source"]) if one_source else expertqa
    _text_table(shown.rename(columns=EXPERTQA_COLUMNS).fillna("not printed").astype(str))  # every column in view
    st.caption("AutoAIS precision, recall and F1 with the TRUE NLI model zero-shot and fine-tuned on ExpertQA's "
               "labels; values are shares from 0 to 1, abstention as a percentage, as the paper prints them.")
    if "system" in shown.columns and (key := engine_key(shown["system"].astype(str))):
        st.caption(key)
