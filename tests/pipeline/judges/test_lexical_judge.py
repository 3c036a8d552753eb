"""`offline:lexical`: the offline judge with its lexical-only support model forced. Built by the one
factory under its own name and prompt version, cached apart from `offline`, its support labels on
hand-worked cases, its own uncertain band, and its measured agreement with the ExpertQA experts."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from tolerances import ENCODER, close

from pipeline.judges import JUDGES, JudgeError, get_judge, judge_info, registry_entry
from pipeline.judges.cache import CachingJudge, cache_key
from pipeline.judges.measure.reliability import is_uncertain, support_band
from pipeline.judges.offline.judge import LexicalOfflineJudge, OfflineJudge
from pipeline.records import Answer, Source, Statement
from pipeline.storage.paths import expertqa_dir

ROOT = Path(__file__).resolve().parents[3]
PARAMS = json.loads((ROOT / "pipeline" / "judges" / "offline" / "params.json").read_text())


def _pair(query: str, statement: str, source: str) -> tuple[Answer, Statement]:
    text = f"{statement} [1]"
    answer = Answer(answer_id="a1", engine="e", query=query, query_type="expertise", text=text,
                    sources=(Source(index=1, title="t", url="", text=source),))
    return answer, Statement(answer_id="a1", index=0, text=text, start=0, end=len(text), citations=(1,))


def _support(name: str, answer: Answer, statement: Statement):
    return get_judge(name, cache=False).support(answer, [statement], answer.sources[0])[0]


def _lexical_probability(union_recall: float, name_cov: float, figure_match: float, soft_win: float,
                         missing_specific: float) -> float:
    """The lexical model by hand: its five non-zero coefficients (cal7) over standardised features."""
    spec = PARAMS["lexical"]
    z = spec["intercept"]
    for feature, value in (("union_recall", union_recall), ("name_cov", name_cov), ("figure_match", figure_match),
                           ("soft_win", soft_win), ("missing_specific", missing_specific)):
        k = spec["features"].index(feature)
        z += spec["coef"][k] * (value - spec["mean"][k]) / spec["std"][k]
    return 1.0 / (1.0 + math.exp(-z))


def test_the_factory_builds_it_under_its_own_name_and_prompt_version():
    judge = get_judge("offline:lexical", cache=False)
    offline = get_judge("offline", cache=False)
    assert type(judge) is LexicalOfflineJudge and isinstance(judge, OfflineJudge)
    assert judge.name == "offline:lexical" and offline.name == "offline"
    # the offline judge's rule version with "-lexical": "offline-v3-lexical+cal7+cues-v2" beside "offline-v3+cal7+cues-v2"
    assert judge.prompt_version == offline.prompt_version.replace("+", "-lexical+", 1) != offline.prompt_version
    assert judge.prompt_version.endswith(f"-lexical+{PARAMS['version']}+cues-v2")
    assert judge.mode == "lexical" and offline.mode == "embed"  # forced, although the embedding model is here
    cached = get_judge("offline:lexical")
    assert isinstance(cached, CachingJudge) and cached.name == "offline:lexical"
    assert "offline:lexical" in JUDGES and judge_info("offline:lexical").name == "offline:lexical"
    assert registry_entry("offline:lexical").offline_rules and registry_entry("openai:gpt-4o").name == "openai"
    with pytest.raises(JudgeError, match="registered variants: offline:lexical"):
        get_judge("offline:embed")
    # the lexical model's own cross-validation goes into its agreement reports
    assert judge.calibration["model"] == "lexical"
    assert judge.calibration["cv_auc"] == PARAMS["lexical"]["grouped_cv"]["auc"] == 0.5865
    assert offline.calibration["cv_auc"] == PARAMS["embed"]["grouped_cv"]["auc"] == 0.6273


def test_a_verbatim_source_sentence_is_full_for_both():
    answer, statement = _pair("How long does it take to build a nuclear plant?",
                              "Recent reactor projects in Europe took between 10 and 19 years from planning to operation.",
                              "Recent reactor projects in Europe took between 10 and 19 years from planning to operation.")
    lexical, offline = _support("offline:lexical", answer, statement), _support("offline", answer, statement)
    features = json.loads(lexical.raw)["features"]
    # every content word, name and figure of the statement is in the source
    assert (features["union_recall"], features["name_cov"], features["figure_match"]) == close((1.0, 1.0, 1.0), ENCODER)
    # by hand (cal7): z = 0.0455 (intercept) + 0.0545 (figures) + 0.0296 (names) + 1.4425 (coverage)
    # + 0.5001 (soft share 1.0) + 0.1864 (no specific word missing) = 2.2587, p = 0.9054 (full from 0.328)
    assert lexical.score == pytest.approx(0.9054, abs=1e-4)
    assert lexical.score == pytest.approx(_lexical_probability(1.0, 1.0, 1.0, 1.0, 0.0), abs=1e-9)
    assert json.loads(lexical.raw)["mode"] == "lexical" and "cos_pass" not in features
    assert lexical.label == offline.label == "full"
    assert (lexical.judge, offline.judge) == ("offline:lexical", "offline")


def test_a_reworded_range_is_full_for_words_and_for_meaning():
    # the check suite's "synonyms" case: either label is right; under offline-v2 the embedding model
    # called it partial, under offline-v3 both judges call it full
    answer, statement = _pair("How long does it take to build a nuclear plant?",
                              "Building a new plant takes 10 to 19 years.",
                              "Recent reactor projects in Europe took between 10 and 19 years from planning to operation.")
    lexical, offline = _support("offline:lexical", answer, statement), _support("offline", answer, statement)
    features = json.loads(lexical.raw)["features"]
    # content words building, new, plant, takes, 10, 19, years: takes (took), 10, 19, years are found
    assert features["union_recall"] == pytest.approx(4 / 7, abs=1e-4)
    assert (features["name_cov"], features["figure_match"]) == close((1.0, 1.0), ENCODER)
    # soft share: building, new, plant, takes, years -> takes (took) and years, and "plant" as a kind of
    # what the source's "projects" are not: 3 of 5 with the table (0.6)
    assert features["soft_win"] == pytest.approx(0.6, abs=1e-4) and features["missing_specific"] == pytest.approx(0.0, abs=1e-9)
    # by hand (cal7): z = 0.0455 + 0.0545 + 0.0296 + 0.0224 (coverage 4/7) - 0.0751 (soft share 0.6)
    # + 0.1864 = 0.2634, p = 0.5655 >= 0.328: full
    assert lexical.score == pytest.approx(0.5655, abs=1e-4)
    assert lexical.score == pytest.approx(_lexical_probability(4 / 7, 1.0, 1.0, 0.6, 0.0), abs=1e-4)
    assert lexical.label == "full"
    # the embedding model finds the passage less alike in meaning than most (cosine 0.46, below its
    # mean 0.58) and still scores it over its full threshold 0.418: full
    embed = json.loads(offline.raw)["features"]
    k = PARAMS["embed"]["features"].index("cos_pass")
    assert embed["union_recall"] == features["union_recall"] and embed["cos_pass"] < PARAMS["embed"]["mean"][k]
    assert offline.label == "full" and offline.score == pytest.approx(0.4562, abs=1e-3)


def test_rules_other_than_support_are_the_offline_judges():
    answer, statement = _pair("Should cities ban cars downtown?", "Critics argue that a ban hurts shops.", "Shops lost trade.")
    lexical, offline = get_judge("offline:lexical", cache=False), get_judge("offline", cache=False)
    for method in ("relevance", "stance"):
        one = getattr(lexical, method)(answer, [statement])[0]
        two = getattr(offline, method)(answer, [statement])[0]
        assert (one.label, one.raw, one.evidence) == (two.label, two.raw, two.evidence)
    assert lexical.confidence(answer).label == offline.confidence(answer).label


def test_cached_labels_of_the_two_judges_never_mix(tmp_path):
    answer, statement = _pair("How long does it take to build a nuclear plant?",
                              "Building a new plant takes 10 to 19 years.",
                              "Recent reactor projects in Europe took between 10 and 19 years from planning to operation.")
    db = tmp_path / "judges.sqlite"
    offline, lexical = get_judge("offline", cache=db), get_judge("offline:lexical", cache=db)
    source = answer.sources[0]
    assert cache_key(offline.inner, "support", answer, [statement], source) != \
        cache_key(lexical.inner, "support", answer, [statement], source)
    first = offline.support(answer, [statement], source)[0]
    second = lexical.support(answer, [statement], source)[0]
    assert lexical.misses == 1 and lexical.hits == 0  # not served the offline judge's entry
    assert (first.label, second.label) == ("full", "full")
    assert first.score == pytest.approx(0.4562, abs=1e-3) and second.score == pytest.approx(0.5655, abs=1e-4)
    # a new process builds a new judge object: the key is the same, the entry is found
    again = get_judge("offline:lexical", cache=db)
    assert again.support(answer, [statement], source)[0] == second and again.hits == 1


def test_its_uncertain_band_uses_the_lexical_thresholds():
    band = support_band("offline:lexical")
    assert band is not None and band.thresholds == (0.089, 0.328)
    assert band.text() == "scores from 0.04 to 0.14 or from 0.28 to 0.38"
    # whatever the verdict's raw says, the variant only has the lexical model
    assert support_band("offline:lexical", json.dumps({"mode": "embed"})).thresholds == (0.089, 0.328)
    raw = json.dumps({"mode": "lexical"})
    assert is_uncertain("offline:lexical", 0.30, raw)  # 0.028 below its full cut point
    assert not is_uncertain("offline:lexical", 0.5655, raw)  # the hand case above: outside
    # the same score is outside the embedding model's band (0.13-0.23, 0.37-0.47)
    assert not is_uncertain("offline", 0.30, json.dumps({"mode": "embed"}))


@pytest.mark.skipif(expertqa_dir() is None, reason="ExpertQA not found (set EXPERTQA_DIR)")
def test_its_agreement_with_the_experts_on_rand_val_is_the_calibrations_record():
    from pipeline.importers.expertqa import load_expertqa
    from pipeline.judges.measure.agreement import evaluate_support

    answers = [a for a in load_expertqa(expertqa_dir()) if a.answer.meta.get("split") == "rand_val"]
    report = evaluate_support(get_judge("offline:lexical", cache=False), answers)
    s = report["support"]
    assert s["n"] == 803 and s["in_calibration"] == 0
    # `aee judges calibrate` measured 0.6004 for the cal6 lexical model on these pairs, with its union
    # features reading all of a claim's cited sources together. offline-v2.2 reads each source alone
    # (a label never follows a citation): on the 691 pairs of claims the experts judged against one
    # source the judge is unchanged; the 112 pairs of the 50 claims with several sources carry the
    # experts' one label for all of a claim's evidence, copied to each pair, and the pooled figure
    # falls to 0.561 (docs/judges/offline.md). To the three decimals the docs print.
    # offline-v3 (cal7): calibrate measured 0.5635 on these pairs, the judge gives 0.563 / 0.535
    # (one source: 0.583 / 0.550; cal6 under offline-v2.2 gave 0.561 / 0.526 and 0.582 / 0.539)
    assert PARAMS["lexical"]["rand_val"]["auc"] == pytest.approx(0.5635, abs=1e-4)
    assert s["auc"] == pytest.approx(0.563, abs=5e-4) and s["balanced_accuracy"] == pytest.approx(0.535, abs=5e-4)
    one = report["support_single"]
    assert one["n"] == 691 and one["auc"] == pytest.approx(0.583, abs=5e-4)
    assert one["balanced_accuracy"] == pytest.approx(0.550, abs=5e-4)
    several = report["support_multi"]  # one row per claim: the set verdict against the experts' label
    assert several["n"] == 50
    assert report["judge"] == "offline:lexical" and report["calibration"]["cv_auc"] == 0.5865


def test_the_cache_key_is_stable_and_names_the_support_model():
    answer, statement = _pair("Q?", "A statement.", "A source.")
    source = answer.sources[0]
    key = lambda judge: cache_key(judge, "support", answer, [statement], source)  # noqa: E731
    # two objects of the same judge share entries (the key holds no object address)
    assert key(OfflineJudge()) == key(OfflineJudge())
    # the offline judge without its embedding model labels with the lexical model: another key, so
    # its fallback labels never stand in for the embedding model's under the same prompt version
    assert key(OfflineJudge(use_embeddings=False)) != key(OfflineJudge())
    assert key(LexicalOfflineJudge()) != key(OfflineJudge(use_embeddings=False))  # another name and prompt version
