"""Display forms of the usability-study tables: every number as readable text (p values in
scientific notation when small, SD "n/a" with its reason, printed values the paper left out said
so), and headers in words. All statistics come from `pipeline.study`; this module only formats.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from dashboard.metric_text import na


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x)) or x is pd.NA


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def sci(x: float, digits: int = 2) -> str:
    """Scientific notation people read, and that never breaks across lines: 4.93×10⁻⁶."""
    mantissa, _, exponent = f"{x:.{digits}e}".partition("e")
    return f"{mantissa}×10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def fmt_p(p: Any, reason: str = "no test") -> str:
    """A p value: 3 decimals from 0.001 up, scientific notation below ("4.93×10⁻⁶"), "n/a: reason"."""
    if _missing(p):
        return na(reason)
    p = float(p)
    if p == 0:
        return "< 10⁻³⁰⁰"
    return f"{p:.3f}" if p >= 0.001 else sci(p)


def fmt_num(x: Any, decimals: int = 2, reason: str = "no value") -> str:
    """A number to `decimals` places (very small or large ones in scientific notation)."""
    if _missing(x):
        return na(reason)
    x = float(x)
    if x != 0 and (abs(x) < 10 ** -decimals or abs(x) >= 1e6):
        return sci(x, max(decimals, 2))
    return f"{x:.{decimals}f}"


def _stat_cell(stat: str, value: Any, n: Any) -> str:
    if stat == "n":
        return str(int(value)) if not _missing(value) else "0"
    if _missing(value):
        if _missing(n) or int(n) == 0:
            return na("no rows")
        if stat == "SD" and int(n) == 1:
            return na("one row, no spread")
        return na("no value")
    return f"{float(value):.2f}".rstrip("0").rstrip(".") if stat != "Mean" else f"{float(value):.2f}"


def descriptive_view(table: pd.DataFrame) -> pd.DataFrame:
    """`pipeline.study.descriptive_table` / `sources_table` as text: columns "hovered | Google",
    SD "n/a: one row, no spread" where a group has a single row, the cited share as a percentage
    under the cited columns only."""
    out = {}
    for column in table.columns:
        measure, group = column
        values = table[column]
        n = values.get("n")
        cells = {}
        for stat, value in values.items():
            if stat == "Cited share":
                cells[stat] = ("see the cited column" if measure != "cited"
                               else (f"{100 * float(value):.0f}% of displayed" if not _missing(value)
                                     else na("nothing displayed")))
            else:
                cells[stat] = _stat_cell(str(stat), value, n)
        out[f"{measure} | {group}"] = cells
    frame = pd.DataFrame(out)
    frame.index.name = "statistic"
    return frame


def _mean_sd(mean: Any, sd: Any, n: Any) -> str:
    if _missing(mean):
        return na("no rows")
    if _missing(sd):
        return f"{float(mean):.2f} (SD n/a: {'one row' if not _missing(n) and int(n) == 1 else 'no spread'})"
    return f"{float(mean):.2f} ± {float(sd):.2f}"


_VS = "\u00a0vs\u00a0"  # no line break inside "82 vs 24"


def _t(t: Any, df: Any, reason: str) -> str:
    if _missing(t):
        return na(reason)
    df_text = f"{float(df):.1f}" if not float(df).is_integer() else str(int(df))
    return f"{float(t):.2f} (df\u00a0{df_text})"


def significance_view(tests: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(main, more): the Student t tests with means ± SD, Holm-adjusted p, significance and Cohen's
    d; and the Welch and Mann-Whitney columns. A blank test says why (the `note` column of
    `pair_tests`, or a generic reason for the paper's families)."""
    main, more = [], []
    for rec in tests.to_dict("records"):
        # The cells carry the reason's head ("too few participants"); the page shows it in full below.
        reason = (rec.get("note") or "").split(":")[0] or ("a group has no rows" if not rec["n1"] or not rec["n2"]
                                                           else "too few rows or no variation")
        row = {"comparison": rec["comparison"], "measure": rec["measure"],
               "rows (n)": f"{rec['n1']}{_VS}{rec['n2']}"}
        if "participants1" in rec:
            row["participants"] = f"{rec['participants1']}{_VS}{rec['participants2']}"
        row["mean ± SD (first)"] = _mean_sd(rec["mean1"], rec.get("sd1"), rec["n1"])
        row["mean ± SD (second)"] = _mean_sd(rec["mean2"], rec.get("sd2"), rec["n2"])
        row["Student t"] = _t(rec["student_t"], rec["student_df"], reason)
        row["p"] = fmt_p(rec["student_p"], reason)
        row["p, Holm"] = fmt_p(rec["student_p_holm"], reason)
        row["significant"] = "n/a" if _missing(rec["student_p_holm"]) else ("yes" if rec["significant_holm"] else "no")
        row["Cohen's d [95% CI]"] = (na(reason) if _missing(rec["cohens_d"]) else
                                     f"{rec['cohens_d']:.2f} [{rec['d_ci_low']:.2f}, {rec['d_ci_high']:.2f}]")
        # the verdict first: on a phone the columns past the first few are behind a sideways scroll
        first = ("comparison", "measure", "significant", "p, Holm", "Cohen's d [95% CI]")
        main.append({**{k: row[k] for k in first}, **{k: v for k, v in row.items() if k not in first}})
        more.append({"comparison": rec["comparison"], "measure": rec["measure"],
                     "Welch t": _t(rec["welch_t"], rec["welch_df"], reason),
                     "Welch p": fmt_p(rec["welch_p"], reason), "Welch p, Holm": fmt_p(rec["welch_p_holm"], reason),
                     "Mann-Whitney U": fmt_num(rec["mwu_u"], 1, "a group has no rows"),
                     "Mann-Whitney p": fmt_p(rec["mwu_p"], "a group has no rows"),
                     "Mann-Whitney p, Holm": fmt_p(rec["mwu_p_holm"], "a group has no rows"),
                     "method": rec["mwu_method"] if rec["mwu_method"] != "none" else "n/a"})
    return pd.DataFrame(main), pd.DataFrame(more)


