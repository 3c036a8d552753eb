"""The pages' records (pipeline/page_records.py, issue 43): `aee run` writes them into the result set,
they rebuild exactly what the pages built from every answer before, the pages open from them without
building every annotated answer, and a set written before them still opens (and `aee records` adds
them)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from streamlit.testing.v1 import AppTest

from pipeline import page_records as pr
from pipeline.audit.population import CLUSTER_COLUMNS, FRAME_VARIANTS, build_frame
from pipeline.conflict import sides
from pipeline.storage.result_sets import set_problem
from pipeline.storage.store import dataset_dir, list_judges, result_set
from pipeline.storage.tables import load_annotated

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "data" / "demo" / "answers.jsonl"
PAGES = ROOT / "pages"
NOTE = "written before the pages' records"


def _build(root: Path, records: bool, monkeypatch) -> Path:
    from pipeline.runner import run_dataset

    if not records:
        monkeypatch.setenv("AEE_PAGE_RECORDS", "off")
    run_dataset("demo", DEMO, root=root, progress=False)  # its own hand-checked labels (recorded)
    run_dataset("demo", DEMO, root=root, progress=False, judge_name="offline")
    monkeypatch.delenv("AEE_PAGE_RECORDS", raising=False)
    return root


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    mp = pytest.MonkeyPatch()
    try:
        return _build(tmp_path_factory.mktemp("with-records"), True, mp)
    finally:
        mp.undo()


@pytest.fixture(scope="module")
def old(tmp_path_factory) -> Path:
    mp = pytest.MonkeyPatch()
    try:
        return _build(tmp_path_factory.mktemp("without-records"), False, mp)
    finally:
        mp.undo()


def _read(base: Path, name: str, judge: str | None = None) -> pd.DataFrame:
    return pq.read_table(pr.record_path(base, name, judge)).to_pandas()


# ---- what the run writes --------------------------------------------------------------------


def test_the_run_writes_every_record_into_the_listed_set(built):
    base = result_set("demo", built)
    listed = json.loads((base / "SET.json").read_text())["files"]
    assert "answer_index.parquet" in listed
    for judge in ("recorded", "offline"):
        assert pr.missing(base, judge) == []
        for name in pr.JUDGE_RECORDS:
            assert f"{judge}/{name}.parquet" in listed  # checksummed and switched with the set
    assert set_problem(dataset_dir("demo", built)) is None
    index = _read(base, "answer_index")
    assert len(index) == 24 and index["answer_id"].is_unique
    assert list(index["answers_row"]) == list(range(24))


@pytest.mark.parametrize("judge", ["recorded", "offline"])
def test_one_answer_read_from_its_rows_equals_the_whole_set_build(built, judge):
    base = result_set("demo", built)
    every = load_annotated("demo", judge, built)
    index, rows = _read(base, "answer_index"), _read(base, "answer_rows", judge)
    assert pr.read_answers(base, "demo", judge, index, rows, list(every)) == every
    for aid in sorted(every)[::5]:
        assert pr.read_answers(base, "demo", judge, index, rows, [aid]) == {aid: every[aid]}
    assert pr.read_answers(base, "demo", judge, index, rows, ["no-such-answer"]) == {}
    batches = list(pr.iter_answers(base, "demo", judge, batch=7))
    assert [len(b) for b in batches] == [7, 7, 7, 3]
    assert {a.answer.answer_id: a for b in batches for a in b} == every


def test_read_rows_reads_only_the_row_groups_that_hold_them(tmp_path):
    import pyarrow as pa

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"answer_id": [f"a{i // 3}" for i in range(30)], "v": list(range(30))}), path, row_group_size=4)
    got = pr.read_rows(path, [(5, 9), (27, 29)])
    assert list(got["v"]) == [5, 6, 7, 8, 9, 27, 28, 29]
    assert pr.read_rows(path, [(-1, -1)]).empty


@pytest.mark.parametrize("judge", ["recorded", "offline"])
def test_sides_and_audit_clusters_equal_the_page_time_builds(built, judge):
    base = result_set("demo", built)
    every = load_annotated("demo", judge, built)
    want = sides.side_rows(every.values())
    got = _read(base, "sides", judge)[sides.ROW_COLUMNS]
    assert len(want) == 47  # 47 sources listed by the demo corpus's debate answers
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True), check_dtype=False)
    stored = _read(base, "audit_clusters", judge)
    for name, (unit, scope, relevance) in FRAME_VARIANTS.items():
        frame = build_frame("demo", every, unit, scope, relevance).clusters
        mine = stored[stored["variant"] == name][list(CLUSTER_COLUMNS)]
        pd.testing.assert_frame_equal(mine.sort_values("cluster_id").reset_index(drop=True),
                                      frame.sort_values("cluster_id").reset_index(drop=True), check_dtype=False)


def test_the_drafted_sample_size_is_the_same_from_the_clusters_alone(built):
    from pipeline.audit.population import clusters_frame
    from pipeline.audit.ppi_cells import items_for_corrected_values

    base = result_set("demo", built)
    every = load_annotated("demo", "offline", built)
    stored = _read(base, "audit_clusters", "offline")
    for name in ("pair/all", "pair/cited", "statement"):
        unit, scope, relevance = FRAME_VARIANTS[name]
        full = items_for_corrected_values(build_frame("demo", every, unit, scope, relevance), dataset="demo", judge="offline")
        light = clusters_frame(unit, scope, relevance, stored[stored["variant"] == name].drop(columns=["variant"]))
        assert items_for_corrected_values(light, dataset="demo", judge="offline") == full
        assert full is not None


def test_a_set_without_records_is_whole_and_aee_records_adds_them(old, tmp_path):
    import shutil

    from pipeline.cli import main

    copy = tmp_path / "results"
    shutil.copytree(old, copy)
    base = result_set("demo", copy)
    assert pr.missing(base, "offline") == ["answer_index", "answer_rows", "sides", "audit_clusters", "values", "facts"]
    assert set_problem(dataset_dir("demo", copy)) is None
    before = load_annotated("demo", "offline", copy)
    import os

    os.environ["AEE_RESULTS_DIR"] = str(copy)
    try:
        assert main(["records", "--dataset", "demo", "--no-progress"]) == 0
    finally:
        del os.environ["AEE_RESULTS_DIR"]
    new = result_set("demo", copy)
    assert new != base and set_problem(dataset_dir("demo", copy)) is None
    assert sorted(list_judges("demo", copy)) == ["offline", "recorded"]
    for judge in ("offline", "recorded"):
        assert pr.missing(new, judge) == []
    assert load_annotated("demo", "offline", copy) == before  # the tables are the same files
    index, rows = _read(new, "answer_index"), _read(new, "answer_rows", "offline")
    assert pr.read_answers(new, "demo", "offline", index, rows, list(before)) == before


@pytest.mark.parametrize("judge", ["offline", "recorded"])
def test_the_facts_record_gives_what_the_metrics_table_gives(built, judge):
    """The Scorecard's blank reasons (every configuration, query type and field filter) and the
    Confidence page's counts, from the facts record and from the metrics table, are the same."""
    from dashboard import table_facts
    from pipeline.metrics import MODES, NECESSITY_METHODS

    base = result_set("demo", built)
    path = str(base / judge / "metrics.parquet")
    found = pq.read_table(pr.record_path(base, "facts", judge)).to_pandas()
    fields = table_facts.distinct.__wrapped__(path, 0, "field")
    assert len(found) and fields
    compared = 0
    for mode in MODES:
        for necessity in NECESSITY_METHODS:
            for query_type in ("all", "debate", "expertise"):
                for chosen in ((), tuple(fields[:1])):
                    want = table_facts.blank_reasons.__wrapped__(path, 0, mode, necessity, query_type, chosen)
                    assert table_facts.blank_reasons_of(found, mode, necessity, query_type, chosen) == want
                    compared += len(want)
    assert compared > 20
    pd.testing.assert_frame_equal(table_facts.confidence_counts_of(found),
                                  table_facts.confidence_counts.__wrapped__(path, 0), check_dtype=False)
    assert table_facts.confidence_missing_of(found) == table_facts.confidence_missing.__wrapped__(path, 0)


