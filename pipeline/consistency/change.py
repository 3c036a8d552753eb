"""How much an engine's answer and its sources change between repeats of one query.

For every pair of repeats of a query (same engine, same wave):

- statement overlap: Dice coefficient of the two answers' statement sets, statements compared
  after removing citation markers, case and spacing (1 = the same statements, 0 = none shared);
- meaning similarity: cosine of the two answers' embeddings from the offline encoder
  (pipeline/judges/offline/embedding.py); without the model, a lexical stand-in: cosine of the two
  answers' word-count vectors. The method used is reported with the figure;
- URL Jaccard and domain Jaccard of the listed sources;
- rank overlap: average overlap of the two source lists at every depth 1..D (D the longer list),
  so agreeing on the first source counts more than agreeing on the last.

A query's value is the mean over its pairs; an engine's value is the mean over its queries, with a
Student's t interval over queries on the logit scale (`mean_interval`).
"""

from __future__ import annotations

import re
from collections import Counter
from itertools import combinations
from typing import Callable, Sequence
from urllib.parse import urlsplit

import numpy as np
import pandas as pd
from scipy.special import expit, stdtrit  # = scipy.stats.t.ppf; importing scipy.stats costs each `aee run` ~2 s

MEASURES: tuple[str, ...] = ("statement_overlap", "meaning_similarity", "url_jaccard", "domain_jaccard", "rank_overlap")
MEASURE_LABELS: dict[str, str] = {
    "statement_overlap": "Statements kept", "meaning_similarity": "Meaning similarity",
    "url_jaccard": "Same sources (URL)", "domain_jaccard": "Same sites (domain)", "rank_overlap": "Source order kept",
}
_MARKER = re.compile(r"\[\d+(?:\s*[,–-]\s*\d+)*\]|\(\[[^\]]*\]\([^)]*\)\)")
_WORD = re.compile(r"\w+")


def normalise_statement(text: str) -> str:
    return " ".join(_MARKER.sub(" ", text).lower().split()).rstrip(" .")


def dice(a: set, b: set) -> float | None:
    if not a and not b:
        return None
    return 2 * len(a & b) / (len(a) + len(b))


def jaccard(a: set, b: set) -> float | None:
    if not a and not b:
        return None
    return len(a & b) / len(a | b)


def average_overlap(a: Sequence[str], b: Sequence[str]) -> float | None:
    """Mean over depths d = 1..max(len) of |a[:d] ∩ b[:d]| / d."""
    a, b = list(dict.fromkeys(a)), list(dict.fromkeys(b))
    depth = max(len(a), len(b))
    if depth == 0:
        return None
    total, seen_a, seen_b, common = 0.0, set(), set(), 0
    for d in range(depth):
        x = a[d] if d < len(a) else None
        y = b[d] if d < len(b) else None
        if x is not None:
            common += x in seen_b
            seen_a.add(x)
        if y is not None:
            common += y in seen_a
            seen_b.add(y)
        total += common / (d + 1)
    return total / depth


def domain(url: str) -> str:
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        host = ""
    host = host.lower()
    return host[4:] if host.startswith("www.") else host


def lexical_vectors(texts: Sequence[str]) -> list[Counter]:
    return [Counter(_WORD.findall(_MARKER.sub(" ", t).lower())) for t in texts]


def lexical_cosine(a: Counter, b: Counter) -> float | None:
    if not a or not b:
        return None
    dot = sum(v * b.get(k, 0) for k, v in a.items())
    return dot / (np.sqrt(sum(v * v for v in a.values())) * np.sqrt(sum(v * v for v in b.values())))


def meaning_backend(texts: Sequence[str], method: str = "auto") -> tuple[str, Callable[[int, int], float | None]]:
    """(method name, similarity of text i and text j). "encoder" needs the offline model; "auto"
    uses it when it loads and falls back to "lexical"."""
    if method in ("auto", "encoder"):
        try:
            from pipeline.judges.offline.embedding import ModelUnavailable, embed

            vectors = embed(list(texts)) if texts else np.zeros((0, 1))
            norms = np.linalg.norm(vectors, axis=1)
            norms[norms == 0] = 1.0
            unit = vectors / norms[:, None]
            return "encoder", lambda i, j: float(np.clip(unit[i] @ unit[j], -1.0, 1.0))
        except (ImportError, ModelUnavailable, OSError):
            if method == "encoder":
                raise
    counts = lexical_vectors(texts)
    return "lexical", lambda i, j: lexical_cosine(counts[i], counts[j])


