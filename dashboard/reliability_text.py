"""How far a judge's labels can be trusted, in words: one line for a header, sentences for a panel.

Read from the saved measurements (agreement with expert labels, `aee judges evaluate`; behavioural
checks, `aee judges check`), never computed here. Every page, the HTML answer report and the
cached loaders in `dashboard.data` take these sentences from this one module, which imports
nothing else from the dashboard.
"""

from __future__ import annotations

import pandas as pd

from pipeline.judges import JUDGES, carries_labels, registry_entry
from pipeline.judges.carried import AUDIT_JUDGE
from pipeline.storage.store import judge_dirname

__all__ = ["reliability_summary", "reliability_lines"]


def _agreement_values(frame: pd.DataFrame) -> dict[str, float]:
    out = {}
    for rec in frame.to_dict("records"):
        value = rec.get("value")
        if value is not None and value == value:
            out[str(rec.get("metric") or "")] = float(value)
    return out


def _judge_agreement(judge: str, agreement: pd.DataFrame | None) -> dict[str, dict[str, float]]:
    """{dataset: {flattened statistic: value}} of this judge's saved agreement reports."""
    if agreement is None or not len(agreement):
        return {}
    part = agreement[agreement["judge"].map(lambda j: judge_dirname(str(j))) == judge_dirname(judge)]
    return {str(dataset): _agreement_values(rows) for dataset, rows in part.groupby("dataset", sort=True)}


def _check_counts(checks: pd.DataFrame | None) -> dict[str, tuple[int, int]]:
    """{kind: (passed, cases)} of a judge's saved behavioural checks."""
    if checks is None or not len(checks) or not {"kind", "passed"} <= set(checks.columns):
        return {}
    return {str(kind): (int(rows["passed"].sum()), len(rows)) for kind, rows in checks.groupby("kind", sort=True)}


def _is_audit(judge: str) -> bool:
    """The people's audit labels (`human:audit`, or its folder name)."""
    return judge in (AUDIT_JUDGE, judge_dirname(AUDIT_JUDGE))


def reliability_summary(judge: str, agreement: pd.DataFrame | None = None, checks: pd.DataFrame | None = None) -> str:
    """The judge's measured reliability in one line ("offline judge: AUC 0.70 against experts on
    expertqa-rand_val (held out), 86% on 321 behavioural checks"); where a figure was never measured
    here, the line says so and names the command that measures it."""
    base = judge.partition(":")[0]
    if _is_audit(judge):
        return ("human:audit labels: what the people who audited a sample here said (each item's majority); "
                "items nobody audited are unknown")
    if base == "fitted":
        return ("fitted judge: support labels learnt from people's audit labels over another judge's signals; what it "
                "was fitted to and its agreement with held-out labels are on the Audit page (Fit a judge)")
    if carries_labels(judge):
        return ("human labels: the experts' own labels, the reference the judges are measured against" if base == "human"
                else f"{judge} labels: recorded with the data; nobody re-judged them here")
    if base == "scripted":
        return "scripted judge: fixed word-overlap rules for tests and demos; its labels mean nothing"
    parts = []
    support = [(d, v) for d, v in _judge_agreement(judge, agreement).items() if "support.n" in v]
    if support:
        # prefer a held-out measurement: pairs from questions the judge was never calibrated on
        def rank(item: tuple[str, dict[str, float]]) -> tuple[int, str]:
            seen, unseen = item[1].get("support.in_calibration", 0), "support_unseen.auc" in item[1]
            return (0 if not seen else 1 if unseen else 2), item[0]

        dataset, v = min(support, key=rank)
        held_out = not v.get("support.in_calibration")
        auc = v.get("support.auc") if held_out else v.get("support_unseen.auc")
        if auc is not None:
            parts.append(f"AUC {auc:.2f} against experts on {dataset}" + (" (held out)" if held_out else " (unseen questions)"))
    if not parts:
        parts.append(f"agreement with experts not measured here (aee judges evaluate --dataset expertqa --judge {judge})")
    counts = _check_counts(checks)
    if counts:
        passed, total = sum(p for p, _ in counts.values()), sum(n for _, n in counts.values())
        support_part = f" (support {counts['support'][0] / counts['support'][1]:.0%})" if "support" in counts else ""
        parts.append(f"{passed / total:.0%} of {total} behavioural checks passed{support_part}")
    else:
        parts.append(f"behavioural checks not run here (aee judges check --judge {judge})")
    return f"{judge} judge: " + ", ".join(parts)


