"""Verdicts that do not hang on a number of bootstrap draws (issue 42): the p-value is a paired t
over the queries, so a large gap is real whatever --samples an older script passes, a family of 39
equal metrics stays null, and the words say the alpha and the method."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from pytest import approx

from pipeline.cli import main as cli_main
from pipeline.consistency.differences import paired_difference, t_verdict
from pipeline.runner import run_dataset
from pipeline.testing.difference_sim import World, simulate, true_gap
from pipeline.testing.fake_variation import Variation, synthetic_records

# Alpha's statements hold 90% of the time, Beta's 46%: a true gap of 44 points in citation accuracy,
# at the smallest design people use (24 queries x 2 repeats, 4 statements per answer)
ENGINES = {"Alpha": Variation(seed=1, accuracy=0.9, perturb=0.1), "Beta": Variation(seed=2, accuracy=0.46, perturb=0.5, pool=6)}


@pytest.fixture(scope="module")
def gap_results(tmp_path_factory):
    root = tmp_path_factory.mktemp("verdicts")
    data = root / "gap.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in synthetic_records(ENGINES, queries=24, repeats=2)), encoding="utf-8")
    mp = pytest.MonkeyPatch()
    mp.setenv("AEE_RESULTS_DIR", str(root / "results"))
    mp.setenv("AEE_OVER_TIME_MEANING", "lexical")
    run_dataset("gap", data, judge_name="recorded", progress=False)
    yield root
    mp.undo()


def test_paired_t_by_hand():
    # per-query differences 10, 12, 14, 16, 18 (A's two repeats average to B's value + these):
    # mean 14, s = sqrt(10), se = sqrt(10 / 5) = 1.414214, t = 9.899495 on 4 df, p = 0.000584,
    # t(0.975, 4) = 2.776445: interval 14 -+ 3.926486
    a = pd.DataFrame({"query": [f"q{k}" for k in range(5) for _ in range(2)],
                      "value": [50 + 10 + 2 * k + e for k in range(5) for e in (-3.0, 3.0)]})
    b = pd.DataFrame({"query": [f"q{k}" for k in range(5)], "value": [50.0] * 5})
    diff, low, high, p, q, *_, se, df = paired_difference(a, b)
    assert (diff, se, df, q) == approx((14.0, 1.414214, 4.0, 5), abs=1e-6)
    assert p == approx(0.000584, abs=1e-6)
    assert (low, high) == approx((14 - 3.926486, 14 + 3.926486), abs=1e-5)
    # diff 10, se 4, 24 df: t = 2.5, p = 0.019654, t(0.975, 24) = 2.063899
    low, high, p = t_verdict(10.0, 4.0, 24)
    assert p == approx(0.019654, abs=1e-6) and (low, high) == approx((10 - 2.063899 * 4, 10 + 2.063899 * 4), abs=1e-5)
    assert t_verdict(0.0, 0.0, 9)[2] == approx(1.0, abs=1e-12)  # every query differs by 0
    assert all(math.isnan(x) for x in t_verdict(3.0, 1.0, 0))  # one query: no spread to read


@pytest.mark.parametrize("samples", [None, "100", "200", "2000"])
def test_a_44_point_gap_is_real_whatever_draws_a_script_asks_for(gap_results, capsys, samples):
    extra = ["--samples", samples] if samples else []
    assert cli_main(["compare", "--dataset", "gap", "--judge", "recorded", "--engines", "Alpha,Beta", "--json", *extra]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    diffs = {d["metric"]: d for d in out["comparisons"][0]["differences"]}
    accuracy = diffs["citation_accuracy"]
    # 24 queries x 2 repeats x 4 statements per side: the measured gap within 12 points of 44
    assert accuracy["diff"] == approx(44.0, abs=12.0)
    # far below the old floor (20 metrics / 100 draws = 0.2): real among every metric of the registry
    assert accuracy["real"] and accuracy["p_holm"] < 1e-6 and len(diffs) >= 20
    assert out["alpha"] == approx(0.05, abs=1e-12) and out["method"].startswith("paired t over the shared queries")
    assert "at alpha 0.05; paired t over 24 queries" in out["comparisons"][0]["summary"]
    warnings = captured.err.strip().splitlines()
    assert warnings == (["warning: --samples is ignored: the p-values are a paired t over the queries, which no number of "
                         "draws changes"] if samples else [])


def test_the_words_say_the_alpha_used(gap_results, capsys):
    assert cli_main(["compare", "--dataset", "gap", "--judge", "recorded", "--engines", "Alpha,Beta", "--alpha", "0.01"]) == 0
    text = capsys.readouterr().out
    assert "at alpha 0.01; paired t over 24 queries" in text and "alpha 0.05" not in text
    assert "method: paired t over the shared queries" in text and "; alpha 0.01" in text


def test_a_bad_alpha_is_one_line(gap_results, capsys):
    assert cli_main(["compare", "--dataset", "gap", "--judge", "recorded", "--engines", "Alpha,Beta", "--alpha", "5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "give a level between 0 and 1" in err[0]


def test_a_null_family_of_39_metrics_stays_null():
    """60 seeded replicates of two equal engines on 39 metrics (24 queries x 2 repeats): no more than
    3 of 60 (5%) families with any false claim; the interval of the first metric holds the truth (0)
    in at least 90% (binomial se 2.8% at 60). The bigger table is in docs/over_time.md."""
    out = simulate(World(24, 2, 39), replicates=60, seed=42)
    print(out)
    assert out["familywise_false"] <= 0.05
    assert out["coverage"] >= 0.90


def test_power_of_a_15_point_gap_at_50_queries():
    """A 15-point gap (p + 0.15 clipped at 1: 14.9 points in truth) among 20 metrics, 50 queries x 2
    repeats: called real in most replicates (the table in docs/over_time.md has the full grid)."""
    assert true_gap(0.15) == approx(14.9, abs=0.2)
    out = simulate(World(50, 2, 20, 0.15), replicates=30, seed=5)
    print(out)
    assert out["power"] >= 0.8 and out["familywise_false"] <= 0.1


@pytest.mark.parametrize("seed", range(4))
def test_t_verdict_is_scipy_stats_t_without_importing_it(seed):
    """t_verdict takes Student's t from scipy.special (scipy.stats costs a page's first view seconds):
    the same interval and p as scipy.stats.t's ppf and sf, on random degrees of freedom and differences."""
    import numpy as np
    from scipy.stats import t as student_t

    rng = np.random.default_rng(seed)
    for df in [1.0, 2.0, 3.5, *rng.uniform(1, 5000, 40)]:
        for diff, se in zip(rng.normal(0, 20, 12), rng.uniform(0.01, 10, 12)):
            low, high, p = t_verdict(float(diff), float(se), float(df))
            half = float(student_t.ppf(0.975, df)) * se
            want_p = float(min(1.0, 2 * student_t.sf(abs(diff) / se, df)))
            assert (low, high) == approx((diff - half, diff + half), rel=1e-12, abs=1e-12)
            assert p == approx(want_p, rel=1e-12, abs=1e-300)


