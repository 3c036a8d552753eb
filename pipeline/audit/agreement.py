"""How well the judge agrees with the people who audited it, and the people with each other.

Judge vs a person (or vs the people's majority) on the items both labelled, for one field:

* support: balanced accuracy and AUC of "full" vs the rest (as `judges.measure.agreement` reports
  against ExpertQA's experts), Cohen's kappa over full / partial / none, and the 3 x 3 confusion;
* relevance: balanced accuracy and kappa of relevant vs filler, and the confusion;
* stance: balanced accuracy and kappa over agree / disagree / neutral, and the confusion.

An audit sample over-represents rare judge labels on purpose, so every statistic weighs each item
by its sampling weight (N_h / n_h over the clusters that person labelled): the numbers describe the
whole population of items, not the sample. Each has a 95% interval from a stratified bootstrap that
redraws labelled clusters within their strata (seeded: the same labels give the same interval).
The confusion matrix is shown as estimated shares of the population, each cell with its interval.
With unit weights the statistics equal `pipeline.judges.measure.agreement`'s (the tests check it).

People vs people: Krippendorff's alpha (nominal; the `krippendorff` package) over every item two
or more of them labelled, with a bootstrap interval over items, and Cohen's kappa for each pair.

A judge's `unknown` and a person's "can't tell" are not labels: such items are left out (and
counted).

A pair sample asking relevance too holds two kinds of item (`population.item_asks`): support is
compared on its pair items and relevance on its statement items, each field on its own items only.
"""

from __future__ import annotations

import warnings
from itertools import combinations
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from pipeline.audit import CANT_TELL, definite
from pipeline.audit.humans import MAJORITY, majority
from pipeline.judges.measure.agreement import cohen_kappa

BOOTSTRAP = 1000
ALPHA_BOOTSTRAP = 400
SEED = 20240501
FIELD_CLASSES: dict[str, tuple[str, ...]] = {"support": ("full", "partial", "none"), "relevant": ("relevant", "filler"),
                                             "stance": ("agree", "disagree", "neutral")}
POSITIVE: dict[str, str] = {"support": "full", "relevant": "relevant"}  # binary view where one exists


def _interval(values: np.ndarray) -> tuple[float | None, float | None]:
    finite = values[np.isfinite(values)]
    if len(finite) < 10:
        return None, None
    low, high = np.percentile(finite, [2.5, 97.5])
    return float(low), float(high)


MIN_FOR_INTERVAL = 10  # fewer compared items: the statistic is shown without an interval (it would mean nothing)
MIN_UNITS_FOR_INTERVAL = 5  # nor from fewer labelled statements (answers): the bootstrap redraws those, not items
MIN_FOR_VALUE = 5  # fewer compared items: no statistic at all (a 0.000 from one item reads as a finding)


def _stat(point: float, replicates: np.ndarray, n: int = MIN_FOR_INTERVAL) -> dict[str, float | None]:
    if not np.isfinite(point):
        return {"value": None, "low": None, "high": None}
    low, high = _interval(replicates) if n >= MIN_FOR_INTERVAL else (None, None)
    return {"value": float(point), "low": low, "high": high}


def replicate_weights(clusters: Sequence[str], strata: Sequence[str], sizes: Mapping[str, int], *,
                      replicates: int = BOOTSTRAP, seed: int = SEED) -> np.ndarray:
    """(1 + replicates) x items weights: row 0 the sampling weights N_h / n_h of each item's
    cluster (n_h: labelled clusters of its stratum here), the other rows a stratified bootstrap of
    clusters (redrawn with replacement within each stratum) times the same weights."""
    clusters, strata = list(clusters), list(strata)
    ids = {c: i for i, c in enumerate(dict.fromkeys(clusters))}
    cluster_of = np.array([ids[c] for c in clusters], dtype=np.int64)
    stratum_of_cluster: dict[int, str] = {ids[c]: h for c, h in zip(clusters, strata)}
    multiplicity = np.ones((1 + replicates, len(ids)))
    base = np.zeros(len(ids))
    rng = np.random.default_rng(seed)
    for h in sorted(set(strata)):
        members = np.array(sorted(k for k, s in stratum_of_cluster.items() if s == h), dtype=np.int64)
        base[members] = sizes.get(h, len(members)) / len(members)
    if replicates:
        for members in _resampling_groups(stratum_of_cluster):
            m = len(members)
            draws = rng.integers(0, m, size=(replicates, m))
            counts = np.zeros((replicates, m))
            np.add.at(counts, (np.repeat(np.arange(replicates), m), draws.reshape(-1)), 1.0)
            multiplicity[1:, members] = counts
    return (multiplicity * base)[:, cluster_of]


