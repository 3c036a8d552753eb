"""Labelled support pairs beyond ExpertQA, and how a judge ranks them against plain coverage.

A support judge is only worth its cost if it orders pairs better than the one-line baseline: the
share of the statement's content words found in its cited source (`coverage`). `compare` scores a
judge and that baseline on the same labelled pairs (AUC of "full" against the rest, and the judge's
balanced accuracy at its own threshold). The labelled sets:

- `check_pairs`: the support cases of the behavioural check suite (`data/judge_checks`), positive when
  "full" is an expected label;
- `teaching_pairs`: every statement x source with text of the teaching corpus (`data/demo`), with
  its hand labels (a source the labels do not list is "none");
- `expertqa_pairs`: the (claim, cited source) pairs ExpertQA's experts labelled, positive when
  "Complete".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from pipeline.judges.base import Judge
from pipeline.judges.measure import agreement
from pipeline.judges.offline.text import content_tokens, strip_markers
from pipeline.records import AnnotatedAnswer, Answer, Source, Statement

EXPERT_TO_LABEL = {"Complete": "full", "Partial": "partial", "Incomplete": "none"}


@dataclass(frozen=True)
class LabelledPair:
    answer: Answer
    statement: Statement
    source: Source
    label: str  # "full", "partial" or "none"
    group: str = ""  # capability (check suite), answer id (teaching corpus) or question (ExpertQA)


def coverage(statement: str, source: str) -> float:
    """Share of the statement's content words (stemmed, stopwords removed) found anywhere in the source."""
    want = set(content_tokens(strip_markers(statement)))
    if not want:
        return 0.0
    return len(want & set(content_tokens(source))) / len(want)


def check_pairs(cases: Iterable[Any]) -> list[LabelledPair]:
    """Support cases of the check suite as labelled pairs (`pipeline.judges.measure.checks.CheckCase`)."""
    from pipeline.judges.measure.checks import case_records

    out = []
    for case in cases:
        if case.kind != "support":
            continue
        answer, statement, source = case_records(case)
        out.append(LabelledPair(answer, statement, source, "full" if "full" in case.expect else case.expect[0],
                                case.capability))
    return out


def teaching_pairs(path: Path | None = None) -> list[LabelledPair]:
    """Every statement x source with text of the teaching corpus, with its hand label."""
    from pipeline.importers.canonical import load_canonical
    from pipeline.storage.paths import data_dir

    out = []
    for a in load_canonical(path or data_dir() / "demo" / "answers.jsonl"):
        labels = {(v.statement_index, v.source_index): v.label for v in a.verdicts
                  if v.kind == "support" and v.source_index is not None}
        for st in a.statements:
            for src in a.answer.sources:
                if (src.text or "").strip() and src.fetch_ok is not False:
                    out.append(LabelledPair(a.answer, st, src, labels.get((st.index, src.index), "none") or "none",
                                            a.answer.answer_id))
    return out


def expertqa_pairs(answers: Sequence[AnnotatedAnswer]) -> list[LabelledPair]:
    """The (claim, cited source) pairs ExpertQA's experts labelled against a passage."""
    out = []
    for a, si, src, raw in agreement.support_pairs(answers):
        source = a.answer.source(src)
        assert source is not None  # support_pairs keeps only listed sources
        out.append(LabelledPair(a.answer, a.statements[si], source, EXPERT_TO_LABEL[raw], a.answer.query))
    return out


def judge_scores(judge: Judge, pairs: Sequence[LabelledPair]) -> list[tuple[float, str]]:
    """(score, label) the judge gives each pair, calling it once per (answer, source) like the
    annotate stage."""
    groups: dict[tuple[str, int], list[int]] = {}
    for k, p in enumerate(pairs):
        groups.setdefault((p.answer.answer_id, p.source.index), []).append(k)
    out: list[tuple[float, str]] = [(0.0, "")] * len(pairs)
    for ks in groups.values():
        first = pairs[ks[0]]
        verdicts = judge.support(first.answer, [pairs[k].statement for k in ks], first.source)
        for k, v in zip(ks, verdicts):
            out[k] = (float(v.score) if v.score is not None else 0.0, v.label or "")
    return out


def compare(judge: Judge, pairs: Sequence[LabelledPair]) -> dict[str, Any]:
    """AUC of the judge's score and of plain coverage for "full" against the rest, on the same pairs,
    and the judge's balanced accuracy (label full vs not)."""
    judged = judge_scores(judge, pairs)
    positive = [p.label == "full" for p in pairs]
    cov = [coverage(p.statement.text, p.source.text or "") for p in pairs]
    return {
        "n": len(pairs), "n_full": sum(positive),
        "judge_auc": agreement.auc([s for s, _ in judged], positive),
        "coverage_auc": agreement.auc(cov, positive),
        "judge_balanced_accuracy": agreement.balanced_accuracy([lab == "full" for _, lab in judged], positive),
    }