def test_aee_records_adds_only_what_a_set_lacks(tmp_path, monkeypatch):
    """A set written before the facts record gets it from `aee records` in a new generation whose
    other records are the same files (hard links), not computed again."""
    from pipeline.cli import main
    from pipeline.runner import run_dataset

    root = tmp_path / "results"
    monkeypatch.setattr(pr, "write_facts", lambda base, judge: None)  # a run from before the facts record
    run_dataset("demo", DEMO, root=root, progress=False, limit=6)
    monkeypatch.undo()
    base = result_set("demo", root)
    assert pr.missing(base, "recorded") == ["facts"] and set_problem(dataset_dir("demo", root)) is None
    monkeypatch.setenv("AEE_RESULTS_DIR", str(root))
    assert main(["records", "--dataset", "demo", "--no-progress"]) == 0
    new = result_set("demo", root)
    assert new != base and pr.missing(new, "recorded") == [] and set_problem(dataset_dir("demo", root)) is None
    for name in ("sides", "audit_clusters", "values", "answer_rows"):
        assert pr.record_path(new, name, "recorded").stat().st_ino == pr.record_path(base, name, "recorded").stat().st_ino
    assert pr.record_path(new, "answer_index").stat().st_ino == pr.record_path(base, "answer_index").stat().st_ino


