"""The offline judge on the bundled check suite (relevance, stance, confidence cases) and on the
teaching corpus's hand labels. The targets of issue 13 are asserted, and the measured pass counts
are floors: a rule change that loses a case fails here instead of regressing silently (raise a
floor when the rules get better)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tolerances import close

from pipeline.importers.canonical import load_canonical
from pipeline.judges import get_judge
from pipeline.judges.measure.checks import hand_label_agreement, load_cases, run_checks, summarize_checks

DEMO = Path(__file__).resolve().parents[3] / "data" / "demo" / "answers.jsonl"
KINDS = ("relevance", "stance", "confidence")

# passed cases per (kind, capability) measured with offline-v1+cal3+cues-v2
FLOORS = {
    ("confidence", "booster-heavy answer"): 9,
    ("confidence", "hedged answer"): 7,
    ("confidence", "mixed hedges and boosters"): 5,
    ("confidence", "plain factual answer"): 7,
    ("confidence", "strongly hedged or unsure answer"): 4,
    ("relevance", "comment on the question or the topic"): 4,
    ("relevance", "direct answer to the query"): 4,
    ("relevance", "fact inside a filler frame"): 5,
    ("relevance", "fact with a number"): 5,
    ("relevance", "greeting or pleasantry"): 7,
    ("relevance", "heading"): 5,
    ("relevance", "list introduction"): 3,
    ("relevance", "list item with a fact"): 4,
    ("relevance", "named entity with a predicate"): 4,
    ("relevance", "offer of more help"): 5,
    ("relevance", "one-word answer"): 5,
    ("relevance", "restated question"): 6,
    ("relevance", "short factual answer"): 5,
    ("relevance", "sign-off"): 7,
    ("relevance", "talk about the engine itself"): 2,
    ("stance", "balanced or conditional remark"): 5,
    ("stance", "concession (although, despite) before the main claim"): 3,
    ("stance", "concluding verdict"): 24,
    ("stance", "contrast marker (however, but, on the other hand)"): 13,
    ("stance", "hedged opinion"): 13,
    ("stance", "neutral background fact"): 31,
    ("stance", "plain argument against the question's side"): 26,
    ("stance", "plain argument for the question's side"): 36,
    ("stance", "reported view (critics argue, supporters say)"): 31,
    ("stance", "stance cannot be told"): 8,
}


@pytest.fixture(scope="module")
def results():
    cases = [c for c in load_cases() if c.kind in KINDS]
    return run_checks(get_judge("offline", cache=False), cases)


@pytest.fixture(scope="module")
def summary(results):
    return summarize_checks(results).set_index(["kind", "capability"])


def test_suite_sizes(results):
    counts = results.groupby("kind").size().to_dict()
    assert counts["relevance"] >= 60 and counts["stance"] >= 90 and counts["confidence"] >= 30


def test_stance_target(summary):
    assert summary.loc[("stance", "(all)"), "pass_rate"] >= 0.80


def test_no_content_statement_is_filler(results):
    content = results[(results["kind"] == "relevance") & (results["expected"] == "relevant")]
    assert len(content) >= 30
    eaten = content[content["label"] == "filler"]
    assert eaten.empty, f"content statements labelled filler: {eaten['id'].tolist()}"


def test_issue_examples_stay_relevant():
    judge = get_judge("offline", cache=False)
    from pipeline.records import Answer, Statement

    for query, text in (("What is the melting point of silicon?", "The melting point of Silicon is 1414°C [1]."),
                        ("Where was Socrates born?", "Socrates was born in Alopeke [1].")):
        answer = Answer("x", "e", query, "expertise", text)
        [verdict] = judge.relevance(answer, [Statement("x", 0, text, citations=(1,))])
        assert verdict.label == "relevant", text


@pytest.mark.parametrize("key", sorted(FLOORS))
def test_capability_floors(summary, key):
    assert key in summary.index, f"capability {key} has no cases any more"
    assert summary.loc[key, "passed"] >= FLOORS[key], f"{key}: {summary.loc[key, 'passed']} < floor {FLOORS[key]}"


def test_every_capability_has_a_floor(summary):
    have = {k for k in summary.index if k[0] in KINDS and k[1] != "(all)"}
    assert have == set(FLOORS), f"capabilities without a floor: {sorted(have - set(FLOORS))}"


def test_teaching_corpus_hand_labels():
    report = hand_label_agreement(get_judge("offline", cache=False), load_canonical(DEMO))
    stance, filler, confidence = report["stance"], report["filler"], report["confidence"]
    assert stance["n"] == 62
    assert stance["accuracy"] >= 0.80 and stance["correct"] >= 55  # 55 of 62 measured
    assert filler["precision"] == close(1.0) and filler["recall"] == close(1.0)  # 22 of 22 filler, no content eaten
    assert confidence["n"] == 24 and confidence["exact"] >= 17 / 24 and confidence["within_one"] == close(1.0)
