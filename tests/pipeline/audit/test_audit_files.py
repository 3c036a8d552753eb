"""Importing labels from files (pipeline.audit.files) with hostile input: wrong ids, unknown labels,
10,000 duplicated rows, HTML in free-text columns, shifted rows; one error line per bad row, the good
rows land, no earlier label is lost. And Label Studio / Argilla: export the tasks, read back their
exports (the shapes their own code writes)."""

from __future__ import annotations

import csv
import io
import json
import time
import xml.etree.ElementTree as ET

import pytest
from audit_fixtures import HOSTILE_TEXT, build_audit_results

from pipeline.audit.files import export_tasks, import_labels, label_studio_config, read_rows
from pipeline.audit.labels import LabelStore, labels_path
from pipeline.audit.sample import draw_sample, register, write_annotation_file
from pipeline.errors import InputError


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return build_audit_results(tmp_path_factory.mktemp("audit_files"))


@pytest.fixture(scope="module")
def sample(root):
    s = draw_sample("demo", "scripted", 70, seed=9, root=root)
    register(s, root)
    return s


def _filled(sample, tmp_path, edit) -> tuple:
    path = write_annotation_file(sample, tmp_path / "filled.csv")
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    rows = edit(rows)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path, rows


def test_hostile_csv_one_line_per_bad_row_good_rows_land_nothing_lost(root, sample, tmp_path):
    store = LabelStore(labels_path(root))
    first = sample.items["item_id"].iloc[0]
    store.record(sample.sample_id, first, "Ana", "support", "partial")  # given in the app earlier
    other = sample.items["item_id"].iloc[5]
    store.record(sample.sample_id, other, "Ana", "support", "none")

    def edit(rows):
        for r in rows:
            r["support"] = "full"
            r["note"] = HOSTILE_TEXT  # HTML in a free-text column
            r["statement"] = "<iframe src=//evil>"  # edited free text is ignored on import
        rows[1]["item_id"] = "p-000000000000"  # wrong id
        rows[2]["support"] = "mostly"  # unknown label
        rows[3]["source_index"] = "42"  # a shifted row: the id names another source
        rows[4]["sample_id"] = "no-such-sample"
        rows[5]["support"] = ""  # not filled yet: not an error, earlier label kept
        return rows + [dict(rows[6]) for _ in range(10_000)]  # 10,000 repeats of one good row

    path, rows = _filled(sample, tmp_path, edit)
    started = time.perf_counter()
    report = import_labels(path, "demo", "Ana", store=store, root=root)
    seconds = time.perf_counter() - started
    assert report.rows == len(rows)
    assert len(report.errors) == 4
    assert report.errors[0].startswith("row 3: item 'p-000000000000' is not in sample")
    assert report.errors[1].startswith("row 4: item ") and "'mostly' is not a support label" in report.errors[1]
    assert report.errors[2].startswith("row 5: item ") and "source_index" in report.errors[2] and "'42'" in report.errors[2]
    assert report.errors[3] == "row 6: no registered sample 'no-such-sample'"
    assert all("\n" not in e for e in report.errors)
    assert report.repeated == 10_000
    good = len(rows) - 10_000 - 5  # the four bad rows and the blank one
    labels = store.labels(sample.sample_id, "Ana").set_index("item_id")
    # a label and a note per good row, and the note of the row whose label was left blank
    assert report.written == 2 * good + 1
    assert labels.loc[first, "support"] == "full"
    assert labels.loc[other, "support"] == "none"  # the blank cell did not erase it
    history = store.history(sample.sample_id, first)
    assert list(history.loc[history["field"] == "support", "value"]) == ["partial", "full"]  # the earlier label is still there
    assert labels.loc[first, "note"] == HOSTILE_TEXT  # kept as plain text; pages escape it
    assert seconds < 30
    # importing the same file again writes nothing new
    again = import_labels(path, "demo", "Ana", store=store, root=root)
    assert again.written == 0 and again.unchanged == 2 * good + 1


def test_conflicting_rows_in_one_file_keep_the_first(root, sample, tmp_path):
    store = LabelStore(labels_path(root))

    def edit(rows):
        rows = rows[:3]
        for r in rows:
            r["support"] = "none"
        clash = dict(rows[0], support="full")
        return rows + [clash]

    path, _ = _filled(sample, tmp_path, edit)
    report = import_labels(path, "demo", "Cleo", store=store, root=root)
    assert len(report.errors) == 1 and "row 5" in report.errors[0] and "kept the first" in report.errors[0]
    assert store.labels(sample.sample_id, "Cleo").set_index("item_id").loc[sample.items["item_id"].iloc[0], "support"] == "none"


