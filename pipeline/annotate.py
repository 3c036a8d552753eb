"""The annotate stage: the only place that asks a judge for labels.

Carried judges (`recorded`, `human`) keep the verdicts the importer found in the data. A real
judge labels the statements the data carries (AEE core statements, ExpertQA claims) or, when
there are none, the statements our splitter finds; it judges support only for relevant statements
against sources that have text.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

from pipeline.judges import CARRIED_JUDGES, Judge
from pipeline.records import AnnotatedAnswer, Statement, Verdict
from pipeline.text import split_statements


def carried(annotated: AnnotatedAnswer, judge_name: str) -> AnnotatedAnswer:
    """Keep only the verdicts of a carried judge ("recorded" or "human:...")."""
    keep = tuple(v for v in annotated.verdicts if v.judge == judge_name or v.judge.startswith(judge_name + ":"))
    return AnnotatedAnswer(annotated.answer, annotated.statements, keep)


def statements_for(annotated: AnnotatedAnswer) -> tuple[Statement, ...]:
    """Statements carried by the data, or those the splitter finds in the answer text."""
    if annotated.statements:
        return annotated.statements
    answer = annotated.answer
    urls = {s.url: s.index for s in answer.sources if s.url}
    return tuple(split_statements(answer.answer_id, answer.text, {s.index for s in answer.sources}, urls))


def annotate_answer(annotated: AnnotatedAnswer, judge: Judge, progress: Callable[[str], None] | None = None) -> AnnotatedAnswer:
    """Ask a judge for every label of one answer."""
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
    verdicts.append(judge.confidence(answer))
    judged = [s for s in answer.sources if relevant and s.text.strip() and s.fetch_ok is not False]
    many = getattr(judge, "support_many", None)
    if many is not None and len(judged) > 1:
        # the judge decides how to group sources into calls (an LLM judge packs short ones)
        if progress:
            progress(f"sources {', '.join(str(s.index) for s in judged)}")
        verdicts.extend(many(answer, relevant, judged))
    else:
        for source in judged:
            if progress:
                progress(f"source {source.index}")
            verdicts.extend(judge.support(answer, relevant, source))
    return AnnotatedAnswer(answer, statements, tuple(verdicts))


def annotate(
    answers: Sequence[AnnotatedAnswer],
    judge_name: str,
    judge: Judge | None = None,
    on_answer: Callable[[AnnotatedAnswer], None] | None = None,
) -> list[AnnotatedAnswer]:
    """Label every answer with a judge (or keep the carried labels of `recorded` / `human`)."""
    out = []
    for annotated in answers:
        if judge_name in CARRIED_JUDGES:
            result = carried(annotated, judge_name)
        else:
            if judge is None:
                raise ValueError(f"judge {judge_name!r} needs a backend object")
            result = annotate_answer(annotated, judge)
        out.append(result)
        if on_answer:
            on_answer(result)
    return out


def prompt_versions(answers: Iterable[AnnotatedAnswer]) -> set[str]:
    """Every prompt / rule-set version used in these verdicts."""
    return {v.prompt_version for a in answers for v in a.verdicts}
