"""The pure parts of the support-only judges (`nli`, `minicheck`): source windows, the choice of the
entailment class from a model's labels, reading a Yes/No reply, thresholds. No model needed."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerances import close

from pipeline.judges.backends.llm_client import ChatReply, TokenChoice
from pipeline.judges.backends.minicheck import read_reply
from pipeline.judges.backends.nli import entailment_class
from pipeline.judges.backends.support_only import SupportThresholds
from pipeline.judges.backends.windows import char_windows, plan_windows, rank_windows, sentence_starts
from pipeline.judges.base import JudgeError

# ---------------------------------------------------------------- windows


def test_sentence_starts_after_end_marks_quotes_and_line_breaks():
    text = 'One. Two! "Three?" Four\nFive'
    assert sentence_starts(text) == [0, 5, 10, 19, 24]
    assert [text[i:i + 4] for i in sentence_starts(text)] == ["One.", "Two!", '"Thr', "Four", "Five"]
    assert sentence_starts("") == []


def test_windows_without_sentence_breaks_overlap_by_the_given_amount():
    # 10 units, windows of 4 overlapping by 1: [0,4) [3,7) [6,10)
    assert plan_windows(10, [], 4, 1) == [(0, 4), (3, 7), (6, 10)]
    assert plan_windows(3, [], 4, 1) == [(0, 3)]
    assert plan_windows(0, [], 4, 1) == []


def test_windows_end_and_start_at_sentence_breaks():
    # sentences start at 6 and 12: each window holds whole sentences, none is cut
    assert plan_windows(20, [6, 12], 10, 3) == [(0, 6), (6, 12), (12, 20)]
    text = "Alpha beta. Gamma delta. Epsilon zeta."
    assert [text[s:e] for s, e in char_windows(text, 14, 3)] == ["Alpha beta.", "Gamma delta.", "Epsilon zeta."]


@settings(max_examples=300, deadline=None)
@given(n=st.integers(0, 400), size=st.integers(1, 60), overlap=st.integers(0, 80),
       breaks=st.lists(st.integers(-5, 420), max_size=40))
def test_windows_cover_everything_within_bounds(n, size, overlap, breaks):
    windows = plan_windows(n, breaks, size, overlap)
    if n == 0:
        assert windows == []
        return
    assert windows[0][0] == 0 and windows[-1][1] == n
    marks = {b for b in breaks if 0 < b < n}
    for (s0, e0), (s1, _e1) in zip(windows, windows[1:]):
        assert s0 < s1 <= e0, "in order, no gap"
        assert e0 - s1 <= min(overlap, size - 1), "overlap bounded"
        assert s1 in marks or s1 == max(e0 - min(overlap, size - 1), s0 + (e0 - s0 + 1) // 2)
        assert e0 == s0 + size or e0 in marks, "a window ends at its size or at a sentence start"
    assert all(1 <= e - s <= size for s, e in windows)
    assert len(windows) <= 4 * n / size + 2


@settings(max_examples=100, deadline=None)
@given(text=st.text(alphabet="ab .!?\n", max_size=300), size=st.integers(1, 50), overlap=st.integers(0, 30))
def test_char_windows_are_trimmed_spans_of_the_text(text, size, overlap):
    spans = char_windows(text, size, overlap)
    for s, e in spans:
        piece = text[s:e]
        assert piece and piece == piece.strip() and e - s <= size
    if text.strip():
        covered = set().union(*(range(s, e) for s, e in spans))
        assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())


def test_rank_windows_keeps_the_windows_sharing_rare_statement_words():
    windows = ["apples and pears", "the reactor took 19 years", "reactor reactor", "pears again"]
    # idf over 4 windows: reactor log(1+4/2)=1.10, took and years log(1+4/1)=1.61 each
    assert rank_windows("The reactor took years", windows, 1) == [1]
    assert rank_windows("The reactor took years", windows, 2) == [1, 2]
    assert rank_windows("nothing shared", windows, 2) == [0, 1]  # ties: the earlier windows
    assert rank_windows("anything", windows[:2], 5) == [0, 1]


# ---------------------------------------------------------------- entailment class


@pytest.mark.parametrize("labels, index", [
    ({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}, 2),  # roberta-large-mnli style
    ({0: "entailment", 1: "neutral", 2: "contradiction"}, 0),  # DeBERTa MNLI style
    ({"0": "entailment", "1": "not_entailment"}, 0),  # RTE style: "not_entailment" is not a match
    ({0: "hallucinated", 1: "consistent"}, 1),  # HHEM's label names
    ({0: "unsupported", 1: "Supported"}, 1),
    ({"0": "0", "1": "1"}, 1),  # MiniCheck: unnamed classes, 1 = supported
    ({0: "LABEL_0", 1: "LABEL_1"}, 1),
    ({0: "LABEL_0"}, 0),  # one logit
])
def test_entailment_class_from_labels(labels, index):
    assert entailment_class(labels)[0] == index


def test_entailment_class_refuses_to_guess_and_takes_an_override():
    three = {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}
    with pytest.raises(JudgeError, match="AEE_NLI_ENTAILMENT_LABEL"):
        entailment_class(three)
    assert entailment_class(three, "LABEL_2")[0] == 2
    assert entailment_class(three, "label 1")[0] == 1  # compared as normalised names
    assert entailment_class(three, "0")[0] == 0
    with pytest.raises(JudgeError, match="not one of the model's classes"):
        entailment_class(three, "entailment")


# ---------------------------------------------------------------- thresholds


def test_thresholds_map_probabilities_to_labels():
    t = SupportThresholds()
    assert [t.label(p) for p in (0.0, 0.19, 0.2, 0.49, 0.5, 1.0)] == ["none", "none", "partial", "partial", "full", "full"]
    with pytest.raises(JudgeError):
        SupportThresholds(full=0.3, partial=0.6)


# ---------------------------------------------------------------- Yes/No replies


def test_read_reply_from_text_alone():
    assert read_reply(ChatReply("Yes")) == close((1.0, "text"))
    assert read_reply(ChatReply(" no.")) == close((0.0, "text"))
    assert read_reply(ChatReply("**Yes**")) == close((1.0, "text"))
    assert read_reply(ChatReply("Maybe")) is None
    assert read_reply(ChatReply("Yesterday")) is None
    assert read_reply(ChatReply("")) is None


def test_read_reply_from_logprobs():
    yes = TokenChoice("Yes", math.log(0.8), (("Yes", math.log(0.8)), ("No", math.log(0.15)), ("yes", math.log(0.02))))
    p, how = read_reply(ChatReply("Yes", (yes,)))
    assert how == "logprobs" and p == pytest.approx(0.82 / 0.97)
    # the answer token comes after white space; only the chosen token listed: No at 0.9, no Yes listed
    no = TokenChoice("No", math.log(0.9))
    p, how = read_reply(ChatReply(" No", (TokenChoice(" ", -0.01), no)))
    assert how == "logprobs" and p == close(0.0)
    # log-probabilities of some other first word: fall back to the text
    assert read_reply(ChatReply("Yes", (TokenChoice("Sure", -0.1),))) == close((1.0, "text"))
