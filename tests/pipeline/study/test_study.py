"""pipeline.study: hand-computed statistics, the loader, the reproduction, the simulator, the CLI."""

from __future__ import annotations

import argparse
import json
import math
import string
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs
from scipy import stats

from pipeline import study
from pipeline.storage import paths
from pipeline.study import cli as study_cli

REF_OK = all((paths.reference_dir() / f).is_file() for f in study.REFERENCE_FILES)
needs_ref = pytest.mark.skipif(not REF_OK, reason="published study figures not in data/reference/")

# ------------------------------------------------------------------ hand-computed statistics


def test_describe_by_hand():
    d = study.describe([0, 1, 1, 4])
    # mean 6/4; SS = 2.25 + .25 + .25 + 6.25 = 9; SD = sqrt(9/3)
    assert d == pytest.approx({"Mean": 1.5, "Median": 1.0, "SD": math.sqrt(3), "Max": 4, "Min": 0, "n": 4})
    assert math.isnan(study.describe([])["Mean"])


def test_student_t_by_hand():
    x, y = [1, 2, 3, 4, 5], [2, 4, 6]
    # SS_x = 10, SS_y = 8, pooled var = 18/6 = 3, se = sqrt(3 (1/5 + 1/3)) = sqrt(1.6)
    r = study.student_t(x, y)
    assert r.t == pytest.approx(-1 / math.sqrt(1.6))
    assert r.t == pytest.approx(-0.790569, abs=1e-6)
    assert r.df == 6
    assert r.p == pytest.approx(stats.ttest_ind(x, y).pvalue)


def test_welch_t_by_hand():
    x, y = [1, 2, 3, 4, 5], [2, 4, 6]
    # v1 = 2.5/5 = 0.5, v2 = 4/3; df = (v1+v2)^2 / (v1^2/4 + v2^2/2)
    r = study.welch_t(x, y)
    assert r.t == pytest.approx(-1 / math.sqrt(0.5 + 4 / 3))
    assert r.df == pytest.approx((0.5 + 4 / 3) ** 2 / (0.25 / 4 + (16 / 9) / 2))
    assert r.df == pytest.approx(3.532847, abs=1e-6)
    assert r.p == pytest.approx(stats.ttest_ind(x, y, equal_var=False).pvalue)


def test_equal_variances_student_equals_welch():
    x, y = [1, 2, 3], [4, 5, 6]
    # both variances 1, pooled 1, se = sqrt(2/3), t = -3 / sqrt(2/3) = -3.674235; df 4 both ways
    s, w = study.student_t(x, y), study.welch_t(x, y)
    assert s.t == pytest.approx(-3.674235, abs=1e-6) and w.t == pytest.approx(s.t)
    assert s.df == 4 and w.df == pytest.approx(4)
    assert s.p == pytest.approx(w.p)
    assert s.p == pytest.approx(0.021312, abs=1e-6)


def test_t_from_published_stats_by_hand():
    # Google vs Perplexity hovered, n = 82 and 24:
    # sp^2 = (81*3.56^2 + 23*1.39^2)/104 = 10.298076..., se = sqrt(sp^2 (1/82 + 1/24))
    sp2 = (81 * 3.56 ** 2 + 23 * 1.39 ** 2) / 104
    t = (11.81 - 2.12) / math.sqrt(sp2 * (1 / 82 + 1 / 24))
    r = study.t_from_stats(11.81, 3.56, 82, 2.12, 1.39, 24)
    assert r.t == pytest.approx(t) and r.t == pytest.approx(13.0108, abs=1e-4)
    assert r.p == pytest.approx(stats.ttest_ind_from_stats(11.81, 3.56, 82, 2.12, 1.39, 24).pvalue)


