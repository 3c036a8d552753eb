"""Gold answers on records: identity of sources, storage in the answers table, and results files
written before the new columns existed."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.gold.gold import attach_gold, gold_from_json, gold_index, gold_to_json, query_key, source_key
from pipeline.records import AnnotatedAnswer, Answer, GoldAnswer, Source, Statement
from pipeline.storage.store import SCHEMAS, TableWriter, read_table, to_table
from pipeline.storage.tables import answer_rows, answers_from_tables

GOLD = (GoldAnswer("Canberra [1].", ("text:abc",), attributable=True, informative=None), GoldAnswer("Sydney is bigger."))


def _answer(query: str = "What is the capital of Australia?", gold=()) -> AnnotatedAnswer:
    a = Answer("x1", "e", query, "expertise", "Canberra [1].", (Source(1, text="Canberra is the capital."),), gold=gold)
    return AnnotatedAnswer(a, (Statement("x1", 0, "Canberra [1].", citations=(1,)),))


def test_source_identity_by_url_else_text():
    assert source_key(Source(1, url="https://www.Example.org/page/")) == source_key(Source(9, url="http://example.org/page"))
    assert source_key(Source(1, text="Canberra  is the capital.")) == source_key(Source(2, text=" canberra is the CAPITAL. "))
    assert source_key(Source(1)) == ""


def test_queries_match_ignoring_case_spacing_and_closing_punctuation():
    assert query_key("  What is the capital of   Australia?") == query_key("what is the capital of australia")
    index = gold_index([_answer()])
    moved = attach_gold(_answer("WHAT is the capital of Australia"), index)
    assert [g.text for g in moved.answer.gold] == ["Canberra [1]."]
    assert attach_gold(_answer("Another question?"), index).answer.gold == ()


def test_gold_round_trips_through_the_answers_table(tmp_path):
    rows = answer_rows("d", [_answer(gold=GOLD)])
    assert gold_from_json(rows[0]["gold"]) == GOLD
    assert answer_rows("d", [_answer()])[0]["gold"] == ""
    path = tmp_path / "answers.parquet"
    writer = TableWriter("answers", path)
    writer.append(rows)
    writer.commit()
    empty = SCHEMAS["sources"].empty_table().to_pandas()
    back = answers_from_tables(read_table(path), empty, SCHEMAS["statements"].empty_table().to_pandas(),
                               SCHEMAS["labels"].empty_table().to_pandas())
    assert back["x1"].answer.gold == GOLD


def test_a_damaged_gold_cell_gives_no_gold():
    for cell in ("", None, "{not json", "[1, 2]", '[{"text": 3}]'):
        assert gold_from_json(cell) == ()
    assert gold_to_json(()) == ""


def test_results_written_before_the_new_columns_merge_with_new_rows(tmp_path):
    old_schema = pa.schema([f for f in SCHEMAS["answers"] if f.name != "gold"])
    old = tmp_path / "old.parquet"
    pq.write_table(to_table("answers", answer_rows("d", [_answer()])).drop(["gold"]).cast(old_schema), old)
    writer = TableWriter("answers", tmp_path / "answers.parquet")
    writer.append(pq.read_table(old))  # the runner merges earlier answers like this
    writer.append(answer_rows("d", [_answer(gold=GOLD)]))
    merged = read_table(writer.commit())
    assert list(merged.columns) == SCHEMAS["answers"].names
    assert gold_from_json(merged["gold"].tolist()[0]) == () and gold_from_json(merged["gold"].tolist()[1]) == GOLD