def test_the_icc_interval_is_scipy_stats_f_without_importing_it():
    """icc_interval takes the F quantiles from scipy.special (fdtri): the interval written out by hand
    with scipy.stats.f.ppf, on unequal repeats."""
    import numpy as np
    from scipy.stats import f as f_dist

    from pipeline.consistency.spread import icc_interval

    rng = np.random.default_rng(3)
    n = rng.integers(2, 6, 14).astype(float)
    values = [rng.normal(q % 4, 1.0, int(k)) for q, k in enumerate(n)]
    s = np.array([v.sum() for v in values])
    sq = np.array([(v ** 2).sum() for v in values])
    groups, total = n.size, n.sum()
    df_b, df_w = groups - 1, total - groups
    means = s / n
    msb = (n * (means - s.sum() / total) ** 2).sum() / df_b
    msw = (sq - s * means).sum() / df_w
    k0 = (total - (n ** 2).sum() / total) / df_b
    low_f = msb / msw / f_dist.ppf(0.975, df_b, df_w)
    high_f = msb / msw * f_dist.ppf(0.975, df_w, df_b)
    want = ((low_f - 1) / (low_f + k0 - 1), (high_f - 1) / (high_f + k0 - 1))
    assert icc_interval(n, s, sq) == approx(want, rel=1e-10)


def test_an_aee_run_process_never_imports_scipy_stats():
    """scipy.stats took every `aee run` ~2 s (more on a busy machine) to import, for one t quantile in
    the over-time summary: the modules a run loads take Student's t and F from scipy.special."""
    import subprocess
    import sys

    code = ("import sys, pipeline.cli, pipeline.runner, pipeline.consistency.summary, pipeline.consistency.cli; "
            "print('scipy.stats' in sys.modules)")
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]  # the checkout, so `pipeline` is the package, not tests/pipeline/
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
