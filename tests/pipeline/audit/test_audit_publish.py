"""The people's audit labels as the `human:audit` judge of a dataset (`aee audit publish`): one label
per item (the majority), everything nobody decided `unknown` with its cause, metrics null with the
judged share, written through the runner beside (never over) the other judges, ExpertQA's carried
`human` judge included."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from answer_fixtures import EQA_MINI
from tolerances import close

from pipeline.audit.labels import LabelStore, labels_path
from pipeline.audit.publish import collect, decide, labels_since, published
from pipeline.audit.sample import draw_sample, register
from pipeline.cli import main
from pipeline.judges import JudgeError, get_judge
from pipeline.matrices import label_view
from pipeline.storage.store import list_judges, read_table, table_path
from pipeline.storage.tables import load_annotated

AUDIT = "human:audit"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from pipeline.runner import run_dataset

    root = tmp_path_factory.mktemp("audit_publish") / "results"
    run_dataset("demo", progress=False, root=root)
    run_dataset("demo", judge_name="scripted", progress=False, root=root, use_cache=False)
    run_dataset("eqa-mini", EQA_MINI, importer="expertqa", root=root, progress=False)  # the experts: `human`
    run_dataset("eqa-mini", EQA_MINI, importer="expertqa", judge_name="scripted", root=root, progress=False,
                use_cache=False)
    return root


@pytest.fixture
def root(built, monkeypatch, tmp_path):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(built))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    return built


def test_decide_takes_the_majority_and_never_guesses():
    got = decide({"Ana": "full", "Ben": "full", "Chen": "partial"}, ["s1"])
    assert got.label == "full" and got.code == ""
    assert got.raw == ("2 of 3 people said fully supports: Ana: fully supports; Ben: fully supports; "
                       "Chen: partially supports (audit sample s1)")
    assert decide({"Ana": "full", "Ben": "none"}) == decide({"Ben": "none", "Ana": "full"})
    assert decide({"Ana": "full", "Ben": "none"}).label is None and decide({"Ana": "full", "Ben": "none"}).code == "audit_split"
    # can't tell is not a vote: one person's label decides when the other abstained
    assert decide({"Ana": "cant_tell", "Ben": "none"}).label == "none"
    assert decide({"Ana": "cant_tell"}).code == "audit_cant_tell" and decide({}).code == "not_audited"


def _pair_sample(root, seed: int = 3):
    sample = draw_sample("demo", "scripted", 80, seed=seed, scope="all", root=root)
    register(sample, root)
    return sample


def _key(r) -> tuple[str, int, int]:
    return r["answer_id"], int(r["statement_index"]), int(r["source_index"])


def test_publish_writes_a_judge_of_majorities_and_unknowns(root, capsys):
    sample = _pair_sample(root)
    store = LabelStore(labels_path(root))
    items = sample.items.to_dict("records")
    a, b, c, d, e = items[:5]
    sid = sample.sample_id
    for row in [(a, "Ana", "full"), (a, "Ben", "full"), (b, "Ana", "full"), (b, "Ben", "none"), (c, "Ana", "cant_tell"),
                (d, "Ana", "none"), (d, "Ben", "none"), (d, "Chen", "partial"), (e, "Ana", "partial"), (e, "Ana", "full")]:
        store.record(sid, row[0]["item_id"], row[1], "support", row[2])
    before = {j: pq.read_table(table_path("demo", "metrics", j, root)).to_pandas() for j in ("recorded", "scripted")}

    assert main(["audit", "publish", "--dataset", "demo"]) == 0
    said = capsys.readouterr().out
    assert said.startswith("published judge human:audit of demo: labels of 3 people (Ana, Ben, Chen) from 1 sample(s); "
                           "3 of ") and "(1 split, 1 can't tell)" in said and "everything else unknown" in said

    assert set(list_judges("demo", root)) == {AUDIT, "recorded", "scripted"}
    assert table_path("demo", "labels", AUDIT, root).is_file()
    for judge, frame in before.items():  # the other judges' results are left as they were
        pd.testing.assert_frame_equal(pq.read_table(table_path("demo", "metrics", judge, root)).to_pandas(), frame)

    answers = load_annotated("demo", AUDIT, root)
    support = {(v.answer_id, v.statement_index, v.source_index): v for a_ in answers.values() for v in a_.verdicts
               if v.kind == "support"}
    assert {v.judge for a_ in answers.values() for v in a_.verdicts} == {AUDIT}
    assert support[_key(a)].label == "full" and "2 of 2 people said fully supports" in support[_key(a)].raw
    assert (support[_key(b)].label, support[_key(b)].raw) == ("unknown", "not decided: the people who audited it disagree")
    assert (support[_key(c)].label, support[_key(c)].raw) == ("unknown", "not decided: the people who audited it could not tell")
    assert support[_key(d)].label == "none" and support[_key(d)].raw.startswith("2 of 3 people said does not support")
    assert support[_key(e)].label == "full"  # Ana's newest label
    audited = {_key(r) for r in (a, b, c, d, e)}
    others = [v for k, v in support.items() if k not in audited]
    assert others and {v.label for v in others} == {"unknown"}
    assert {v.raw for v in others} <= {"not checked: no one audited this pair", "not checked: no text",
                                       "not checked: the page could not be fetched"}
    relevance = [v for a_ in answers.values() for v in a_.verdicts if v.kind == "relevance"]
    assert {(v.label, v.raw) for v in relevance} == {("unknown", "not checked: no one audited this statement")}

    # metrics: null with the judged share, never a guess
    metrics = read_table(table_path("demo", "metrics", AUDIT, root))
    strict = metrics[(metrics["mode"] == "strict") & (metrics["necessity"] == "exact")].set_index(["answer_id", "metric"])
    untouched = sorted(set(answers) - {r["answer_id"] for r in items[:5]})[0]
    row = strict.loc[(untouched, "unsupported_statements")]
    assert pd.isna(row["value"]) and row["reason"].startswith("none of ") and "pairs no one audited" in row["reason"]
    row = strict.loc[(untouched, "relevant_statements")]
    assert pd.isna(row["value"]) and "statements whose relevance nobody decided" in row["reason"]
    summary = read_table(table_path("demo", "summary", AUDIT, root))
    cell = summary[(summary["metric"] == "citation_accuracy") & (summary["mode"] == "strict")
                   & (summary["necessity"] == "exact")].iloc[0]
    assert pd.isna(cell["value"]) and cell["judged_share"] < 0.5 and "judged" in cell["reason"]
    # a label-free metric is the same under every judge
    uncited = lambda j: read_table(table_path("demo", "metrics", j, root)).query("metric == 'uncited_sources'")["value"]  # noqa: E731
    assert list(uncited(AUDIT).fillna(-1)) == list(uncited("recorded").fillna(-1))

    record = published("demo", root)
    assert record["annotators"] == ["Ana", "Ben", "Chen"] and record["samples"] == [sid]
    assert tuple(record["label_state"]) == store.state([sid]) and labels_since("demo", root) == 0
    store.record(sid, items[5]["item_id"], "Ana", "support", "none")
    assert labels_since("demo", root) == 1

    # only some people's labels: Ben alone decides b
    assert main(["audit", "publish", "--dataset", "demo", "--annotator", "Ben"]) == 0
    capsys.readouterr()
    ben = {(v.answer_id, v.statement_index, v.source_index): v.label
           for a_ in load_annotated("demo", AUDIT, root).values() for v in a_.verdicts if v.kind == "support"}
    assert ben[_key(b)] == "none" and ben[_key(e)] == "unknown"
    assert main(["audit", "publish", "--dataset", "demo", "--annotator", "Nobody"]) == 2
    assert "no label by 'Nobody'" in capsys.readouterr().err


def test_run_refuses_the_audit_judge_and_keeps_what_was_published(root, capsys):
    with pytest.raises(JudgeError, match="aee audit publish"):
        get_judge(AUDIT)
    labels = table_path("demo", "labels", AUDIT, root)
    stamp = labels.stat().st_mtime_ns if labels.exists() else None
    assert main(["run", "--dataset", "demo", "--judge", AUDIT]) == 2
    assert "aee audit publish" in capsys.readouterr().err
    assert (labels.stat().st_mtime_ns if labels.exists() else None) == stamp


def test_statement_audit_gives_relevance_stance_and_confidence(root, capsys):
    sample = draw_sample("demo", "scripted", 90, seed=5, unit="statement", root=root)
    register(sample, root)
    store = LabelStore(labels_path(root))
    debate = sample.items[sample.items["query_type"] == "debate"]
    answer_id = str(debate["answer_id"].iloc[0])
    mine = sample.items[sample.items["answer_id"] == answer_id].sort_values("statement_index")
    labels = []
    for k, r in enumerate(mine.to_dict("records")):
        relevant = "filler" if k == 0 else "relevant"
        labels.append((sample.sample_id, r["item_id"], "Ana", "relevant", relevant))
        if relevant == "relevant":
            labels.append((sample.sample_id, r["item_id"], "Ana", "stance", "agree"))
    labels.append((sample.sample_id, mine["item_id"].iloc[-1], "Ana", "confidence", "5"))
    store.record_many(labels, "test")
    assert main(["audit", "publish", "--dataset", "demo"]) == 0
    capsys.readouterr()
    annotated = load_annotated("demo", AUDIT, root)[answer_id]
    view = label_view(annotated)
    n = len(mine)
    assert view.relevant == {int(i): k > 0 for k, i in enumerate(mine["statement_index"])} and not view.relevance_unknown
    assert view.confidence == 5 and set(view.stance.values()) == {"agree"}
    metrics = read_table(table_path("demo", "metrics", AUDIT, root))
    strict = metrics[(metrics["mode"] == "strict") & (metrics["necessity"] == "exact")
                     & (metrics["answer_id"] == answer_id)].set_index("metric")["value"]
    assert strict["relevant_statements"] == close((n - 1) / n)
    assert strict["one_sided"] == close(1.0) and strict["overconfident"] == close(1.0)
    assert strict["n_statements"] == close(float(n - 1))


def test_expertqa_experts_and_audit_labels_stay_two_judges(root, capsys):
    sample = draw_sample("eqa-mini", "scripted", 8, seed=0, root=root)
    register(sample, root)
    first = sample.items.iloc[0]
    LabelStore(labels_path(root)).record(sample.sample_id, first["item_id"], "Ana", "support", "partial")
    experts_before = pq.read_table(table_path("eqa-mini", "labels", "human", root)).to_pandas()
    assert main(["audit", "publish", "--dataset", "eqa-mini"]) == 0
    assert capsys.readouterr().out.startswith("published judge human:audit of eqa-mini: labels of 1 person (Ana)")
    assert {"human", AUDIT, "scripted"} <= set(list_judges("eqa-mini", root))
    pd.testing.assert_frame_equal(pq.read_table(table_path("eqa-mini", "labels", "human", root)).to_pandas(),
                                  experts_before)
    audit = load_annotated("eqa-mini", AUDIT, root)
    verdicts = [v for a in audit.values() for v in a.verdicts]
    assert {v.judge for v in verdicts} == {AUDIT}  # no expert label rides along
    decided = [v for v in verdicts if v.kind == "support" and v.label != "unknown"]
    assert [(v.answer_id, v.statement_index, v.source_index, v.label) for v in decided] == [
        (first["answer_id"], int(first["statement_index"]), int(first["source_index"]), "partial")]
    manifest = json.loads(table_path("eqa-mini", "summary", AUDIT, root).with_name("manifest.json").read_text())
    assert manifest["config"]["importer"] == "expertqa" and manifest["config"]["path"] == str(EQA_MINI)


def test_nothing_to_publish_is_one_line(root, capsys):
    with pytest.raises(Exception, match="no audit sample"):
        collect("nosuch", root=root)
    assert main(["audit", "publish", "--dataset", "eqa-mini", "--annotator", "Zed"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")


def _relist(path: Path) -> None:
    """Write a changed table's size and checksum into its result set's list (SET.json)."""
    from pipeline.storage.result_sets import SET_FILE, file_digest

    folder = path.parent.parent
    listing = json.loads((folder / SET_FILE).read_text(encoding="utf-8"))
    listing["files"][path.relative_to(folder).as_posix()] = {"bytes": path.stat().st_size, "sha256": file_digest(path)}
    (folder / SET_FILE).write_text(json.dumps(listing), encoding="utf-8")


def test_the_default_build_never_takes_the_audit_judge_for_the_experts(root, capsys):
    """`make run` rescores the `human` judge when its metrics are stale; a stale `human:audit` beside it
    is another judge (registered), not a variant of `human` to rebuild from the data."""
    import pyarrow as pa

    from pipeline.default_data import stale_metrics

    if AUDIT not in list_judges("eqa-mini", root):
        sample = draw_sample("eqa-mini", "scripted", 8, seed=1, root=root)
        register(sample, root)
        LabelStore(labels_path(root)).record(sample.sample_id, sample.items.iloc[0]["item_id"], "Ana", "support", "full")
        assert main(["audit", "publish", "--dataset", "eqa-mini"]) == 0
        capsys.readouterr()
    path = table_path("eqa-mini", "metrics", AUDIT, root)
    table = pq.read_table(path)
    versions = table.column("metric_version").to_pylist()
    table = table.set_column(table.schema.get_field_index("metric_version"), "metric_version",
                             pa.array([0] * len(versions), type=table.schema.field("metric_version").type))
    pq.write_table(table, path)
    _relist(path)  # an older build's set: its list names the file as it is now
    assert stale_metrics("eqa-mini", "human") == []
    assert "unsupported_statements" in stale_metrics("eqa-mini", AUDIT)
