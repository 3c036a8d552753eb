"""HAGRID: the importer on a fixture written in the published shape, its pinned download, `aee
import hagrid`, `judges evaluate --dataset hagrid`, and `aee compare-gold` on generated answers."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from tolerances import close

from pipeline.cli import main
from pipeline.errors import InputError
from pipeline.importers import dataset_files, resolve_dataset
from pipeline.importers import hagrid as hagrid_mod
from pipeline.importers.hagrid import ENGINE, HUMAN_JUDGE, load_hagrid
from pipeline.metrics import score_answer
from pipeline.storage.store import read_table, table_path

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "tests" / "fixtures" / "hagrid"
GENERATED = ROOT / "tests" / "fixtures" / "hagrid_generated.jsonl"


@pytest.fixture(scope="module")
def answers():
    return {a.answer.answer_id: a for a in load_hagrid(FIXTURE)}


def _support(a, with_set: bool = False):
    return sorted((v.statement_index, v.source_index if not with_set else v.source_set, v.label, v.raw)
                  for v in a.verdicts if v.kind == "support" and (v.source_index is None) == with_set)


def test_one_answer_per_generated_answer_with_quotes_as_sources(answers):
    assert list(answers) == ["dev:1:0", "dev:1:1", "dev:2:0"]
    a = answers["dev:1:0"].answer
    assert (a.engine, a.query, a.query_type, a.dataset) == (ENGINE, "Who designed the Eiffel Tower?", "expertise", "hagrid")
    assert [(s.index, s.title, s.url, s.fetch_ok) for s in a.sources] == [
        (1, "MIRACL passage 101#0", "", True), (2, "MIRACL passage 101#3", "", True), (3, "MIRACL passage 202#1", "", True)]
    assert a.sources[1].text.startswith("The tower was completed in March 1889")
    assert {k: a.meta[k] for k in ("split", "query_id", "attributable", "informative", "answer_type", "support_scope")} == {
        "split": "dev", "query_id": "q-1", "attributable": "0", "informative": "1", "answer_type": "attributed",
        "support_scope": "cited_only"}
    assert answers["dev:1:1"].answer.meta["attributable"] == ""  # unlabelled answer


def test_sentences_become_statements_with_citations_and_spans(answers):
    a = answers["dev:1:0"]
    assert [(s.index, s.citations, s.dangling) for s in a.statements] == [(0, (1,), ()), (1, (1, 2), ()), (2, (3,), ())]
    for s in a.statements:
        assert a.answer.text[s.start:s.end] == s.text
    other = answers["dev:1:1"]
    # "... the tower. [2] The tower is ...": the [2] opening the second sentence closes the first;
    # [4] is no quote (a dangling citation)
    assert [s.text for s in other.statements] == ["Gustave Eiffel's company designed the tower.",
                                                  "[2] The tower is 330 metres tall [4]."]
    assert [(s.citations, s.dangling) for s in other.statements] == [((2,), ()), ((), (4,))]
    for s in other.statements:
        assert other.answer.text[s.start:s.end] == s.text


def test_labels_become_the_human_judge(answers):
    a = answers["dev:1:0"]
    assert {v.judge for v in a.verdicts} == {HUMAN_JUDGE}
    assert _support(a) == [(0, 1, "full", "1"), (1, 1, "none", "0"), (1, 2, "none", "0"), (2, 3, "none", "0")]
    # the sentence citing two quotes keeps its label once more, about the two together
    assert _support(a, with_set=True) == [(1, (1, 2), "none", "0")]
    assert sorted((v.statement_index, v.label) for v in a.verdicts if v.kind == "relevance") == [
        (0, "relevant"), (1, "relevant"), (2, "filler")]
    other = answers["dev:1:1"]
    # unlabelled attributable -> no support verdict; a sentence citing no quote -> none either
    assert _support(other) == [] and [(v.statement_index, v.label) for v in other.verdicts] == [(0, "relevant")]


def test_quotes_counted_from_zero_are_shifted_to_the_markers(answers):
    a = answers["dev:2:0"]
    assert [s.index for s in a.answer.sources] == [1, 2] and a.answer.meta["quote_index_offset"] == "1"
    assert a.answer.sources[0].text == "Canberra is the capital city of Australia."
    # no sentences in the data: the toolkit's splitter, no labels
    assert [s.citations for s in a.statements] == [(1, 2)] and a.verdicts == ()


def test_human_metrics_on_the_fixture_by_hand(answers):
    first = score_answer(answers["dev:1:0"])
    # relevant: sentences 0 and 1. AutoAIS: 0 supported by [1], 1 by neither -> 1/2
    assert first["autoais_citations"].value == close(0.5)
    # recall: 0 yes, 1 no (its two quotes together were judged not attributable) -> 1/2
    assert first["nli_citation_recall"].value == close(0.5)
    # precision: [1] of sentence 0 relevant; both citations of the unsupported sentence 1 irrelevant -> 1/3
    assert first["nli_citation_precision"].value == pytest.approx(1 / 3) and first["nli_citation_precision"].n == 3
    assert first["autoais_passages"].value is None and "only cited" in first["autoais_passages"].reason
    second = score_answer(answers["dev:1:1"])
    assert second["autoais_citations"].value is None  # its one cited sentence is unlabelled
    assert second["autoais_citations"].reason == "none of 1 cited statements judged (pairs without a label)"
    assert second["nli_citation_recall"].value == close(0.0) and "1 of 2 statements left out" in second["nli_citation_recall"].reason


@pytest.mark.parametrize("line, message", [
    ("not json", "invalid JSON"),
    (json.dumps({"query": "q", "answers": []}), "missing required field"),
    (json.dumps({"query": "q", "quotes": [{"idx": "1", "text": "t"}], "answers": []}), "expected int"),
    (json.dumps({"query": "q", "quotes": [], "answers": [{"answer": "a", "attributable": "yes"}]}), "expected 1, 0 or null"),
    (json.dumps({"query": "q", "quotes": [{"idx": 1, "text": "a"}, {"idx": 1, "text": "b"}], "answers": []}), "duplicate quote idx"),
    (json.dumps({"query": "q", "quotes": [], "answers": [{"answer": "a", "sentences": "one"}]}), "expected a list"),
])
def test_bad_input_is_one_clear_error(tmp_path, line, message):
    bad = tmp_path / "dev.jsonl"
    bad.write_text(line + "\n")
    with pytest.raises(InputError, match=message):
        load_hagrid(bad)


def test_cli_import_bad_input_exit_2_and_nothing_written(tmp_path, results_root, capsys):
    bad = tmp_path / "dev.jsonl"
    bad.write_text(json.dumps({"query": "q", "quotes": "x", "answers": []}) + "\n")
    assert main(["import", "hagrid", str(bad), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "quotes" in err
    assert not (results_root / "hagrid").exists()


def test_cli_import_writes_the_human_results(results_root, capsys):
    assert main(["import", "hagrid", str(FIXTURE), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "imported 3 answers" in out and "AutoAIS (citations)" in out and "NLI citation precision" in out
    metrics = read_table(table_path("hagrid", "metrics", "human", results_root))
    strict = metrics[(metrics["mode"] == "strict") & (metrics["necessity"] == "exact")].set_index(["answer_id", "metric"])
    assert strict.loc[("dev:1:0", "nli_citation_precision"), "value"] == pytest.approx(1 / 3)
    labels = read_table(table_path("hagrid", "labels", "human", results_root))
    sets = labels[labels["source_index"].isna() & (labels["kind"] == "support")]
    assert [list(x) for x in sets["source_set"]] == [[1, 2]]


def test_download_is_pinned_cached_and_bounded(tmp_path, monkeypatch):
    seen: list[str] = []

    class Reply(io.BytesIO):
        headers = {"Content-Length": "20"}

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def fake_urlopen(url, timeout):
        seen.append(url)
        return Reply(b'{"query": "q"}\n')

    monkeypatch.setattr(dataset_files.urllib.request, "urlopen", fake_urlopen)
    folder = hagrid_mod.download_hagrid(tmp_path / "hagrid")
    assert sorted(p.name for p in folder.iterdir()) == ["dev.jsonl", "train.jsonl"]
    assert seen == [f"https://huggingface.co/datasets/miracl/hagrid/resolve/{hagrid_mod.HAGRID_REVISION}/hagrid-v1.0-en/{s}.jsonl"
                    for s in ("dev", "train")]
    hagrid_mod.download_hagrid(tmp_path / "hagrid")
    assert len(seen) == 2  # cached: nothing fetched again

    def offline(url, timeout):
        raise dataset_files.urllib.error.URLError("no network")

    monkeypatch.setattr(dataset_files.urllib.request, "urlopen", offline)
    with pytest.raises(InputError, match="are you offline"):
        hagrid_mod.download_hagrid(tmp_path / "elsewhere")


def test_known_dataset_from_hagrid_dir(monkeypatch):
    monkeypatch.setenv("HAGRID_DIR", str(FIXTURE))
    info = resolve_dataset("hagrid")
    assert (info.importer, info.path, info.default_judge) == ("hagrid", FIXTURE, "human")


def test_judges_evaluate_hagrid(results_root, capsys):
    assert main(["judges", "evaluate", "--dataset", "hagrid", "--path", str(FIXTURE), "--judge", "scripted", "--json",
                 "--no-save"]) == 0
    report = json.loads(capsys.readouterr().out)
    # three labelled sentences cite quotes: two with one quote (one attributable), one with two (judged together)
    assert report["support"]["n"] == 3 and report["support"]["n_positive"] == 1
    assert report["support_single"]["n"] == 2 and report["support_multi"]["n"] == 1
    assert report["support"]["confusion"]["cols"] == ["attributable", "not attributable"]
    assert sum(map(sum, report["support"]["confusion"]["matrix"])) == 3
    assert report["relevance"]["n"] == 4  # four sentences carry an informative label


# ---- compare-gold ---------------------------------------------------------------------------------------


def test_compare_gold_overlap_by_hand_and_table_2_beside(results_root, capsys):
    assert main(["compare-gold", "--gold", "hagrid", "--gold-path", str(FIXTURE), "--answers", str(GENERATED),
                 "--judge", "scripted", "--json", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["answers"], report["matched"], report["gold_queries"]) == (4, 3, 2)
    assert report["unmatched_examples"] == ["How tall is Mount Everest?"]
    table = report["table"]
    # rag-system: g1 cites quotes 1 and 2 of the 3 the preferred gold answer cites (P 1, R 2/3); g2 cites
    # the Canberra quote and another page, of the gold answer's two (P 1/2, R 1/2) -> means 75.00 and 58.33
    assert table["rag-system"]["Citation overlap precision"] == close(75.0)
    assert table["rag-system"]["Citation overlap recall"] == close(58.33)
    assert table["closed-book"]["Citation overlap precision"] == close(0.0)  # cites a page the gold answer does not
    for engine in ("rag-system", "closed-book"):
        for label in ("BLEU", "ROUGE-L F", "BERTScore-style F"):
            assert table[engine][label] is not None and 0 < table[engine][label] <= 100
    assert table["RTG - vanilla (paper)"]["NLI citation recall"] == close(41.63)
    assert table["Gold answer (paper)"]["BLEU"] is None
    metrics = read_table(table_path("hagrid_generated-vs-hagrid", "metrics", "scripted", results_root))
    everest = metrics[(metrics["answer_id"] == "g4") & (metrics["metric"] == "rouge_l_f")]
    assert everest["value"].isna().all() and set(everest["reason"]) == {"no gold answer for this query"}


def test_compare_gold_text_output_and_no_match(results_root, tmp_path, capsys):
    assert main(["compare-gold", "--gold", "hagrid", "--gold-path", str(FIXTURE), "--answers", str(GENERATED),
                 "--judge", "scripted", "--dataset", "cmp", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "3 ask one of its 2 queries" in out and "Citation overlap recall" in out and "(paper)" in out
    assert "n/a" in out and "nan" not in out.lower().replace("n/a", "")
    other = tmp_path / "other.jsonl"
    other.write_text(GENERATED.read_text().splitlines()[-1] + "\n")  # only the Everest answer
    assert main(["compare-gold", "--gold", "hagrid", "--gold-path", str(FIXTURE), "--answers", str(other),
                 "--judge", "scripted", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "none of the 1 answers asks a query of the gold dataset 'hagrid'" in err
