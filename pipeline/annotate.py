"""The annotate stage: the only place that asks a judge for labels.

A judge that carries its labels (`recorded`, `human`) keeps the verdicts the importer found in the
data. A computed judge labels the statements the data carries (AEE core statements, ExpertQA
claims) or, when there are none, the statements our splitter finds; it judges support only for
relevant statements against sources that have text, and support by several cited sources taken
together only where a metric needs it (`pipeline.set_support`). A pair whose source has no text or
could not be fetched gets an `unknown` support verdict saying so (`unchecked_support`), never "none". On debate queries it also asks
each listed source's own stance on the question (sources with text only).

Whatever the judge, an answer that carries gold answers also gets its BERTScore-style similarity
with each of them (`pipeline.gold.similarity`): a measurement by a fixed model, not a judge's label,
taken here because metrics never run models.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

from pipeline.gold.similarity import gold_similarity_verdicts
from pipeline.judges import Judge
from pipeline.records import SUPPORT_UNKNOWN, AnnotatedAnswer, Answer, Statement, Verdict, unchecked_text, unreadable_code
from pipeline.set_support import leave_one_out_groups, union_groups
from pipeline.text.text import statements_for

SUPPORT_SLICE = 50  # sources per support_many call (progress within an answer with hundreds of sources)


def carried(annotated: AnnotatedAnswer, judge_name: str) -> AnnotatedAnswer:
    """Keep only the verdicts of a carried judge ("recorded" or "human:...")."""
    keep = tuple(v for v in annotated.verdicts if v.judge == judge_name or v.judge.startswith(judge_name + ":"))
    return AnnotatedAnswer(annotated.answer, annotated.statements, keep)


def annotate_answer(annotated: AnnotatedAnswer, judge: Judge, progress: Callable[[str], None] | None = None) -> AnnotatedAnswer:
    """Every label of one answer (the carried ones, or a computed judge's), plus its similarity with
    its gold answers when it has any."""
    labelled = carried(annotated, judge.name) if judge.carries_labels else _judged(annotated, judge, progress)
    if not labelled.answer.gold:
        return labelled
    if progress:
        progress("similarity with the gold answers")
    similarity = gold_similarity_verdicts(labelled.answer)
    return AnnotatedAnswer(labelled.answer, labelled.statements, labelled.verdicts + tuple(similarity))


def _judged(annotated: AnnotatedAnswer, judge: Judge, progress: Callable[[str], None] | None) -> AnnotatedAnswer:
    """A computed judge's labels of one answer."""
    answer = annotated.answer
    statements = statements_for(annotated)
    verdicts: list[Verdict] = []
    relevance = judge.relevance(answer, statements) if statements else []
    verdicts.extend(relevance)
    filler = {v.statement_index for v in relevance if v.label == "filler"}
    relevant = [s for s in statements if s.index not in filler]
    if answer.query_type == "debate" and relevant:
        if progress:
            progress("stance")
        verdicts.extend(judge.stance(answer, relevant))
    if answer.query_type == "debate":
        with_text = [s for s in answer.sources if s.text.strip() and s.fetch_ok is not False]
        if with_text:
            if progress:
                progress("source stance")
            verdicts.extend(judge.source_stance(answer, with_text))
    verdicts.append(judge.confidence(answer))
    judged = [s for s in answer.sources if relevant and not unreadable_code(s)]
    support: list[Verdict] = []
    if len(judged) > 1:
        # the judge decides how to group sources into calls (an LLM judge packs short ones); a long
        # list goes in slices, so a large answer reports its progress (and an LLM judge packs within each)
        for start in range(0, len(judged), SUPPORT_SLICE):
            part = judged[start : start + SUPPORT_SLICE]
            if progress:
                progress(f"support: sources {', '.join(str(s.index) for s in part)}" if len(judged) <= SUPPORT_SLICE
                         else f"support: sources {start + 1}-{start + len(part)} of {len(judged)}")
            support.extend(judge.support_many(answer, relevant, part))
    elif judged:
        if progress:
            progress(f"source {judged[0].index}")
        support = judge.support(answer, relevant, judged[0])
    verdicts.extend(support)
    # support by several cited sources together, only where the attribution metrics read it
    verdicts.extend(set_support_verdicts(judge, answer, relevant, support, progress))
    verdicts.extend(unchecked_support(judge, answer, relevant))
    return AnnotatedAnswer(answer, statements, tuple(verdicts))


def unchecked_support(judge: Judge, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
    """An `unknown` support verdict, with the reason in raw, for each (statement, source) pair the
    judge was not asked about because the source has no text or could not be fetched: such a pair
    is not checked, never "does not support"."""
    out: list[Verdict] = []
    for source in answer.sources:
        code = unreadable_code(source)
        if not code:
            continue
        out.extend(Verdict(answer.answer_id, "support", SUPPORT_UNKNOWN, judge.name, judge.prompt_version,
                           raw=unchecked_text(code), statement_index=s.index, source_index=source.index)
                   for s in statements)
    return out


def annotate(answers: Iterable[AnnotatedAnswer], judge: Judge,
             on_answer: Callable[[AnnotatedAnswer], None] | None = None) -> list[AnnotatedAnswer]:
    """Label every answer with a judge (carried judges keep the labels found in the data)."""
    out = []
    for annotated in answers:
        result = annotate_answer(annotated, judge)
        out.append(result)
        if on_answer:
            on_answer(result)
    return out


def prompt_versions(answers: Iterable[AnnotatedAnswer]) -> set[str]:
    """Every prompt / rule-set version used in these verdicts."""
    return {v.prompt_version for a in answers for v in a.verdicts}


def set_support_verdicts(judge: Judge, answer: Answer, statements: Sequence[Statement], single_verdicts: Sequence[Verdict],
                         progress: Callable[[str], None] | None = None) -> list[Verdict]:
    """Ask the judge every set verdict the attribution metrics need for these (relevant) statements,
    given the single-source support verdicts already given for them."""
    out: list[Verdict] = []
    for sources, group in union_groups(answer, statements):
        if progress:
            progress(f"sources {', '.join(str(s.index) for s in sources)} together")
        out.extend(judge.support_set(answer, group, sources))
    union = {v.statement_index: v.label for v in out if v.statement_index is not None}
    single = {(v.statement_index, v.source_index): v.label for v in single_verdicts
              if v.kind == "support" and v.statement_index is not None and v.source_index is not None}
    for sources, group in leave_one_out_groups(answer, statements, single, union):
        if progress:
            progress(f"sources {', '.join(str(s.index) for s in sources)} together")
        out.extend(judge.support_set(answer, group, sources))
    return out