# ---- the pages --------------------------------------------------------------------------------


def _env(monkeypatch, root: Path, tmp_path: Path) -> None:
    monkeypatch.setenv("AEE_RESULTS_DIR", str(root))
    monkeypatch.setenv("AEE_STUDIES_DIR", str(tmp_path / "studies"))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()


def _forbid_whole_set(monkeypatch) -> list[str]:
    """Make every way of building all annotated answers of a set raise (and note the attempt)."""
    import dashboard.data as data
    import pipeline.audit.sample as sample
    import pipeline.audit.scorecard as scorecard
    import pipeline.consistency.summary as summary
    import pipeline.storage.tables as tables

    tried: list[str] = []

    def refuse(*args, **kwargs):
        tried.append(repr(args[:3]))
        raise AssertionError("a page built every annotated answer of the set")

    monkeypatch.setattr(data, "_annotated", refuse)
    monkeypatch.setattr(data, "load_annotated", refuse)
    monkeypatch.setattr(tables, "load_annotated", refuse)
    # the modules that bound it by name (imported first, so they never keep the refusal)
    monkeypatch.setattr(sample, "load_annotated", refuse)
    monkeypatch.setattr(scorecard, "load_annotated", refuse)
    monkeypatch.setattr(summary, "load_values", refuse)  # every metric value of the set (Engine vs engine)
    return tried


def _run(page: str, params: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(PAGES / page), default_timeout=120)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception[0].message if at.exception else ""
    return at


def _texts(at) -> str:
    return "\n".join(str(e.value) for e in (*at.caption, *at.markdown, *at.info, *at.warning))


OPENED = [
    ("inspector.py", {"dataset": "demo", "judge": "offline", "answer": "lumen-q2"}),
    ("compare.py", {"dataset": "demo", "judge": "offline", "view": "engines"}),
    ("compare.py", {"dataset": "demo", "judge": "offline", "view": "judges", "judge_b": "recorded"}),
    ("conflict.py", {"dataset": "demo", "judge": "recorded"}),
    ("audit.py", {"dataset": "demo", "view": "draw"}),
    ("engines.py", {"dataset": "demo", "judge": "offline"}),
]