def test_mann_whitney_with_ties_by_hand():
    x, y = [1, 2, 2, 3], [2, 3, 4]
    # ranks: 1->1, the three 2s -> 3, the two 3s -> 5.5, 4 -> 7; R_x = 12.5, U_x = 12.5 - 10 = 2.5
    # tie-corrected var = n1 n2 / 12 * ((n+1) - sum(t^3 - t)/(n(n-1))) = 1 * (8 - 30/42)
    var = 8 - 30 / 42
    z = (abs(2.5 - 6) - 0.5) / math.sqrt(var)
    r = study.mann_whitney(x, y)
    assert r.u == pytest.approx(2.5)
    assert r.method == "asymptotic"
    assert r.p == pytest.approx(math.erfc(z / math.sqrt(2)))
    assert r.p == pytest.approx(0.26638, abs=1e-4)


def test_mann_whitney_exact_without_ties():
    x, y = [1, 2, 3], [4, 5, 6]
    # U = 0; exact two-sided p = 2 * 1 / C(6,3) = 0.1
    r = study.mann_whitney(x, y)
    assert r.u == 0 and r.method == "exact" and r.p == pytest.approx(0.1)


def test_cohens_d_by_hand():
    x, y = [1, 2, 3, 4, 5], [2, 4, 6]
    # pooled SD = sqrt(3); d = -1/sqrt(3); SE = sqrt(8/15 + d^2 / 16)
    d = -1 / math.sqrt(3)
    se = math.sqrt(8 / 15 + d * d / 16)
    r = study.cohens_d(x, y)
    assert r.d == pytest.approx(d)
    assert (r.ci_low, r.ci_high) == pytest.approx((d - 1.959964 * se, d + 1.959964 * se), abs=1e-5)
    assert (r.ci_low, r.ci_high) == pytest.approx((-2.036394, 0.881694), abs=1e-5)


def test_holm_by_hand():
    # sorted 0.005*4 = .02, 0.01*3 = .03, 0.03*2 = .06, 0.04*1 = .04 -> monotone max .06
    assert study.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert study.holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])
    out = study.holm([0.01, float("nan")])
    assert out[0] == pytest.approx(0.01) and math.isnan(out[1])


def test_pooled_stats_by_hand():
    # [0,1,2] and [2,3,4]: union mean 2, SS 10, SD sqrt(10/5)
    m, s, n = study.pooled_stats([(1, 1, 3), (3, 1, 3)])
    assert (m, s, n) == pytest.approx((2, math.sqrt(2), 6))


def test_grim():
    assert not study.grim_possible(0.76, 30)  # 22/30 = .733, 23/30 = .767
    assert study.grim_possible(2.10, 30)
    assert study.grim_possible(0.5, 28)


# ------------------------------------------------------------------ loader

BASE = dict(participant="P1", session="S1", engine="Perplexity", query_id="Q1", query_type="expert", alignment="none",
            timestamp="2024-05-01T10:00:00Z")


def ev(event, rank, **kw):
    return {**BASE, **kw, "event": event, "source_rank": rank}


def test_counts_from_events_distinct_and_nulls():
    events = pd.DataFrame([
        ev("displayed", 1), ev("displayed", 2), ev("displayed", 3), ev("cited", 1),
        ev("hover", 1), ev("hover", 1), ev("hover", 2), ev("click", 2),
        ev("hover", 3, engine="Google", query_id="Q1"),
    ])
    c = study.counts_from_events(events).set_index("engine")
    assert c.loc["Perplexity", ["displayed", "cited", "hovered", "clicked"]].tolist() == [3, 1, 2, 1]
    # Google: nothing displayed/cited was logged -> null, not 0; no click -> 0
    assert pd.isna(c.loc["Google", "displayed"]) and pd.isna(c.loc["Google", "cited"])
    assert c.loc["Google", "hovered"] == 1 and c.loc["Google", "clicked"] == 0


@pytest.mark.parametrize("column,value,needle", [
    ("event", "hoverr", "is not one of"),
    ("source_rank", "0", "below the minimum"),
    ("source_rank", "1.5", "whole number"),
    ("alignment", "maybe", "is not one of"),
    ("participant", "../etc", "participant code"),
    ("participant", "a@b.com", "participant code"),
    ("timestamp", "yesterday", "timestamp"),
    ("engine", "", "missing"),
])
def test_bad_cell_named_by_row_and_column(tmp_path, column, value, needle):
    rows = [ev("displayed", 1), ev("hover", 1), ev("click", 1)]
    frame = pd.DataFrame(rows)
    frame[column] = frame[column].astype(str)
    frame.loc[2, column] = value
    path = tmp_path / "log.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(study.StudyLogError) as err:
        study.load_log(path)
    assert err.value.row == 3 and err.value.column == column
    assert f"row 3, column '{column}'" in str(err.value) and needle in str(err.value)