NOT_PRINTED = "not printed in the paper"


def reproduction_view(tests: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(main, more): the reproduction of Tables 4-5 as text, printed next to recomputed t and p (a
    value the paper did not print says so); and Welch's test and Cohen's d for the same rows."""
    main, more = [], []
    for rec in tests:
        key = {"table": rec["table"], "comparison": rec["comparison"], "measure": rec["measure"]}
        main.append({
            **key, "n (inferred)": f"{rec['n1']}{_VS}{rec['n2']}",
            "t printed": NOT_PRINTED if _missing(rec["printed_t"]) else f"{rec['printed_t']:.2f}",
            "t recomputed": fmt_num(rec["recomputed_t"], 2),
            "p printed": NOT_PRINTED if _missing(rec["printed_p"]) else fmt_p(rec["printed_p"]),
            "p recomputed": fmt_p(rec["recomputed_p"]),
            "p recomputed / printed": (na("no printed p") if _missing(rec["p_ratio"]) else
                                       fmt_num(rec["p_ratio"], 2)),
            "p, Holm": fmt_p(rec["recomputed_p_holm"]),
            "significant": "yes" if rec["significant_holm"] else "no",
        })
        more.append({
            **key, "Welch t": fmt_num(rec["welch_t"], 2), "Welch p": fmt_p(rec["welch_p"]),
            "Cohen's d [95% CI]": (na("no SD") if _missing(rec["cohens_d"]) else
                                   f"{rec['cohens_d']:.2f} [{rec['d_ci'][0]:.2f}, {rec['d_ci'][1]:.2f}]"),
        })
    return pd.DataFrame(main), pd.DataFrame(more)


def _general(x: Any, reason: str) -> str:
    if _missing(x):
        return na(reason)
    if isinstance(x, str):
        return x
    x = float(x)
    return sci(x) if x != 0 and abs(x) < 0.001 else f"{x:.4g}"


def flags_view(flags: list[dict]) -> pd.DataFrame:
    """The consistency flags as text (tiny values in scientific notation)."""
    return pd.DataFrame([{
        "severity": f["severity"], "table": f["table"], "item": f["item"],
        "printed": _general(f["printed"], NOT_PRINTED),
        "expected": _general(f["expected"], "no single expected value; see the reason"),
        "reason": f["reason"],
    } for f in flags], columns=["severity", "table", "item", "printed", "expected", "reason"])


def pairs_text(pairs: list) -> str:
    """[[26, 21], [25, 22]] -> "26 + 21, 25 + 22"."""
    return ", ".join(" + ".join(str(int(v)) for v in pair) for pair in pairs) or "none"


def rows_view(counts: pd.DataFrame) -> pd.DataFrame:
    """One line per participant x question of a log, as text: what was displayed and cited, what
    the participant hovered and clicked, and how long the answer stayed on screen."""
    def count(value: Any, what: str) -> str:
        return na(f"{what} not recorded") if _missing(value) else str(int(value))

    rows = []
    for rec in counts.to_dict("records"):
        dwell = rec.get("dwell_seconds")
        rows.append({"participant": rec["participant"], "session": rec["session"], "engine": rec["engine"],
                     "question": rec["query_id"], "displayed": count(rec.get("displayed"), "display"),
                     "cited": count(rec.get("cited"), "citations"), "hovered": count(rec["hovered"], "hovers"),
                     "clicked": count(rec["clicked"], "clicks"),
                     "time on screen": na("not measured") if _missing(dwell) else f"{float(dwell):.0f} s"})
    return pd.DataFrame(rows, columns=["participant", "session", "engine", "question", "displayed", "cited",
                                       "hovered", "clicked", "time on screen"])
