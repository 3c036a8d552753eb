"""The offline judge's meaning signals (issue 40): the WordNet table it ships, the soft word shares,
the sentences it embeds, the cosine windows, the fitted parameters file and the pooled thresholds."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from pipeline.judges.measure.calibration import pooled_thresholds
from pipeline.judges.offline import meaning, synonyms
from pipeline.judges.offline.support import (
    FEATURES_MEANING_EMBED,
    FEATURES_MEANING_LEXICAL,
    PARAMS_PATH,
    SIGNS,
    SourceIndex,
    SupportModel,
    load_params,
)

WORDNET = Path("/usr/share/wordnet")


def _same(a: str, b: str) -> bool:
    return bool(synonyms.meanings(a) & synonyms.meanings(b))


def _more_general(general: str, specific: str) -> bool:
    return bool(synonyms.meanings(general) & synonyms.kinds_above(specific))


# ---- the synonym table ------------------------------------------------------------------------


def test_the_shipped_table_loads_and_names_its_version():
    data = json.loads(gzip.decompress(synonyms.TABLE_PATH.read_bytes()))
    assert data["version"] == synonyms.TABLE_VERSION
    assert data["max_senses"] == synonyms.MAX_SENSES
    assert 70_000 <= len(data["same"]) <= 80_000  # 75,138 words and phrases when built from WordNet 3.0
    assert synonyms.available()


@pytest.mark.parametrize("a,b", [("bought", "purchased"), ("physician", "doctor"), ("decided", "decision"),
                                 ("big", "large"), ("car", "automobile"), ("children", "kids"), ("said", "stated")])
def test_synonyms_irregular_forms_and_derived_forms_match(a, b):
    assert _same(a, b)


@pytest.mark.parametrize("a,b", [("heart", "lung"), ("cat", "dog"), ("sodium", "lithium"), ("bus", "train")])
def test_different_things_of_one_sort_do_not_match(a, b):
    assert not _same(a, b)
    assert not _more_general(a, b) and not _more_general(b, a)


def test_a_more_general_word_is_entailed_by_a_more_specific_one_and_not_the_other_way():
    assert _more_general("animal", "dog")
    assert not _more_general("dog", "animal")


def test_dictionary_forms_undo_suffixes_and_doubled_consonants():
    assert synonyms.lemmas("stopped")[:2] == ("stopped", "stop") or "stop" in synonyms.lemmas("stopped")
    assert "study" in synonyms.lemmas("studies")
    assert "buy" in synonyms.lemmas("bought")  # WordNet's exception list


@pytest.mark.skipif(not (WORDNET / "data.noun").is_file(), reason="Debian's wordnet-base is not installed (/usr/share/wordnet)")
def test_the_build_command_reproduces_the_shipped_table_byte_for_byte(tmp_path):
    out = synonyms.write_table(WORDNET, tmp_path / "synonyms.json.gz")
    assert out.read_bytes() == synonyms.TABLE_PATH.read_bytes()


# ---- soft shares, specific words, candidates ---------------------------------------------------------


def test_soft_share_counts_words_stated_by_form_synonym_or_a_more_specific_word():
    sm = meaning.SentenceMeanings(["The company purchased a dog for the guards."])
    # statement words: firm, bought, animal, guards -> bought (synonym), animal (dog is an animal),
    # guards (same word); "firm" is a kind of company, not stated by it
    words = meaning.content_words("The firm bought an animal for the guards.")
    assert words == ("firm", "bought", "animal", "guards")
    assert meaning.soft_share("The firm bought an animal for the guards.", sm, None) == pytest.approx(3 / 4, abs=1e-12)


def test_a_phrase_of_the_table_counts_for_each_of_its_words():
    sm = meaning.SentenceMeanings(["Doctors use the tablet to bring down hypertension in adults."])
    # high, blood, pressure: stated as one phrase by "hypertension"; prescribed, medicine: not stated
    text = "The medicine is prescribed for high blood pressure."
    assert meaning.content_words(text) == ("medicine", "prescribed", "high", "blood", "pressure")
    assert meaning.soft_share(text, sm, None) == pytest.approx(3 / 5, abs=1e-12)


def test_missing_specific_counts_rare_words_and_names_the_source_never_states():
    sm = meaning.SentenceMeanings(["The bridge opened to cars in April 1932."])
    words = meaning.content_words("The Zorvath bridge was painted with bitumen.")
    # "zorvath" (a name) and "bitumen" (rare) are absent; "painted" is common; "bridge" is stated
    assert meaning.missing_specific(words, frozenset({"zorvath"}), sm) == 2


def test_a_short_source_has_every_sentence_embedded_and_a_long_one_a_bounded_few():
    short = meaning.SentenceMeanings([f"Sentence {k} talks about bees." for k in range(5)])
    assert meaning.candidates(("bees",), short, []) == [0, 1, 2, 3, 4]
    page = [f"Line {k} is about weather and rain." for k in range(200)]
    page[120] = "The hive keeps its bees warm in winter."
    page[40] = "Bees dance to show where flowers are, and the hive listens."  # two of its words: second best
    long = meaning.SentenceMeanings(page)
    got = meaning.candidates(meaning.content_words("Bees keep warm in the winter hive."), long, [120])
    assert 119 in got and 120 in got and 121 in got and 40 in got
    assert len(got) <= meaning.MAX_CANDIDATES


def test_cosine_features_take_the_best_sentence_and_the_best_neighbouring_pair():
    s = np.array([1.0, 1.0, 0.0]) / np.sqrt(2)
    vecs = [np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0])]
    best_sent, best_pair, ids = meaning.cosine_features(s, [3, 4, 9], vecs)
    assert best_sent == pytest.approx(1 / np.sqrt(2), abs=1e-12)
    assert best_pair == pytest.approx(1.0, abs=1e-12)  # sentences 3 and 4 together state it
    assert ids == [3, 4]
    # 4 and 9 are not neighbours: never joined
    _, pair2, ids2 = meaning.cosine_features(s, [4, 9], vecs[1:])
    assert pair2 == pytest.approx(1 / np.sqrt(2), abs=1e-12) and ids2 == [4]


def test_meaning_features_of_a_reworded_statement_against_its_source():
    idx = SourceIndex("The company purchased the factory in 2019. It employs 300 workers.")
    sm = meaning.meanings_of(idx)
    assert meaning.meanings_of(idx) is sm  # made once per source
    f = meaning.lexical_meaning_features("The firm bought the plant in 2019.", frozenset(), sm, (0, 1))
    # firm, bought, plant: bought = purchased, a plant is what a factory is a kind of; "firm" is not stated
    assert f["soft_win"] == pytest.approx(2 / 3, abs=1e-12)
    assert f["soft_src"] == pytest.approx(2 / 3, abs=1e-12)
    assert f["missing_specific"] == pytest.approx(0.0, abs=1e-12)


# ---- the fitted file ---------------------------------------------------------------------------


def test_the_shipped_parameters_read_the_meaning_signals_with_their_signs():
    params = load_params(PARAMS_PATH)
    assert params["version"] == "cal7"
    embed = params["embed"]
    for name in FEATURES_MEANING_LEXICAL + FEATURES_MEANING_EMBED:
        assert name in embed["features"]
    for name, coef in zip(embed["features"], embed["coef"]):
        assert coef * SIGNS[name] >= 0, name  # every coefficient keeps its sign
    for name in FEATURES_MEANING_LEXICAL:
        assert name in params["lexical"]["features"]
    assert 0 < embed["threshold_partial"] < embed["threshold_full"] < 1
    assert params["wice_dev_pairs"] > 0 and "WiCE test held out" in params["calibration"]["also_fitted_on"]


def test_the_support_model_scores_a_row_as_the_logistic_formula_by_hand():
    params = load_params(PARAMS_PATH)["embed"]
    model = SupportModel(params)
    row = {k: 0.5 for k in params["features"]}
    z = sum(c * (0.5 - m) / s for c, m, s in zip(params["coef"], params["mean"], params["std"])) + params["intercept"]
    assert float(model.score([row])[0]) == pytest.approx(1 / (1 + np.exp(-z)), abs=1e-12)


def test_the_judge_names_the_new_version():
    from pipeline.judges.offline.judge import OfflineJudge

    judge = OfflineJudge()
    assert judge.prompt_version.startswith("offline-v3+cal7+")
    assert meaning.MEANING_VERSION in judge.cache_fingerprint and synonyms.TABLE_VERSION in judge.cache_fingerprint


# ---- the thresholds ------------------------------------------------------------------------------


def test_pooled_thresholds_weigh_each_set_alike_by_hand():
    # set A: Complete at 0.9, 0.8; rest at 0.3, 0.2. set B: Complete at 0.6; Incomplete at 0.5, 0.1.
    a = (np.array([0.9, 0.8, 0.3, 0.2]), ["Complete", "Complete", "Partial", "Incomplete"])
    b = (np.array([0.6, 0.5, 0.1]), ["Complete", "Incomplete", "Incomplete"])
    t_full, t_partial = pooled_thresholds([a, b])
    # any t in (0.5, 0.6] separates both sets perfectly; the lowest candidate there is 0.6
    assert t_full == pytest.approx(0.6, abs=1e-9)
    # below 0.6: A holds Partial 0.3 (some support) and Incomplete 0.2; B holds Incomplete 0.5, 0.1 only
    assert t_partial == pytest.approx(0.3, abs=1e-9)
