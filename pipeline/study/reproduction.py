"""Reproduction of the paper's study tests from its printed summary statistics.

`reproduce` recomputes every published t test at the inferred sample sizes (see
`pipeline.study.published`), adjusts the family with Holm, and lists each printed value that does
not fit the others (`consistency_checks`: text against tables, pooled rows, ranges, SD bounds and
GRIM), with the arithmetic behind every flag.
"""

from __future__ import annotations

import math

import pandas as pd

from pipeline.study.log import ALL_ENGINES_LABEL, ANSWER_ENGINES, BASELINE
from pipeline.study.published import (
    HALF_UNIT,
    Published,
    _dlogp_dt,
    _log_p_two_sided,
    _p_rounding,
    _pair_stats,
    infer_table4_n,
    infer_table5_n,
    load_published,
    pooled_stats,
)
from pipeline.study.stats import cohens_d_from_stats, holm, t_from_stats


def _fmt(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}"


def _sci(x: float) -> str:
    return f"{x:.3g}" if x >= 1e-3 else f"{x:.2e}"


def reproduce(alpha: float = 0.01, pub: Published | None = None) -> dict:
    """Recompute every published test from the printed means/SDs and the inferred sample sizes,
    and list every printed value that does not fit the rest, with the arithmetic."""
    pub = pub or load_published()
    inf4 = infer_table4_n(pub)
    inf5 = infer_table5_n(pub)
    tests: list[dict] = []
    flags: list[dict] = []
    notes: list[str] = []
    n = inf4.get("n", {})

    for _, row in pub.ttests.iterrows():
        comp, measure = row["comparison"], row["measure"]
        t_pub, p_pub = float(row["t_statistic"]), float(row["p_value"])
        engine = comp.split(" vs ", 1)[1]
        m1, s1 = pub.stat("hover_click", BASELINE, measure, "mean"), pub.stat("hover_click", BASELINE, measure, "sd")
        if engine == ALL_ENGINES_LABEL:
            m2, s2, n2 = pooled_stats([(pub.stat("hover_click", e, measure, "mean"), pub.stat("hover_click", e, measure, "sd"), n[e])
                                       for e in ANSWER_ENGINES])
        else:
            m2, s2, n2 = pub.stat("hover_click", engine, measure, "mean"), pub.stat("hover_click", engine, measure, "sd"), n[engine]
        n1 = n[BASELINE]
        tests.append(_test_row("Table 4", comp, measure, t_pub, p_pub, (m1, s1, n1, m2, s2, n2)))

    for _, row in pub.alignment_ttests.iterrows():
        measure, p_pub = row["measure"], float(row["p_value"])
        m1, s1, m2, s2 = _pair_stats(pub, "alignment", "aligned", "disaligned", measure)
        n1, n2 = inf5["n"]["aligned"], inf5["n"]["disaligned"]
        tests.append(_test_row("Table 5", row["comparison"], measure, None, p_pub, (m1, s1, n1, m2, s2, n2)))

    adjusted = holm([t["recomputed_p"] for t in tests])
    for t, adj in zip(tests, adjusted):
        t["recomputed_p_holm"] = adj
        t["significant_holm"] = bool(adj < alpha)

    for t in tests:
        flags.extend(_flags_for_test(t))
    flags.extend(consistency_checks(pub, n, inf5["n"], inf5["ranges"]))
    notes.append(
        "Welch's test does not reproduce Table 4 (see welch_t/welch_p), while Student's equal-variance "
        "test does within rounding: the paper's t tests assume equal variances."
    )
    return {
        "label": "recomputed from the paper's published summary statistics (no raw logs)",
        "alpha": alpha,
        "method": "Student two-sample t test from summary statistics (equal variances, two-sided); Holm over all 10 tests",
        "inferred_n": {**{k: v for k, v in n.items()}, "aligned": inf5["n"]["aligned"], "disaligned": inf5["n"]["disaligned"]},
        "n_inference": {"table4": inf4, "table5": inf5},
        "tests": tests,
        "flags": flags,
        "notes": notes,
    }


