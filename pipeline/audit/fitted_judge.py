"""A judge fitted on an audit's own labels, cross-fitted, and cross-prediction-powered estimates
through it (Zrnic and Candès, 2023: `crossppi_*` in ppi-python).

Why: the offline judge's labels explain little of what a corpus's people decide, so the corrected
intervals stay wide. The audit's labels say how *these* people judge *these* engines and sources;
a small logistic model over the judge's own signals (its features and p_full) and covariates the
pipeline knows (engine, statement and source length, figures present, cited) learns that.

Why cross-fitting: a model fitted on the labels it then corrects is too close to them (the rectifier
shrinks towards 0 and the interval undercovers, more so the more the model overfits). The labelled
answers are split into K folds by answer (no answer in two folds, so no label predicts itself and no
sibling statement leaks it); each labelled item is predicted by the model that did not see its fold,
and every item of the population by the mean of the K models (exactly the `crossppi_mean_*` form).

The estimator (`crossppi_stratified`) extends `crossppi_mean_ci` to the audit's design: strata drawn
independently, whole answers (clusters) sampled without replacement within a stratum, population
predictions known for every item. Per stratum h with M_h answers of which m_h were labelled:
    total_h = sum over the stratum's items of fbar(x) + M_h * mean over labelled answers of r_c,
r_c the answer's sum of (y - f_out-of-fold). Its variance is the library's imputed term (the spread
of fbar, which depends on the fitted models) plus M_h^2 (1 - m_h/M_h) s_h^2 / m_h for the rectifier
(s_h^2 the sample variance of r_c). With one stratum, answers of one item and no finite population
this is `crossppi_mean_ci` up to n/(n-1) in the rectifier's variance (the library divides by n); the
test checks that identity against the library itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Callable, Mapping, Sequence

import numpy as np

FITTED_JUDGE_ID = "fitted-logistic"
FITTED_JUDGE_VERSION = "1"
# Why these floors: a logistic model with ~10 coefficients fitted on fewer than ~40 labels (and
# fewer than 8 of the rarer class) is noise; a stratum with fewer than 2 labelled answers has no
# variance estimate.
MIN_LABELS_PER_FOLD = 40
MIN_MINORITY_PER_FOLD = 8
MIN_ANSWERS_PER_STRATUM = 2
DEFAULT_FOLDS = 5

_FIGURE = re.compile(r"\d")
_JUDGE_FEATURES = ("cos_pair", "soft_win", "missing_specific")


def pair_covariates(*, statement: str, source_text: str, cited: bool, p_full: float | None,
                    features: Mapping[str, Any] | None) -> dict[str, float]:
    """The numeric signals of one (statement, source) pair: the offline judge's own (its raw JSON's
    `features` and `p_full`) and what the pipeline knows about the pair. A missing signal is 0 with
    a `has_*` flag, so an absent judge verdict is never read as a confident "no"."""
    feats = dict(features or {})
    row = {f"judge_{k}": float(feats.get(k) or 0.0) for k in _JUDGE_FEATURES}
    row["has_p_full"] = 0.0 if p_full is None else 1.0
    row["p_full"] = float(p_full or 0.0)
    row["log_statement_words"] = float(np.log1p(len(statement.split())))
    row["log_source_words"] = float(np.log1p(len(source_text.split())))
    row["figures"] = 1.0 if _FIGURE.search(statement) else 0.0
    row["cited"] = 1.0 if cited else 0.0
    return row


@dataclass
class FitCheck:
    """Whether the labels can carry a fit; `reasons` are sentences for the page and the CLI."""

    ok: bool
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def check_fit(y: np.ndarray, groups: Sequence[str], strata: Sequence[str], engines: Sequence[str],
              population_engines: Sequence[str], k: int = DEFAULT_FOLDS, base_judge: str = "unfitted") -> FitCheck:
    """Guard rails before any fit: enough labels and of both kinds for every fold, enough labelled
    answers in every stratum; engines the fit never saw are said (`notes`), not extrapolated."""
    y = np.asarray(y, dtype=float)
    reasons: list[str] = []
    need = k * MIN_LABELS_PER_FOLD
    if len(y) < need:
        reasons.append(f"{len(y)} labels are too few for a {k}-fold fit: label {need - len(y)} more "
                       f"(at least {MIN_LABELS_PER_FOLD} per fold).")
    minority = int(min((y >= 0.5).sum(), (y < 0.5).sum()))
    need_min = k * MIN_MINORITY_PER_FOLD
    if minority < need_min:
        reasons.append(f"only {minority} labels of the rarer kind: about {need_min - minority} more of "
                       f"them are needed (at least {MIN_MINORITY_PER_FOLD} per fold).")
    answers_per_stratum: dict[str, set[str]] = {}
    for g, s in zip(groups, strata):
        answers_per_stratum.setdefault(str(s), set()).add(str(g))
    for s in sorted(answers_per_stratum):
        have = len(answers_per_stratum[s])
        if have < MIN_ANSWERS_PER_STRATUM:
            reasons.append(f"stratum {s} has {have} labelled answer(s): label "
                           f"{MIN_ANSWERS_PER_STRATUM - have} more.")
    if len(set(map(str, groups))) < k:
        reasons.append(f"{len(set(map(str, groups)))} labelled answers cannot make {k} folds.")
    unseen = sorted(set(map(str, population_engines)) - set(map(str, engines)))
    notes = [f"engine {e} has no labels: the fitted judge does not predict it, its pairs keep the {base_judge} "
             "judge's labels." for e in unseen]
    return FitCheck(not reasons, reasons, notes)


def _default_model() -> Any:
    from sklearn.linear_model import LogisticRegression

    # Mild L2: the model is small and the point is calibration to these people, not a sparse fit.
    return LogisticRegression(C=1.0, max_iter=1000)


# The L2 strengths `choose_c` tries. Why choose at all: on ExpertQA (bench row r) the covariates add
# almost nothing to the judge's own label, and at C = 1 the fitted probabilities spread about twice as
# far inside a stratum as the experts' labels follow them (the best PPI++ weight on them was 0.2-0.5),
# which widens an interval that uses them as they are; at C = 0.03 the spread is what the labels bear.
# On a corpus whose covariates do explain the people, the same search picks a weaker penalty.
C_GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
INNER_FOLDS = 4


def choose_c(x: np.ndarray, y01: np.ndarray, groups: Sequence[str], seed: int = 0,
             grid: Sequence[float] = C_GRID, k: int = INNER_FOLDS) -> float:
    """The L2 strength (logistic regression's C) with the least held-out log loss, by answer folds
    inside the rows given (a cross-fitting fold's training part only, so the labels the model will
    predict never choose its penalty). Ties go to the stronger penalty."""
    from sklearn.linear_model import LogisticRegression

    x, y01 = np.asarray(x, float), np.asarray(y01, int)
    inner = answer_folds(groups, k, seed)
    best, best_loss = float(grid[0]), np.inf
    for c in sorted(grid):
        loss = 0.0
        for j in range(k):
            train = inner != j
            if train.all() or len(set(y01[train])) < 2:
                continue
            p = LogisticRegression(C=c, max_iter=1000).fit(x[train], y01[train]).predict_proba(x[~train])[:, 1]
            p = np.clip(p, 1e-6, 1 - 1e-6)
            loss -= float(np.sum(y01[~train] * np.log(p) + (1 - y01[~train]) * np.log(1 - p)))
        if loss < best_loss - 1e-9:
            best, best_loss = float(c), loss
    return best


def answer_folds(groups: Sequence[str], k: int, seed: int) -> np.ndarray:
    """Fold of every labelled item, whole answers to one fold, answers shuffled by `seed`."""
    names = np.array(sorted(set(map(str, groups))))
    order = np.random.default_rng(seed).permutation(len(names))
    fold_of = {names[i]: j % k for j, i in enumerate(order)}
    return np.array([fold_of[str(g)] for g in groups])


@dataclass
class CrossFit:
    yhat: np.ndarray  # out-of-fold prediction of every labelled item, shape (n,)
    population: np.ndarray  # every population item by each fold's model, shape (N, K)
    folds: np.ndarray
    provenance: str


def cross_fit(x_lab: np.ndarray, y: np.ndarray, groups: Sequence[str], x_pop: np.ndarray, *,
              k: int = DEFAULT_FOLDS, seed: int = 0, make_model: Callable[[], Any] = _default_model,
              provenance: str = "") -> CrossFit:
    """K models, each fitted without one fold of answers; `yhat` is out of fold by construction."""
    x_lab, x_pop = np.asarray(x_lab, float), np.asarray(x_pop, float)
    y01 = (np.asarray(y, float) >= 0.5).astype(int)
    folds = answer_folds(groups, k, seed)
    yhat = np.empty(len(y01))
    pop = np.empty((len(x_pop), k))
    for j in range(k):
        train = folds != j
        model = make_model().fit(x_lab[train], y01[train])
        yhat[~train] = model.predict_proba(x_lab[~train])[:, 1]
        pop[:, j] = model.predict_proba(x_pop)[:, 1]
    return CrossFit(yhat, pop, folds, provenance)


def fit_provenance(n_labels: int, people: str, sample_id: str, dataset: str) -> str:
    return (f"{FITTED_JUDGE_ID} v{FITTED_JUDGE_VERSION}: fitted to {n_labels} labels of {people} on "
            f"{sample_id} ({dataset})")


def dataset_note(fitted_on: str, applied_to: str) -> str | None:
    """A fit carries its corpus's people; applied elsewhere it must say so."""
    if fitted_on == applied_to:
        return None
    return (f"this judge was fitted on {fitted_on} and is applied to {applied_to}: its labels say how "
            f"{fitted_on}'s people judge, not {applied_to}'s.")


@dataclass
class CrossEstimate:
    value: float
    low: float
    high: float
    se: float


def crossppi_stratified(y: np.ndarray, yhat: np.ndarray, lab_strata: Sequence[str], lab_answers: Sequence[str],
                        pop_pred: np.ndarray, pop_strata: Sequence[str],
                        answers_in_stratum: Mapping[str, int] | None = None, *, alpha: float = 0.05,
                        clip: tuple[float, float] | None = (0.0, 1.0)) -> CrossEstimate:
    """Mean over the population's items, see the module doc. `answers_in_stratum` None means an
    infinite population of one-item answers (the library's setting: no finite population factor)."""
    y, yhat = np.asarray(y, float), np.asarray(yhat, float)
    pop_pred = np.asarray(pop_pred, float)
    fbar = pop_pred.mean(axis=1) if pop_pred.ndim == 2 else pop_pred
    lab_s, lab_a = np.asarray(lab_strata).astype(str), np.asarray(lab_answers).astype(str)
    pop_s = np.asarray(pop_strata).astype(str)
    n_pop = len(fbar)
    total, var = 0.0, 0.0
    for h in sorted(set(pop_s)):
        in_pop = pop_s == h
        f_h = fbar[in_pop]
        total += float(f_h.sum())
        var += float(in_pop.sum() * f_h.var())  # N_h^2 * var/N_h, the library's imputed term
        in_lab = lab_s == h
        if not in_lab.any():
            raise ValueError(f"stratum {h} has no labelled answer: no rectifier, no estimate")
        resid = y[in_lab] - yhat[in_lab]
        ans = lab_a[in_lab]
        r = np.array([resid[ans == a].sum() for a in sorted(set(ans))])
        m = len(r)
        big_m = float(in_pop.sum()) if answers_in_stratum is None else float(answers_in_stratum[h])
        fpc = 1.0 if answers_in_stratum is None else max(0.0, 1.0 - m / big_m)
        total += big_m * float(r.mean())
        s2 = float(r.var(ddof=1)) if m > 1 else 0.0
        var += big_m ** 2 * fpc * s2 / m
    value, se = total / n_pop, float(np.sqrt(var)) / n_pop
    z = NormalDist().inv_cdf(1 - alpha / 2)
    low, high = value - z * se, value + z * se
    if clip is not None:
        low, high = max(clip[0], low), min(clip[1], high)
    return CrossEstimate(value, low, high, se)


def kappa(y: np.ndarray, p: np.ndarray, threshold: float = 0.5) -> float | None:
    """Cohen's kappa of labels and thresholded predictions; None when chance agreement is total."""
    a, b = np.asarray(y, float) >= 0.5, np.asarray(p, float) >= threshold
    po = float((a == b).mean())
    pe = float(a.mean() * b.mean() + (1 - a.mean()) * (1 - b.mean()))
    return None if pe >= 1.0 else (po - pe) / (1 - pe)


def what_labels_bought(n_labels: int, kappa_fitted: float | None, kappa_judge: float | None,
                       width_fitted: float, width_plain: float) -> str:
    """The page's sentence; a kappa that cannot be computed is said, never printed as None."""
    def k(v: float | None) -> str:
        return "not computable (one kind of label only)" if v is None else f"{v:.2f}"

    narrower = 100.0 * (1.0 - width_fitted / width_plain) if width_plain > 0 else 0.0
    how = ("about as wide as through the judge alone" if abs(narrower) < 0.5 else
           f"{narrower:.0f}% narrower" if narrower > 0 else f"{-narrower:.0f}% wider")
    return (f"With your {n_labels} labels the fitted judge agrees with the held-out labels at kappa "
            f"{k(kappa_fitted)} (the judge alone {k(kappa_judge)}); intervals {how}.")
