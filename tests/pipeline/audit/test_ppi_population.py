"""The corrected scorecard from the stored population (`pipeline.audit.ppi_population`, issue 43):
the same rows as reading every answer, without reading every answer, and nothing written into the
result set itself."""

from __future__ import annotations

import math
import random

import pytest

pytest.importorskip("ppi_py", reason="the `audit` extra (ppi-python) is not installed")

from audit_fixtures import RELEVANCE_SAMPLE, build_relevance_results  # noqa: E402

from pipeline.audit import ppi_population  # noqa: E402
from pipeline.audit.labels import LabelStore, labels_path  # noqa: E402
from pipeline.audit.population import item_asks  # noqa: E402
from pipeline.audit.sample import draw_sample, load_sample, register  # noqa: E402
from pipeline.audit.scorecard import ppi_scorecard  # noqa: E402
from pipeline.matrices import label_view  # noqa: E402
from pipeline.storage.result_sets import set_problem  # noqa: E402
from pipeline.storage.store import dataset_dir  # noqa: E402
from pipeline.storage.tables import load_annotated  # noqa: E402

JUDGE = "scripted"
TOLERANCE = 1e-9  # the two ways add the same numbers in another order


def _label(sample, root, annotator: str, flip: float, seed: int) -> None:
    """Every item of a sample labelled by `annotator`: the hand labels (`recorded`), a share `flip`
    of them changed, so the two annotators disagree with the judge and with each other."""
    hand = load_annotated("demo", "recorded", root)
    rng = random.Random(seed)
    rows = []
    for r in sample.items.to_dict("records"):
        view = label_view(hand[r["answer_id"]])
        si = int(r["statement_index"])
        if sample.unit == "statement" or (sample.meta.get("relevance") and item_asks(r) == "relevant"):
            relevant = "relevant" if view.relevant.get(si, True) else "filler"
            if rng.random() < flip:
                relevant = "filler" if relevant == "relevant" else "relevant"
            rows.append((sample.sample_id, r["item_id"], annotator, "relevant", relevant))
            if sample.unit == "statement" and r["query_type"] == "debate":
                rows.append((sample.sample_id, r["item_id"], annotator, "stance", view.stance.get(si) or "cant_tell"))
                rows.append((sample.sample_id, r["item_id"], annotator, "confidence", str(view.confidence or 3)))
            continue
        label = view.support.get((si, int(r["source_index"]))) or "none"
        if rng.random() < flip:
            label = rng.choice(["full", "partial", "none", "cant_tell"])
        rows.append((sample.sample_id, r["item_id"], annotator, "support", label))
    LabelStore(labels_path(root)).record_many(rows, "test")


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    """demo under `scripted` with three labelled samples: pairs (cited), pairs asking relevance (all
    sources, RELEVANCE_SAMPLE) and statements; two annotators each, labelling part of each sample."""
    root = build_relevance_results(tmp_path_factory.mktemp("ppi_population"))
    pair = draw_sample("demo", JUDGE, 120, seed=5, unit="pair", scope="cited", root=root)
    statement = draw_sample("demo", JUDGE, 110, seed=6, unit="statement", root=root)
    for s in (pair, statement):
        register(s, root)
    for k, s in enumerate((pair, statement, load_sample(RELEVANCE_SAMPLE, root))):
        _label(s, root, "ana", 0.15, seed=10 + k)
        _label(s, root, "ben", 0.3, seed=20 + k)
    return root, {"pair": pair.sample_id, "statement": statement.sample_id, "relevance": RELEVANCE_SAMPLE}


def _same(a, b, path="") -> None:
    if isinstance(a, dict):
        assert set(a) == set(b), (path, set(a) ^ set(b))
        for k in a:
            _same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert (math.isnan(a) and math.isnan(b)) or abs(a - b) <= TOLERANCE * max(1.0, abs(a)), (path, a, b)
    else:
        assert a == b, (path, a, b)


@pytest.mark.parametrize("samples", [
    {"pair": "pair", "statement": "statement"},
    {"pair": "relevance"},
    {"pair": "relevance", "statement": "statement"},
])
def test_the_stored_population_gives_the_rows_of_every_answer(audited, samples, monkeypatch):
    root, ids = audited
    chosen = {unit: ids[name] for unit, name in samples.items()}
    every = ppi_scorecard("demo", JUDGE, samples=chosen, root=root, stored_population=False)

    def refused(*args, **kwargs):
        raise AssertionError("the corrected scorecard read every answer")

    monkeypatch.setattr("pipeline.audit.scorecard.load_annotated", refused)
    stored = ppi_scorecard("demo", JUDGE, samples=chosen, root=root)
    _same(every, stored)
    corrected = [r for r in stored["rows"] if r.get("ppi") is not None and r["metric"] != "uncited_sources"]
    if samples["pair"] == "pair":  # with answer clusters the demo's 24 answers are too few for a corrected value
        assert len(corrected) >= 4, "too few corrected values to compare"