def _resampling_groups(stratum_of_cluster: Mapping[int, str]) -> list[np.ndarray]:
    """The groups of clusters the bootstrap redraws within: the strata, except that strata with one
    labelled cluster are redrawn together (one cluster redrawn alone always comes back itself, so a
    sample of such strata would show an interval of width 0); a lone pool joins the largest stratum."""
    groups: dict[str, list[int]] = {}
    for k, h in stratum_of_cluster.items():
        groups.setdefault(h, []).append(k)
    single = [h for h, ks in groups.items() if len(ks) == 1]
    if single:
        pooled = [groups.pop(h)[0] for h in sorted(single)]
        if len(pooled) == 1 and groups:
            biggest = max(sorted(groups), key=lambda h: len(groups[h]))
            groups[biggest] = groups[biggest] + pooled
        else:
            groups["\x00pooled"] = pooled
    return [np.array(sorted(ks), dtype=np.int64) for _, ks in sorted(groups.items())]


def weighted_confusion(weights: np.ndarray, pred: Sequence[str], gold: Sequence[str], classes: Sequence[str]) -> np.ndarray:
    """(rows of weights) x classes x classes: summed weight per (judge label, human label)."""
    index = {c: i for i, c in enumerate(classes)}
    k = len(classes)
    cells = np.array([index[p] * k + index[g] for p, g in zip(pred, gold)], dtype=np.int64)
    onehot = np.zeros((len(cells), k * k))
    onehot[np.arange(len(cells)), cells] = 1.0
    return (np.atleast_2d(weights) @ onehot).reshape(-1, k, k)


def balanced_accuracy_from(conf: np.ndarray) -> np.ndarray:
    """Mean over human classes (columns) present of the share the judge got right."""
    totals = conf.sum(axis=1)  # per human class
    diag = np.diagonal(conf, axis1=1, axis2=2)
    present = totals > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = np.where(present, diag / np.where(present, totals, 1.0), 0.0)
        return recall.sum(axis=1) / present.sum(axis=1)


def kappa_from(conf: np.ndarray) -> np.ndarray:
    """Cohen's kappa of each (weighted) confusion matrix; NaN where chance agreement is 1."""
    total = conf.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        po = np.trace(conf, axis1=1, axis2=2) / total
        pe = (conf.sum(axis=2) * conf.sum(axis=1)).sum(axis=1) / total**2
        return np.where(pe < 1.0, (po - pe) / (1.0 - pe), np.nan)


