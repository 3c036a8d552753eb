"""Win-rates, order bias and perturbation effects from the probe's per-call table. Pure functions.

- A paragraph's win-rate (per variant) is the share of its comparisons whose answer takes its
  side, over both orders and every opponent; unreadable answers are left out (and counted). The
  interval is Wilson's 95% score interval. When the server gave log-probabilities, `p_win` is the
  mean probability of the paragraph's side (the soft win-rate).
- Order bias: the share of readable answers that take the side of the passage shown first (0.5 =
  no bias), and the share of "yes" answers (the pairs are balanced, so 0.5 = no answer bias).
- A perturbation's effect is the mean, over the paragraphs it edited, of the change in their
  win-rate against the control (the control against the unperturbed original), with a Student-t
  95% interval over paragraphs. The paragraph is the unit because the comparisons of one paragraph
  are not independent of each other.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from pipeline.conflict.perturb import CONTROL, ORIGINAL

Z95 = 1.959963984540054

PARAGRAPH_COLUMNS = ["variant", "question_id", "paragraph_id", "stance", "url", "perturbed", "comparisons", "unreadable",
                     "wins", "win_rate", "ci_low", "ci_high", "p_win", "p_win_n"]
EFFECT_COLUMNS = ["perturbation", "baseline", "stance", "paragraphs", "win_rate", "baseline_win_rate", "effect",
                  "ci_low", "ci_high", "effect_soft", "soft_ci_low", "soft_ci_high", "note"]


def wilson(wins: int, n: int, z: float = Z95) -> tuple[float | None, float | None]:
    """Wilson score interval of a proportion; (None, None) when n is 0."""
    if n <= 0:
        return None, None
    p = wins / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def paragraph_table(calls: pd.DataFrame, paragraphs: pd.DataFrame) -> pd.DataFrame:
    """One row per (variant, question, paragraph) with its win-rate, interval and soft win-rate.

    `calls`: question_id, variant, yes_id, no_id, answer ("yes"/"no"/None), p_yes.
    `paragraphs`: question_id, paragraph_id, stance, url, and `perturbed_in` (the variants that
    edited it, as a list)."""
    if calls.empty:
        return pd.DataFrame(columns=PARAGRAPH_COLUMNS)
    sides = []
    for stance in ("yes", "no"):
        part = calls[["variant", "question_id", f"{stance}_id", "answer", "p_yes"]].rename(columns={f"{stance}_id": "paragraph_id"})
        p_yes = pd.to_numeric(part["p_yes"], errors="coerce")
        sides.append(part.assign(stance=stance, p_side=p_yes if stance == "yes" else 1.0 - p_yes))
    long = pd.concat(sides, ignore_index=True)
    long["readable"] = long["answer"].isin(["yes", "no"])
    long["win"] = long["readable"] & (long["answer"] == long["stance"])
    long.loc[~long["readable"], "p_side"] = np.nan
    grouped = long.groupby(["variant", "question_id", "paragraph_id", "stance"], sort=False).agg(
        comparisons=("answer", "size"), readable=("readable", "sum"), wins=("win", "sum"),
        p_win=("p_side", "mean"), p_win_n=("p_side", "count")).reset_index()
    meta = {(r["question_id"], r["paragraph_id"]): r for r in paragraphs.to_dict("records")}
    rows = []
    for r in grouped.to_dict("records"):
        n, wins = int(r["readable"]), int(r["wins"])
        low, high = wilson(wins, n)
        info = meta.get((r["question_id"], r["paragraph_id"]), {})
        rows.append({
            "variant": r["variant"], "question_id": r["question_id"], "paragraph_id": r["paragraph_id"], "stance": r["stance"],
            "url": info.get("url", ""), "perturbed": r["variant"] in (info.get("perturbed_in") or ()),
            "comparisons": int(r["comparisons"]), "unreadable": int(r["comparisons"]) - n, "wins": wins,
            "win_rate": wins / n if n else None, "ci_low": low, "ci_high": high,
            "p_win": float(r["p_win"]) if r["p_win_n"] else None, "p_win_n": int(r["p_win_n"]),
        })
    return pd.DataFrame(rows, columns=PARAGRAPH_COLUMNS)


def order_bias(calls: pd.DataFrame, variant: str = ORIGINAL) -> dict:
    """First-position and yes-answer shares on one variant's readable answers, with intervals."""
    part = calls[(calls["variant"] == variant) & calls["answer"].isin(["yes", "no"])]
    n = len(part)
    first = int((part["answer"] == part["first_stance"]).sum())
    yes = int((part["answer"] == "yes").sum())
    p_yes = pd.to_numeric(part["p_yes"], errors="coerce")
    soft = p_yes.dropna()
    first_soft = p_yes.where(part["first_stance"] == "yes", 1.0 - p_yes).dropna()
    return {
        "variant": variant, "answers": n, "unreadable": int(((calls["variant"] == variant) & ~calls["answer"].isin(["yes", "no"])).sum()),
        "first_share": first / n if n else None, "first_ci": list(wilson(first, n)),
        "first_share_soft": float(first_soft.mean()) if len(first_soft) else None,
        "yes_share": yes / n if n else None, "yes_ci": list(wilson(yes, n)),
        "yes_share_soft": float(soft.mean()) if len(soft) else None,
    }