def test_inconsistent_alignment_within_query():
    frame = pd.DataFrame([ev("displayed", 1), ev("hover", 1, alignment="aligned")])
    with pytest.raises(study.StudyLogError, match="row 2, column 'alignment'"):
        study.validate_events(frame)


def test_count_level_errors_and_duplicates():
    good = {k: v for k, v in BASE.items() if k != "timestamp"}
    frame = pd.DataFrame([{**good, "displayed": 3, "cited": 2, "hovered": 1, "clicked": 0},
                          {**good, "query_id": "Q2", "displayed": "", "cited": "", "hovered": -1, "clicked": 0}])
    with pytest.raises(study.StudyLogError, match="row 2, column 'hovered'"):
        study.validate_counts(frame)
    frame.loc[1, "hovered"] = 2
    out = study.validate_counts(frame)
    assert pd.isna(out.loc[1, "displayed"])
    frame.loc[1, "query_id"] = "Q1"
    with pytest.raises(study.StudyLogError, match="duplicate"):
        study.validate_counts(frame)


def test_missing_columns_and_unknown_file(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("a,b\n1,2\n")
    with pytest.raises(study.StudyLogError, match="not a study log"):
        study.load_log(p)
    q = tmp_path / "x.txt"
    q.write_text("")
    with pytest.raises(study.StudyLogError, match="unsupported"):
        study.load_log(q)


codes = hs.text(alphabet=string.ascii_letters + string.digits, min_size=1, max_size=6)
event_rows = hs.lists(hs.tuples(hs.sampled_from(["P1", "P2", "X_9"]), hs.sampled_from(["Google", "Perplexity"]),
                                hs.sampled_from(["Q1", "Q2"]), hs.sampled_from(study.EVENT_TYPES), hs.integers(1, 8)),
                      min_size=1, max_size=40)


def _frame(rows):
    out = []
    for participant, engine, q, event, rank in rows:
        # attributes are a function of the query key so rows never disagree
        out.append({**BASE, "participant": participant, "engine": engine, "query_id": q,
                    "alignment": "aligned" if q == "Q1" else "none", "event": event, "source_rank": rank})
    return pd.DataFrame(out)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=event_rows, fmt=hs.sampled_from([".csv", ".parquet"]))
def test_property_roundtrip_and_counts(tmp_path, rows, fmt):
    frame = _frame(rows)
    path = tmp_path / f"log{fmt}"
    study.write_log(frame, path)
    log = study.load_log(path)
    assert log.level == "events" and len(log.events) == len(frame)
    counts = log.counts
    # one row per distinct query key; each count equals the number of distinct ranks logged
    assert len(counts) == len({(r[0], r[1], r[2]) for r in rows})
    for _, c in counts.iterrows():
        for event, col in study.EVENT_TO_COUNT.items():
            ranks = {r[4] for r in rows if (r[0], r[1], r[2]) == (c.participant, c.engine, c.query_id) and r[3] == event}
            if col in ("displayed", "cited") and not ranks:
                assert pd.isna(c[col])
            else:
                assert c[col] == len(ranks)
    # counts survive their own round trip at count level
    cpath = tmp_path / f"counts{fmt}"
    study.write_log(counts, cpath)
    again = study.load_log(cpath).counts
    pd.testing.assert_frame_equal(again.reset_index(drop=True), counts.reset_index(drop=True), check_dtype=False)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=event_rows, data=hs.data())