@pytest.mark.parametrize("page,params", OPENED, ids=[f"{p}-{q.get('view', '')}" for p, q in OPENED])
def test_every_page_opens_from_the_records_alone(built, tmp_path, monkeypatch, page, params):
    _env(monkeypatch, built, tmp_path)
    tried = _forbid_whole_set(monkeypatch)
    at = _run(page, params)
    assert tried == []
    assert NOTE not in _texts(at)
    if page == "inspector.py":
        comps = at.get("bidi_component")
        assert json.loads(comps[0].proto.json)["answer_id"] == "lumen-q2"
    if page == "conflict.py":
        assert any("debate answers list 47 sources" in str(c.value) for c in at.caption)
    if page == "audit.py":
        assert at.number_input(key="audit_draw_n").value >= 10


@pytest.mark.parametrize("page,params", OPENED, ids=[f"{p}-{q.get('view', '')}" for p, q in OPENED])
def test_a_set_without_records_still_opens_and_says_so(old, tmp_path, monkeypatch, page, params):
    _env(monkeypatch, old, tmp_path)
    at = _run(page, params)
    text = _texts(at)
    assert NOTE in text and "`aee records --dataset demo`" in text
    if page == "conflict.py":
        assert any("debate answers list 47 sources" in str(c.value) for c in at.caption)


def test_the_same_answer_shows_the_same_view_with_and_without_records(built, old, tmp_path, monkeypatch):
    views = []
    for root in (built, old):
        _env(monkeypatch, root, tmp_path)
        at = _run("inspector.py", {"dataset": "demo", "judge": "offline", "answer": "parrot-q3"})
        views.append(json.loads(at.get("bidi_component")[0].proto.json))
    assert views[0] == views[1]


def _enough_by_drawing(frame, n: int) -> bool:
    from pipeline.audit.ppi_cells import short_cells
    from pipeline.audit.sample import draw
    from pipeline.errors import InputError

    try:
        return not short_cells(draw(frame, n, 0, dataset="d", judge="j"))
    except InputError:
        return False


def _random_frame(seed: int):
    import numpy as np

    from pipeline.audit.population import clusters_frame

    rng = np.random.default_rng(seed)
    rows = []
    for e in range(int(rng.integers(2, 6))):
        for label in ("full", "partial", "none", "unknown")[: int(rng.integers(1, 5))]:
            for k in range(int(rng.integers(1, 40))):
                rows.append({"cluster_id": f"a{e}-{label}-{k}#s0", "answer_id": f"a{e}-{label}-{k}", "engine": f"E{e}",
                             "query_type": "expertise", "judge_class": label, "stratum": f"E{e} · judge: {label}",
                             "n_items": int(rng.integers(1, 6))})
    return clusters_frame("pair", "cited", False, pd.DataFrame(rows))


@pytest.mark.parametrize("seed", range(6))
def test_drafting_from_the_allocation_agrees_with_drawing_at_every_size(built, seed):
    """The Audit page's drafted size (ppi_cells._allocation_enough) says what a real draw would say."""
    from pipeline.audit import ppi_cells

    if seed == 0:
        every = load_annotated("demo", "offline", built)
        frames = [build_frame("demo", every, u, s, r) for u, s, r in FRAME_VARIANTS.values()]
    else:
        frames = [_random_frame(seed)]
    for frame in frames:
        counts = ppi_cells._per_stratum(frame.clusters)
        assert counts is not None
        total = int(frame.clusters["n_items"].sum())
        for n in list(range(1, min(total, 120) + 1)) + [total, total + 7]:
            assert ppi_cells._allocation_enough(frame.clusters, counts, n, ppi_cells.MIN_LABELLED_UNITS) == \
                _enough_by_drawing(frame, n), (seed, frame.unit, n)


