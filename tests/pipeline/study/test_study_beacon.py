"""The study beacon's receiving end (issue 45 items 10 and 12): a beacon from a registered recording
session adds one dwell, hover or click row with that session's participant and the answer's context;
anything else adds nothing and says why by its status."""

from __future__ import annotations

import json

import pytest

from dashboard import study_beacon
from pipeline.study import recorder

CONTEXT = {"engine": "Lumen", "query_id": "q-heat", "query_type": "expertise"}


@pytest.fixture
def studies(tmp_path, monkeypatch):
    monkeypatch.setenv("AEE_STUDIES_DIR", str(tmp_path / "studies"))
    study_beacon.register("tok-1", study_id="class45", participant="P07", session="s1", alignment="none",
                          answer_id="lumen-q5", context=CONTEXT)
    return tmp_path / "studies"


def _beacon(**over) -> bytes:
    msg = {"token": "tok-1", "answer": "lumen-q5", "ms": 4250, "id": "b1"}
    msg.update(over)
    return json.dumps({k: v for k, v in msg.items() if v is not None}).encode()


def test_a_beacon_adds_one_dwell_row_for_its_session(studies):
    assert study_beacon.receive(_beacon()) == 204
    log = recorder.load_study_log("class45")
    assert list(log["event"]) == ["dwell"]
    row = log.iloc[0]
    assert (row["participant"], row["session"], row["engine"], row["query_id"], row["query_type"]) == \
        ("P07", "s1", "Lumen", "q-heat", "expertise")
    assert abs(float(row["dwell_seconds"]) - 4.25) < 1e-9
    # the same beacon again (a browser may retry) counts once
    assert study_beacon.receive(_beacon()) == 409
    assert len(recorder.load_study_log("class45")) == 1


@pytest.mark.parametrize("body, status", [
    (b"not json", 400), (b"[1, 2]", 400), (b"\xff\xfe", 400),
    (_beacon(ms=0), 400), (_beacon(ms=-5), 400), (_beacon(ms=True), 400), (_beacon(ms="4000"), 400),
    (_beacon(ms=24 * 3600 * 1000 + 1), 400), (_beacon(id=""), 400), (_beacon(id="x" * 201), 400),
    (_beacon(event="scroll"), 400), (_beacon(event="hover"), 400),  # no such event; a hover without its source
    (_beacon(event="click", source=0), 400), (_beacon(event="click", source=True), 400),
    (_beacon(event="hover", source="2"), 400), (_beacon(event="hover", source=10_001), 400),
    (_beacon(token="someone-else"), 404),  # a session that never recorded here
    (_beacon(answer="parrot-q5"), 404),  # an answer this session was never shown
])
def test_anything_else_adds_nothing(studies, body, status):
    assert study_beacon.receive(body) == status
    assert recorder.load_study_log("class45").empty


def test_a_changed_participant_code_starts_afresh(studies):
    study_beacon.register("tok-1", study_id="class45", participant="P08", session="s1", alignment="none",
                          answer_id="parrot-q5", context={**CONTEXT, "engine": "Parrot"})
    assert study_beacon.receive(_beacon()) == 404  # lumen-q5 was shown to P07, not P08
    assert study_beacon.receive(_beacon(answer="parrot-q5", id="b2")) == 204
    assert list(recorder.load_study_log("class45")["participant"]) == ["P08"]


def test_the_registry_is_bounded(studies, monkeypatch):
    monkeypatch.setattr(study_beacon, "MAX_SESSIONS", 3)
    for k in range(5):
        study_beacon.register(f"t{k}", study_id="class45", participant=f"P{k}", session="s1", alignment="none",
                              answer_id="lumen-q5", context=CONTEXT)
    assert study_beacon.receive(_beacon(token="t0")) == 404  # the oldest sessions went first
    assert study_beacon.receive(_beacon(token="t4")) == 204


def test_marker_hovers_and_clicks_add_one_row_each(studies):
    """A marker's hover and click (item 10: sent by beacon, so no script run redraws the page under
    the participant's next click) are the rows the component's state used to give: event and source."""
    assert study_beacon.recorded("tok-1") == 0
    assert study_beacon.receive(_beacon(event="hover", source=2, statement=0, ms=None, id="h1")) == 204
    assert study_beacon.receive(_beacon(event="click", source=3, ms=None, id="c1")) == 204
    assert study_beacon.receive(_beacon(event="click", source=3, ms=None, id="c1")) == 409  # a retried beacon
    assert study_beacon.receive(_beacon(id="d1")) == 204  # a dwell time without `event`, as first sent
    log = recorder.load_study_log("class45")
    assert list(log["event"]) == ["hover", "click", "dwell"]
    assert [int(v) for v in log["source_rank"][:2]] == [2, 3]
    assert set(log["participant"]) == {"P07"} and set(log["engine"]) == {"Lumen"}
    assert study_beacon.recorded("tok-1") == 3
    assert study_beacon.recorded("never-seen") == 0


def test_a_row_that_could_not_be_written_may_be_sent_again(studies, monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(recorder, "append_events", refuse)
    assert study_beacon.receive(_beacon(event="click", source=1, id="c9")) == 500
    monkeypatch.undo()
    monkeypatch.setenv("AEE_STUDIES_DIR", str(studies))
    assert study_beacon.receive(_beacon(event="click", source=1, id="c9")) == 204
    assert list(recorder.load_study_log("class45")["event"]) == ["click"]