def test_a_file_for_another_dataset_or_not_text_is_refused(root, sample, tmp_path):
    store = LabelStore(labels_path(root))
    path, _ = _filled(sample, tmp_path, lambda rows: [dict(r, support="full") for r in rows[:2]])
    report = import_labels(path, "hostile", "Ana", store=store, root=root)
    assert report.written == 0 and all("belongs to dataset 'demo', not 'hostile'" in e for e in report.errors)
    binary = tmp_path / "x.csv"
    binary.write_bytes(b"\x81\x00\x9dgarbage\xff\x00")  # no text in any encoding: said with how it was read
    with pytest.raises(InputError, match=r"no item_id column .*the file is not UTF-8 \(line 1, byte 0x81 first\): read as Latin-1"):
        import_labels(binary, "demo", "Ana", store=store, root=root)
    no_ids = tmp_path / "y.csv"
    no_ids.write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(InputError, match="no item_id column"):
        import_labels(no_ids, "demo", "Ana", store=store, root=root)


def test_jsonl_with_broken_lines(root, sample, tmp_path):
    store = LabelStore(labels_path(root))
    ids = list(sample.items["item_id"][:2])
    path = tmp_path / "l.jsonl"
    path.write_text("\n".join([json.dumps({"sample_id": sample.sample_id, "item_id": ids[0], "support": "partial"}),
                               "{not json", "[1, 2]",
                               json.dumps({"sample_id": sample.sample_id, "item_id": ids[1], "support": "Can't tell"})]) + "\n",
                    encoding="utf-8")
    report = import_labels(path, "demo", "Dee", store=store, root=root)
    assert report.written == 2
    assert [e.split(":")[0] for e in report.errors] == ["line 2", "line 3"]
    assert store.labels(sample.sample_id, "Dee").set_index("item_id").loc[ids[1], "support"] == "cant_tell"


def test_label_studio_round_trip(root, sample, tmp_path):
    paths = export_tasks(sample, "label-studio", tmp_path)
    tasks = json.loads(paths[0].read_text(encoding="utf-8"))
    assert len(tasks) == len(sample.items) and tasks[0]["data"]["item_id"] == sample.items["item_id"].iloc[0]
    config = ET.fromstring(paths[1].read_text(encoding="utf-8"))  # well-formed XML
    choices = config.find("Choices")
    assert choices is not None and choices.get("name") == "support"
    assert [c.get("alias") for c in choices] == ["full", "partial", "none", "cant_tell"]
    # Label Studio's JSON export: two people on the first task, a cancelled one on the second
    export = [
        {"id": 1, "data": tasks[0]["data"], "annotations": [
            {"completed_by": {"email": "a@x.org"}, "result": [{"from_name": "support", "to_name": "statement", "type": "choices",
                                                            "value": {"choices": ["full"]}}]},
            {"completed_by": 7, "result": [{"from_name": "support", "to_name": "statement", "type": "choices",
                                            "value": {"choices": ["none"]}},
                                           {"from_name": "note", "to_name": "statement", "type": "textarea",
                                            "value": {"text": [HOSTILE_TEXT]}}]}]},
        {"id": 2, "data": tasks[1]["data"], "annotations": [
            {"completed_by": 7, "was_cancelled": True, "result": [{"from_name": "support", "value": {"choices": ["full"]}}]}]},
        {"id": 3, "data": tasks[2]["data"], "annotations": []},
    ]
    path = tmp_path / "ls.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    store = LabelStore(labels_path(root))
    report = import_labels(path, "demo", "LS", store=store, root=root)
    assert report.errors == [] and report.written == 3
    assert report.annotators == {"LS/a@x.org", "LS/7"}
    labels = store.labels(sample.sample_id).set_index(["annotator", "item_id"])
    first = tasks[0]["data"]["item_id"]
    assert labels.loc[("LS/a@x.org", first), "support"] == "full"
    assert labels.loc[("LS/7", first), "support"] == "none"
    assert labels.loc[("LS/7", first), "note"] == HOSTILE_TEXT
    # JSON-MIN: flat rows
    flat = tmp_path / "min.json"
    flat.write_text(json.dumps([dict(tasks[3]["data"], support="partial")]), encoding="utf-8")
    assert import_labels(flat, "demo", "MIN", store=store, root=root).written == 1


def test_argilla_round_trip_nested_and_flattened(root, sample, tmp_path):
    settings_path, records_path = export_tasks(sample, "argilla", tmp_path)
    settings = json.loads(settings_path.read_text(encoding="utf-8"))
    assert [q["name"] for q in settings["questions"]] == ["support", "note"]
    records = json.loads(records_path.read_text(encoding="utf-8"))
    assert records[0]["id"] == sample.items["item_id"].iloc[0]
    nested = [dict(records[0], responses={"support": [{"value": "partial", "user_id": "u-1"}]}),
              dict(records[1], responses={"support": [{"value": "maybe", "user_id": "u-1"}]})]
    path = tmp_path / "argilla.json"
    path.write_text(json.dumps(nested), encoding="utf-8")
    store = LabelStore(labels_path(root))
    report = import_labels(path, "demo", "AR", store=store, root=root)
    assert report.written == 1 and len(report.errors) == 1 and report.errors[0].startswith("record 2:")
    flat = [{"id": records[2]["id"], **records[2]["metadata"], "support.responses": ["none", "full"],
             "support.responses.users": ["u-1", "u-2"]}]
    path.write_text(json.dumps(flat), encoding="utf-8")
    report = import_labels(path, "demo", "AR", store=store, root=root)
    assert report.written == 2 and report.annotators == {"AR/u-1", "AR/u-2"}