def test_property_bad_cell_is_located(tmp_path, rows, data):
    frame = _frame(rows).astype({"source_rank": str})
    i = data.draw(hs.integers(0, len(frame) - 1))
    column, bad = data.draw(hs.sampled_from([("event", "scroll"), ("source_rank", "-2"), ("alignment", "both"), ("session", "a/b")]))
    frame.loc[i, column] = bad
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(study.StudyLogError) as err:
        study.load_log(path)
    assert (err.value.row, err.value.column) == (i + 1, column)


# ------------------------------------------------------------------ tables and tests on a log


def _toy_counts():
    rows = []
    for i, (h, c) in enumerate([(10, 3), (12, 4), (14, 5), (11, 4)]):
        rows.append({**BASE, "engine": "Google", "query_id": f"Q{i}", "displayed": None, "cited": None, "hovered": h, "clicked": c})
    for i, (d, ci, h, c, a) in enumerate([(5, 3, 2, 1, "aligned"), (5, 2, 1, 0, "aligned"), (5, 3, 3, 2, "disaligned"), (4, 4, 4, 2, "disaligned")]):
        rows.append({**BASE, "query_id": f"Q{i}", "alignment": a, "query_type": "debate", "displayed": d, "cited": ci, "hovered": h, "clicked": c})
    return study.validate_counts(pd.DataFrame(rows).drop(columns=["timestamp"]))


def test_descriptive_and_sources_tables():
    counts = _toy_counts()
    d = study.descriptive_table(counts)
    assert d[("hovered", "Google")]["Mean"] == pytest.approx(11.75)
    assert d[("clicked", "Perplexity")]["Median"] == pytest.approx(1.5)
    s = study.sources_table(counts)
    assert s[("displayed", "All")]["Mean"] == pytest.approx(4.75)
    assert s[("cited", "All")]["Cited share"] == pytest.approx(3.0 / 4.75)


def test_test_table_family_and_holm():
    counts = _toy_counts()
    t = study.test_table(counts, "google_vs_engines", alpha=0.05)
    # Google vs all engines and vs Perplexity (same data here) x 2 measures = 4 rows
    assert len(t) == 4
    row = t[(t.comparison == "Google vs Perplexity") & (t.measure == "hovered")].iloc[0]
    ref = stats.ttest_ind([10, 12, 14, 11], [2, 1, 3, 4])
    assert row.student_t == pytest.approx(ref.statistic) and row.student_p == pytest.approx(ref.pvalue)
    assert t["student_p_holm"].tolist() == pytest.approx(study.holm(t["student_p"].tolist()))
    a = study.test_table(counts, "aligned_vs_disaligned")
    assert a["n1"].tolist() == [2, 2] and a["n2"].tolist() == [2, 2]
    with pytest.raises(ValueError):
        study.test_table(counts, "nope")


# ------------------------------------------------------------------ reproduction


@pytest.fixture(scope="module")
def repro():
    if not REF_OK:
        pytest.skip("published study figures not in data/reference/")
    return study.reproduce(alpha=0.01)


def test_inferred_sample_sizes(repro):
    n = repro["inferred_n"]
    assert (n["Google"], n["Perplexity"], n["Bing Copilot"], n["YouChat"], n["All answer engines"]) == (82, 24, 30, 28, 82)
    r5 = repro["n_inference"]["table5"]
    assert r5["fits_within_rounding"] and [n["aligned"], n["disaligned"]] in r5["pairs_fitting"]
    assert r5["ranges"]["total"][0] >= 40 and r5["ranges"]["total"][1] <= 55


def test_table4_t_within_0_1(repro):
    t4 = [t for t in repro["tests"] if t["table"] == "Table 4"]
    assert len(t4) == 8
    for t in t4:
        assert abs(t["recomputed_t"] - t["printed_t"]) < 0.1, t


def test_table5_p_within_factor_1_5(repro):
    t5 = [t for t in repro["tests"] if t["table"] == "Table 5"]
    assert len(t5) == 2
    for t in t5:
        assert 1 / 1.5 <= t["p_ratio"] <= 1.5, t


