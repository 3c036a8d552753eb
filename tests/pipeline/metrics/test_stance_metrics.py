"""Stance metrics with `unknown` labels: unknown statements are left out, and more than a third
of them makes the answer's value null with the reason. Every value below is worked out by hand."""

from __future__ import annotations

import pytest
from tolerances import close

from pipeline.annotate import annotate_answer
from pipeline.judges import get_judge
from pipeline.metrics import METRICS, ScoreConfig, score_answer
from pipeline.metrics.aee import MAX_UNKNOWN_STANCE
from pipeline.records import STANCE_LABELS, AnnotatedAnswer, Answer, Statement, Verdict

QUERY = "Why should cities ban cars from downtown?"


def _answer(stances: list[str | None], confidence: int = 3, query_type: str = "debate") -> AnnotatedAnswer:
    """A debate answer whose statements are all relevant, with these stance labels (None: no label)."""
    statements = tuple(Statement("a", i, f"Statement number {i}.") for i in range(len(stances)))
    answer = Answer("a", "engine", QUERY, query_type, " ".join(s.text for s in statements))  # type: ignore[arg-type]
    verdicts = [Verdict("a", "relevance", "relevant", "hand", "v1", statement_index=i) for i in range(len(stances))]
    verdicts += [Verdict("a", "stance", label, "hand", "v1", statement_index=i)
                 for i, label in enumerate(stances) if label is not None]
    verdicts.append(Verdict("a", "confidence", str(confidence), "hand", "v1"))
    return AnnotatedAnswer(answer, statements, tuple(verdicts))


def _scores(annotated: AnnotatedAnswer) -> dict:
    return score_answer(annotated, ScoreConfig("strict", "exact"))


def test_unknown_is_a_stance_label_and_the_limit_is_in_the_registry():
    assert "unknown" in STANCE_LABELS
    assert MAX_UNKNOWN_STANCE == pytest.approx(1 / 3)
    for name in ("one_sided", "statement_agreement", "overconfident"):
        assert METRICS[name].max_unknown_share == pytest.approx(1 / 3)
        assert METRICS[name].version == 2
    # relevance has its own limit: a relevance verdict `unknown` (audit labels) is left out up to half
    assert METRICS["relevant_statements"].max_unknown_share == pytest.approx(0.5)


def test_one_unknown_in_three_is_left_out():
    got = _scores(_answer(["agree", "disagree", "unknown"]))
    # 1 of 3 unknown is not more than a third: the known agree + disagree make the answer two-sided
    assert got["one_sided"].value == close(0.0) and got["one_sided"].n == 2
    assert "1 statement(s) with unknown stance left out" in got["one_sided"].reason
    assert got["statement_agreement"].value == pytest.approx(1 / 2) and got["statement_agreement"].n == 2


def test_two_unknown_in_three_make_the_stance_metrics_null():
    got = _scores(_answer(["agree", "unknown", "unknown"], confidence=5))
    for name in ("one_sided", "statement_agreement", "overconfident"):
        assert got[name].value is None, name
        assert "stance unknown for 2 of 3 relevant statements" in got[name].reason, name


def test_unknown_left_out_keeps_a_one_sided_answer_one_sided():
    got = _scores(_answer(["agree", "agree", "neutral", "unknown"], confidence=5))
    # 1 of 4 unknown; known labels {agree, neutral} have no disagree -> one-sided
    assert got["one_sided"].value == close(1.0) and got["one_sided"].n == 3
    assert got["statement_agreement"].value == close(1.0) and got["statement_agreement"].n == 2
    assert got["overconfident"].value == close(1.0)


def test_statements_without_a_stance_label_do_not_count_as_unknown():
    # labelled: agree, disagree, unknown (1 of 3); the fourth statement has no stance verdict at all
    got = _scores(_answer(["agree", None, "disagree", "unknown"]))
    assert got["one_sided"].value == close(0.0)
    assert got["statement_agreement"].value == pytest.approx(1 / 2)


def test_no_unknown_gives_the_old_values():
    got = _scores(_answer(["agree", "agree", "disagree", "neutral"]))
    assert got["one_sided"].value == close(0.0) and got["one_sided"].n == 4 and got["one_sided"].reason == ""
    assert got["statement_agreement"].value == pytest.approx(2 / 3)
    all_unknown = _scores(_answer(["unknown", "unknown"]))
    assert all_unknown["one_sided"].value is None and "2 of 2" in all_unknown["one_sided"].reason


def test_expertise_answers_are_untouched():
    got = _scores(_answer(["unknown", "unknown"], query_type="expertise"))
    assert got["one_sided"].value is None and got["one_sided"].reason == "defined for debate queries only"


def test_offline_judge_abstentions_reach_the_metric():
    """End to end: the offline judge cannot value 'trips fell' or 'parking spaces rose', says unknown,
    and the answer's one-sided value is null with the reason instead of a rating built on guesses."""
    texts = ["Trips by residents over 70 fell by 12 percent.", "Parking spaces at the edge rose by 300.",
             "Air inside the zone became cleaner after the ban."]
    statements = tuple(Statement("o", i, t) for i, t in enumerate(texts))
    answer = Answer("o", "engine", QUERY, "debate", " ".join(texts))
    annotated = annotate_answer(AnnotatedAnswer(answer, statements), get_judge("offline", cache=False))
    stances = [v.label for v in annotated.verdicts if v.kind == "stance"]
    assert stances == ["unknown", "unknown", "agree"]
    got = _scores(annotated)
    assert got["one_sided"].value is None and "stance unknown for 2 of 3" in got["one_sided"].reason