def _test_row(table: str, comp: str, measure: str, t_pub: float | None, p_pub: float, s: tuple) -> dict:
    m1, s1, n1, m2, s2, n2 = s
    st = t_from_stats(m1, s1, n1, m2, s2, n2, equal_var=True)
    we = t_from_stats(m1, s1, n1, m2, s2, n2, equal_var=False)
    es = cohens_d_from_stats(m1, s1, n1, m2, s2, n2)
    from scipy import stats  # here, not at the top: scipy costs a page's first view a second

    row = {
        "table": table, "comparison": comp, "measure": measure,
        "n1": n1, "n2": n2, "mean1": m1, "sd1": s1, "mean2": m2, "sd2": s2,
        "printed_t": t_pub, "recomputed_t": abs(st.t), "t_diff": (abs(st.t) - t_pub) if t_pub is not None else None,
        "printed_p": p_pub, "recomputed_p": st.p, "p_ratio": st.p / p_pub,
        "p_from_printed_t": float(2 * stats.t.sf(t_pub, st.df)) if t_pub is not None else None,
        "df": st.df, "welch_t": abs(we.t), "welch_p": we.p, "cohens_d": es.d, "d_ci": [es.ci_low, es.ci_high],
    }
    if table == "Table 5":
        # The sign convention: aligned minus disaligned is negative; report magnitude like Table 4.
        row["cohens_d"] = es.d
    return row


def _flags_for_test(t: dict) -> list[dict]:
    out = []
    if t["printed_t"] is None:
        ratio = t["p_ratio"]
        if not (1 / 1.5 <= ratio <= 1.5):
            out.append({
                "severity": "inconsistent", "table": t["table"], "item": f"{t['comparison']} / {t['measure']} p value",
                "printed": t["printed_p"], "expected": t["recomputed_p"],
                "reason": f"with n = {t['n1']} and {t['n2']}, t = {_fmt(t['recomputed_t'], 3)} on {t['df']} df "
                          f"gives p = {_sci(t['recomputed_p'])}, not {_sci(t['printed_p'])}",
            })
        return out
    t_pub, p_pub, df = t["printed_t"], t["printed_p"], t["df"]
    p_impl = t["p_from_printed_t"]
    tol = abs(_dlogp_dt(t_pub, df)) * HALF_UNIT + _p_rounding(p_pub)
    gap = abs(math.log(p_impl / p_pub))
    if gap > tol:
        # Which df would the printed p need? Solve on a continuous df for the arithmetic line.
        df_needed = _df_for_p(t_pub, p_pub)
        severity = "inconsistent" if gap > math.log(2) else "minor"
        reason = (
            f"two-sided p for t = {t_pub:.2f} on df = {df} (n = {t['n1']} + {t['n2']} - 2) is {_sci(p_impl)}; "
            f"printed {_sci(p_pub)} is {p_impl / p_pub:.3g}x off, beyond the rounding slack of t (+-0.005) and p (3 figures)"
        )
        if df_needed is not None:
            reason += f"; it would need df = {df_needed:.1f}"
            if severity == "inconsistent":
                reason += ", which the other tests on the same groups rule out"
        if severity == "inconsistent":
            mant, expo = f"{p_impl:.2e}".split("e")
            if abs(int(expo) - int(f"{p_pub:.2e}".split("e")[1])) >= 3:
                reason += f" (the recomputed p has exponent {int(expo)}; the printed exponent looks like a typo)"
        out.append({"severity": severity, "table": t["table"], "item": f"{t['comparison']} / {t['measure']} p value",
                    "printed": p_pub, "expected": p_impl, "reason": reason})
    if abs(t["t_diff"]) > 0.1:
        out.append({"severity": "inconsistent", "table": t["table"], "item": f"{t['comparison']} / {t['measure']} t statistic",
                    "printed": t_pub, "expected": t["recomputed_t"],
                    "reason": f"means {t['mean1']:.2f}/{t['mean2']:.2f}, SDs {t['sd1']:.2f}/{t['sd2']:.2f}, "
                              f"n {t['n1']}/{t['n2']} give t = {t['recomputed_t']:.2f}"})
    return out


