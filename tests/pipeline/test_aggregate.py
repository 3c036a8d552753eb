"""Aggregation: macro means over non-null values, bootstrap intervals, ratings from thresholds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from tolerances import close

from pipeline.aggregate import bootstrap_ci, scorecard_table, summarize
from pipeline.metrics import METRICS


def rows(engine, metric, values, query_type="debate"):
    return [{"engine": engine, "answer_id": f"{engine}-{k}", "query_type": query_type, "metric": metric, "value": v}
            for k, v in enumerate(values)]


def test_null_values_are_left_out_not_counted_as_zero():
    frame = pd.DataFrame(rows("E", "citation_accuracy", [1.0, None, 0.5]))
    out = summarize(frame).set_index(["query_type", "metric"])
    assert out.loc[("all", "citation_accuracy"), "value"] == pytest.approx(75.0)
    assert out.loc[("all", "citation_accuracy"), "n_answers"] == 2


def test_rating_and_symbol_come_from_the_registry_bands():
    frame = pd.DataFrame(rows("E", "citation_accuracy", [0.95, 0.85]) + rows("E", "uncited_sources", [0.0, 0.1]))
    out = summarize(frame).set_index(["query_type", "metric"])
    assert out.loc[("all", "citation_accuracy"), "rating"] == "acceptable"  # 90.0 is in [90, 100]
    assert out.loc[("all", "citation_accuracy"), "symbol"] == "▲"
    assert out.loc[("all", "uncited_sources"), "rating"] == "borderline"  # 5.0 is in [5, 10)


def test_threshold_edges():
    rate = METRICS["pct_one_sided" if "pct_one_sided" in METRICS else "one_sided"].rate
    assert rate(19.99) == "acceptable" and rate(20) == "borderline" and rate(40) == "problematic"
    assert rate(100) == "problematic"
    necessity = METRICS["source_necessity"].rate
    assert necessity(100) == "acceptable" and necessity(80) == "acceptable" and necessity(79.9) == "borderline"
    assert necessity(59.99) == "problematic" and necessity(None) is None


def test_query_type_split_and_unrated_metrics():
    frame = pd.DataFrame(rows("E", "one_sided", [1.0, 0.0]) + rows("E", "relevant_statements", [1.0], "expertise"))
    out = summarize(frame)
    debate = out[(out["query_type"] == "debate") & (out["metric"] == "one_sided")]
    assert debate["value"].iloc[0] == pytest.approx(50.0)
    expertise = out[(out["query_type"] == "expertise") & (out["metric"] == "one_sided")]
    assert expertise["value"].isna().all() and expertise["n_answers"].iloc[0] == 0
    assert out[out["metric"] == "n_sources"]["rating"].isna().all()


def test_bootstrap_interval_is_seeded_and_brackets_the_mean():
    values = np.array([0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0])
    low, high = bootstrap_ci(values)
    assert (low, high) == bootstrap_ci(values)
    assert low < values.mean() < high
    assert bootstrap_ci(np.array([0.4])) == close((0.4, 0.4))


def test_f1_is_harmonic_mean_of_the_two_corpus_means():
    frame = pd.DataFrame(rows("E", "citation_precision", [1.0, 0.5]) + rows("E", "citation_recall", [0.5, 0.5]))
    out = summarize(frame).set_index(["query_type", "metric"])
    p, r = 0.75, 0.5
    assert out.loc[("all", "citation_f1"), "value"] == pytest.approx(100 * 2 * p * r / (p + r))


def test_scorecard_table_orders_metrics_like_the_registry():
    frame = pd.DataFrame(rows("A", "citation_accuracy", [1.0]) + rows("B", "one_sided", [1.0]))
    table = scorecard_table(summarize(frame))
    assert list(table.columns) == ["A", "B"]
    order = list(METRICS)
    assert list(table.index) == sorted(table.index, key=order.index)


def test_bootstrap_interval_does_not_depend_on_the_block_size(monkeypatch):
    import numpy as np

    from pipeline import aggregate

    values = np.random.default_rng(3).random(2_345)
    monkeypatch.setattr(aggregate, "BOOTSTRAP_BLOCK_DRAWS", 10_000_000)  # 1,000 x 2,345 draws in one block
    whole = aggregate.bootstrap_ci(values)
    monkeypatch.setattr(aggregate, "BOOTSTRAP_BLOCK_DRAWS", 10_000)  # four resamples per block
    assert aggregate.bootstrap_ci(values) == whole
    monkeypatch.setattr(aggregate, "BOOTSTRAP_BLOCK_DRAWS", 1 << 16)  # the default: 27 resamples per block
    assert aggregate.bootstrap_ci(values) == whole


def test_groups_with_the_same_values_share_one_interval(monkeypatch):
    # the summary asks for each (configuration, query type, metric) group's interval; many groups
    # hold the same values (a count metric under every necessity method, "all" = the one query
    # type of a dataset), and an interval is a function of the values alone
    from pipeline import aggregate

    calls = []
    real = aggregate.bootstrap_ci
    monkeypatch.setattr(aggregate, "bootstrap_ci", lambda values: calls.append(len(values)) or real(values))
    rows = [{"dataset": "d", "judge": "j", "mode": "strict", "necessity": necessity, "engine": "e",
             "query_type": "expertise", "answer_id": f"a{i}", "metric": "n_statements", "value": float(i % 7)}
            for necessity in ("exact", "greedy", "bipartite") for i in range(50)]
    acc = aggregate.SummaryAccumulator(["dataset", "judge", "mode", "necessity", "engine"])
    acc.add_rows(rows)
    summary = acc.summary()
    statements = summary[summary["metric"] == "n_statements"]
    assert len(statements) == 6 and statements["ci_low"].nunique() == 1 and statements["ci_low"].notna().all()
    assert calls == [50]  # six groups, one bootstrap
