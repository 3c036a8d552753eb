"""Count-level study logs simulated from the paper's published summary statistics.

No raw logs were published, so the dashboard and the tests use a simulated log whose per-engine
marginals match Tables 2, 3 and 5 at the inferred sample sizes. It is always labelled as
simulated (`SIMULATED_LABEL`).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.study.log import (
    ANSWER_ENGINES,
    BASELINE,
    COUNT_COLUMNS,
    COUNT_MEASURES,
    SIMULATED_LABEL,
    StudyLog,
    validate_counts,
)
from pipeline.study.published import Published, infer_table4_n, infer_table5_n, load_published


@dataclass(frozen=True)
class Target:
    mean: float
    sd: float
    median: float
    lo: int
    hi: int
    n: int


def draw_matching(target: Target, rng: np.random.Generator, iterations: int = 40000) -> np.ndarray:
    """Integers in [lo, hi] whose mean, SD and median match the target as closely as integers
    allow: a rounded normal start with the extremes pinned, then seeded local search on the
    squared misfit in units of the printed precision. Sums, sums of squares and a histogram are
    updated in place so each step costs O(range), which keeps `simulate` well under a second."""
    n, lo, hi = target.n, int(target.lo), int(target.hi)
    if target.sd == 0 or lo == hi:
        return np.full(n, int(round(target.mean)), dtype=int)
    x = [int(v) for v in np.clip(np.rint(rng.normal(target.mean, target.sd, n)), lo, hi)]
    x[0], x[1] = lo, hi  # pinned so the published range is attained
    hist = [0] * (hi - lo + 1)
    for v in x:
        hist[v - lo] += 1
    total, squares = sum(x), sum(v * v for v in x)

    low_rank, high_rank = (n - 1) // 2, n // 2

    def median() -> float:
        # Middle order statistic(s) from the histogram: the first value whose running count passes
        # each rank (the running counts in C, the search by bisection: this runs ~400k times per
        # simulated log, and a Python loop over the histogram took 4 of the Study page's 6 s)
        running = list(accumulate(hist))
        return (bisect_right(running, low_rank) + bisect_right(running, high_rank)) / 2 + lo

    def loss(tot: int, sq: int) -> float:
        mean = tot / n
        var = max(0.0, (sq - tot * tot / n) / (n - 1))
        return (((mean - target.mean) / 0.005) ** 2 + ((math.sqrt(var) - target.sd) / 0.005) ** 2
                + ((median() - target.median) / 0.25) ** 2)

    def move(i: int, step: int) -> None:
        nonlocal total, squares
        hist[x[i] - lo] -= 1
        squares += (x[i] + step) ** 2 - x[i] ** 2
        total += step
        x[i] += step
        hist[x[i] - lo] += 1

    cur = loss(total, squares)
    picks = rng.integers(2, n, size=(iterations, 2))
    coins = rng.random((iterations, 2))
    for it in range(iterations):
        if cur < 1:
            break
        i, j = int(picks[it, 0]), int(picks[it, 1])
        step = 1 if coins[it, 0] < 0.5 else -1
        # Single steps move the mean; paired opposite steps keep it and reshape the spread.
        paired = coins[it, 1] < 0.5 and i != j
        if not lo <= x[i] + step <= hi or (paired and not lo <= x[j] - step <= hi):
            continue
        move(i, step)
        if paired:
            move(j, -step)
        new = loss(total, squares)
        if new <= cur:
            cur = new
        else:
            move(i, -step)
            if paired:
                move(j, step)
    out = np.asarray(x, dtype=int)
    rng.shuffle(out)
    return out


def simulate_counts(seed: int = 0, pub: Published | None = None, n: dict | None = None, n5: dict | None = None) -> pd.DataFrame:
    """A count-level log simulated from the published summary statistics (Tables 2, 3, 5) at the
    inferred sample sizes. Marginals per engine match the tables; how measures co-vary within a
    query was never published and is not modelled (measures are paired at random)."""
    pub = pub or load_published()
    if n is None:
        n = infer_table4_n(pub)["n"]
    if n5 is None:
        n5 = infer_table5_n(pub)["n"]
    rng = np.random.default_rng(seed)
    part = pub.participants[pub.participants["phase"] == "main"]
    rows = []
    for engine in ANSWER_ENGINES:
        k = n[engine]
        people = part.loc[part["engine"] == engine, "participant"].tolist()
        who = [people[i % len(people)] for i in range(k)]  # spread queries evenly over the group
        cols = {}
        for table, measures in (("hover_click", ("hovered", "clicked")), ("sources", ("displayed", "cited"))):
            frame = pub.hover_click if table == "hover_click" else pub.sources
            for measure in measures:
                r = frame[(frame["engine"] == engine) & (frame["measure"] == measure)].iloc[0]
                cols[measure] = draw_matching(Target(r["mean"], r["sd"], r["median"], int(r["min"]), int(r["max"]), k), rng)
        # An engine cannot cite more than it displays: pair the two sorted columns so it holds
        # (YouChat's two rows are identical in Table 2, i.e. it cites everything it shows).
        disp_row = pub.sources[(pub.sources["engine"] == engine) & (pub.sources["measure"] == "displayed")].iloc[0]
        cited_row = pub.sources[(pub.sources["engine"] == engine) & (pub.sources["measure"] == "cited")].iloc[0]
        if all(disp_row[c] == cited_row[c] for c in ("mean", "median", "sd", "max", "min")):
            cols["cited"] = cols["displayed"].copy()
        else:
            order = np.argsort(cols["displayed"], kind="stable")
            cols["cited"] = np.sort(cols["cited"])[np.argsort(order, kind="stable")]
            cols["cited"] = np.minimum(cols["cited"], cols["displayed"])
        counters: dict[str, int] = {}
        for i in range(k):
            counters[who[i]] = counters.get(who[i], 0) + 1
            rows.append({"participant": who[i], "session": f"S{who[i][1:]}", "engine": engine,
                         "query_id": f"Q{counters[who[i]]}", "displayed": int(cols["displayed"][i]), "cited": int(cols["cited"][i]),
                         "hovered": int(cols["hovered"][i]), "clicked": int(cols["clicked"][i])})
    ae = pd.DataFrame(rows)
    # Alignment: the debate queries. Give the lower-interaction queries 'aligned' so the published
    # direction holds, with noise so the split is not a hard threshold.
    n_debate = n5["aligned"] + n5["disaligned"]
    score = ae["hovered"] + ae["clicked"] + rng.normal(0, 1.0, len(ae))
    debate = rng.choice(len(ae), size=min(n_debate, len(ae)), replace=False)
    ranked = sorted(debate, key=lambda i: score.iloc[i])
    ae["query_type"], ae["alignment"] = "expert", "none"
    for j, i in enumerate(ranked):
        ae.loc[i, "query_type"] = "debate"
        ae.loc[i, "alignment"] = "aligned" if j < n5["aligned"] else "disaligned"
    g_rows = []
    g_counts = {}
    for measure in ("hovered", "clicked"):
        r = pub.hover_click[(pub.hover_click["engine"] == BASELINE) & (pub.hover_click["measure"] == measure)].iloc[0]
        g_counts[measure] = draw_matching(Target(r["mean"], r["sd"], r["median"], int(r["min"]), int(r["max"]), n[BASELINE]), rng)
    # Every query was run in the answer engine and then in Google, so Google rows mirror them.
    for i, a in enumerate(ae.itertuples(index=False)):
        if i >= n[BASELINE]:
            break
        g_rows.append({"participant": a.participant, "session": a.session, "engine": BASELINE, "query_id": a.query_id,
                       "query_type": a.query_type, "alignment": a.alignment, "displayed": None, "cited": None,
                       "hovered": int(g_counts["hovered"][i]), "clicked": int(g_counts["clicked"][i])})
    out = pd.concat([ae, pd.DataFrame(g_rows)], ignore_index=True).assign(dwell_seconds=None)[list(COUNT_COLUMNS)]
    for col in COUNT_MEASURES:
        out[col] = out[col].astype("Int64")
    out["dwell_seconds"] = out["dwell_seconds"].astype("Float64")  # the paper reports no dwell times
    out.attrs["label"] = SIMULATED_LABEL
    return out


def simulated_log(seed: int = 0) -> StudyLog:
    return StudyLog("counts", validate_counts(cached_counts(seed)), None, SIMULATED_LABEL)


def cached_counts_path(seed: int = 0, pub: Published | None = None) -> Path:
    """Where `cached_counts(seed)` keeps its log: the file name holds a digest of this code, the
    published tables and the seed."""
    import hashlib

    from pipeline.storage.paths import cache_dir

    pub = pub if pub is not None else load_published()
    digest = hashlib.sha256()
    for module in (Path(__file__), Path(__file__).with_name("published.py")):
        digest.update(module.read_bytes())
    for frame in pub.__dict__.values():
        if isinstance(frame, pd.DataFrame):
            digest.update(pd.util.hash_pandas_object(frame, index=True).to_numpy().tobytes())
    return cache_dir() / "study" / f"simulated-{int(seed)}-{digest.hexdigest()[:16]}.parquet"


def cached_counts(seed: int = 0) -> pd.DataFrame:
    """`simulate_counts(seed)` kept in the cache folder: the local search takes about 4.5 s on two
    cores and its result depends only on the seed, the published tables and this code, so a server
    that restarts (or a second one) reads it instead of searching again (`aee build-default` searches
    seed 0, what the page opens on). A file that cannot be read is computed again."""
    from pipeline.storage.store import write_atomic

    pub = load_published()
    path = cached_counts_path(seed, pub)
    if path.is_file():
        try:
            return pd.read_parquet(path)
        except (OSError, ValueError):
            pass
    out = simulate_counts(seed, pub)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, __import__("pyarrow").Table.from_pandas(out, preserve_index=False))
    except OSError:
        pass
    return out
