"""The offline judge's stance and filler rules, piece by piece: the question parser (hand-checked
propositions and a negation property), the statement reader's mechanisms, and robustness on
arbitrary text. The check suite (tests/pipeline/judges/test_offline_cue_checks.py) measures them as a whole."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.judges.offline.cues import confidence_level, filler_cue
from pipeline.judges.offline.stance import parse_query, statement_stance
from pipeline.records import STANCE_LABELS


@pytest.mark.parametrize("query, form, sign, topic_word", [
    ("Why should cities ban cars from downtown?", "remove", -1, "car"),
    ("Should TikTok be banned?", "remove", -1, "tiktok"),
    ("Why should zoos not be closed?", "remove", 1, "zoo"),
    ("Why should primary schools stop assigning homework?", "remove", -1, "homework"),
    ("Is nuclear power a good way to fight climate change?", "evaluate", 1, "nuclear"),
    ("Is social media harmful to teenagers?", "evaluate", -1, "media"),
    ("Does rent control work?", "effect", 1, "rent"),
    ("Do speed cameras reduce accidents?", "effect", 1, "camera"),
    ("Does vaping cause lung damage?", "effect", -1, "vap"),
    ("Why should voting be compulsory?", "adopt", 1, "vot"),
    ("Why should the minimum wage not be raised to $20?", "adopt", -1, "wag"),
])
def test_question_propositions(query, form, sign, topic_word):
    prop = parse_query(query)
    assert (prop.form, prop.sign) == (form, sign), prop.describe()
    assert topic_word in prop.topic, prop.describe()
    assert "cities" not in prop.topic and "school" not in prop.topic  # who acts is not what is debated


WORD = st.sampled_from(["plastic bags", "zoos", "fireworks", "tipping", "homework", "nuclear plants", "the penny",
                        "speed cameras", "daylight saving time", "private cars"])


@given(WORD, st.sampled_from(["banned", "abolished", "prohibited", "closed"]))
def test_a_negation_flips_the_question_side(thing, verb):
    assert parse_query(f"Why should {thing} be {verb}?").sign == -1
    assert parse_query(f"Why should {thing} not be {verb}?").sign == 1
    assert parse_query(f"Why shouldn't {thing} be {verb}?").sign == 1


@pytest.mark.parametrize("statement, label", [
    # removal turns the cue round: good news about a ban is against the banned thing
    ("Car-free streets are dramatically safer.", "agree"),
    ("Banning cars from downtown is clearly the right move.", "agree"),
    ("Shops reported lower sales after the ban.", "disagree"),
    # the topic's own harm
    ("Cars pollute the air and cause most injuries in the centre.", "agree"),
    # an opening contrast marker only marks a turn; a conceded clause is ignored
    ("However, the ban hurt small shops that sell bulky goods.", "disagree"),
    ("Although some shops lost customers, the ban cut pedestrian injuries sharply.", "agree"),
    # reported views: the group's side when the content says little
    ("Critics argue that the policy goes too far.", "disagree"),
    ("Supporters point to the quieter streets.", "agree"),
    # no evaluative content, a balanced remark, a change the rules cannot value
    ("The zone covers about two square kilometres.", "neutral"),
    ("How well a ban works depends on the buses that replace car trips.", "neutral"),
    ("Trips into the centre by residents over 70 fell by 12 percent.", "unknown"),
])
def test_statement_readings(statement, label):
    reading = statement_stance(statement, parse_query("Why should cities ban cars from downtown?"))
    assert reading.label == label, reading.details


def test_unknown_says_why():
    reading = statement_stance("Trips by residents over 70 fell by 12 percent.",
                               parse_query("Why should cities ban cars from downtown?"))
    assert reading.label == "unknown" and reading.details["why_unknown"] == "a change in something the rules cannot value"
    assert reading.details["unresolved_changes"] == ["fell"]


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=400), st.text(max_size=120))
def test_any_text_gets_a_label(statement, query):
    reading = statement_stance(statement, parse_query(query))
    assert reading.label in STANCE_LABELS
    cue, _fact = filler_cue(statement, query)
    assert isinstance(cue, str)
    level, raw, _cue = confidence_level(statement)
    assert 1 <= level <= 5 and raw["sentences"] >= 1


def test_long_statements_are_bounded():
    text = "However, critics argue that in some cases the ban is costly, " * 2000
    start = time.perf_counter()
    reading = statement_stance(text, parse_query("Should fireworks be banned?"))
    assert reading.label in STANCE_LABELS
    assert time.perf_counter() - start < 5  # generous: the reader sees at most 2,000 characters


@pytest.mark.parametrize("statement, query, is_filler", [
    ("Hi John, thanks for asking!", "Who wrote Middlemarch?", True),
    ("Absolutely.", "Is the Great Wall of China visible from orbit?", False),  # a direct yes/no answer
    ("Absolutely!", "Can you explain how tides work?", True),  # a request, not a yes/no question
    ("Good luck!", "How do I prepare for a marathon?", True),
    ("Sure, a marathon is 42.195 km long.", "How long is a marathon?", False),
    ("Let me know if you want the 2024 figures as well.", "How many people ran the London marathon?", True),
])
def test_filler_keeps_facts_only(statement, query, is_filler):
    cue, fact = filler_cue(statement, query)
    assert bool(cue) == is_filler, (cue, fact)