def reliability_lines(judge: str, agreement: pd.DataFrame | None = None, checks: pd.DataFrame | None = None,
                      illustrative: bool = False) -> list[str]:
    """Plain sentences on how far this judge's labels can be trusted: what kind of judge it is, its
    measured agreement with the ExpertQA experts, and its behavioural-check pass rates."""
    base = judge.partition(":")[0]
    info = (registry_entry(judge)  # a judge id ("offline:lexical", "openai:gpt-4o"), else a results folder name
            or next((i for i in JUDGES.values() if judge_dirname(i.name) == judge), None)  # "offline_lexical"
            or JUDGES.get(base.partition("_")[0]))  # "openai_gpt-4o"
    # registry descriptions are written for markdown pages: here they are plain sentences
    lines = [info.description.replace("`", "") if info else f"Judge {judge} (not in the registry)."]
    if _is_audit(judge):
        lines.append("People label what they see, and people disagree: the Judges page shows how often each person "
                     "agrees with the others (Krippendorff's alpha) and with the judge. Only the audited items carry "
                     "a label here, so most of the scorecard reads n/a; the Scorecard's corrected values extend the "
                     "audit to every item.")
        return lines
    if base == "fitted":
        lines.append("Its support labels are a model's reading of people's audit labels; its agreement with the labels "
                     "it never saw, beside the audited judge's, is on the Audit page (Fit a judge).")
        return lines
    if carries_labels(judge):
        if base == "human":
            lines.append("These expert labels are the reference the automatic judges are measured against; "
                         "experts also disagree with each other, so they are not infallible.")
        else:
            lines.append("Nobody re-judged these labels here: they are as trustworthy as whoever recorded them"
                         + (" (in the illustrative teaching corpus, invented for teaching)." if illustrative else "."))
        return lines
    found = False
    for dataset, v in _judge_agreement(judge, agreement).items():
        if "support.n" in v:
            found = True
            seen = int(v.get("support.in_calibration", 0))
            lines.append(
                f"Support against the ExpertQA experts on {dataset}: "
                + ", ".join(f"{name} {v[key]:.3f}" for key, name in (
                    ("support.auc", "AUC"), ("support.balanced_accuracy", "balanced accuracy"),
                    ("support.kappa", "Cohen's kappa")) if key in v)
                + f" over {int(v['support.n'])} pairs"
                + (f" ({seen} of them from questions the judge was calibrated on)." if seen else " (none used in its calibration)."))
        if "relevance.n" in v:
            found = True
            lines.append(
                f"Relevance against the experts on {dataset}: "
                + ", ".join(f"{name} {v[key]:.3f}" for key, name in (
                    ("relevance.balanced_accuracy", "balanced accuracy"), ("relevance.kappa", "Cohen's kappa"))
                    if key in v)
                + f" over {int(v['relevance.n'])} statements.")
    if not found:
        lines.append("No measurement against expert labels is saved for this judge: its labels are unchecked. "
                     f"Measure it with: aee judges evaluate --dataset expertqa --judge {judge}")
    counts = _check_counts(checks)
    if counts:
        lines.append("Behavioural checks passed: " + ", ".join(f"{kind} {p}/{n}" for kind, (p, n) in counts.items()) + ".")
    else:
        lines.append(f"No behavioural check results are saved for this judge. Run them with: aee judges check --judge {judge}")
    lines.append("Kappa 0 means chance agreement and 1 perfect; differences between engines smaller than the judge's "
                 "disagreement with experts should not be read as real.")
    return lines
