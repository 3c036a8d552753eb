"""When a cell of the prediction-powered scorecard may show a number (pipeline.audit.ppi_cells):
no labelled unit -> n/a with what to label; fewer than the stated minimum -> how many more, no
interval, no verdict on the judge; nothing a person could label (sources without text) -> n/a, with
the judge-only column n/a by the plain scorecard's unjudged-share rule; and intervals that keep a
width when every labelled unit agrees with the judge, with their coverage simulated."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from tolerances import close

pytest.importorskip("ppi_py", reason="the `audit` extra (ppi-python) is not installed")

from pipeline.audit.ppi import Stratum, UnitValues, stratified  # noqa: E402
from pipeline.audit.ppi_cells import MIN_LABELLED_UNITS, ppi_rows  # noqa: E402
from pipeline.audit.sample import Sample, allocate  # noqa: E402
from pipeline.audit.scorecard import ALL_ENGINES, domains  # noqa: E402

METRIC = "unsupported_statements"
SOURCELESS = "sourceless"  # an engine whose sources have no text here: nothing a person could label


def _cells(labelled_a: int, people_agree: bool = True) -> list:
    """Engine "A": 40 answers of one statement (one cited pair) each, the judge finds 30 unsupported
    (value 1) and 10 supported (value 0); its first `labelled_a` statements (alternating between the
    two strata) labelled by people who agree with the judge, or find every one unsupported. Engine
    "sourceless": 10 answers of five statements, every cited source without text here: five answers
    have four uncited statements (unsupported whatever anyone says) and one undecided (value 1.0),
    five have all five undecided (no value); 20 of its 50 statements decided."""
    clusters, answers, judged, judge_rows, items = [], [], [], [], []
    order = [i for pair in zip(range(30), range(30, 40)) for i in pair] + list(range(10, 30))
    chosen = set(order[:labelled_a])
    for i in range(40):
        full = i < 30
        y = 1.0 if (full or not people_agree) else 0.0
        cid = f"A{i}#s0"
        clusters.append({"cluster_id": cid, "stratum": f"A · judge: {'full' if full else 'none'}", "answer_id": f"A{i}",
                         "engine": "A", "query_type": "expertise", "n_items": 1, "yhat": float(full),
                         "y": y if i in chosen else np.nan, "c": y if i in chosen else np.nan,
                         "complete": i in chosen, "in_population": True, "labelled": i in chosen})
        answers.append({"answer_id": f"A{i}", "engine": "A", "query_type": "expertise", "judge_const": 0.0, "human_const": 0.0})
        row = {"answer_id": f"A{i}", "engine": "A", "query_type": "expertise", "metric": METRIC, "value": float(full),
               "units": 1, "unknown": 0, "unknown_why": ""}
        judged.append(row)
        judge_rows.append(row)
        if i in chosen:
            items.append({"cluster_id": cid, "item_id": f"p-{i}"})
    for k in range(10):
        valued = k < 5
        row = {"answer_id": f"S{k}", "engine": SOURCELESS, "query_type": "expertise", "metric": METRIC,
               "value": 1.0 if valued else None, "units": 5, "unknown": 1 if valued else 5,
               "unknown_why": "sources without text"}
        judged.append(row)
        judge_rows.append(row)
        if valued:  # a value no label can change: a known constant of the estimate, no unit to sample
            answers.append({"answer_id": f"S{k}", "engine": SOURCELESS, "query_type": "expertise", "judge_const": 1.0,
                            "human_const": 1.0})
    units = UnitValues(pd.DataFrame(clusters), pd.DataFrame(answers), pd.DataFrame(judged))
    sample = Sample({"unit": "pair", "scope": "cited"}, pd.DataFrame(items, columns=["cluster_id", "item_id"]),
                    units.clusters[["cluster_id", "stratum"]])
    rows = ppi_rows(METRIC, units, sample, pd.DataFrame(judge_rows), domains(["A", SOURCELESS]))
    return {r.domain: r for r in rows}


def test_a_cell_without_labels_is_na_and_says_what_to_label():
    a = _cells(0)["A"]
    assert a.judge_only == close(75.0)  # the judge-only column is the plain scorecard's cell
    assert (a.ppi, a.ppi_low, a.ppi_high, a.human, a.human_low, a.human_high, a.biased) == (None,) * 7
    assert a.labelled_units == 0 and a.population_units == 40 and a.more_needed == MIN_LABELLED_UNITS
    assert a.reason == ("no labelled statement here yet: label 20 statements of A (every cited source of each) "
                        "for a corrected value")


def test_ten_labels_say_how_many_more_and_give_no_interval_nor_verdict():
    # the people disagree with the judge on every "none" they see: with an interval this would read
    # "judge biased"; with ten labels it must not
    a = _cells(10, people_agree=False)["A"]
    assert a.labelled_units == 10 and a.more_needed == 10
    assert (a.ppi, a.ppi_low, a.ppi_high, a.human, a.human_low, a.human_high) == (None,) * 6
    assert a.biased is None and a.bias is None
    assert a.reason.startswith("needs 10 more labelled statements of A") and "(has 10)" in a.reason


def test_from_the_minimum_on_a_cell_has_an_interval_and_a_verdict():
    agree = _cells(MIN_LABELLED_UNITS)["A"]
    assert agree.reason == "" and agree.more_needed is None
    assert agree.ppi_low < agree.ppi <= agree.ppi_high  # every label agrees: the floor keeps a width
    assert agree.ppi == close(75.0) and agree.biased is False and agree.bias == close(0.0)
    assert agree.bias_low < 0 < agree.bias_high
    lenient = _cells(MIN_LABELLED_UNITS, people_agree=False)["A"]
    # ten "none" statements labelled, every one "full" to the people: the whole stratum corrected to 1
    assert lenient.ppi == close(100.0) and lenient.biased is True and lenient.bias_high < 0


def test_sources_without_text_give_no_value_on_either_side():
    cells = _cells(20)
    s = cells[SOURCELESS]
    # the plain scorecard's rule, by its own code: 20 of 50 statements decided. Before, the corrected
    # columns printed 100.0 [100.0, 100.0] for such a cell, from the five valued answers and no label
    assert s.judge_only is None and s.judged_share == close(0.4)
    assert s.judge_reason == "only 40% of statements judged (sources without text)"
    assert (s.ppi, s.human, s.ppi_low, s.human_low, s.biased) == (None,) * 5
    assert s.labelled_units == 0 and s.population_units == 0
    assert s.reason == ("nothing here a person could label: no statement of sourceless has a source with text here, "
                        "so no label can check the judge-only value")
    # all engines: 60 of 90 statements decided, so a value on both sides; the five valued sourceless
    # answers enter as the constant 1 they are under any labels: (30 + 5) / 45
    everyone = cells[ALL_ENGINES]
    assert everyone.judge_only == close(100 * 35 / 45) and everyone.judge_reason == ""
    assert everyone.ppi == close(100 * 35 / 45) and everyone.human == close(100 * 35 / 45)


# ---- intervals when every labelled unit agrees with the judge ---------------------------------------


def test_agreeing_labels_give_a_t_interval_with_a_width_by_hand():
    # N = 20, the judge says 1 on 15 units; four labelled, all agreeing (rectifier 0 everywhere). No
    # disagreement seen, so the floor: Wilson's bound on the disagreement rate, z^2 / (4 + z^2), each
    # disagreement as large as the largest prediction (1/20): s.e. of the rectifier mean
    # 0.05 z / (4 + z^2) = 0.0124975; squared, times (1 - 4/20) and N^2 = 400 -> variance 0.0499796,
    # se 0.2235611; Student's t on 3 degrees of freedom (3.182446) -> 0.75 +- 0.711471. (No skewness
    # correction: every rectifier is 0.)
    flat = Stratum("f", 20, np.ones(4) / 20, np.ones(4) / 20, np.r_[np.ones(15), np.zeros(5)] / 20)
    est = stratified([flat])
    assert float(est.value[0]) == close(0.75)
    assert float(est.se[0]) == close(0.2235611, 1e-6)
    assert float(est.df[0]) == close(3.0)
    low, high = est.interval()
    assert (float(low[0]), float(high[0])) == close((0.75 - 0.711471, 0.75 + 0.711471), 1e-6)
    assert float(stratified([flat], floor=False).se[0]) == close(0.0)  # what the floor prevents


def _near_zero_coverage(n: int, seeds: int, floor: bool) -> float:
    """Coverage of the stratified PPI interval when the judge errs on 4% of 3,000 units: most
    samples of `n` see no error at all in some stratum (the observed rectifier variance is 0 there)."""
    rng = np.random.default_rng(11)
    size = 3000
    judge = rng.random(size) < 0.7
    truth = np.where(rng.random(size) < 0.04, ~judge, judge).astype(float)
    judge = judge.astype(float)
    alloc = allocate({"1": int(judge.sum()), "0": int(size - judge.sum())}, n)
    draws = np.random.default_rng(5)
    strata = []
    for h, label in (("1", 1.0), ("0", 0.0)):
        idx = np.flatnonzero(judge == label)
        picked = np.argsort(draws.random((seeds, len(idx))), axis=1)[:, : alloc[h]]
        everyone = np.repeat(judge[idx][:, None], seeds, axis=1)
        strata.append(Stratum(h, len(idx), truth[idx][picked].T / size, judge[idx][picked].T / size, everyone / size))
    est = stratified(strata, floor=floor)
    low, high = est.interval()
    return float(((low <= truth.mean()) & (truth.mean() <= high)).mean())


def test_near_zero_variance_intervals_still_cover():
    """Seeded, 400 samples of 20 and of 40 units: with the floor and the t quantile the interval holds
    the truth in at least 93% of them; without the floor a sample that saw no error claims
    certainty, and coverage falls far short."""
    for n in (20, 40):
        assert _near_zero_coverage(n, 400, floor=True) >= 0.93, n
    assert _near_zero_coverage(20, 400, floor=False) < 0.85


def test_a_cant_tell_unit_takes_its_answers_corrected_value_by_hand():
    """Unsupported statements, one engine, two answers of two statements, every statement labelled (a
    census). The judge finds all four supported (value 0 for both answers). The people find answer
    A2's two statements and A1's first unsupported, and can't tell on A1's second: on the people's
    scorecard A1 is 1/1 (its undecided statement leaves the denominator), A2 is 2/2, mean 1.0.
    Units by hand (fixed denominator 2, the judge's values elsewhere in the answer): A1's first
    +1/2, A1's second 0 (undecided under the judge: A1 stays 0/1), taking out half of A1's decided
    statements (fill 1/2); A2's two +1/2 each. Without the fill the estimate is (1/2 + 0 + 1)/2 =
    0.75; with it, the undecided unit takes 1/2 of the judge's mean error per answer b, and b = (1/2 +
    b/2 + 1)/2 gives b = 1: the estimate is exactly 1.0, the people's scorecard. The people-only
    column needs no fill here (from a label-free baseline of "none" everywhere, value 1 for both
    answers, no label moves them: c = 0) and gives 1.0 too."""
    rows = [("A1#s0", "A1", 0.5, 0.0, 0.0), ("A1#s1", "A1", 0.0, 0.5, 0.5), ("A2#s0", "A2", 0.5, 0.0, 0.0),
            ("A2#s1", "A2", 0.5, 0.0, 0.0)]
    clusters = pd.DataFrame([{"cluster_id": cid, "stratum": "A · judge: full", "answer_id": aid, "engine": "A",
                              "query_type": "expertise", "n_items": 1, "yhat": 0.0, "y": y, "c": 0.0, "complete": True,
                              "in_population": True, "labelled": True, "fill": fill, "fill_c": fill_c}
                             for cid, aid, y, fill, fill_c in rows])
    answers = pd.DataFrame([{"answer_id": a, "engine": "A", "query_type": "expertise", "judge_const": 0.0,
                             "human_const": 1.0} for a in ("A1", "A2")])
    judged = pd.DataFrame([{"answer_id": a, "engine": "A", "query_type": "expertise", "metric": METRIC, "value": 0.0,
                            "units": 2, "unknown": 0, "unknown_why": ""} for a in ("A1", "A2")])
    sample = Sample({"unit": "pair", "scope": "cited"}, pd.DataFrame({"cluster_id": clusters["cluster_id"],
                                                                      "item_id": [f"p-{k}" for k in range(4)]}),
                    clusters[["cluster_id", "stratum"]])
    (row,) = ppi_rows(METRIC, UnitValues(clusters, answers, judged), sample, judged, {"A": lambda f: f["engine"] == "A"})
    assert row.reason == ""
    assert row.ppi == close(100.0, 1e-9) and (row.ppi_low, row.ppi_high) == close((100.0, 100.0), 1e-9)
    assert row.human == close(100.0, 1e-9)
    assert row.judge_only == close(0.0, 1e-12) and row.biased is True
    # the same labels without the fill (as if each unit stood alone): the 0.75 the hand count gives
    plain = clusters.assign(fill=0.0, fill_c=0.0)
    (row,) = ppi_rows(METRIC, UnitValues(plain, answers, judged), sample, judged, {"A": lambda f: f["engine"] == "A"})
    assert row.ppi == close(75.0, 1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_a_cell_rule_is_the_scorecard_summary_of_the_cell(seed):
    """`cell_rule` reads one cell without bootstrapping its interval: the same value, judged share,
    reason and count as `pipeline.aggregate.summarize` gives the cell, on per-answer rows with null
    values and units no label decided (some cells over the metric's unjudged-share limit)."""
    import numpy as np

    from pipeline.aggregate import summarize
    from pipeline.audit.ppi import PPI_METRICS
    from pipeline.audit.ppi_cells import cell_rule

    rng = np.random.default_rng(seed)
    for metric in PPI_METRICS:
        n = int(rng.integers(1, 40))
        units = rng.integers(0, 6, n)
        rows = pd.DataFrame({
            "answer_id": [f"a{k}" for k in range(n)],
            "query_type": rng.choice(["debate", "expertise"], n),
            "value": np.where(rng.random(n) < 0.2, np.nan, rng.random(n)),
            "units": units, "unknown": np.minimum(units, rng.integers(0, 4, n)),
            "unknown_why": rng.choice(["", "no text", "judge abstained"], n)})
        out = summarize(rows.assign(metric=metric, dataset="cell"), group_keys=())
        cell = out[(out["query_type"] == "all") & (out["metric"] == metric)].iloc[0]
        value, share, why, count = cell_rule(rows, metric)
        want = None if cell["value"] is None or cell["value"] != cell["value"] else float(cell["value"])
        assert (value is None) == (want is None), (metric, value, want)
        if want is not None:
            assert value == pytest.approx(want, abs=1e-12)
        want_share = None if cell["judged_share"] is None or cell["judged_share"] != cell["judged_share"] else cell["judged_share"]
        assert (share is None) == (want_share is None) and (share is None or share == pytest.approx(want_share, abs=1e-12))
        assert why == str(cell["reason"] or "") and count == int(cell["n_answers"])