def test_the_label_studio_config_is_constant_text(sample):
    config = label_studio_config("statement")
    root = ET.fromstring(config)
    assert [c.get("name") for c in root.iter("Choices")] == ["relevant", "stance", "confidence"]
    assert "$statement" in config and "<script" not in config


def test_read_rows_detects_formats(tmp_path):
    path = tmp_path / "a.json"
    path.write_text(json.dumps([{"id": "p-1", "fields": {}, "metadata": {"sample_id": "S", "item_id": "p-1"},
                                 "responses": {"support": [{"value": "full", "user_id": "u"}]}}]), encoding="utf-8")
    rows = list(read_rows(path))
    assert rows[0].item_id == "p-1" and rows[0].values == {"support": "full"}
    with pytest.raises(InputError, match="unknown format"):
        read_rows(path, "xlsx")


# ---- numbers that do not fit, nesting, huge cells, old line endings (issue 31) ---------------------


def test_csv_numbers_that_do_not_fit_a_huge_cell_and_cr_line_endings_are_bad_rows(root, sample, tmp_path):
    """Each hostile cell is one error line naming its row and field; every other row lands, and the
    file uses CR-only line endings (Excel for Mac)."""

    def edit(rows):
        for r in rows[:10]:
            r["support"] = "partial"
        rows[0]["note"] = "a note\nover two lines"  # rows are counted as a spreadsheet shows them
        rows[1]["statement_index"] = "inf"
        rows[2]["statement_index"] = "1e400"
        rows[3]["statement_index"] = "1" * 5000
        rows[4]["statement_index"] = "NaN"
        rows[5]["source_index"] = "2.5"
        rows[6]["note"] = "x" * (20 * 1024 * 1024)  # a 20 MB cell
        return rows[:10]

    path, rows = _filled(sample, tmp_path, edit)
    path.write_bytes(path.read_bytes().replace(b"\r\n", b"\r").replace(b"\n", b"\r"))
    store = LabelStore(labels_path(root))
    report = import_labels(path, "demo", "Mac", store=store, root=root)
    by_row = {e.split(":")[0]: e for e in report.errors}
    assert sorted(by_row) == ["row 3", "row 4", "row 5", "row 6", "row 7", "row 8"], report.errors
    assert "field 'statement_index': 'inf' is not a whole number" in by_row["row 3"]
    assert "field 'statement_index': '1e400' is not a whole number" in by_row["row 4"]
    assert "field 'statement_index'" in by_row["row 5"] and "is not a whole number" in by_row["row 5"]
    assert len(by_row["row 5"]) < 300  # the 5,000 digits are not echoed
    assert "field 'statement_index': 'NaN' is not a whole number" in by_row["row 6"]
    assert "field 'source_index': '2.5' is not a whole number" in by_row["row 7"]
    assert "a cell is larger than 16 MB" in by_row["row 8"]
    assert report.written == 5  # support on rows 2, 9, 10, 11, and the note of row 2
    landed = set(store.labels(sample.sample_id, "Mac")["item_id"])
    assert landed == {rows[0]["item_id"], rows[7]["item_id"], rows[8]["item_id"], rows[9]["item_id"]}


def test_jsonl_overflowing_numbers_and_deep_nesting_are_bad_lines(root, sample, tmp_path):
    ids = list(sample.items["item_id"][:7])
    sid = sample.sample_id
    good = [json.dumps({"sample_id": sid, "item_id": ids[0], "support": "full"}),
            json.dumps({"sample_id": sid, "item_id": ids[6], "support": "none"})]
    bad = [
        '{"sample_id": "%s", "item_id": "%s", "statement_index": 1e999, "support": "full"}' % (sid, ids[1]),
        '{"sample_id": "%s", "item_id": "%s", "statement_index": Infinity, "support": "full"}' % (sid, ids[2]),
        '{"sample_id": "%s", "item_id": "%s", "statement_index": %s, "support": "full"}' % (sid, ids[3], "7" * 5000),
        '{"sample_id": "%s", "item_id": "%s", "support": %s}' % (sid, ids[4], "9" * 5000),
        '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}",
    ]
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join([good[0], *bad, good[1]]) + "\n", encoding="utf-8")
    store = LabelStore(labels_path(root))
    report = import_labels(path, "demo", "Jay", store=store, root=root)
    by_line = {e.split(":")[0]: e for e in report.errors}
    assert sorted(by_line) == ["line 2", "line 3", "line 4", "line 5", "line 6"], report.errors
    assert "field 'statement_index': 'inf' is not a whole number" in by_line["line 2"]
    assert "field 'statement_index': 'inf' is not a whole number" in by_line["line 3"]
    assert "field 'statement_index'" in by_line["line 4"] and len(by_line["line 4"]) < 300
    assert "is not a support label" in by_line["line 5"] and len(by_line["line 5"]) < 600
    assert "nested too deeply" in by_line["line 6"]
    assert report.written == 2
    assert set(store.labels(sid, "Jay")["item_id"]) == {ids[0], ids[6]}