def test_a_stratum_across_engines_falls_back_to_drawing():
    from pipeline.audit import ppi_cells

    frame = _random_frame(3)
    frame.clusters.loc[0, "engine"] = "another"
    assert ppi_cells._per_stratum(frame.clusters) is None


# ---- Engine vs engine: the values record ---------------------------------------------------------


@pytest.fixture(scope="module")
def no_values(tmp_path_factory) -> Path:
    """A set written with the answer pages' records but before the values record (the previous run)."""
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(pr, "write_values", lambda *args, **kwargs: None)
        return _build(tmp_path_factory.mktemp("no-values"), True, mp)
    finally:
        mp.undo()


@pytest.mark.parametrize("judge,rows", [("recorded", 587), ("offline", 522)])
def test_the_values_record_holds_what_aee_compare_reads(built, judge, rows):
    from pipeline.consistency.summary import load_values

    base = result_set("demo", built)
    _, every = load_values(base, judge)
    stored = _read(base, "values", judge)
    assert len(stored) == len(every) == rows  # 24 answers x the metrics with a value under strict rules, exact necessity
    key = ["answer_id", "metric"]
    want = every.astype({c: object for c in ("engine", "wave", "query", "metric")}).sort_values(key)
    pd.testing.assert_frame_equal(stored[list(want.columns)].sort_values(key).reset_index(drop=True),
                                  want.reset_index(drop=True), check_dtype=False, rtol=1e-12)


def test_the_values_are_grouped_so_two_engines_read_few_row_groups(built, tmp_path, monkeypatch):
    import shutil

    copy = tmp_path / "set"
    shutil.copytree(result_set("demo", built), copy)
    monkeypatch.setattr(pr, "VALUES_ROW_GROUP", 50)
    f = pq.ParquetFile(pr.write_values(copy, "offline"))
    assert f.num_row_groups == 11  # 522 rows in groups of 50
    engines = f.read(columns=["engine"]).column("engine").to_pylist()
    assert engines == sorted(engines)  # the demo has one wave: its engines one after the other
    column = f.schema_arrow.get_field_index("engine")
    spans = [(f.metadata.row_group(g).column(column).statistics.min, f.metadata.row_group(g).column(column).statistics.max)
             for g in range(f.num_row_groups)]
    # Lumen's 176 rows come first (0-175: groups 0-3), Parrot's 170 next, Quarry's 176 last (346-521: groups 6-10)
    assert [i for i, (lo, hi) in enumerate(spans) if lo <= "Lumen" <= hi] == [0, 1, 2, 3]
    assert [i for i, (lo, hi) in enumerate(spans) if lo <= "Quarry" <= hi] == [6, 7, 8, 9, 10]


def test_engine_vs_engine_shows_the_same_comparison_from_the_values_record(built, old, tmp_path, monkeypatch):
    shown = []
    for root in (built, old):
        _env(monkeypatch, root, tmp_path)
        at = _run("engines.py", {"dataset": "demo", "judge": "offline", "engine": "Quarry", "engine_b": "Lumen"})
        shown.append((at.markdown[0].value, at.table[0].value.to_dict()))
    assert shown[0] == shown[1]
    assert shown[0][0].startswith("**Quarry vs Lumen** on the 8 queries both answered")