def mean_interval(values: np.ndarray) -> tuple[float | None, float | None]:
    """Student-t 95% interval of a mean over paragraphs (None with fewer than two). Chosen over a
    percentile bootstrap, which held the true effect in only ~90% of simulated runs shaped like a
    small probe (20 edited paragraphs, 8 comparisons each); t held it in ~95%."""
    if len(values) < 2:
        return None, None
    mean = float(values.mean())
    from scipy import stats  # here, not at the top: scipy costs a page's first view a second
    half = float(stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values)))
    return mean - half, mean + half


def effects(table: pd.DataFrame, perturbations: list[str], stance: str = "yes") -> pd.DataFrame:
    """Win-rate change of the edited paragraphs: each perturbation against the control, the control
    against the original, and every perturbation against the original too (`baseline` says which)."""
    rows = []
    edited = table[table["stance"] == stance]
    pairs = [(CONTROL, ORIGINAL)] if CONTROL in perturbations else []
    pairs += [(p, CONTROL) for p in perturbations if p != CONTROL]
    pairs += [(p, ORIGINAL) for p in perturbations if p != CONTROL]
    for name, baseline in pairs:
        a = edited[edited["variant"] == name].set_index(["question_id", "paragraph_id"])
        b = edited[edited["variant"] == baseline].set_index(["question_id", "paragraph_id"])
        both = a.join(b, lsuffix="", rsuffix="_base", how="inner")
        both = both[both["win_rate"].notna() & both["win_rate_base"].notna()]
        diff = (both["win_rate"] - both["win_rate_base"]).to_numpy(dtype=float)
        low, high = mean_interval(diff)
        soft = both[both["p_win"].notna() & both["p_win_base"].notna()]
        soft_diff = (soft["p_win"] - soft["p_win_base"]).to_numpy(dtype=float)
        soft_low, soft_high = mean_interval(soft_diff)
        use_soft = len(soft) == len(both) and len(both) > 0
        note = "" if len(diff) >= 2 else "fewer than two paragraphs: no interval"
        rows.append({
            "perturbation": name, "baseline": baseline, "stance": stance, "paragraphs": len(both),
            "win_rate": float(both["win_rate"].mean()) if len(both) else None,
            "baseline_win_rate": float(both["win_rate_base"].mean()) if len(both) else None,
            "effect": float(diff.mean()) if len(diff) else None, "ci_low": low, "ci_high": high,
            "effect_soft": float(soft_diff.mean()) if use_soft else None,
            "soft_ci_low": soft_low if use_soft else None, "soft_ci_high": soft_high if use_soft else None,
            "note": note,
        })
    return pd.DataFrame(rows, columns=EFFECT_COLUMNS)