def test_flags(repro):
    by_item = {f["item"]: f for f in repro["flags"]}
    typo = by_item["Google vs All answer engines / clicked p value"]
    assert typo["severity"] == "inconsistent" and "3.38e-38" in typo["reason"]
    assert by_item["disaligned hovered mean in text"]["expected"] == pytest.approx(2.95)
    assert by_item["disaligned clicked mean in text"]["expected"] == pytest.approx(1.72)
    assert "Perplexity hovered sd" in by_item["answer engines (pooled) hovered sd in text"]["reason"]
    assert all(f["reason"] for f in repro["flags"])
    # consistent values are not flagged
    assert "Google vs Perplexity / hovered p value" not in by_item


# ------------------------------------------------------------------ simulation


@needs_ref
def test_simulation_matches_published_and_is_seeded():
    a, b = study.simulate_counts(seed=5), study.simulate_counts(seed=5)
    pd.testing.assert_frame_equal(a, b)
    assert a.attrs["label"] == study.SIMULATED_LABEL
    pub = study.load_published()
    d = study.descriptive_table(a)
    for _, r in pub.hover_click.iterrows():
        col = d[(r["measure"], r["engine"])]
        # integers cannot always hit a two-decimal mean exactly (GRIM), hence 0.011
        assert col["Mean"] == pytest.approx(r["mean"], abs=0.011)
        assert col["SD"] == pytest.approx(r["sd"], abs=0.03)
        assert (col["Min"], col["Max"]) == (r["min"], r["max"])
    ae = a[a.engine != "Google"]
    assert (ae["cited"] <= ae["displayed"]).all()


# ------------------------------------------------------------------ CLI


def _cli(argv, capsys):
    parser = argparse.ArgumentParser(prog="pipeline")
    study_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code = args.func(args)
    out = capsys.readouterr()
    return code, out.out, out.err


@needs_ref
def test_cli_reproduce_json(capsys):
    code, out, _ = _cli(["study", "reproduce", "--json", "--alpha", "0.01"], capsys)
    data = json.loads(out)
    assert code == 0 and len(data["tests"]) == 10 and data["flags"]
    assert data["inferred_n"]["Google"] == 82


@needs_ref
def test_cli_simulate_then_analyze(tmp_path, capsys):
    path = tmp_path / "sim.parquet"
    code, out, _ = _cli(["study", "simulate", "--out", str(path), "--seed", "2"], capsys)
    assert code == 0 and "simulated from published summary statistics" in out
    code, out, _ = _cli(["study", "analyze", str(path), "--json"], capsys)
    data = json.loads(out)
    assert code == 0 and data["rows"] == 164 and len(data["tests"]["google_vs_engines"]) == 8


def test_cli_bad_input_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    pd.DataFrame([ev("jump", 1)]).to_csv(bad, index=False)
    code, out, err = _cli(["study", "analyze", str(bad)], capsys)
    assert code == 2 and err.count("\n") == 1 and "row 1, column 'event'" in err
    code, _, err = _cli(["study", "analyze", str(tmp_path / "missing.csv")], capsys)
    assert code == 2 and "no such file" in err
    code, _, err = _cli(["study", "reproduce", "--alpha", "2"], capsys)
    assert code == 2 and err.count("\n") == 1
    code, _, err = _cli(["study", "simulate", "--out", str(tmp_path / "x.txt")], capsys)
    assert code == 2


def test_the_simulated_log_is_searched_once_then_read_from_the_cache(tmp_path, monkeypatch):
    """The Study page's default log: the cached copy is the simulation itself, and a second
    process (here: a second call) reads it instead of searching again; a damaged file is searched
    again."""
    from pipeline.study import simulate

    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path))
    first = study.cached_counts(3)
    pd.testing.assert_frame_equal(first, study.simulate_counts(3))
    [path] = (tmp_path / "study").glob("simulated-3-*.parquet")
    monkeypatch.setattr(simulate, "simulate_counts", lambda *a, **k: (_ for _ in ()).throw(AssertionError("searched again")))
    pd.testing.assert_frame_equal(study.cached_counts(3), first)
    monkeypatch.undo()
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path))
    path.write_bytes(b"not parquet")
    pd.testing.assert_frame_equal(study.cached_counts(3), first)