def test_a_set_without_the_values_record_opens_engine_vs_engine_and_says_so(no_values, tmp_path, monkeypatch):
    import os
    import shutil

    from pipeline.cli import main

    copy = tmp_path / "results"
    shutil.copytree(no_values, copy)
    base = result_set("demo", copy)
    assert pr.missing(base, "offline") == ["values"] and set_problem(dataset_dir("demo", copy)) is None
    _env(monkeypatch, copy, tmp_path)
    at = _run("engines.py", {"dataset": "demo", "judge": "offline"})
    assert NOTE in _texts(at) and "`aee records --dataset demo`" in _texts(at)
    assert at.markdown[0].value.startswith("**Lumen vs Parrot** on the 8 queries both answered")
    tried = _forbid_whole_set(monkeypatch)  # the answer pages still open from their records, without the line
    at = _run("inspector.py", {"dataset": "demo", "judge": "offline", "answer": "lumen-q2"})
    assert tried == [] and NOTE not in _texts(at)
    monkeypatch.undo()
    os.environ["AEE_RESULTS_DIR"] = str(copy)
    try:
        assert main(["records", "--dataset", "demo", "--no-progress"]) == 0
    finally:
        del os.environ["AEE_RESULTS_DIR"]
    assert pr.missing(result_set("demo", copy), "offline") == []
    _env(monkeypatch, copy, tmp_path)
    _forbid_whole_set(monkeypatch)
    assert NOTE not in _texts(_run("engines.py", {"dataset": "demo", "judge": "offline"}))


_NO_SCIPY_STATS = """
import sys
from streamlit.testing.v1 import AppTest
for page in sys.argv[1:]:
    at = AppTest.from_file(page, default_timeout=120)
    at.query_params["dataset"], at.query_params["judge"] = "demo", "offline"
    at.run()
    assert not at.exception, at.exception[0].message
    print(page.rsplit("/", 1)[-1], "scipy.stats" in sys.modules)
"""


