"""How well a judge agrees with HAGRID's human labels (`judges evaluate --dataset hagrid`).

HAGRID's annotators said, for each sentence of an answer, whether the quotes it cites back it up
(`attributable`) and whether it answers the question (`informative`). `evaluate_hagrid(judge,
answers)` asks the judge the same questions and compares:

* support: every labelled sentence that cites at least one quote. A sentence citing one quote is
  compared through the judge's `support` on that quote; a sentence citing several through its
  `support_set` on all of them at once, which is what the annotators judged (a per-quote comparison
  would test the importer's approximation, not the judge). Positive = attributable 1; the judge
  says positive when its label is "full". Reported: AUC of the judge's score (its label when it has
  no score), balanced accuracy, Cohen's kappa, precision / recall / F1, overall and for single- and
  multi-citation sentences apart (`support_single`, `support_multi`), and a judge label x human
  label confusion matrix.
* relevance: the judge's relevant / filler against informative 1 / 0, on the sentences labelled.

The report has the same shape as ExpertQA's (`pipeline.judges.measure.agreement`), so the Judges page and
`save_agreement` read it as they are. A judge fitted on expert labels is checked for overlap with its
calibration questions the same way.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from pipeline.judges.base import Judge
from pipeline.judges.measure.agreement import binary_report, cohen_kappa, confusion, question_fingerprint
from pipeline.records import AnnotatedAnswer, Verdict

__all__ = ["evaluate_hagrid", "labelled_sentences"]

HUMAN_JUDGE = "human:hagrid"
JUDGE_ROWS = ("full", "partial", "none")
HUMAN_COLS = ("attributable", "not attributable")
RELEVANCE_ORDER = ("relevant", "filler")


def labelled_sentences(answers: Sequence[AnnotatedAnswer]) -> list[tuple[AnnotatedAnswer, int, tuple[int, ...], bool]]:
    """(answer, statement index, cited quotes, attributable?) for every sentence with an
    attributable label and at least one cited quote, read from the importer's human verdicts."""
    out = []
    for a in answers:
        labels: dict[int, bool] = {}
        for v in a.verdicts:
            if v.kind == "support" and v.judge == HUMAN_JUDGE and v.statement_index is not None and v.label is not None:
                labels[v.statement_index] = v.label == "full"
        for s in a.statements:
            if s.index in labels and s.citations:
                out.append((a, s.index, s.citations, labels[s.index]))
    return out


def _score(v: Verdict | None) -> float:
    if v is None:
        return 0.0
    return float(v.score) if v.score is not None else (1.0 if v.label == "full" else 0.0)


def evaluate_hagrid(judge: Judge, answers: list[AnnotatedAnswer], *, relevance: bool = True) -> dict[str, Any]:
    """Compare `judge`'s support (and relevance) with HAGRID's human labels (see module doc)."""
    t0 = time.perf_counter()
    items = labelled_sentences(answers)
    judge.prefetch(answers)
    # group the judge calls: one per (answer, quote) for single citations, per (answer, set) for several
    groups: dict[tuple[str, tuple[int, ...]], list[int]] = {}
    by_id = {}
    for a, si, cited, _ in items:
        groups.setdefault((a.answer.answer_id, cited), []).append(si)
        by_id[a.answer.answer_id] = a
    got: dict[tuple[str, int], Verdict] = {}
    for (aid, cited), indexes in groups.items():
        a = by_id[aid]
        statements = [s for s in a.statements if s.index in set(indexes)]
        sources = [s for s in (a.answer.source(i) for i in cited) if s is not None]
        verdicts = judge.support_set(a.answer, statements, sources) if len(sources) > 1 else judge.support(a.answer, statements, sources[0])
        for v in verdicts:
            if v.statement_index is not None:
                got[(aid, v.statement_index)] = v
    fitted_on = frozenset(getattr(judge, "calibration_questions", None) or ())
    rows = []  # (score, judge label, gold, multi?, in calibration?)
    for a, si, cited, gold in items:
        said = got.get((a.answer.answer_id, si))
        in_cal = bool(fitted_on) and question_fingerprint(a.answer.query) in fitted_on
        rows.append((_score(said), said.label if said else None, gold, len(cited) > 1, in_cal))

    def report(part: list[tuple[float, str | None, bool, bool, bool]]) -> dict[str, Any]:
        return binary_report([r[0] for r in part], [r[1] == "full" for r in part], [r[2] for r in part])

    out: dict[str, Any] = {
        "judge": getattr(judge, "name", str(judge)),
        "prompt_version": getattr(judge, "prompt_version", ""),
        "support": report(rows),
        "support_single": report([r for r in rows if not r[3]]),
        "support_multi": report([r for r in rows if r[3]]),
    }
    human = [HUMAN_COLS[0] if r[2] else HUMAN_COLS[1] for r in rows]
    out["support"]["confusion"] = {"rows": list(JUDGE_ROWS), "cols": list(HUMAN_COLS),
                                   "matrix": confusion([r[1] or "" for r in rows], human, JUDGE_ROWS, HUMAN_COLS).tolist()}
    out["support"]["unparsed"] = sum(1 for r in rows if r[1] is None)
    out["support"]["in_calibration"] = sum(1 for r in rows if r[4])
    if any(r[4] for r in rows):
        out["support_unseen"] = report([r for r in rows if not r[4]])
    calibration = getattr(judge, "calibration", None)
    if calibration:
        out["calibration"] = dict(calibration)
    out["support_seconds"] = round(time.perf_counter() - t0, 3)
    if relevance:
        out["relevance"] = _relevance(judge, answers)
    return out


def _relevance(judge: Judge, answers: Sequence[AnnotatedAnswer]) -> dict[str, Any]:
    pred: list[str] = []
    gold: list[str] = []
    for a in answers:
        human = {v.statement_index: v.label for v in a.verdicts
                 if v.kind == "relevance" and v.judge == HUMAN_JUDGE and v.label in RELEVANCE_ORDER}
        if not human:
            continue
        said = {v.statement_index: v.label for v in judge.relevance(a.answer, a.statements)}
        for si, label in human.items():
            gold.append(str(label))
            pred.append(said.get(si) or "")
    out = binary_report(None, [p == "filler" for p in pred], [g == "filler" for g in gold])
    out["kappa"] = cohen_kappa(pred, gold)
    out["confusion"] = {"rows": list(RELEVANCE_ORDER), "cols": list(RELEVANCE_ORDER),
                        "matrix": confusion(pred, gold, RELEVANCE_ORDER, RELEVANCE_ORDER).tolist()}
    return out