def test_label_studio_person_with_a_control_character_is_a_bad_row_of_that_field(root, sample, tmp_path):
    tasks = json.loads(export_tasks(sample, "label-studio", tmp_path)[0].read_text(encoding="utf-8"))

    def annotation(who, label):
        return {"completed_by": who, "result": [{"from_name": "support", "value": {"choices": [label]}}]}

    export = [{"id": 1, "data": tasks[0]["data"],
               "annotations": [annotation({"email": "ok@x.org"}, "full"), annotation({"email": "bad\x07@x.org"}, "none")]},
              {"id": 2, "data": dict(tasks[1]["data"], statement_index=1e300),
               "annotations": [annotation({"email": "ok@x.org"}, "full")]}]
    path = tmp_path / "ls.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    store = LabelStore(labels_path(root))
    report = import_labels(path, "demo", "Lab", store=store, root=root)
    assert len(report.errors) == 2, report.errors
    assert report.errors[0].startswith("task 1: field 'completed_by': ") and "control characters" in report.errors[0]
    assert "--annotator" not in report.errors[0]
    assert report.errors[1].startswith("task 2: item ") and "field 'statement_index'" in report.errors[1]
    assert report.written == 1 and report.annotators == {"Lab/ok@x.org"}


def test_one_person_keeps_one_name_on_every_task_of_a_file(root, sample, tmp_path):
    """Issue 31 re-check: ok@x.org was 'Lab/ok@x.org' on a task shared with another person but plain
    'Lab' on a task of their own. The suffix is now decided once per file."""
    tasks = json.loads(export_tasks(sample, "label-studio", tmp_path)[0].read_text(encoding="utf-8"))

    def annotation(who, label):
        return {"completed_by": {"email": who}, "result": [{"from_name": "support", "value": {"choices": [label]}}]}

    export = [{"id": 1, "data": tasks[4]["data"], "annotations": [annotation("ok@x.org", "full"), annotation("b@x.org", "none")]},
              {"id": 2, "data": tasks[5]["data"], "annotations": [annotation("ok@x.org", "partial")]}]
    path = tmp_path / "ls.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    store = LabelStore(labels_path(root))
    report = import_labels(path, "demo", "Same", store=store, root=root)
    assert report.errors == [] and report.written == 3
    assert report.annotators == {"Same/ok@x.org", "Same/b@x.org"}
    labels = store.labels(sample.sample_id)
    mine = labels[labels["annotator"] == "Same/ok@x.org"].set_index("item_id")["support"].to_dict()
    assert mine == {tasks[4]["data"]["item_id"]: "full", tasks[5]["data"]["item_id"]: "partial"}
    assert not (labels["annotator"] == "Same").any()
    # A file of one person only keeps the plain name, on every task.
    path.write_text(json.dumps([dict(export[0], annotations=[annotation("ok@x.org", "full")]), export[1]]), encoding="utf-8")
    report = import_labels(path, "demo", "Solo", store=store, root=root)
    assert report.annotators == {"Solo"} and report.written == 2
    # Argilla: the same rule, u-1 is 'AS/u-1' on the record it labelled alone too.
    records = json.loads(export_tasks(sample, "argilla", tmp_path)[1].read_text(encoding="utf-8"))
    nested = [dict(records[4], responses={"support": [{"value": "full", "user_id": "u-1"}, {"value": "none", "user_id": "u-2"}]}),
              dict(records[5], responses={"support": [{"value": "partial", "user_id": "u-1"}]})]
    path.write_text(json.dumps(nested), encoding="utf-8")
    report = import_labels(path, "demo", "AS", store=store, root=root)
    assert report.errors == [] and report.written == 3 and report.annotators == {"AS/u-1", "AS/u-2"}


def test_a_label_studio_file_nested_too_deeply_is_one_error(root, tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(InputError, match="nested too deeply"):
        import_labels(path, "demo", "Ana", store=LabelStore(labels_path(root)), root=root)
