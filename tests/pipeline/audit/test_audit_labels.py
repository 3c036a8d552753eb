"""The label store (pipeline.audit.labels): append-only, one committed row per label, annotators kept
apart, resuming, classroom seats; and human labels as verdicts of the `human` judge family."""

from __future__ import annotations

import sqlite3
import threading

import pandas as pd
import pytest

from pipeline.audit.humans import audit_judge_id, human_verdicts, item_labels, majority
from pipeline.audit.labels import LabelStore, check_value, clean_name, seat_items, student_name
from pipeline.errors import InputError


@pytest.fixture
def store(tmp_path) -> LabelStore:
    return LabelStore(tmp_path / "labels.sqlite")


def test_a_label_is_committed_the_moment_it_is_given(store):
    store.record("S", "i1", "Ana", "support", "full")
    # another connection (another process, a restarted server) sees it at once
    with sqlite3.connect(store.path) as con:
        assert con.execute("SELECT value FROM events").fetchall() == [("full",)]
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_changing_ones_mind_appends_and_the_newest_label_counts(store):
    store.record("S", "i1", "Ana", "support", "full")
    store.record("S", "i1", "Ana", "support", "none")
    labels = store.labels("S")
    assert labels.loc[0, "support"] == "none"
    assert list(store.history("S", "i1")["value"]) == ["full", "none"]  # nothing overwritten


def test_annotators_never_mix(store):
    store.record("S", "i1", "Ana", "support", "full")
    store.record("S", "i1", "Bo", "support", "none")
    store.record("S", "i2", "Bo", "support", "partial")
    assert store.labels("S", "Ana")[["item_id", "support"]].values.tolist() == [["i1", "full"]]
    assert sorted(store.labels("S", "Bo")["item_id"]) == ["i1", "i2"]
    assert store.annotators("S") == ["Ana", "Bo"]
    assert store.labels("other sample").empty


def test_a_skip_is_remembered_until_a_label_is_given(store):
    store.record("S", "i1", "Ana", "skip", "")
    assert bool(store.labels("S").loc[0, "skipped"]) is True
    store.record("S", "i1", "Ana", "support", "partial")
    assert bool(store.labels("S").loc[0, "skipped"]) is False


def test_labels_are_checked_and_abstentions_spelled_any_way_are_one_value():
    assert check_value("support", " Full ") == "full"
    assert check_value("support", "can't tell") == "cant_tell"
    assert check_value("support", "Cannot tell") == "cant_tell"
    assert check_value("relevant", "yes") == "relevant"
    assert check_value("note", "<b>x</b>" * 1000) == ("<b>x</b>" * 1000)[:2000]
    with pytest.raises(InputError, match="not a support label"):
        check_value("support", "mostly")
    with pytest.raises(InputError, match="unknown label field"):
        check_value("colour", "red")


def test_annotator_names_are_bounded_and_printable():
    assert clean_name("  Ana   Lee ") == "Ana Lee"
    for bad in ("", "   ", "x" * 61, "Ana\x1b[31m"):
        with pytest.raises(InputError):
            clean_name(bad)


def test_concurrent_writers_lose_nothing(store):
    def write(person: str) -> None:
        for k in range(40):
            LabelStore(store.path).record("S", f"i{k}", person, "support", "full")

    threads = [threading.Thread(target=write, args=(f"p{n}",)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.event_count() == 160
    assert len(store.labels("S")) == 160


def test_class_seats_overlap_so_every_item_meets_two_students(store):
    order = [f"i{k}" for k in range(20)]
    seats = store.create_class("S", "Class 7B", len(order), seats=4, per_seat=10, overlap=5)
    codes = [s["code"] for s in seats]
    assert len(set(codes)) == 4 and all(len(c) == 6 for c in codes)
    met = pd.Series([i for s in seats for i in seat_items(order, s["first"], s["size"])]).value_counts()
    assert set(met.index) == set(order) and set(met) == {2}
    seat = store.seat(codes[1].lower())  # typed in lower case, still found
    assert seat is not None and seat["first"] == 5 and seat["class_name"] == "Class 7B"
    assert store.seat("NOPE00") is None and store.seat("") is None
    assert student_name(seat, "Ana") == f"Ana ({codes[1]})"
    with pytest.raises(InputError):
        store.create_class("S", "x", 10, seats=0)


def test_majority_leaves_out_abstentions_and_ties():
    assert majority(["full", "full", "none"]) == "full"
    assert majority(["full", "none"]) is None
    assert majority(["cant_tell", "partial"]) == "partial"
    assert majority(["cant_tell", "cant_tell"]) == "cant_tell"
    assert majority([]) is None


def test_human_labels_become_verdicts_of_the_human_judge(store):
    items = pd.DataFrame([
        {"item_id": "p1", "answer_id": "a", "statement_index": 0, "source_index": 2, "query_type": "expertise"},
        {"item_id": "p2", "answer_id": "a", "statement_index": 1, "source_index": 1, "query_type": "expertise"},
    ])
    store.record("S", "p1", "Ana", "support", "partial")
    store.record("S", "p2", "Ana", "support", "cant_tell")
    labels = item_labels(store.labels("S"))
    verdicts = human_verdicts(items, labels, audit_judge_id(["Ana"]), "pair")
    assert len(verdicts) == 1  # "can't tell" is not a label
    v = verdicts[0]
    assert (v.kind, v.label, v.judge, v.statement_index, v.source_index) == ("support", "partial", "human:audit/Ana", 0, 2)
    assert audit_judge_id(["Ana", "Bo"]) == "human:audit"
    statements = pd.DataFrame([{"item_id": "s1", "answer_id": "b", "statement_index": 0, "query_type": "debate"}])
    got = human_verdicts(statements, {"s1": {"relevant": "relevant", "stance": "cant_tell", "confidence": "5"}}, "h", "statement")
    assert [(v.kind, v.label) for v in got] == [("relevance", "relevant"), ("stance", "unknown"), ("confidence", "5")]