@pytest.mark.parametrize("name", ["pair", "statement", "relevance"])
def test_every_unit_value_is_the_same_either_way(audited, name):
    """Per cluster and per answer, for every metric of the sample: the numbers the estimate is built
    from (this also covers the designs whose cells the small corpus leaves without a value)."""
    import pandas as pd

    from pipeline.audit.ppi import PPI_METRICS, unit_values
    from pipeline.audit.ppi_relevance import relevance_view
    from pipeline.audit.scorecard import human_labels

    root, ids = audited
    sample = load_sample(ids[name], root)
    people = human_labels(sample, root=root)
    every = load_annotated("demo", JUDGE, root)
    population = ppi_population.open_population("demo", JUDGE, root)
    drawn = ppi_population.drawn_answers(population, [sample])
    assert 0 < len(drawn) < len(every)
    cases = [(m, sample) for m, unit in PPI_METRICS.items() if unit == sample.unit]
    if name == "relevance":
        cases.append(("relevant_statements", relevance_view(sample)))
    population.prepare(ppi_population.designs_for([sample]))
    labelled = 0
    for metric, s in cases:
        a, b = unit_values(metric, s, every, people), unit_values(metric, s, drawn, people, population=population)
        if isinstance(a, str):
            assert a == b
            continue
        labelled += int(a.clusters["labelled"].sum())
        for x, y, key in ((a.clusters, b.clusters, "cluster_id"), (a.answers, b.answers, "answer_id"),
                          (a.judged, b.judged, "answer_id")):
            if x.empty and y.empty:
                continue
            x, y = (f.sort_values(key, kind="stable").reset_index(drop=True) for f in (x, y))
            pd.testing.assert_frame_equal(x[sorted(x.columns)], y[sorted(x.columns)], check_dtype=False,
                                          rtol=TOLERANCE, obj=f"{name} {metric}")
    assert labelled > 0


def test_it_is_built_once_outside_the_result_set_and_then_read(audited, monkeypatch):
    root, ids = audited
    population = ppi_population.open_population("demo", JUDGE, root)
    assert population is not None
    population.prepare(ppi_population.designs_for([load_sample(ids["pair"], root)]))  # built now or by a test above
    calls = []
    real = ppi_population.build
    monkeypatch.setattr(ppi_population, "build", lambda *a, **k: calls.append(a) or real(*a, **k))
    again = ppi_population.open_population("demo", JUDGE, root)
    again.prepare(ppi_population.designs_for([load_sample(ids["pair"], root)]))
    assert calls == [] and again.built == []
    assert list(again.folder.glob("v1.pair.citation_accuracy.cited.rows.parquet"))
    # the result set holds what its run wrote and nothing else: still a whole set
    assert set_problem(dataset_dir("demo", root)) is None
    assert not any(ppi_population.FOLDER in p.relative_to(population.base).parts for p in population.base.rglob("*"))


def test_a_new_run_is_a_new_population(audited, tmp_path):
    from pipeline.runner import run_dataset

    root, _ = audited
    other = tmp_path / "results"
    run_dataset("demo", judge_name=JUDGE, progress=False, root=other, use_cache=False, limit=3)
    small = ppi_population.open_population("demo", JUDGE, other)
    full = ppi_population.open_population("demo", JUDGE, root)
    assert small.digest != full.digest and small.folder != full.folder
    assert len(small.ids) == 3


def test_a_set_without_records_reads_every_answer(tmp_path, monkeypatch):
    from pipeline.runner import run_dataset

    monkeypatch.setenv("AEE_PAGE_RECORDS", "off")
    root = tmp_path / "results"
    run_dataset("demo", judge_name=JUDGE, progress=False, root=root, use_cache=False, limit=4)
    assert ppi_population.open_population("demo", JUDGE, root) is None


@pytest.mark.parametrize("metrics", [None, ("citation_accuracy", "one_sided")])
def test_judge_values_are_the_strict_rows_of_the_metrics_table(audited, metrics):
    """Read batch by batch on the strings' codes: the same frame (values and types) as filtering the
    whole table in pandas."""
    import pandas as pd

    from pipeline.audit.scorecard import judge_values
    from pipeline.storage.store import read_table, table_path

    root, _ = audited
    got = judge_values("demo", JUDGE, root, metrics=metrics)
    table = read_table(table_path("demo", "metrics", JUDGE, root))
    want = table[(table["mode"] == "strict") & (table["necessity"] == "exact")]
    if metrics is not None:
        want = want[want["metric"].isin(metrics)]
    assert len(got) > 20
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want[list(got.columns)].reset_index(drop=True))


def test_the_drawn_answers_are_read_from_their_copy_the_second_time(audited, monkeypatch):
    """The drawn answers' rows are kept beside the population: the second read opens the copy only,
    and rebuilds the same answers as the set's own rows."""
    root, ids = audited
    samples = [load_sample(ids["pair"], root)]
    population = ppi_population.open_population("demo", JUDGE, root)
    first = ppi_population.drawn_answers(population, samples)
    every = load_annotated("demo", JUDGE, root)
    assert first and set(first) < set(every)
    assert all(first[a] == every[a] for a in first)
    monkeypatch.setattr("pipeline.storage.record_reads.read_answer_tables",
                        lambda *a, **k: (_ for _ in ()).throw(AssertionError("read the set's rows again")))
    again = ppi_population.drawn_answers(ppi_population.open_population("demo", JUDGE, root), samples)
    assert again == first
    assert list((population.folder / ppi_population.DRAWN).glob("v1.*.labels.parquet"))