def weighted_auc(weights: np.ndarray, scores: Sequence[float], positive: Sequence[bool]) -> np.ndarray:
    """Per row of weights: the weighted chance that a positive item scores above a negative one,
    ties counting one half (the weighted Mann-Whitney statistic)."""
    w = np.atleast_2d(weights)
    s = np.asarray(scores, dtype=np.float64)
    pos = np.asarray(positive, dtype=bool)
    order = np.argsort(s, kind="mergesort")
    s, pos, w = s[order], pos[order], w[:, order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    wpos = np.add.reduceat(w * pos, starts, axis=1)
    wneg = np.add.reduceat(w * ~pos, starts, axis=1)
    below = np.cumsum(wneg, axis=1) - wneg
    with np.errstate(invalid="ignore", divide="ignore"):
        return (wpos * (below + 0.5 * wneg)).sum(axis=1) / (wpos.sum(axis=1) * wneg.sum(axis=1))


def judge_vs_human(items: pd.DataFrame, judge: Mapping[str, str], human: Mapping[str, str | None], field: str,
                   sizes: Mapping[str, int], scores: Mapping[str, float] | None = None,
                   replicates: int = BOOTSTRAP) -> dict[str, Any]:
    """Agreement of the judge's labels with one person's (or the majority's) on one field. `items`:
    the sample's items (item_id, cluster_id, stratum); `sizes`: clusters per stratum in the
    population."""
    classes = FIELD_CLASSES[field]
    rows = items[["item_id", "cluster_id", "stratum"]].drop_duplicates("item_id")
    usable, skipped_judge, skipped_human = [], 0, 0
    for r in rows.itertuples(index=False):
        h = human.get(r.item_id)
        if h is None:
            continue
        if not definite(h):
            skipped_human += 1
            continue
        j = judge.get(r.item_id)
        if j not in classes:
            skipped_judge += 1
            continue
        if h in classes:
            usable.append((r.item_id, r.cluster_id, r.stratum, j, h))
    out: dict[str, Any] = {"field": field, "n_items": len(usable), "cant_tell": skipped_human, "judge_unknown": skipped_judge,
                           "classes": list(classes)}
    if not usable:
        return out | {"balanced_accuracy": None, "auc": None, "kappa": None, "confusion": None, "n_units": 0}
    ids, clusters, strata, pred, gold = (list(x) for x in zip(*usable))
    out["n_units"] = len(set(clusters))
    positive = POSITIVE.get(field)
    two_sides = ({g == positive for g in gold} == {True, False}) if positive is not None else len(set(gold)) > 1
    why_not = (f"only {len(usable)} item(s) compared; {MIN_FOR_VALUE} needed" if len(usable) < MIN_FOR_VALUE else
               "" if two_sides else
               f"needs items the people call '{positive}' and items they do not" if positive is not None else
               "needs items the people gave different labels")
    weights = replicate_weights(clusters, strata, sizes, replicates=replicates)
    conf = weighted_confusion(weights, pred, gold, classes)
    if positive is not None:
        binary = np.stack([conf[:, 0, 0], conf[:, 0, 1:].sum(axis=1), conf[:, 1:, 0].sum(axis=1),
                           conf[:, 1:, 1:].sum(axis=(1, 2))], axis=1).reshape(-1, 2, 2)
        bal = balanced_accuracy_from(binary)
    else:
        bal = balanced_accuracy_from(conf)
    kap = kappa_from(conf)
    # an interval needs enough items and enough labelled statements (answers): the bootstrap redraws those
    n = len(ids) if out["n_units"] >= MIN_UNITS_FOR_INTERVAL else 0
    out["balanced_accuracy"] = _stat(bal[0], bal[1:], n)
    out["kappa"] = _stat(kap[0], kap[1:], n)
    out["auc"], out["auc_reason"] = None, "no score for this label"
    out["reason"] = why_not
    if why_not:  # the confusion table below still shows what was compared
        out["balanced_accuracy"] = out["kappa"] = None
        out["auc_reason"] = why_not
    elif positive is not None and scores is not None:
        scored = [i for i, item in enumerate(ids) if scores.get(item) is not None and scores[item] == scores[item]]
        both = {g == positive for g in gold} == {True, False}
        if len(scored) < len(ids):
            out["auc_reason"] = "the judge gives no score for some of these items"
        elif not both:
            out["auc_reason"] = f"needs items the people call '{positive}' and items they do not"
        else:
            auc = weighted_auc(weights, [float(scores[i]) for i in ids], [g == positive for g in gold])
            out["auc"], out["auc_reason"] = _stat(auc[0], auc[1:], n), ""
    shares = conf / conf.sum(axis=(1, 2), keepdims=True)
    counts = weighted_confusion(np.ones(len(ids)), pred, gold, classes)[0]
    low = np.full(shares.shape[1:], np.nan)
    high = np.full(shares.shape[1:], np.nan)
    if len(shares) > 10 and n >= MIN_FOR_INTERVAL:
        low, high = np.percentile(shares[1:], 2.5, axis=0), np.percentile(shares[1:], 97.5, axis=0)
    out["confusion"] = {"rows": list(classes), "cols": list(classes), "counts": counts.astype(int).tolist(),
                        "shares": shares[0].tolist(), "low": low.tolist(), "high": high.tolist()}
    return out


def krippendorff_alpha(labels: Mapping[str, Mapping[str, str | None]], classes: Sequence[str],
                       replicates: int = ALPHA_BOOTSTRAP, seed: int = SEED) -> dict[str, Any]:
    """Nominal alpha of annotator -> item -> label (definite labels only) with a bootstrap over
    items; None with the reason when it cannot be computed."""
    import krippendorff

    people = sorted(labels)
    items = sorted({i for person in people for i, v in labels[person].items() if v in classes})
    shared = [i for i in items if sum(labels[p].get(i) in classes for p in people) >= 2]
    out: dict[str, Any] = {"annotators": len(people), "n_items": len(shared)}
    if len(people) < 2 or len(shared) < 2:
        return out | {"alpha": None, "reason": "needs two people who labelled the same items"}
    code = {c: float(i) for i, c in enumerate(classes)}
    data = np.array([[code.get(str(labels[p].get(i)), np.nan) for i in shared] for p in people], dtype=np.float64)

    def alpha(matrix: np.ndarray) -> float:
        # a bootstrap draw may hold one value only: alpha is undefined there (NaN, left out)
        with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            try:
                return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal",
                                                value_domain=list(code.values())))
            except (ValueError, ZeroDivisionError):
                return float("nan")

    point = alpha(data)
    if not np.isfinite(point):
        return out | {"alpha": None, "reason": "every shared item got the same label: alpha is undefined"}
    rng = np.random.default_rng(seed)
    reps = np.array([alpha(data[:, rng.integers(0, len(shared), len(shared))]) for _ in range(replicates)]) \
        if len(shared) >= MIN_FOR_INTERVAL else np.array([])
    return out | {"alpha": _stat(point, reps, len(shared)), "reason": ""}