def test_compare_and_engine_vs_engine_open_without_importing_scipy_stats(built, tmp_path):
    """scipy.stats took these pages' first view 1-3 s to import (a fresh process, as a server starts)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "AEE_RESULTS_DIR": str(built), "AEE_STUDIES_DIR": str(tmp_path / "s"),
           "AEE_CACHE_DIR": str(tmp_path / "c"), "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", _NO_SCIPY_STATS, str(PAGES / "compare.py"), str(PAGES / "engines.py")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["compare.py", "False", "engines.py", "False"]


# ---- the Audit page's draw ----------------------------------------------------------------------


@pytest.mark.parametrize("n,seed", [(20, 0), (90, 3), (140, 1), (330, 7)])
def test_a_draw_from_the_recorded_clusters_is_the_draw_from_every_answer(built, n, seed):
    """The same sample (items, frame, meta but its time), reading the chosen answers only; a size too
    small for a frame is refused with the same words."""
    from pipeline.audit.sample import draw_sample
    from pipeline.errors import InputError

    base = result_set("demo", built)
    stored, index, rows = _read(base, "audit_clusters", "offline"), _read(base, "answer_index"), _read(base, "answer_rows", "offline")
    read: list[int] = []

    def answers_of(ids):
        read.append(len(ids))
        return pr.read_answers(base, "demo", "offline", index, rows, ids)

    drawn = 0
    for name, (unit, scope, relevance) in FRAME_VARIANTS.items():
        clusters = stored[stored["variant"] == name].drop(columns=["variant"])
        args = ("demo", "offline", n, seed, unit, scope)
        try:
            whole = draw_sample(*args, root=built, relevance=relevance, from_records=False)
        except InputError as exc:
            with pytest.raises(InputError) as light_exc:
                draw_sample(*args, root=built, relevance=relevance, clusters=clusters, answers_of=answers_of)
            assert str(light_exc.value) == str(exc)
            continue
        light = draw_sample(*args, root=built, relevance=relevance, clusters=clusters, answers_of=answers_of)
        assert {k: v for k, v in light.meta.items() if k != "created"} == {k: v for k, v in whole.meta.items() if k != "created"}
        pd.testing.assert_frame_equal(light.items, whole.items)
        pd.testing.assert_frame_equal(light.frame, whole.frame)
        assert read[-1] == whole.items["answer_id"].nunique()  # only the answers it drew
        # `aee audit sample` (no clusters given) finds the records itself: the same sample again
        again = draw_sample(*args, root=built, relevance=relevance)
        pd.testing.assert_frame_equal(again.items, whole.items)
        pd.testing.assert_frame_equal(again.frame, whole.frame)
        drawn += 1
    assert drawn == {20: 1, 90: 3, 140: 4, 330: 5}[n]  # the others are refused: too few items for their strata


def test_the_audit_page_draws_a_sample_from_the_records_alone(built, tmp_path, monkeypatch):
    import shutil

    copy = tmp_path / "results"
    shutil.copytree(built, copy)  # the draw registers its sample under the results folder
    _env(monkeypatch, copy, tmp_path)
    tried = _forbid_whole_set(monkeypatch)
    at = _run("audit.py", {"dataset": "demo", "view": "draw"})
    at.selectbox(key=next(b.key for b in at.selectbox if b.label == "Judge to audit")).set_value("offline")
    at.number_input(key="audit_draw_n").set_value(90)
    at.number_input[1].set_value(3)
    next(b for b in at.button if "Draw and register" in str(b.label)).click()
    at.run()
    assert not at.exception and tried == []
    # the demo's judges label uncited pairs too: every listed source is the default scope
    assert [str(s.value) for s in at.success] == [r"Sample demo\-offline\-pair\-all\-n90\-s3: 92 items. Switch to Label to start."]


def test_the_scorecard_corrects_its_values_from_the_records_alone(built, tmp_path, monkeypatch):
    """The corrected values (a labelled sample registered) read the drawn answers and the stored
    population (`pipeline.audit.ppi_population`), never every answer; the same numbers as the
    command line, which reads them all."""
    import shutil

    from audit_fixtures import page_text

    from pipeline.audit.labels import LabelStore, labels_path
    from pipeline.audit.sample import draw_sample, register
    from pipeline.audit.scorecard import ppi_scorecard

    copy = tmp_path / "results"
    shutil.copytree(built, copy)
    s = draw_sample("demo", "offline", 120, seed=2, unit="pair", scope="all", root=copy)
    register(s, copy)
    LabelStore(labels_path(copy)).record_many(
        [(s.sample_id, item, "Eve", "support", ("full", "none", "partial")[k % 3])
         for k, item in enumerate(s.items["item_id"])], "test")
    every = ppi_scorecard("demo", "offline", root=copy, stored_population=False)
    _env(monkeypatch, copy, tmp_path)
    tried = _forbid_whole_set(monkeypatch)
    at = _run("scorecard.py", {"dataset": "demo", "judge": "offline"})
    next(t for t in at.toggle if t.key == "scorecard_ppi").set_value(True)
    at.run()
    assert not at.exception and tried == []
    shown = page_text(at)
    assert "corrected (PPI) [95%]" in shown
    corrected = [r for r in every["rows"] if r.get("ppi") is not None and r["metric"] == "citation_accuracy"]
    assert corrected
    for r in corrected:  # each corrected value the command line gives is on the page, as it prints it
        assert f"{r['ppi']:.1f}" in shown, (r["domain"], r["ppi"])


def test_every_judge_record_is_carried_over_with_its_judge():
    """A run of another judge links each judge folder's known files into the new set: a record
    missing from that list would vanish from every judge but the one just run."""
    from pipeline.storage import result_sets

    assert set(pr.RECORD_FILES) <= set(result_sets._JUDGE_FILES)


@pytest.mark.parametrize("page", ["scorecard.py", "confidence.py"])
def test_the_scorecard_and_confidence_pages_read_the_facts_not_the_metrics_table(built, tmp_path, monkeypatch, page):
    from dashboard import table_facts

    _env(monkeypatch, built, tmp_path)
    tried: list[str] = []

    def refuse(*args, **kwargs):
        tried.append(repr(args[2:4]))
        raise AssertionError("a page read the metrics table column by column")

    for name in ("blank_reasons", "confidence_counts", "confidence_missing"):
        monkeypatch.setattr(table_facts, name, refuse)
    at = _run(page, {"dataset": "demo", "judge": "offline"})
    assert tried == []
    if page == "confidence.py":
        assert any("Computed" in str(m.value) for m in at.markdown)
