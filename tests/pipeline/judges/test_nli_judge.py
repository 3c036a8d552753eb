"""The nli judge's plumbing, with tiny models the tests build and save themselves (tests/nli_models.py):
loading through the registry and factory, the entailment class read from id2label, windows over long
sources, batching, evidence, the cache key, errors, and the rules it delegates to.

The hub is never reached: HF_HUB_OFFLINE is set before transformers is imported, and the one test of
a hub id reads a Hugging Face cache folder the test writes itself. In CI (CI set) the `nli` extra is
installed by `make test`, so a missing transformers or torch fails here instead of skipping."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"  # before transformers or huggingface_hub are imported
if not os.environ.get("CI"):
    pytest.importorskip("torch", reason="the nli extra is not installed (pip install torch==2.13.0 '.[nli]')")
    pytest.importorskip("transformers", reason="the nli extra is not installed (pip install torch==2.13.0 '.[nli]')")

import torch  # noqa: E402
from nli_models import KEYWORD, save_tiny_model  # noqa: E402
from tolerances import ENCODER, close
from transformers import AutoModelForSequenceClassification, AutoTokenizer  # noqa: E402

from pipeline.judges import JudgeError, get_judge  # noqa: E402
from pipeline.judges.cache import CachingJudge, cache_key  # noqa: E402
from pipeline.judges.offline.judge import OfflineJudge  # noqa: E402
from pipeline.records import Answer, Source, Statement  # noqa: E402

FILLER = [
    "The committee met in spring to review the budget.",
    "Members discussed parking and lighting on the main street.",
    "Several residents asked about new bus routes.",
    "The library will open later on weekends.",
    "A new bakery opened near the station last year.",
]
KEY_SENTENCE = f"The reactor delay was {KEYWORD} by the {KEYWORD} inspectors in March."
LONG_SOURCE = " ".join(FILLER * 2 + [KEY_SENTENCE] + FILLER)
CLAIMS = ["The reactor delay was checked by inspectors [1].", "Residents asked about bus routes [1].",
          "Building a plant takes 10 to 19 years [2]."]
SHORT_SOURCE = "Recent reactor projects in Europe took between 10 and 19 years from planning to operation."
CORPUS = " ".join([LONG_SOURCE, SHORT_SOURCE, *CLAIMS])
NLI3 = ["entailment", "neutral", "contradiction"]


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("nli_models")
    return {
        "random": save_tiny_model(root / "random", NLI3, CORPUS, kind="random"),
        "random2": save_tiny_model(root / "random2", NLI3, CORPUS, kind="random", seed=7),
        "keyword": save_tiny_model(root / "keyword", NLI3, CORPUS, kind="keyword"),
    }


def _answer(*sources: Source) -> tuple[Answer, list[Statement]]:
    answer = Answer("a1", "test", "How long do reactor projects take?", "expertise", " ".join(CLAIMS), tuple(sources))
    return answer, [Statement("a1", i, text, citations=(1,)) for i, text in enumerate(CLAIMS)]


def _direct(folder: Path, premise: str, hypothesis: str, max_length: int) -> list[float]:
    """Class probabilities computed straight with transformers, for comparison with the judge."""
    tok = AutoTokenizer.from_pretrained(folder)
    net = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    enc = tok([premise], [hypothesis], truncation="only_first", max_length=max_length, return_tensors="pt")
    with torch.inference_mode():
        return torch.softmax(net(**enc).logits, -1)[0].tolist()


# ---------------------------------------------------------------- labels from id2label


@pytest.mark.parametrize("labels, probs, score, label", [
    (["contradiction", "neutral", "entailment"], [0.1, 0.2, 0.7], 0.7, "full"),
    (["entailment", "neutral", "contradiction"], [0.1, 0.2, 0.7], 0.1, "none"),
    (["ENTAILMENT", "NEUTRAL", "CONTRADICTION"], [0.3, 0.3, 0.4], 0.3, "partial"),
    (["0", "1"], [0.6, 0.4], 0.4, "partial"),  # MiniCheck's unnamed head: class 1 = supported
    (["hallucinated", "consistent"], [0.25, 0.75], 0.75, "full"),  # HHEM's class names
    (["LABEL_0"], [0.8], 0.8, "full"),  # a single logit read through a sigmoid
])
def test_score_is_the_entailment_probability_named_by_id2label(tmp_path, labels, probs, score, label):
    folder = save_tiny_model(tmp_path / "m", labels, CORPUS, kind="constant", probs=probs)
    judge = get_judge(f"nli:{folder}", cache=False)
    answer, statements = _answer(Source(2, "https://example.org/r", "R", SHORT_SOURCE))
    verdicts = judge.support(answer, statements[2:], answer.sources[0])
    assert [(v.label, round(v.score, 6)) for v in verdicts] == [(label, score)]
    raw = json.loads(verdicts[0].raw)
    assert raw["p_support"] == score and set(raw["classes"]) == set(labels)


def test_unnamed_three_way_head_needs_the_entailment_label(tmp_path, monkeypatch):
    folder = save_tiny_model(tmp_path / "m", ["LABEL_0", "LABEL_1", "LABEL_2"], CORPUS, kind="constant", probs=[0.2, 0.5, 0.3])
    with pytest.raises(JudgeError, match="AEE_NLI_ENTAILMENT_LABEL"):
        get_judge(f"nli:{folder}", cache=False)
    monkeypatch.setenv("AEE_NLI_ENTAILMENT_LABEL", "LABEL_1")
    judge = get_judge(f"nli:{folder}", cache=False)
    answer, statements = _answer(Source(2, text=SHORT_SOURCE))
    assert judge.support(answer, statements[2:], answer.sources[0])[0].score == pytest.approx(0.5)


# ---------------------------------------------------------------- windows, evidence, batches


def test_best_window_of_a_long_source_decides_and_is_the_evidence(models):
    judge = get_judge(f"nli:{models['keyword']}", cache=False, max_length=48)
    answer, statements = _answer(Source(1, "https://example.org/long", "Long", LONG_SOURCE))
    v = judge.support(answer, statements[:1], answer.sources[0])[0]
    raw = json.loads(v.raw)
    assert raw["windows_in_source"] > 3 and raw["windows_scored"] == raw["windows_in_source"]
    assert KEY_SENTENCE in v.evidence and v.evidence == LONG_SOURCE[raw["window"][0]:raw["window"][1]]
    tok = AutoTokenizer.from_pretrained(models["keyword"])
    claim = "The reactor delay was checked by inspectors."
    assert len(tok(v.evidence, claim)["input_ids"]) <= 48  # the window fits beside the statement
    # the score is the entailment probability of that window, computed straight with transformers
    assert v.score == pytest.approx(_direct(models["keyword"], v.evidence, claim, 48)[0], abs=1e-5)
    # a window of filler alone scores lower
    assert v.score > _direct(models["keyword"], " ".join(FILLER[:3]), claim, 48)[0] + 0.2


def test_windows_beyond_max_windows_are_chosen_by_shared_words(models):
    judge = get_judge(f"nli:{models['keyword']}", cache=False, max_length=48, max_windows=2)
    answer, statements = _answer(Source(1, text=LONG_SOURCE))
    v = judge.support(answer, statements[:1], answer.sources[0])[0]
    raw = json.loads(v.raw)
    assert raw["windows_scored"] == 2 and raw["windows_chosen_by"] == "shared words with the statement"
    assert KEY_SENTENCE in v.evidence  # the keyword sentence shares "reactor delay ... inspectors"


def test_batches_hold_all_pairs_and_do_not_change_scores(models):
    answer, statements = _answer(Source(1, text=LONG_SOURCE), Source(2, text=SHORT_SOURCE))
    batched = get_judge(f"nli:{models['random']}", cache=False, max_length=64, batch_size=4)
    one_by_one = get_judge(f"nli:{models['random']}", cache=False, max_length=64, batch_size=1)
    a = batched.support_many(answer, statements, answer.sources)
    b = one_by_one.support_many(answer, statements, answer.sources)
    assert [(v.source_index, v.statement_index) for v in a] == [(s, i) for s in (1, 2) for i in range(3)]
    assert [v.score for v in a] == pytest.approx([v.score for v in b], abs=1e-5)
    assert [v.evidence for v in a] == [v.evidence for v in b]
    pairs = batched.stats["pairs"]
    assert pairs == one_by_one.stats["pairs"] == one_by_one.stats["batches"] > 6
    assert batched.stats["largest_batch"] == 4 and batched.stats["batches"] == -(-pairs // 4)
    # a second call finds every pair scored already
    batched.support_many(answer, statements, answer.sources)
    assert batched.stats["pairs"] == pairs


def test_remembered_pairs_are_bounded_without_losing_a_call(models, monkeypatch):
    import pipeline.judges.backends.nli as nli

    answer, statements = _answer(Source(1, text=LONG_SOURCE), Source(2, text=SHORT_SOURCE))
    judge = get_judge(f"nli:{models['random']}", cache=False, max_length=64)
    expected = [v.score for v in judge.support_many(answer, statements, answer.sources)]
    monkeypatch.setattr(nli, "MAX_REMEMBERED_PAIRS", 3)
    small = get_judge(f"nli:{models['random']}", cache=False, max_length=64)
    small.support_many(answer, statements[:1], answer.sources)  # fills the memory past its bound
    assert [v.score for v in small.support_many(answer, statements, answer.sources)] == pytest.approx(expected, abs=1e-5)


def test_inputs_are_bounded(models):
    judge = get_judge(f"nli:{models['random']}", cache=False, max_length=64, max_source_chars=1000, max_statement_tokens=8)
    long_claim = Statement("a1", 0, " ".join(["reactor projects took years"] * 20))
    answer, _ = _answer(Source(1, text=LONG_SOURCE * 3))
    v = judge.support(answer, [long_claim], answer.sources[0])[0]
    raw = json.loads(v.raw)
    assert raw["source_read_chars"] == 1000 and raw["statement_cut_to_tokens"] == 8
    assert raw["window"][1] <= 1000 and 0.0 <= v.score <= 1.0


def test_no_text_is_unknown_and_no_words_is_none_with_a_number(models):
    judge = get_judge(f"nli:{models['random']}", cache=False)
    answer, statements = _answer(Source(1, text="  "))
    empty = Statement("a1", 5, "[1]")
    verdicts = judge.support_many(answer, [statements[0], empty], [answer.sources[0], Source(2, text=SHORT_SOURCE)])
    got = {(v.source_index, v.statement_index): v for v in verdicts}
    # a source without text is not checked (unknown, no score), never "none"
    assert (got[1, 0].label, got[1, 0].score, got[1, 0].raw) == ("unknown", None, "not checked: no text")
    assert (got[2, 5].label, got[2, 5].score, json.loads(got[2, 5].raw)["note"]) == close(("none", 0.0, "statement has no words"), ENCODER)
    assert got[2, 0].score > 0 and got[2, 0].error == ""


# ---------------------------------------------------------------- registry, cache, CLI


def test_verdict_fields_and_cache_round_trip(models, tmp_path):
    judge = get_judge(f"nli:{models['random']}", cache=tmp_path / "judges.sqlite")
    assert isinstance(judge, CachingJudge) and judge.name == f"nli:{models['random']}"
    answer, statements = _answer(Source(1, text=LONG_SOURCE))
    first = judge.support(answer, statements, answer.sources[0])
    assert all(v.judge == judge.name and v.prompt_version == "nli-v1" and v.kind == "support" for v in first)
    assert [v.statement_index for v in first] == [0, 1, 2] and {v.source_index for v in first} == {1}
    again = get_judge(f"nli:{models['random']}", cache=tmp_path / "judges.sqlite")
    assert again.support(answer, statements, answer.sources[0]) == first
    assert again.stats == {"hits": 1, "misses": 0, "bypassed": 0}


def test_cache_key_holds_model_and_revision(models, tmp_path):
    answer, statements = _answer(Source(1, text=SHORT_SOURCE))
    key = lambda name, **cfg: cache_key(get_judge(name, cache=False, **cfg), "support", answer, statements, answer.sources[0])  # noqa: E731
    a, b = key(f"nli:{models['random']}"), key(f"nli:{models['random2']}")
    assert a != b  # two models
    assert a == key(f"nli:{models['random']}")  # stable
    assert a != key(f"nli:{models['random']}", full_threshold=0.6)  # settings that change a label
    # the same folder holding another model: another revision, another key
    folder = tmp_path / "swap"
    shutil.copytree(models["random"], folder)
    before = key(f"nli:{folder}")
    shutil.rmtree(folder)
    shutil.copytree(models["random2"], folder)
    assert key(f"nli:{folder}") != before


def test_hub_id_resolves_to_its_cached_commit(models, tmp_path, monkeypatch):
    import huggingface_hub.constants as hub

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--tiny-org--tiny-nli"
    shutil.copytree(models["random"], repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(hub, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(hub, "HF_HUB_OFFLINE", True)
    judge = get_judge("nli:tiny-org/tiny-nli", cache=False)
    assert judge.revision == f"commit:{commit}" and judge.name == "nli:tiny-org/tiny-nli"
    pinned = get_judge(f"nli:tiny-org/tiny-nli@{commit}", cache=False)
    answer, statements = _answer(Source(1, text=SHORT_SOURCE))
    local = get_judge(f"nli:{models['random']}", cache=False)
    scores = [j.support(answer, statements, answer.sources[0]) for j in (judge, pinned, local)]
    assert [v.score for v in scores[0]] == [v.score for v in scores[1]] == pytest.approx([v.score for v in scores[2]])
    with pytest.raises(JudgeError, match="neither a local folder nor available") as err:
        get_judge("nli:tiny-org/not-here", cache=False)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("name, message", [
    ("nli", "needs a model"),
    ("nli:/no/such/folder", "no model folder"),
])
def test_bad_names_fail_with_one_line(name, message):
    with pytest.raises(JudgeError, match=message) as err:
        get_judge(name, cache=False)
    assert "\n" not in str(err.value)


def test_missing_packages_say_what_to_install(monkeypatch, models):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "transformers" else real(name, *a))
    with pytest.raises(JudgeError, match=r"needs transformers: pip install torch==2\.13\.0 'answer-engine-audit\[nli\]'"):
        get_judge(f"nli:{models['random']}", cache=False)


def test_models_with_their_own_code_are_refused(models, tmp_path):
    folder = tmp_path / "custom"
    shutil.copytree(models["random"], folder)
    config = json.loads((folder / "config.json").read_text())
    config["auto_map"] = {"AutoModelForSequenceClassification": "modeling_x.XForSequenceClassification"}
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(JudgeError, match="trust_remote_code"):
        get_judge(f"nli:{folder}", cache=False)


def test_relevance_stance_confidence_are_the_offline_rules(models):
    judge = get_judge(f"nli:{models['random']}", cache=False)
    answer = Answer("a2", "test", "Should cities ban cars downtown?", "debate",
                    "Hello there! Cities should clearly ban cars downtown.", ())
    statements = [Statement("a2", 0, "Hello there!"), Statement("a2", 1, "Cities should clearly ban cars downtown.")]
    rules = OfflineJudge()
    for got, want in ((judge.relevance(answer, statements), rules.relevance(answer, statements)),
                      (judge.stance(answer, statements), rules.stance(answer, statements)),
                      ([judge.confidence(answer)], [rules.confidence(answer)])):
        assert [(v.kind, v.label, v.statement_index, v.prompt_version) for v in got] == \
               [(v.kind, v.label, v.statement_index, v.prompt_version) for v in want]
        for v, w in zip(got, want):
            raw = json.loads(v.raw)
            assert v.judge == judge.name and raw["delegated_to"] == "offline"
            assert raw["rules_output"] == json.loads(w.raw)


def test_judges_check_runs_unchanged(models, capsys, results_root):
    from pipeline.cli import main

    cases = Path(__file__).resolve().parents[2] / "fixtures" / "checks_mini.jsonl"
    assert main(["judges", "check", "--judge", f"nli:{models['random']}", "--cases", str(cases), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["judge"] == f"nli:{models['random']}" and report["cases"] == sum(1 for _ in cases.open())
    kinds = {row["kind"] for row in report["summary"]}
    assert {"support", "relevance", "stance"} <= kinds
    assert Path(report["saved_to"]).is_file()


def test_judges_evaluate_runs_unchanged(models, capsys, results_root, expertqa_path, tmp_path):
    from pipeline.cli import main

    sample = tmp_path / "rand_val.jsonl"
    with (expertqa_path / "rand_val.jsonl").open() as src:
        sample.write_text("".join(line for _, line in zip(range(6), src)))
    code = main(["judges", "evaluate", "--dataset", "expertqa", "--path", str(sample), "--judge",
                 f"nli:{models['random']}", "--json", "--no-save"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["judge"] == f"nli:{models['random']}" and report["support"]["n"] > 0
    assert report["support"]["unparsed"] == 0
