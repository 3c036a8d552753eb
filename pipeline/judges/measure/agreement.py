"""How well a judge agrees with the ExpertQA experts.

`evaluate_support(judge, answers)` runs the judge's `support` on every (claim, cited source) pair
that the experts labelled against a passage the data carries (systems rr_* and post_hoc_*; gpt4 and
bing_chat evidence is a bare URL, so a judge would have no text) and compares:

* support: AUC of the judge's score against "Complete", balanced accuracy, Cohen's kappa and
  precision / recall / F1 of the binary decision full vs not-full; a 3 x 3 confusion matrix
  (judge full/partial/none x expert Complete/Partial/Incomplete) and the three-way kappa.
* relevance: the judge's relevant/filler against informativeness mapped as in the importer
  (Very relevant, A bit relevant -> relevant; Not too important, Uninformative -> filler), on all
  claims of the same answers: balanced accuracy, kappa, confusion.

Held-out or not: a judge fitted on expert labels (the offline judge) lists the questions it was
calibrated on as `calibration_questions`, fingerprints made by `question_fingerprint`. The report
counts the compared pairs whose question is among them (`support.in_calibration`) and, when there
are any, scores the other pairs on their own (`support_unseen`): a number measured on the judge's
own fitting data says little about new answers. The judge's `calibration` summary (what it was
fitted on, its cross-validated agreement) is copied into the report.

All statistics are plain numpy (no sklearn). `save_agreement(report, dataset, judge)` writes one
Parquet row per statistic under `results_dir()/agreement/` atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from pipeline.judges.base import Judge
from pipeline.records import AnnotatedAnswer
from pipeline.storage.paths import results_dir

HUMAN_JUDGE = "human:expertqa"
SUPPORT_ORDER = ("full", "partial", "none")
EXPERT_ORDER = ("Complete", "Partial", "Incomplete")
RELEVANCE_ORDER = ("relevant", "filler")
PASSAGE_SYSTEM_PREFIXES = ("rr_", "post_hoc_")

# --------------------------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------------------------


def auc(scores: Sequence[float] | np.ndarray, positives: Sequence[bool]) -> float | None:
    """Area under the ROC curve = P(score of a random positive > random negative), ties count
    one half (Mann-Whitney with mid-ranks). None when one class is empty."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(positives, dtype=bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s), dtype=np.float64)
    sorted_s = s[order]
    i = 0
    while i < len(s):  # average ranks over ties
        j = i
        while j + 1 < len(s) and sorted_s[j + 1] == sorted_s[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def confusion(pred: Sequence[str], gold: Sequence[str], pred_labels: Sequence[str], gold_labels: Sequence[str]) -> np.ndarray:
    """Counts, rows = predicted label, columns = gold label (pairs with other labels are ignored)."""
    m = np.zeros((len(pred_labels), len(gold_labels)), dtype=np.int64)
    pi = {k: i for i, k in enumerate(pred_labels)}
    gi = {k: i for i, k in enumerate(gold_labels)}
    for p, g in zip(pred, gold):
        if p in pi and g in gi:
            m[pi[p], gi[g]] += 1
    return m


def cohen_kappa(pred: Sequence[Any], gold: Sequence[Any]) -> float | None:
    """Cohen's kappa between two labelings of the same items (labels compared as equal values).
    None when there are no items or chance agreement is 1."""
    if len(pred) != len(gold):
        raise ValueError("pred and gold differ in length")
    n = len(pred)
    if n == 0:
        return None
    labels = sorted(set(pred) | set(gold), key=str)
    m = confusion(list(pred), list(gold), labels, labels).astype(np.float64)
    po = np.trace(m) / n
    pe = float((m.sum(1) * m.sum(0)).sum()) / (n * n)
    if pe >= 1.0:
        return None
    return float((po - pe) / (1.0 - pe))


def balanced_accuracy(pred: Sequence[Any], gold: Sequence[Any]) -> float | None:
    """Mean over gold classes of the recall of that class. None when there are no items."""
    if len(pred) != len(gold):
        raise ValueError("pred and gold differ in length")
    if not gold:
        return None
    recalls = []
    for c in sorted(set(gold), key=str):
        idx = [i for i, g in enumerate(gold) if g == c]
        recalls.append(sum(1 for i in idx if pred[i] == c) / len(idx))
    return float(np.mean(recalls))


def precision_recall_f1(pred: Sequence[bool], gold: Sequence[bool]) -> dict[str, float | None]:
    tp = sum(1 for p, g in zip(pred, gold) if p and g)
    fp = sum(1 for p, g in zip(pred, gold) if p and not g)
    fn = sum(1 for p, g in zip(pred, gold) if g and not p)
    prec = tp / (tp + fp) if tp + fp else None
    rec = tp / (tp + fn) if tp + fn else None
    f1 = 2 * prec * rec / (prec + rec) if prec and rec else (0.0 if prec is not None and rec is not None else None)
    return {"precision": prec, "recall": rec, "f1": f1}


def binary_report(scores: Sequence[float] | None, pred: Sequence[bool], gold: Sequence[bool]) -> dict[str, Any]:
    """AUC (if scores), balanced accuracy, kappa and P/R/F1 of a binary decision."""
    out: dict[str, Any] = {"n": len(gold), "n_positive": int(sum(gold))}
    out["auc"] = auc(scores, gold) if scores is not None else None
    out["balanced_accuracy"] = balanced_accuracy(list(pred), list(gold))
    out["kappa"] = cohen_kappa(list(pred), list(gold))
    out.update(precision_recall_f1(pred, gold))
    return out


# --------------------------------------------------------------------------------------------
# ExpertQA comparison
# --------------------------------------------------------------------------------------------


def question_fingerprint(question: str) -> str:
    """A short, stable hash of a question (case and spacing ignored). Calibration stores these
    instead of the questions, so a judge can say which questions it was fitted on without carrying
    the data."""
    norm = re.sub(r"\s+", " ", question or "").strip().lower()
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()[:16]


def _has_passages(a: AnnotatedAnswer) -> bool:
    return a.answer.engine.startswith(PASSAGE_SYSTEM_PREFIXES)


def support_pairs(answers: Iterable[AnnotatedAnswer]) -> list[tuple[AnnotatedAnswer, int, int, str]]:
    """(answer, statement index, source index, expert raw label) for every expert support verdict
    on a source with text, in answers from passage-carrying systems."""
    out = []
    for a in answers:
        if not _has_passages(a):
            continue
        for v in a.verdicts:
            if (v.kind == "support" and v.judge == HUMAN_JUDGE and v.statement_index is not None
                    and v.source_index is not None and v.raw in EXPERT_ORDER):
                src = a.answer.source(v.source_index)
                if src is not None and src.text:
                    out.append((a, v.statement_index, v.source_index, v.raw))
    return out


def evaluate_support(judge: Judge, answers: list[AnnotatedAnswer], *, relevance: bool = True) -> dict[str, Any]:
    """Compare `judge`'s support (and relevance) verdicts with the experts' (see module doc)."""
    t0 = time.perf_counter()
    pairs = support_pairs(answers)
    judge.prefetch([a for a in answers if _has_passages(a)])
    # group by (answer, source) so each judge call gets all statements for one source
    groups: dict[tuple[str, int], list[tuple[int, str]]] = {}
    by_id = {}
    for a, si, src, raw in pairs:
        groups.setdefault((a.answer.answer_id, src), []).append((si, raw))
        by_id[a.answer.answer_id] = a
    scores: list[float] = []
    labels: list[str | None] = []
    gold: list[str] = []
    seen: list[bool] = []  # the pair's question was in the judge's calibration data
    fitted_on = frozenset(getattr(judge, "calibration_questions", None) or ())
    for (aid, src_idx), items in groups.items():
        a = by_id[aid]
        stmts = [a.statements[si] for si, _ in items]
        source = a.answer.source(src_idx)
        assert source is not None  # support_pairs keeps only pairs whose source is listed
        verdicts = judge.support(a.answer, stmts, source)
        got = {v.statement_index: v for v in verdicts}
        in_cal = bool(fitted_on) and question_fingerprint(a.answer.query) in fitted_on
        for si, raw in items:
            v = got.get(si)
            seen.append(in_cal)
            gold.append(raw)
            labels.append(v.label if v else None)
            s = v.score if v is not None and v.score is not None else (1.0 if v and v.label == "full" else 0.0)
            scores.append(float(s))
    t_support = time.perf_counter() - t0
    is_complete = [g == "Complete" for g in gold]
    pred_full = [lab == "full" for lab in labels]
    report: dict[str, Any] = {
        "judge": getattr(judge, "name", str(judge)),
        "prompt_version": getattr(judge, "prompt_version", ""),
        "support": binary_report(scores, pred_full, is_complete),
        "support_seconds": round(t_support, 3),
    }
    three_gold = {"Complete": "full", "Partial": "partial", "Incomplete": "none"}
    report["support"]["kappa_3way"] = cohen_kappa([lab or "" for lab in labels], [three_gold[g] for g in gold])
    report["support"]["confusion"] = {
        "rows": list(SUPPORT_ORDER), "cols": list(EXPERT_ORDER),
        "matrix": confusion([lab or "" for lab in labels], gold, SUPPORT_ORDER, EXPERT_ORDER).tolist(),
    }
    report["support"]["unparsed"] = sum(1 for lab in labels if lab is None)
    report["support"]["in_calibration"] = sum(seen)
    if any(seen):
        keep = [not k for k in seen]
        pick = lambda xs: [x for x, k in zip(xs, keep) if k]  # noqa: E731
        report["support_unseen"] = binary_report(pick(scores), pick(pred_full), pick(is_complete))
    report.update(_by_claim_sources(judge, pairs, by_id, scores, pred_full, is_complete))
    calibration = getattr(judge, "calibration", None)
    if calibration:
        report["calibration"] = dict(calibration)
    if relevance:
        report["relevance"] = evaluate_relevance(judge, answers)
    return report


def _by_claim_sources(judge: Judge, pairs: Sequence[tuple[AnnotatedAnswer, int, int, str]], by_id: dict[str, AnnotatedAnswer],
                      scores: Sequence[float], pred_full: Sequence[bool], is_complete: Sequence[bool]) -> dict[str, Any]:
    """The comparison split by what the experts judged. `support_single`: the pairs of claims with
    one labelled source, where the expert's label is a fact about that pair. `support_multi`: claims
    with several, where the experts judged all of a claim's evidence at once and the importer copies
    that one label to each pair (docs/data/expertqa.md): the judge's verdict on those sources taken
    together (`support_set`) against it, one row per claim. A judge that labels each pair on its own
    source, as it should, can disagree with a copied label on a pair without being wrong; the pooled
    `support` counts such pairs as disagreements. `scores`, `pred_full` and `is_complete` are the
    pooled comparison's, in the order of `pairs` grouped by (answer, source)."""
    per_claim: dict[tuple[str, int], list[int]] = {}
    for a, si, src, _ in pairs:
        per_claim.setdefault((a.answer.answer_id, si), []).append(src)
    order = {}  # (answer, source, statement) -> position in the pooled lists
    k = 0
    grouped: dict[tuple[str, int], list[int]] = {}
    for a, si, src, _ in pairs:
        grouped.setdefault((a.answer.answer_id, src), []).append(si)
    for (aid, src), sis in grouped.items():
        for si in sis:
            order[(aid, src, si)] = k
            k += 1
    single = [order[(aid, srcs[0], si)] for (aid, si), srcs in per_claim.items() if len(srcs) == 1]
    out: dict[str, Any] = {}
    if single:
        out["support_single"] = binary_report([scores[i] for i in single], [pred_full[i] for i in single],
                                              [is_complete[i] for i in single])
    multi = [(aid, si, srcs) for (aid, si), srcs in per_claim.items() if len(srcs) > 1]
    if multi and callable(getattr(judge, "support_set", None)):
        m_scores, m_pred, m_gold = [], [], []
        for aid, si, srcs in multi:
            a = by_id[aid]
            sources = [s for s in (a.answer.source(i) for i in sorted(srcs)) if s is not None]
            said = next(iter(judge.support_set(a.answer, [a.statements[si]], sources)), None)
            m_scores.append(float(said.score) if said is not None and said.score is not None else 0.0)
            m_pred.append(said is not None and said.label == "full")
            m_gold.append(is_complete[order[(aid, srcs[0], si)]])
        out["support_multi"] = binary_report(m_scores, m_pred, m_gold)
    return out


def evaluate_relevance(judge: Any, answers: list[AnnotatedAnswer]) -> dict[str, Any]:
    """Judge relevance vs the experts' informativeness (mapped to relevant/filler)."""
    pred: list[str] = []
    gold: list[str] = []
    for a in answers:
        if not _has_passages(a):
            continue
        human = {v.statement_index: v.label for v in a.verdicts
                 if v.kind == "relevance" and v.judge == HUMAN_JUDGE and v.label in RELEVANCE_ORDER}
        if not human:
            continue
        got = {v.statement_index: v.label for v in judge.relevance(a.answer, a.statements)}
        for si, lab in human.items():
            gold.append(lab)
            pred.append(got.get(si) or "")
    out = binary_report(None, [p == "filler" for p in pred], [g == "filler" for g in gold])
    out["balanced_accuracy"] = balanced_accuracy(pred, gold)
    out["kappa"] = cohen_kappa(pred, gold)
    out["confusion"] = {"rows": list(RELEVANCE_ORDER), "cols": list(RELEVANCE_ORDER),
                        "matrix": confusion(pred, gold, RELEVANCE_ORDER, RELEVANCE_ORDER).tolist()}
    return out


# --------------------------------------------------------------------------------------------
# persistence
# --------------------------------------------------------------------------------------------


def _flatten(report: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    rows = []
    for k, v in report.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            rows.extend(_flatten(v, key + "."))
        else:
            rows.append((key, v))
    return rows


def agreement_path(dataset: str, judge: str) -> Path:
    """Where `save_agreement` writes one judge's report on one dataset ("offline:lexical" ->
    `expertqa-rand_val__offline_lexical.parquet`)."""
    safe = lambda s: "".join(c if c.isalnum() or c in "-_." else "_" for c in s)  # noqa: E731
    return results_dir() / "agreement" / f"{safe(dataset)}__{safe(judge)}.parquet"


def save_agreement(report: dict[str, Any], dataset: str, judge: str) -> Path:
    """Write the report as Parquet (columns dataset, judge, metric, value, value_json) under
    `results_dir()/agreement/<dataset>__<judge>.parquet`, atomically; return the path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = agreement_path(dataset, judge)
    out_dir = path.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = _flatten(report)
    values = [float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None for _, v in rows]
    table = pa.table({
        "dataset": pa.array([dataset] * len(rows), pa.string()),
        "judge": pa.array([judge] * len(rows), pa.string()),
        "metric": pa.array([k for k, _ in rows], pa.string()),
        "value": pa.array(values, pa.float64()),
        "value_json": pa.array([json.dumps(v) for _, v in rows], pa.string()),
    })
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=".agreement.", suffix=".parquet.tmp")
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