@pytest.mark.parametrize("query_type", ["all", "debate", "expertise", "no-such-type"])
def test_the_judge_cells_are_kept_once_per_set_and_equal_the_tables(audited, query_type, monkeypatch):
    """The judge-only cells beside the corrected values, computed once for every query type of the
    set: equal to those computed from the metrics table, and read without it the second time."""
    from pipeline.audit import scorecard

    root, _ = audited
    population = ppi_population.open_population("demo", JUDGE, root)
    direct_engines, direct = scorecard.judge_cells("demo", JUDGE, root, query_type)
    engines, kept = scorecard.judge_cells("demo", JUDGE, root, query_type, population)
    assert engines == direct_engines and len(engines) >= 2
    _same(kept, direct)
    assert any(c[3] > 0 for by in kept.values() for c in by.values()) == (query_type != "no-such-type")
    real = scorecard.judge_values
    monkeypatch.setattr(scorecard, "judge_values", lambda *a, **k: (_ for _ in ()).throw(AssertionError("read the table")))
    _same(scorecard.judge_cells("demo", JUDGE, root, query_type, population)[1], direct)
    # a metric's rule changed in the code since: the kept cells are computed again
    import dataclasses

    from pipeline.metrics import METRICS

    newer = dataclasses.replace(METRICS["citation_accuracy"], version=METRICS["citation_accuracy"].version + 1)
    monkeypatch.setitem(METRICS, "citation_accuracy", newer)
    reads = []
    monkeypatch.setattr(scorecard, "judge_values", lambda *a, **k: reads.append(1) or real(*a, **k))
    _same(scorecard.judge_cells("demo", JUDGE, root, query_type, population)[1], direct)
    assert reads == [1]


def test_a_sample_that_no_longer_matches_says_why_in_the_plain_words(audited):
    """The stored population compares a sample's frame with Arrow lookups; its reasons must be the
    plain function's, word for word: answers gone, clusters missing, extra or repeated."""
    from pipeline.audit.ppi_units import out_of_date

    root, ids = audited
    sample = load_sample(ids["pair"], root)
    population = ppi_population.open_population("demo", JUDGE, root)
    design = ppi_population.design_of("citation_accuracy", sample)
    have = population.clusters(design)
    frame = sample.frame

    def plain(f):
        return out_of_date(f["answer_id"], f["cluster_id"], population.ids, have, "statement")

    extra = frame.iloc[:3].assign(cluster_id=lambda f: f["cluster_id"] + "-new")
    gone = frame.assign(answer_id=frame["answer_id"].where(frame.index % 7 != 0, "gone-" + frame["answer_id"]))
    cases = {"as drawn": frame, "fewer clusters": frame.iloc[5:], "extra clusters": frame.assign().pipe(
        lambda f: __import__("pandas").concat([f, extra], ignore_index=True)),
        "a cluster twice, one missing": frame.assign(cluster_id=frame["cluster_id"].where(frame.index != 1, frame["cluster_id"].iloc[0])),
        "answers gone": gone}
    for name, f in cases.items():
        want = plain(f)
        assert population.out_of_date(design, f, "statement") == want, name
        assert bool(want) == (name != "as drawn"), (name, want)


def test_the_engine_comparisons_audit_reads_the_stored_population(audited, monkeypatch):
    """`aee compare` and Engine vs engine correct a difference with the audit's unit values
    (`Audit.load`): from the stored population they are those of every answer, and no answer outside
    the drawn ones is read (reading them all took 190 s on the 140k-answer set)."""
    import pandas as pd

    from pipeline.consistency.judge_error import Audit

    root, _ = audited
    with monkeypatch.context() as m:
        m.setattr("pipeline.audit.ppi_population.open_population", lambda *a, **k: None)
        every = Audit.load("demo", JUDGE, root)
    monkeypatch.setattr("pipeline.storage.tables.load_annotated",
                        lambda *a, **k: (_ for _ in ()).throw(AssertionError("read every answer")))
    stored = Audit.load("demo", JUDGE, root)
    assert every is not None and stored is not None and set(every.units) == set(stored.units)
    compared = 0
    for metric, a in every.units.items():
        b = stored.units[metric]
        if isinstance(a, str):
            assert a == b, metric
            continue
        for x, y, key in ((a.clusters, b.clusters, "cluster_id"), (a.answers, b.answers, "answer_id")):
            x, y = (f.sort_values(key, kind="stable").reset_index(drop=True) for f in (x, y))
            pd.testing.assert_frame_equal(x[sorted(x.columns)], y[sorted(x.columns)], check_dtype=False,
                                          rtol=TOLERANCE, obj=metric)
        compared += 1
    assert compared >= 3