def _df_for_p(t: float, p: float) -> float | None:
    from scipy.optimize import brentq

    f = lambda d: _log_p_two_sided(t, d) - math.log(p)  # noqa: E731
    try:
        return float(brentq(f, 1.0, 1e5))
    except ValueError:
        return None


def grim_possible(mean: float, n: int, decimals: int = 2) -> bool:
    """GRIM: can a mean printed to `decimals` be the mean of n integers?"""
    half = 0.5 * 10 ** (-decimals)
    lo, hi = math.ceil((mean - half) * n - 1e-9), math.floor((mean + half) * n + 1e-9)
    return any(round(k / n, decimals) == round(mean, decimals) or abs(k / n - mean) <= half + 1e-12 for k in range(lo, hi + 1))


def consistency_checks(pub: Published, n: dict, n5: dict, n5_ranges: dict | None = None) -> list[dict]:
    """Checks of printed descriptive values against each other and against the paper's text."""
    out: list[dict] = []
    # 1. Text claims against tables.
    for _, c in pub.text_claims.iterrows():
        claimed = float(c["value"])
        if c["source_table"] == "computed":
            continue
        if c["group"] == "answer engines (pooled)":
            m, s, _ = pooled_stats([(pub.stat(c["source_table"], e, c["measure"], "mean"), pub.stat(c["source_table"], e, c["measure"], "sd"), n[e])
                                    for e in ANSWER_ENGINES])
            actual = m if c["statistic"] == "mean" else s
            basis = f"pooled over the three engines with n = {', '.join(str(n[e]) for e in ANSWER_ENGINES)}"
        elif c["statistic"] == "cited_share_percent":
            disp = pub.stat("sources", c["group"], "displayed", "mean")
            cited = pub.stat("sources", c["group"], "cited", "mean")
            actual = 100 * cited / disp
            basis = f"{cited:.2f} / {disp:.2f}"
        else:
            actual = pub.stat(c["source_table"], c["group"], c["measure"], c["statistic"])
            basis = f"{c['source_table']} table"
        decimals = int(c["decimals"])
        if round(actual, decimals) == round(claimed, decimals) or abs(actual - claimed) <= 0.5 * 10 ** (-decimals) + 1e-9:
            continue
        if c["statistic"] == "cited_share_percent" and math.floor(actual) == claimed:
            out.append({"severity": "minor", "table": "Table 2", "item": f"cited share {c['group']}",
                        "printed": claimed, "expected": round(actual, 1),
                        "reason": f"{basis} = {actual:.1f}% rounds to {round(actual):.0f}%, printed {claimed:.0f}% "
                                  "(truncated, or a mean of per-answer shares)"})
            continue
        swapped = _find_swap(pub, c, claimed)
        reason = f"{c['where']} says {c['group']} {c['measure']} {c['statistic']} = {claimed:g}; {basis} gives {actual:.2f}"
        if swapped:
            reason += f" ({claimed:g} is the printed {swapped})"
        out.append({"severity": "inconsistent", "table": c["where"], "item": f"{c['group']} {c['measure']} {c['statistic']} in text",
                    "printed": claimed, "expected": round(actual, 4), "reason": reason})

    # 2. 'All' rows of Table 2 against the engine rows, at the Table 4 sample sizes.
    for measure in ("displayed", "cited"):
        groups = [(pub.stat("sources", e, measure, "mean"), pub.stat("sources", e, measure, "sd"), n[e]) for e in ANSWER_ENGINES]
        m, s, _ = pooled_stats(groups)
        pm, ps = pub.stat("sources", "All", measure, "mean"), pub.stat("sources", "All", measure, "sd")
        mean_tol = HALF_UNIT * 2
        if abs(m - pm) > mean_tol:
            out.append({"severity": "inconsistent", "table": "Table 2", "item": f"All {measure} mean", "printed": pm, "expected": round(m, 4),
                        "reason": f"n-weighted mean of the engine means with n = {', '.join(str(g[2]) for g in groups)} is {m:.3f}"})
        if abs(s - ps) > 0.03:
            out.append({"severity": "assumption", "table": "Table 2", "item": f"All {measure} SD", "printed": ps, "expected": round(s, 4),
                        "reason": f"pooling the engine rows (n = {', '.join(str(g[2]) for g in groups)}; "
                                  f"total SS = sum((n-1)SD^2 + n(mean-grand mean)^2)) gives SD {s:.3f}, not {ps:.2f}; "
                                  "holds only if Table 2 counts the same answers as Table 4"})

    # 3. Range, SD and GRIM checks on every printed distribution.
    frames = [("Table 3", pub.hover_click, "engine", lambda g: n.get(g)),
              ("Table 2", pub.sources, "engine", lambda g: n.get(ALL_ENGINES_LABEL) if g == "All" else n.get(g)),
              ("Table 5", pub.alignment, "condition", lambda g: n5.get(g))]
    for table, frame, key, n_of in frames:
        for _, r in frame.iterrows():
            g, m, med, sd, mx, mn = r[key], r["mean"], r["median"], r["sd"], r["max"], r["min"]
            item = f"{g} {r['measure']}"
            if not (mn <= m <= mx and mn <= med <= mx):
                out.append({"severity": "inconsistent", "table": table, "item": item, "printed": m, "expected": None,
                            "reason": f"mean {m} or median {med} outside [min {mn}, max {mx}]"})
            size = n_of(g)
            if size:
                sd_max = math.sqrt(max(0.0, (m - mn) * (mx - m)) * size / (size - 1))
                if sd > sd_max + HALF_UNIT:
                    out.append({"severity": "inconsistent", "table": table, "item": f"{item} SD", "printed": sd, "expected": round(sd_max, 3),
                                "reason": f"values in [{mn:g}, {mx:g}] with mean {m} and n = {size} have SD at most "
                                          f"sqrt((mean-min)(max-mean) n/(n-1)) = {sd_max:.3f}"})
                if med != int(med) and size % 2 == 1:
                    out.append({"severity": "assumption", "table": table, "item": f"{item} median", "printed": med, "expected": None,
                                "reason": f"a median of {med} from integer counts needs an even n; inferred n = {size} is odd"})
                sizes = list(range(n5_ranges[g][0], n5_ranges[g][1] + 1)) if table == "Table 5" and n5_ranges and n5_ranges.get(g) else [size]
                if not any(grim_possible(m, k) for k in sizes):
                    lo = math.floor(m * size)
                    if len(sizes) > 1:
                        out.append({"severity": "assumption", "table": table, "item": f"{item} mean (GRIM)", "printed": m, "expected": None,
                                    "reason": f"no n in {sizes[0]}..{sizes[-1]} (the range fitting the p values) lets integer counts "
                                              f"average {m:.2f} (e.g. n = {size}: {lo}/{size} = {lo / size:.4f}, "
                                              f"{lo + 1}/{size} = {(lo + 1) / size:.4f}); holds only if every row is one integer count"})
                        continue
                    out.append({"severity": "assumption", "table": table, "item": f"{item} mean (GRIM)", "printed": m, "expected": None,
                                "reason": f"no {size} integer counts average {m:.2f}: {lo}/{size} = {lo / size:.4f} and "
                                          f"{lo + 1}/{size} = {(lo + 1) / size:.4f}; holds only if every row is one integer count and n = {size}"})
    return out


def _find_swap(pub: Published, claim: pd.Series, claimed: float) -> str | None:
    """Name the printed cell the text value actually matches, when one does (a mix-up)."""
    if claim["source_table"] not in ("alignment", "hover_click"):
        return None
    frame = pub.alignment if claim["source_table"] == "alignment" else pub.hover_click
    key = "condition" if claim["source_table"] == "alignment" else "engine"
    hits = frame[(frame[claim["statistic"]] - claimed).abs() < 1e-9]
    hits = hits[~((hits[key] == claim["group"]) & (hits["measure"] == claim["measure"]))]
    if hits.empty:
        return None
    return " and ".join(f"{h[key]} {h['measure']} {claim['statistic']}" for _, h in hits.iterrows())