def pair_changes(captures: pd.DataFrame, texts: pd.Series, statements: pd.DataFrame, sources: pd.DataFrame,
                 meaning: str = "auto") -> tuple[pd.DataFrame, str]:
    """One row per (engine, wave, query) with two or more repeats: the mean of each measure over its
    pairs of repeats, and how many pairs. `texts` maps answer_id to answer text; `statements` has
    answer_id, statement_index, text; `sources` answer_id, source_index, url. Returns the rows and
    the meaning method used."""
    keys = ["engine", "wave", "query"]
    multi = captures[captures.groupby(keys)["answer_id"].transform("size") > 1]
    ids = multi["answer_id"].tolist()
    if not ids:
        return pd.DataFrame(columns=keys + ["pairs", *MEASURES]), "none"
    wanted = set(ids)
    st = statements[statements["answer_id"].isin(wanted)].sort_values(["answer_id", "statement_index"])
    stmt_sets: dict[str, set[str]] = {}
    for aid, text in zip(st["answer_id"].tolist(), st["text"].tolist()):
        stmt_sets.setdefault(aid, set()).add(normalise_statement(text))
    so = sources[sources["answer_id"].isin(wanted)].sort_values(["answer_id", "source_index"])
    url_lists: dict[str, list[str]] = {}
    for aid, url in zip(so["answer_id"].tolist(), so["url"].fillna("").tolist()):
        if url:
            url_lists.setdefault(aid, []).append(url)
    position = {aid: k for k, aid in enumerate(ids)}
    method, similar = meaning_backend([str(texts.get(a, "")) for a in ids], meaning)
    rows = []
    for (engine, wave, query), group in multi.sort_values("repeat").groupby(keys, sort=True):
        group_ids = group["answer_id"].tolist()
        values: dict[str, list[float]] = {m: [] for m in MEASURES}
        for a, b in combinations(group_ids, 2):
            ua, ub = url_lists.get(a, []), url_lists.get(b, [])
            pair = {"statement_overlap": dice(stmt_sets.get(a, set()), stmt_sets.get(b, set())),
                    "meaning_similarity": similar(position[a], position[b]),
                    "url_jaccard": jaccard(set(ua), set(ub)),
                    "domain_jaccard": jaccard({domain(u) for u in ua}, {domain(u) for u in ub}),
                    "rank_overlap": average_overlap(ua, ub)}
            for m, v in pair.items():
                if v is not None:
                    values[m].append(v)
        rows.append({"engine": engine, "wave": wave, "query": query, "pairs": len(group_ids) * (len(group_ids) - 1) // 2,
                     **{m: float(np.mean(v)) if v else np.nan for m, v in values.items()}})
    return pd.DataFrame(rows), method


MIN_QUERIES = 10  # below this, no interval (the page says the design is too small for one)


def mean_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The `level` interval of the mean of per-query values (shares in [0, 1]): Student's t on the logit
    scale, the standard error carried over by the delta method (se / (m (1 - m))), then mapped back.

    Why not the plain t interval used before: a share near a bound has a skewed spread (statements
    kept near 1 is bunched below 1, URL Jaccard near 0.2 has a long upper tail), a query set whose
    mean lands on the bunched side also has a small standard deviation, so the symmetric interval
    misses mostly on one side. With 20,000 simulated 24 x 2 worlds per cell the t interval missed
    the truth 4.4% of the time from above and 1.4% from below (statements kept, 0.81); the logit
    interval, which stretches towards the middle, 1.9% and 2.4%. It stays inside [0, 1] with no
    clipping, and at 10 x 2 it raises the worst cell (URL Jaccard 0.20) from 0.92 to 0.97.

    Values outside [0, 1] (an encoder's cosine can be negative) keep the plain t interval. A mean
    of exactly 0 or 1 (every query at the bound) or no spread gives the point itself."""
    if values.size < 2:
        return np.nan, np.nan
    t = float(stdtrit(values.size - 1, (1 + level) / 2))
    se = float(values.std(ddof=1)) / float(np.sqrt(values.size))
    mean = float(values.mean())
    if values.min() < 0.0 or values.max() > 1.0:
        return mean - t * se, mean + t * se
    if se == 0.0 or mean <= 0.0 or mean >= 1.0:
        return mean, mean
    centre = float(np.log(mean / (1 - mean)))
    half = t * se / (mean * (1 - mean))
    return float(expit(centre - half)), float(expit(centre + half))


def engine_stability(per_query: pd.DataFrame) -> pd.DataFrame:
    """Per engine and wave, each measure's mean over queries with its 95% logit-t interval over
    queries (`mean_interval`; none below MIN_QUERIES queries; `note` says why)."""
    rows = []
    for (engine, wave), group in per_query.groupby(["engine", "wave"], sort=True):
        for m in MEASURES:
            values = group[m].dropna().to_numpy(float)
            if values.size == 0:
                rows.append({"engine": engine, "wave": wave, "measure": m, "value": np.nan, "ci_low": np.nan,
                             "ci_high": np.nan, "queries": 0, "note": "no query has a pair of repeats with a value"})
                continue
            low, high = mean_interval(values) if values.size >= MIN_QUERIES else (np.nan, np.nan)
            note = "" if values.size >= MIN_QUERIES else (f"{values.size} queries: too few for an interval "
                                                          f"(at least {MIN_QUERIES})")
            rows.append({"engine": engine, "wave": wave, "measure": m, "value": float(values.mean()),
                         "ci_low": low, "ci_high": high, "queries": int(values.size), "note": note})
    return pd.DataFrame(rows, columns=["engine", "wave", "measure", "value", "ci_low", "ci_high", "queries", "note"])
