"""One bad record never aborts a dataset (issue 30 item 3, issue 31): every importer refuses the bad
record with its file, line, field and why, the good ones land; `--strict` restores stop-at-first.
And an answer that lists no source imports and is scored (issue 30 item 3)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tolerances import close

from pipeline.errors import InputError
from pipeline.importers import IMPORTERS
from pipeline.importers.canonical import parse_answer
from pipeline.importers.refusals import Refusals
from pipeline.metrics import ScoreConfig, score_answer
from pipeline.records import Verdict
from pipeline.runner import run_dataset
from pipeline.storage.store import read_table, table_path

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures"
GOOD = json.loads((FIXTURES / "worked_example.json").read_text())


def answer(answer_id: str, **changes) -> dict:
    obj = json.loads(json.dumps(GOOD))
    obj["answer_id"] = answer_id
    obj.pop("labels", None)
    obj.update(changes)
    return obj


def middle_bad_jsonl(path: Path) -> Path:
    """Five lines: good, not JSON, good, a record missing its query, good."""
    bad_query = answer("c")
    bad_query.pop("query")
    lines = [json.dumps(answer("a")), '{"answer_id": "b", "engine": }', json.dumps(answer("c2")),
             json.dumps(bad_query), json.dumps(answer("e"))]
    path.write_text("\n".join(lines) + "\n")
    return path


# ---- a bad record in the middle of a file, per importer -----------------------------------------------


def test_canonical_refuses_each_bad_line_and_reads_the_rest(tmp_path):
    path = middle_bad_jsonl(tmp_path / "answers.jsonl")
    refusals = Refusals()
    got = list(IMPORTERS["canonical"].iter(path, refusals=refusals))
    assert [a.answer.answer_id for a in got] == ["a", "c2", "e"]
    assert [(r.file, r.line, r.field) for r in refusals.items] == [("answers.jsonl", "2", ""), ("answers.jsonl", "4", "query")]
    assert "invalid JSON at column" in refusals.items[0].why and refusals.items[1].why == "missing required field"
    assert refusals.items[1].text() == "refused answers.jsonl:4, field 'query': missing required field"
    with pytest.raises(InputError, match="answers.jsonl:2"):  # without a collector: the first one stops it, as before
        list(IMPORTERS["canonical"].iter(path))
    with pytest.raises(InputError, match="answers.jsonl:2"):  # strict: the same
        list(IMPORTERS["canonical"].iter(path, refusals=Refusals(strict=True)))


def test_a_json_list_refuses_the_bad_item(tmp_path):
    path = tmp_path / "answers.json"
    path.write_text(json.dumps([answer("a"), answer("b", query_type="opinion"), answer("c")]))
    refusals = Refusals()
    got = list(IMPORTERS["canonical"].iter(path, refusals=refusals))
    assert [a.answer.answer_id for a in got] == ["a", "c"]
    assert [(r.line, r.field) for r in refusals.items] == [("[1]", "query_type")]


def test_duplicates_and_oversized_answers_are_refused_not_fatal(tmp_path):
    path = tmp_path / "answers.jsonl"
    # 600 statements x 200 sources = 120,000 pairs, over MAX_PAIRS_PER_ANSWER
    huge = answer("big", answer=" ".join(f"Fact number {k} holds." for k in range(600)),
                  sources=[{"index": k, "text": "x"} for k in range(1, 201)])
    path.write_text("\n".join(json.dumps(o) for o in (answer("a"), answer("a"), huge, answer("z"))) + "\n")
    refusals = Refusals()
    got = list(IMPORTERS["canonical"].iter(path, refusals=refusals))
    assert [a.answer.answer_id for a in got] == ["a", "z"]
    assert [(r.file, r.line, r.field) for r in refusals.items] == [("answers.jsonl", "2", "answer_id"),
                                                                   ("answers.jsonl", "", "answer")]
    assert refusals.items[1].record == "big"  # the answer the size check names
    assert "pairs; the limit is" in refusals.items[1].why


def test_expertqa_refuses_a_bad_line(tmp_path):
    good = (FIXTURES / "expertqa_mini.jsonl").read_text().splitlines()
    path = tmp_path / "rand_val.jsonl"
    path.write_text("\n".join([good[0], "[1, 2", json.dumps({"question": 5}), good[1]]) + "\n")
    refusals = Refusals()
    got = list(IMPORTERS["expertqa"].iter(path, refusals=refusals))
    whole = list(IMPORTERS["expertqa"].iter(FIXTURES / "expertqa_mini.jsonl"))
    assert len(got) == len(whole) > 0  # every answer of the two good lines
    assert [(r.file, r.line) for r in refusals.items] == [("rand_val.jsonl", "2"), ("rand_val.jsonl", "3")]
    assert refusals.items[1].field == "question"


def test_hagrid_refuses_a_bad_line(tmp_path):
    good = (FIXTURES / "hagrid" / "dev.jsonl").read_text().splitlines()
    path = tmp_path / "dev.jsonl"
    path.write_text("\n".join([good[0], json.dumps({"query_id": 1, "query": "q", "quotes": "no", "answers": []}),
                               good[1]]) + "\n")
    refusals = Refusals()
    got = list(IMPORTERS["hagrid"].iter(path, refusals=refusals))
    assert len(got) == len(list(IMPORTERS["hagrid"].iter(FIXTURES / "hagrid" / "dev.jsonl"))) > 0
    assert [(r.line, r.field) for r in refusals.items] == [("2", "quotes")]


def test_aee_release_refuses_a_bad_record(tmp_path):
    from test_aee_importer import _obj, _st

    page = "Title: A\n\nURL Source: https://x\n\nMarkdown Content:\nbody"
    good = lambda k: _obj(k, "YouCom", "How do heat pumps work?", False, "X [1].",  # noqa: E731
                          {1: ("https://b.example/1", page)}, "Confident", [_st(0, "X [1].", "1", [1])])
    bad = good(2)
    bad.pop("Output")
    path = tmp_path / "ans_eng_eval_0.1.json"
    path.write_text(json.dumps([good(1), bad, good(3)]))
    (tmp_path / "ans_eng_eval_0.1_support_results.jsonl").write_text(
        "\n".join([json.dumps({"sample_id": 1, "core_statement_id": 0, "source_idx": 1, "support": "full"}),
                   json.dumps({"sample_id": 3, "core_statement_id": "zero", "source_idx": 1, "support": "full"})]) + "\n")
    refusals = Refusals()
    got = IMPORTERS["aee"].load(path, refusals=refusals)
    assert [a.answer.answer_id for a in got] == ["1:YouCom", "3:YouCom"]
    assert sorted((r.file, r.line) for r in refusals.items) == [("ans_eng_eval_0.1.json", "[1]"),
                                                                ("ans_eng_eval_0.1_support_results.jsonl", "2")]


def test_engine_folder_refuses_the_unreadable_capture_and_runs_the_rest(tmp_path):
    folder = tmp_path / "captures"
    folder.mkdir()
    for name in ("perplexity_sonar.json", "openai_chat_search.json"):
        (folder / name).write_text((FIXTURES / "engines" / name).read_text())
    (folder / "broken.json").write_text('{"response": {"choices": [')  # a capture cut off mid-write
    (folder / "nan.json").write_text('{"answer_id": "n", "engine": "e", "query": "q", "query_type": "expertise", '
                                     '"answer": "A [1].", "sources": [{"index": 1, "text": "t"}], "score": NaN}')
    refusals = Refusals()
    options = __import__("pipeline.importers.engines", fromlist=["ImportOptions"]).ImportOptions(query="What is new?")
    got = list(IMPORTERS["auto"].iter(folder, options, refusals=refusals))
    assert len(got) == 2
    assert sorted(r.file for r in refusals.items) == ["broken.json", "nan.json"]
    assert next(r for r in refusals.items if r.file == "nan.json").field == "score"


# ---- the run: good rows land, each refused one is listed, --strict stops ---------------------------


def test_run_lists_refused_records_and_scores_the_others(results_root, tmp_path):
    path = middle_bad_jsonl(tmp_path / "answers.jsonl")
    result = run_dataset("mixed", path, judge_name="scripted", progress=False, root=results_root)
    assert result.answers == 3
    report = result.import_report["answers.jsonl"]
    assert report["answers"] == 3
    assert [(r["line"], r["field"]) for r in report["refused"]] == [("2", ""), ("4", "query")]
    assert result.refused == ["refused answers.jsonl:2: invalid JSON at column 30: Expecting value",
                              "refused answers.jsonl:4, field 'query': missing required field"]
    answers = read_table(table_path("mixed", "answers", root=results_root))
    assert sorted(answers["answer_id"]) == ["a", "c2", "e"]
    manifest = json.loads(table_path("mixed", "summary", "scripted", root=results_root)
                          .with_name("manifest.json").read_text())
    assert manifest["config"]["import_report"]["answers.jsonl"]["refused"] == report["refused"]
    # strict: stops at line 2, and the results of the run above stay as they were
    with pytest.raises(InputError, match="answers.jsonl:2"):
        run_dataset("mixed", path, judge_name="scripted", progress=False, root=results_root, strict=True)
    assert sorted(read_table(table_path("mixed", "answers", root=results_root))["answer_id"]) == ["a", "c2", "e"]


def test_a_run_with_every_record_refused_is_an_error_and_keeps_the_old_set(results_root, tmp_path):
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(answer("a")) + "\n")
    run_dataset("all-bad", good, judge_name="scripted", progress=False, root=results_root)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{\n[\n")
    with pytest.raises(InputError, match="no answer could be read: 2 record"):
        run_dataset("all-bad", bad, judge_name="scripted", progress=False, root=results_root)
    assert list(read_table(table_path("all-bad", "answers", root=results_root))["answer_id"]) == ["a"]


def test_cli_run_prints_each_refused_record_and_strict_exits_2(results_root, tmp_path):
    path = middle_bad_jsonl(tmp_path / "answers.jsonl")
    run = lambda *extra: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "pipeline", "run", "--dataset", "cli-mixed", "--path", str(path), "--judge", "scripted",
         "--no-progress", *extra], cwd=ROOT, capture_output=True, text=True, timeout=300)
    out = run()
    assert out.returncode == 0, out.stderr
    assert "  refused line 2: invalid JSON at column 30: Expecting value" in out.stdout
    assert "  refused line 4, field 'query': missing required field" in out.stdout
    assert "refused 2 record(s)" in out.stderr and "3 answers, judge scripted" in out.stdout
    strict = run("--strict")
    assert strict.returncode == 2 and strict.stderr.strip().splitlines()[-1].startswith("error:")
    assert "answers.jsonl:2" in strict.stderr and "Traceback" not in strict.stderr


# ---- an answer that lists no source -------------------------------------------------------------------


def test_an_answer_without_sources_imports_and_is_scored():
    obj = answer("bare", sources=[], answer="Zoos confine animals in small spaces. Captivity changes behaviour.",
                 labels={"statements": [{"text": "Zoos confine animals in small spaces.", "relevant": True},
                                        {"text": "Captivity changes behaviour.", "relevant": True}]})
    annotated = parse_answer(obj, "bare.json")
    assert annotated.answer.sources == () and all(s.citations == () for s in annotated.statements)
    results = score_answer(annotated, ScoreConfig("strict", "exact"))
    # its statements are uncited and nothing supports them
    assert results["unsupported_statements"].value == close(1.0) and results["unsupported_statements"].n == 2
    assert results["citation_recall"].value == close(0.0)  # Liu et al.: uncited statements count against recall
    # source metrics: n/a with the reason, never 0
    for name in ("uncited_sources", "source_necessity", "duplicate_sources", "dead_source_share"):
        assert results[name].value is None and results[name].reason == "no listed sources", name


def test_a_run_scores_source_less_answers_beside_the_others(results_root, tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(json.dumps(o) for o in (answer("with"), answer("without", sources=[]))) + "\n")
    result = run_dataset("bare", path, judge_name="scripted", progress=False, root=results_root)
    assert result.answers == 2 and result.refused == []
    metrics = read_table(table_path("bare", "metrics", "scripted", root=results_root))
    row = metrics[(metrics["answer_id"] == "without") & (metrics["metric"] == "unsupported_statements")
                  & (metrics["mode"] == "strict")].iloc[0]
    assert row["value"] == close(1.0)


def test_labels_on_a_source_less_answer_carry_no_pair(tmp_path):
    obj = answer("bare", sources=[], answer="A claim.", labels={"statements": [{"text": "A claim.", "supported_by": []}]})
    annotated = parse_answer(obj, "bare.json")
    assert not [v for v in annotated.verdicts if isinstance(v, Verdict) and v.kind == "support"]


# ---- carried labels say which pairs they judged (issue 30 item 4) -------------------------------------


def _pair_labels(annotated) -> dict[tuple[int, int], tuple[str | None, str]]:
    return {(v.statement_index, v.source_index): (v.label, v.raw) for v in annotated.verdicts
            if v.kind == "support" and v.source_index is not None}


LABELLED = {"answer": "Trees cool streets [1]. Parks hold water [2].",
            "sources": [{"index": 1, "text": "Trees cool streets."}, {"index": 2, "text": "Parks hold water."},
                        {"index": 3, "text": "Roofs reflect light."}]}


def test_labels_of_cited_pairs_only_leave_the_uncited_pairs_unknown():
    statements = [{"text": "Trees cool streets [1].", "supported_by": [1]},
                  {"text": "Parks hold water [2].", "supported_by": []}]
    cited = parse_answer(answer("cited", **LABELLED, labels={"judged": "cited", "statements": statements}), "x.json")
    labels = _pair_labels(cited)
    assert labels[(0, 1)][0] == "full" and labels[(1, 2)][0] == "none"  # judged: cited
    for pair in ((0, 2), (0, 3), (1, 1), (1, 3)):  # uncited: nobody judged them
        assert labels[pair] == ("unknown", "not checked: the labels judge only the sources a statement cites"), pair
    assert cited.answer.meta["support_scope"] == "cited_only"  # the existing cited-only rules apply
    results = score_answer(cited, ScoreConfig("strict", "exact"))
    # statement 1: its one cited source does not support it -> unsupported, as a lower bound
    assert results["unsupported_statements"].value == close(0.5)
    assert "lower bound" in results["unsupported_statements"].reason
    assert results["source_necessity"].value is None and "only cited" in results["source_necessity"].reason
    # the same labels read as covering every listed source (the default, the teaching corpus's)
    every = parse_answer(answer("all", **LABELLED, labels={"statements": statements}), "x.json")
    assert {lab for (s, src), (lab, _) in _pair_labels(every).items() if (s, src) in ((0, 2), (0, 3), (1, 1))} == {"none"}
    assert "support_scope" not in every.answer.meta


def test_an_explicit_not_supported_list_leaves_every_other_pair_unknown():
    statements = [{"text": "Trees cool streets [1].", "supported_by": [1], "not_supported_by": [3]},
                  {"text": "Parks hold water [2].", "supported_by": [2], "judged": "all"}]
    annotated = parse_answer(answer("listed", **LABELLED, labels={"statements": statements}), "x.json")
    labels = _pair_labels(annotated)
    assert labels[(0, 1)][0] == "full" and labels[(0, 3)][0] == "none"
    assert labels[(0, 2)] == ("unknown", "not checked: the labels do not judge this pair")
    assert [labels[(1, k)][0] for k in (1, 2, 3)] == ["none", "full", "none"]
    assert "support_scope" not in annotated.answer.meta  # one statement covers every source: no answer-wide scope
    results = score_answer(annotated, ScoreConfig("strict", "exact"))
    assert results["unsupported_statements"].value == close(0.0)


@pytest.mark.parametrize("labels, field", [
    ({"judged": "some", "statements": [{"text": "Trees cool streets [1].", "supported_by": [1]}]}, "labels.judged"),
    ({"statements": [{"text": "Trees cool streets [1].", "supported_by": [1], "not_supported_by": [1]}]},
     "labels.statements[0]"),
])
def test_bad_label_scopes_name_their_field(labels, field):
    with pytest.raises(InputError) as err:
        parse_answer(answer("bad", **LABELLED, labels=labels), "x.json")
    assert err.value.field == field