def pairwise(labels: Mapping[str, Mapping[str, str | None]], classes: Sequence[str]) -> list[dict[str, Any]]:
    """For each two people: items both labelled, share agreeing and Cohen's kappa (unweighted)."""
    out = []
    for a, b in combinations(sorted(labels), 2):
        both = [i for i, v in labels[a].items() if v in classes and labels[b].get(i) in classes]
        pa, pb = [labels[a][i] for i in both], [labels[b][i] for i in both]
        out.append({"a": a, "b": b, "n_items": len(both),
                    "agreement": (sum(x == y for x, y in zip(pa, pb)) / len(both)) if both else None,
                    "kappa": cohen_kappa(pa, pb) if both else None})
    return out


def per_person(labels: pd.DataFrame, field: str, extra: Mapping[str, Mapping[str, str]] | None = None) -> dict[str, dict[str, str]]:
    """annotator -> item -> label for one field (from `LabelStore.labels`), plus `extra` people
    (ExpertQA's experts); abstentions kept as CANT_TELL."""
    out: dict[str, dict[str, str]] = {}
    if not labels.empty and field in labels.columns:
        for r in labels[["annotator", "item_id", field]].itertuples(index=False):
            value = getattr(r, field)
            if isinstance(value, str) and value:
                out.setdefault(str(r.annotator), {})[str(r.item_id)] = value
    for name, got in (extra or {}).items():
        out[name] = dict(got)
    return out


def majority_labels(people: Mapping[str, Mapping[str, str]]) -> dict[str, str | None]:
    """item -> the people's majority label (None on a tie)."""
    items = sorted({i for got in people.values() for i in got})
    return {i: majority([got.get(i) for got in people.values()]) for i in items}


def disagreements(items: pd.DataFrame, judge: Mapping[str, str], people: Mapping[str, Mapping[str, str]], field: str,
                  reference: Mapping[str, str | None]) -> pd.DataFrame:
    """Items where the judge's definite label differs from the reference (the majority, or one
    person): ids, the statement, the judge's label and every person's."""
    classes = FIELD_CLASSES[field]
    rows = []
    for r in items.drop_duplicates("item_id").to_dict("records"):
        j, ref = judge.get(r["item_id"]), reference.get(r["item_id"])
        if j in classes and ref in classes and j != ref:
            rows.append({"order": r.get("order"), "item_id": r["item_id"], "answer_id": r["answer_id"], "engine": r["engine"],
                         "statement_index": int(r["statement_index"]),
                         "source_index": int(r["source_index"]) if "source_index" in r and r["source_index"] == r["source_index"]
                         and int(r["source_index"]) >= 0 else None,  # -1: a statement item asking relevance
                         "statement": r["statement"], "judge": j, "people": ref,
                         "labels": {p: got[r["item_id"]] for p, got in people.items() if r["item_id"] in got}})
    return pd.DataFrame(rows)


def field_items(items: pd.DataFrame, field: str) -> pd.DataFrame:
    """The items of a sample that ask `field`: on a pair sample with an `asks` column, its statement
    items for relevance and its pair items for support (nothing for other fields); all otherwise."""
    if "asks" not in items.columns or "source_index" not in items.columns:
        return items
    asks = items["asks"].map(lambda a: a if isinstance(a, str) and a else "support")
    return items[asks == field]


def audit_agreement(items: pd.DataFrame, frame: pd.DataFrame, judge: Mapping[str, str], people: Mapping[str, Mapping[str, str]],
                    field: str, scores: Mapping[str, float] | None = None, replicates: int = BOOTSTRAP) -> dict[str, Any]:
    """Everything the Judges page shows for one sample and field: judge vs each person and vs the
    majority, the people among themselves, and the disagreements with the majority (on the items
    that ask this field: see `field_items`)."""
    asked = field_items(items, field)
    if len(asked) < len(items):  # a sample of two item kinds: a label given on the other kind is not this field's
        ids = set(asked["item_id"])
        people = {p: {i: v for i, v in got.items() if i in ids} for p, got in people.items()}
        people = {p: got for p, got in people.items() if got}
        items = asked
    sizes = frame.groupby("stratum")["cluster_id"].count().to_dict()
    classes = FIELD_CLASSES[field]
    versus = []
    for name in people:
        versus.append({"annotator": name} | judge_vs_human(items, judge, people[name], field, sizes, scores, replicates))
    reference = majority_labels(people) if len(people) > 1 else (next(iter(people.values())) if people else {})
    if len(people) > 1:
        versus.append({"annotator": MAJORITY} | judge_vs_human(items, judge, reference, field, sizes, scores, replicates))
    definite_people = {p: {i: v for i, v in got.items() if v != CANT_TELL} for p, got in people.items()}
    return {
        "field": field, "annotators": list(people), "versus_judge": versus,
        "alpha": krippendorff_alpha(definite_people, classes),
        "pairs": pairwise(definite_people, classes),
        "disagreements": disagreements(items, judge, people, field, reference),
    }
