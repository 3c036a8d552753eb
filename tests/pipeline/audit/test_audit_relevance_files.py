"""A pair sample that asks relevance too (`draw_sample(..., relevance=True)`), labelled by hand: its
file (a relevance row per statement before the statement's support rows, the column a row does not
ask holding "n/a"), the import of that file and of Label Studio / Argilla exports (each item takes
its own question, a label in the other question's column is one error line), progress per item
kind, publishing (a statement item gives a relevance verdict), and agreement per item kind."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET

import pytest
from audit_fixtures import build_audit_results

from pipeline.audit.agreement import audit_agreement, per_person
from pipeline.audit.files import export_tasks, import_labels, label_studio_config
from pipeline.audit.labels import LabelStore, labels_path
from pipeline.audit.population import item_asks, judge_labels
from pipeline.audit.progress import is_complete, progress, resume_index
from pipeline.audit.sample import PAIR_FILE_COLUMNS, RELEVANCE_PAIR_FILE_COLUMNS, annotation_text, draw_sample, register, write_annotation_file
from pipeline.matrices import label_view
from pipeline.storage.tables import load_annotated

RELEVANT_CYCLE = ("relevant", "relevant", "filler", "cant_tell")
SUPPORT_CYCLE = ("full", "partial", "none", "cant_tell")


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return build_audit_results(tmp_path_factory.mktemp("audit_relevance_files"))


@pytest.fixture(scope="module")
def sample(root):
    s = draw_sample("demo", "scripted", 300, seed=3, unit="pair", scope="all", relevance=True, root=root)
    register(s, root)
    return s


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def _write(path, rows: list[dict[str, str]]) -> None:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")


def _planned(sample) -> dict[str, tuple[str, str]]:
    """item -> (field, value) a person gives: relevance items cycle through relevant, relevant,
    filler, can't tell; support items through full, partial, none, can't tell."""
    out, k_rel, k_sup = {}, 0, 0
    for r in sample.items.sort_values("order").to_dict("records"):
        if item_asks(r) == "relevant":
            out[r["item_id"]] = ("relevant", RELEVANT_CYCLE[k_rel % 4])
            k_rel += 1
        else:
            out[r["item_id"]] = ("support", SUPPORT_CYCLE[k_sup % 4])
            k_sup += 1
    return out


def test_the_sample_holds_a_relevance_item_before_each_statements_pairs(sample):
    items = sample.items.sort_values("order")
    assert sample.meta["relevance"] is True and sample.sample_id == "demo-scripted-pair-all-rel-n300-s3"
    kinds = list(items["asks"])
    assert kinds[0] == "relevant" and set(kinds) == {"relevant", "support"}
    # every statement of a drawn answer: one relevance item, then its pairs (same statement index)
    for _, part in items.groupby(["answer_id", "statement_index"], sort=False):
        assert list(part["asks"])[0] == "relevant" and list(part["asks"]).count("relevant") == 1
        assert set(part["source_index"][1:]) <= set(range(1, 20)) and int(part["source_index"].iloc[0]) == -1


def test_the_file_has_a_relevant_column_and_n_a_where_a_row_does_not_ask(sample):
    rows = _rows(annotation_text(sample, "csv"))
    assert tuple(rows[0]) == RELEVANCE_PAIR_FILE_COLUMNS
    assert len(rows) == len(sample.items) == 295
    items = sample.items.set_index("item_id")
    n_rel = 0
    for row in rows:
        item = items.loc[row["item_id"]]
        if item["asks"] == "relevant":
            n_rel += 1
            assert row["item_id"].startswith("s-")
            assert (row["relevant"], row["support"]) == ("", "n/a")
            assert row["source_index"] == row["source_title"] == row["source_url"] == row["passage"] == row["source_text"] == ""
            assert row["answer"] == item["answer_text"] and row["statement"] == item["statement"]
        else:
            assert row["item_id"].startswith("p-")
            assert (row["relevant"], row["support"]) == ("n/a", "")
            assert row["answer"] == "" and row["source_index"] == str(int(item["source_index"]))
            assert row["source_text"] == item["source_text"]
    assert n_rel == 66  # the statements of the 11 drawn answers
    lines = annotation_text(sample, "jsonl").splitlines()
    first = json.loads(lines[0])
    assert list(first) == list(RELEVANCE_PAIR_FILE_COLUMNS) and first["support"] == "n/a" and first["relevant"] == ""
    assert json.loads(lines[1])["relevant"] == "n/a"


def test_an_old_pair_samples_file_keeps_its_columns(root):
    old = draw_sample("demo", "scripted", 90, seed=3, unit="pair", scope="all", root=root)
    text = annotation_text(old, "csv")
    assert text.splitlines()[0] == ("sample_id,item_id,answer_id,engine,statement_index,source_index,query,statement,"
                                    "source_title,source_url,passage,source_text,support,note")
    assert tuple(_rows(text)[0]) == PAIR_FILE_COLUMNS and "relevant" not in PAIR_FILE_COLUMNS
    assert "to_answer" not in label_studio_config("pair") and 'name="relevant"' not in label_studio_config("pair")


def test_a_filled_csv_lands_per_item_kind(root, sample, tmp_path):
    store = LabelStore(labels_path(root))
    plan = _planned(sample)
    path = write_annotation_file(sample, tmp_path / "rel.csv")
    rows = _rows(path.read_text(encoding="utf-8"))
    for row in rows:
        field, value = plan[row["item_id"]]
        row[field] = value
    _write(path, rows)
    report = import_labels(path, "demo", "Ana", store=store, root=root)
    assert report.errors == []
    assert report.written == 295 and report.rows == 295
    got = store.labels(sample.sample_id, "Ana").set_index("item_id")
    assert len(got) == 295
    for item_id, (field, value) in plan.items():
        other = "support" if field == "relevant" else "relevant"
        assert got.loc[item_id, field] == value
        assert got.loc[item_id, other] is None or got.loc[item_id, other] != got.loc[item_id, other]  # never given
    # importing the same file again writes nothing new
    again = import_labels(path, "demo", "Ana", store=store, root=root)
    assert (again.written, again.unchanged, again.errors) == (0, 295, [])


def test_a_label_in_the_other_questions_column_is_one_error_line(root, sample, tmp_path):
    store = LabelStore(labels_path(root))
    path = write_annotation_file(sample, tmp_path / "wrong.csv")
    rows = _rows(path.read_text(encoding="utf-8"))
    rel = [i for i, r in enumerate(rows) if r["support"] == "n/a"]
    sup = [i for i, r in enumerate(rows) if r["relevant"] == "n/a"]
    rows[rel[0]] |= {"relevant": "relevant", "support": "full"}  # support given on a relevance row
    rows[sup[0]] |= {"relevant": "filler", "support": "none"}  # relevance given on a support row
    rows[rel[1]] |= {"relevant": "filler"}  # support left at n/a: fine
    rows[sup[1]] |= {"relevant": "", "support": "partial"}  # relevant emptied: fine
    rows[rel[2]] |= {"support": "partial"}  # only the wrong column filled
    _write(path, rows)
    report = import_labels(path, "demo", "Ben", store=store, root=root)
    assert report.written == 2
    r0, s0, r2 = (rows[i]["item_id"] for i in (rel[0], sup[0], rel[2]))
    source = int(sample.items.set_index("item_id").loc[s0, "source_index"])
    assert report.errors == [
        f"row {rel[0] + 2}: item {r0}: field 'support': this row asks whether the statement is relevant (it has no "
        "source); put the answer in 'relevant' and leave 'support' empty or n/a",
        f"row {sup[0] + 2}: item {s0}: field 'relevant': this row asks whether source {source} supports the statement; "
        "put the answer in 'support' and leave 'relevant' empty or n/a (the statement's own row asks relevance)",
        f"row {rel[2] + 2}: item {r2}: field 'support': this row asks whether the statement is relevant (it has no "
        "source); put the answer in 'relevant' and leave 'support' empty or n/a",
    ]
    got = store.labels(sample.sample_id, "Ben").set_index("item_id")
    assert sorted(got.index) == sorted([rows[rel[1]]["item_id"], rows[sup[1]]["item_id"]])  # the bad rows left nothing
    assert got.loc[rows[rel[1]]["item_id"], "relevant"] == "filler"
    assert got.loc[rows[sup[1]]["item_id"], "support"] == "partial"


def test_label_studio_and_argilla_exports_ask_both_questions_optional(sample, tmp_path):
    tasks_path, config_path = export_tasks(sample, "label-studio", tmp_path)
    config = ET.fromstring(config_path.read_text(encoding="utf-8"))
    choices = {c.get("name"): c for c in config.iter("Choices")}
    assert set(choices) == {"relevant", "support"}
    assert all(c.get("required") is None for c in choices.values())  # not on every task: on none
    assert [c.get("alias") for c in choices["relevant"]] == ["relevant", "filler", "cant_tell"]
    assert any(h.get("value") == "$to_answer" for h in config.iter("Header"))
    tasks = json.loads(tasks_path.read_text(encoding="utf-8"))
    first, second = tasks[0]["data"], tasks[1]["data"]
    assert first["to_answer"].startswith("Answer the relevance question only") and first["source_text"] == ""
    assert second["to_answer"].startswith("Answer the support question only") and second["source_text"]
    settings_path, records_path = export_tasks(sample, "argilla", tmp_path)
    settings = json.loads(settings_path.read_text(encoding="utf-8"))
    questions = {q["name"]: q for q in settings["questions"]}
    assert (questions["relevant"]["required"], questions["support"]["required"]) == (False, False)
    assert questions["relevant"]["title"] == "Does this statement help answer the question, or is it filler?"
    fields = {f["name"]: f for f in settings["fields"]}
    assert fields["source_text"]["required"] is False and fields["statement"]["required"] is True
    assert "one per item" in settings["guidelines"]
    records = json.loads(records_path.read_text(encoding="utf-8"))
    assert records[0]["fields"]["to_answer"] == first["to_answer"]


def test_label_studio_and_argilla_imports_take_each_items_own_question(root, sample, tmp_path):
    store = LabelStore(labels_path(root))
    tasks = json.loads(export_tasks(sample, "label-studio", tmp_path)[0].read_text(encoding="utf-8"))

    def done(task, **choices):
        return {**task, "annotations": [{"completed_by": 1, "result": [
            {"from_name": k, "to_name": "statement", "type": "choices", "value": {"choices": [v]}}
            for k, v in choices.items()]}]}

    exported = [done(tasks[0], relevant="filler"), done(tasks[1], support="full"),
                done(tasks[4], relevant="relevant", support="none")]  # task 5: a relevance item given support too
    assert tasks[4]["data"]["source_index"] == ""
    path = tmp_path / "ls.json"
    path.write_text(json.dumps(exported), encoding="utf-8")
    report = import_labels(path, "demo", "Chen", store=store, fmt="label-studio", root=root)
    assert report.written == 2 and len(report.errors) == 1
    assert report.errors[0].startswith(f"task 3: item {tasks[4]['data']['item_id']}: field 'support': this row asks "
                                       "whether the statement is relevant")
    got = store.labels(sample.sample_id, "Chen").set_index("item_id")
    assert got.loc[tasks[0]["data"]["item_id"], "relevant"] == "filler"
    assert got.loc[tasks[1]["data"]["item_id"], "support"] == "full"
    records = json.loads(export_tasks(sample, "argilla", tmp_path)[1].read_text(encoding="utf-8"))
    records[0]["responses"] = {"relevant": [{"value": "relevant", "user_id": "u1"}]}
    records[1]["responses"] = {"support": [{"value": "partial", "user_id": "u1"}],
                               "relevant": [{"value": "relevant", "user_id": "u1"}]}  # relevance on a support item
    path = tmp_path / "argilla.json"
    path.write_text(json.dumps(records[:2]), encoding="utf-8")
    report = import_labels(path, "demo", "Dee", store=store, fmt="argilla", root=root)
    assert report.written == 1 and len(report.errors) == 1 and report.errors[0].startswith(
        f"record 2: item {records[1]['id']}: field 'relevant': this row asks whether source")
    assert store.labels(sample.sample_id, "Dee").set_index("item_id").loc[records[0]["id"], "relevant"] == "relevant"


def test_progress_counts_each_item_by_its_own_question(sample):
    items = sample.items.sort_values("order")
    order = list(items["item_id"])[:6]
    asks = {r["item_id"]: item_asks(r) for r in items.to_dict("records")}
    assert [asks[i] for i in order] == ["relevant", "support", "support", "support", "relevant", "support"]
    qt = {i: "debate" for i in order}
    labels = {order[0]: {"relevant": "filler"}, order[1]: {"support": "full"},
              order[2]: {"relevant": "relevant"},  # not its question: still open
              order[4]: {"relevant": "cant_tell"}, order[5]: {"skipped": True}}
    assert is_complete("pair", "debate", labels[order[0]], "relevant")
    assert not is_complete("pair", "debate", labels[order[0]])  # read as a support item it is not answered
    assert not is_complete("pair", "debate", {"support": "full"}, "relevant")
    assert progress(order, qt, "pair", labels, asks) == {"total": 6, "done": 3, "cant_tell": 1, "skipped": 1, "open": 2}
    assert resume_index(order, qt, "pair", labels, asks) == 2
    # without the item kinds (an old caller), relevance answers would count for nothing
    assert progress(order, qt, "pair", labels)["done"] == 1


def test_publishing_gives_relevance_verdicts_from_statement_items(root, sample, tmp_path, monkeypatch):
    from pipeline.audit.cli import publish
    from pipeline.runner import run_dataset

    monkeypatch.setenv("AEE_RESULTS_DIR", str(root))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    store = LabelStore(labels_path(root))
    plan = _planned(sample)
    store.record_many([(sample.sample_id, i, "Eve", f, v) for i, (f, v) in plan.items()], "test")
    summary = publish("demo", run_dataset, ["Eve"], root=root)
    assert "published judge human:audit of demo" in summary
    answers = load_annotated("demo", "human:audit", root)
    items = sample.items.sort_values("order").to_dict("records")
    rel_of = {(r["answer_id"], int(r["statement_index"])): plan[r["item_id"]][1] for r in items if r["asks"] == "relevant"}
    checked = {"relevant": 0, "filler": 0, "cant_tell": 0, "support": 0}
    for (aid, si), value in rel_of.items():
        view = label_view(answers[aid])
        assert view.relevant.get(si) == {"relevant": True, "filler": False, "cant_tell": None}[value]
        checked[value] += 1
    assert checked == {"relevant": 34, "filler": 16, "cant_tell": 16, "support": 0}  # 66 statements: 0,1 of every 4 relevant
    for r in items:
        if r["asks"] != "support" or rel_of[(r["answer_id"], int(r["statement_index"]))] == "filler":
            continue  # a filler statement's sources are not asked (as for a judge)
        view = label_view(answers[r["answer_id"]])
        given = plan[r["item_id"]][1]
        got = view.support.get((int(r["statement_index"]), int(r["source_index"])))
        assert got == (None if given == "cant_tell" else given), r["item_id"]
        checked["support"] += 1
    assert checked["support"] == 172  # the 229 pairs less the 57 under the 16 statements called filler
    # the statements of answers nobody drew have no relevance verdict (unknown)
    drawn = {r["answer_id"] for r in items}
    other = next(a for a in answers if a not in drawn)
    assert all(v is None for v in label_view(answers[other]).relevant.values())


def test_agreement_compares_support_on_pairs_and_relevance_on_statements(root, sample):
    plan = _planned(sample)
    store = LabelStore(labels_path(root))
    store.record_many([(sample.sample_id, i, "Fay", f, v) for i, (f, v) in plan.items()], "test")
    labels = store.labels(sample.sample_id, "Fay")
    judge, scores = judge_labels(sample.items, load_annotated("demo", "scripted", root), "pair")
    items = sample.items.to_dict("records")
    for field, classes in (("support", ("full", "partial", "none")), ("relevant", ("relevant", "filler"))):
        expected = sum(1 for r in items if r["asks"] == field and plan[r["item_id"]][1] in classes
                       and judge[field].get(r["item_id"]) in classes)
        both = {p: dict(got) for p, got in per_person(labels, field).items()}
        # a stray label on an item of the other kind is not this field's
        stray = next(r["item_id"] for r in items if r["asks"] != field)
        both["Fay"][stray] = classes[0]
        result = audit_agreement(sample.items, sample.frame, judge[field], both, field, scores if field == "support" else None,
                                 replicates=20)
        versus = result["versus_judge"][0]
        assert versus["n_items"] == expected
        # 229 pairs less 57 can't tell and 5 the judge left unknown; 66 statements less 16 can't tell
        assert expected == {"support": 167, "relevant": 50}[field]
        assert versus["judge_unknown"] == {"support": 5, "relevant": 0}[field]  # the stray label is not counted at all
        kinds = {r["item_id"]: r["asks"] for r in items}
        assert all(kinds[i] == field for i in result["disagreements"].get("item_id", []))
        if field == "relevant" and len(result["disagreements"]):
            assert result["disagreements"]["source_index"].isna().all()


def test_a_filled_jsonl_file_follows_the_same_rule(root, sample, tmp_path):
    store = LabelStore(labels_path(root))
    lines = [json.loads(line) for line in annotation_text(sample, "jsonl").splitlines()]
    assert lines[0]["source_index"] == "" and lines[1]["source_index"] == 1
    lines[0]["relevant"] = "filler"
    lines[1]["support"] = "partial"
    lines[2] |= {"support": "none", "relevant": "relevant"}  # relevance on a support line
    lines[4]["relevant"] = "can't tell"
    path = tmp_path / "rel.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    report = import_labels(path, "demo", "Hal", store=store, root=root)
    assert report.written == 3 and len(report.errors) == 1
    assert report.errors[0].startswith(f"line 3: item {lines[2]['item_id']}: field 'relevant': this row asks whether "
                                       "source 2 supports the statement")
    got = store.labels(sample.sample_id, "Hal").set_index("item_id")
    assert (got.loc[lines[0]["item_id"], "relevant"], got.loc[lines[1]["item_id"], "support"],
            got.loc[lines[4]["item_id"], "relevant"]) == ("filler", "partial", "cant_tell")
