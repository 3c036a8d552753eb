"""Calibrate the offline judge's support model; report it against plain coverage on every labelled set.

    aee judges calibrate [--path DIR] [--out pipeline/judges/offline/params.json] [--keep-shared-questions]
                         [--feature-cache FILE] [--grid] [--dry-run]

The model (`offline_support.SupportModel`) is a standardised, L2-regularised logistic regression whose
coefficients are held to the sign in `offline_support.SIGNS` (scipy L-BFGS-B with bounds): finding
more of the statement in the source never lowers the score, so the model is monotone in coverage.
Two models are fitted, one with embedding features ("embed") and one lexical-only ("lexical", the
fallback when the embedding model is missing).

Fitting pairs (target: full support = "Complete"):

- expert pairs: every (claim, cited source) ExpertQA's experts labelled Complete / Partial /
  Incomplete against a passage the data carries (systems rr_* and post_hoc_*), from domain_val and
  domain_test;
- unrelated pairs (no support): a claim against a passage cited for another question, and a claim of
  another question against a passage (UNRELATED_PER_PAIR of each per expert pair). ExpertQA never
  pairs a claim with a source it does not cite, so without them the model extrapolates badly there;
- uncited pairs (no support, weight UNCITED_WEIGHT): a claim against a source of the same answer that
  it does not cite. Most cells of a support matrix are such pairs: on the question's topic, near the
  claim in meaning, and still not its support. Without them the fit leans on topical similarity and
  ranks those pairs above real support (on the teaching corpus, below plain coverage);
- pairs made from the sources (`synthetic_pairs`, weight SYNTHETIC_WEIGHT): a sentence and rule-made
  paraphrases of it against its source (support), a sentence of another source on the same question
  (no support), a sentence joined to another's clause (partial).

Standardisation and thresholds come from the expert pairs: the "full" threshold maximises balanced
accuracy of Complete vs the rest, the "partial" threshold that of Complete+Partial vs Incomplete below it.

Held out for real. Most of rand_val's questions also occur in the domain splits with the same claims,
passages and labels, so the fit leaves out every question that also occurs in rand_val
(`--keep-shared-questions` restores it, for comparison). The script prints grouped cross-validation on
the fitting pairs (folds by question, 5 folds x 8 shuffles) and the held-out rand_val agreement of the
judge (model plus its stated rules), and the same AUC for plain coverage (the share of the statement's
content words found in the source) on rand_val, the domain splits, the check suite's support cases
and the teaching corpus. It also reports how many synthetic contradictions (a figure changed, a
negation added, a direction flipped, a name swapped) the judge still labels full.

Only parameters are written - no data: coefficients, thresholds, the statistics above and
`calibration_questions`, a short hash per question used in the fit (agreement.question_fingerprint).
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from scipy.optimize import minimize

from pipeline.importers.expertqa import load_expertqa
from pipeline.judges.measure import agreement, wice
from pipeline.judges.offline.judge import OfflineJudge
from pipeline.judges.offline.support import (
    FEATURES_CONTEXT,
    FEATURES_EMBED,
    FEATURES_LEXICAL,
    FEATURES_MEANING_EMBED,
    FEATURES_MEANING_LEXICAL,
    PARAMS_PATH,
    SIGNS,
    PairInput,
    apply_rules,
)
from pipeline.storage.paths import expertqa_dir

FIT_SPLITS = ("domain_val", "domain_test")
EVAL_SPLIT = "rand_val"
L2 = 10.0
CV_FOLDS = 5
CV_SHUFFLES = 8
UNRELATED_PER_PAIR = 0.5  # of each kind (passage swapped, claim swapped) per expert pair
UNRELATED_WEIGHT = 0.5  # total weight of the unrelated pairs, in expert pairs
UNCITED_WEIGHT = 0.3
SYNTHETIC_WEIGHT = 0.3
SYNTHETIC_PER_SOURCE = 2
# WiCE dev (Wikipedia claims judged by crowd workers against the pages they cite: people's own
# wording, not the engines'), each kind counting this many expert pairs' worth (`wice` module doc):
# the claim against its page, against its minimal supporting sentences, and against a window of the
# same page away from any support. WiCE test is never fitted on.
WICE_WEIGHTS = {"page": 0.5, "support_set": 0.5, "near": 0.5}
VERSION = "cal7"
# The configurations `--grid` compares by grouped cross-validation on the fitting pairs (never
# rand_val): (uncited weight, synthetic weight, q_pass and the context features free in sign, L2).
# The shipped constants are the best by grouped-CV AUC among the configurations that keep the
# judge's guarantees: at least DECIDABLE_FLOOR of the check suite's decidable support cases passed
# (tests/pipeline/judges/test_offline_checks.py holds it) and AUC above plain coverage on the check suite and the
# teaching corpus. cal6 = (0.3, 0.3, signed, 10): grouped CV AUC 0.6453 against 0.6385 for cal5's
# (1.0, 0.3, signed, 10). The free configurations rank higher on ExpertQA (up to 0.6545) and fail the
# check floor: their length priors turn short-sentence support into partial.
GRID = [(w_unc, w_syn, free, l2) for w_unc, w_syn in ((1.0, 0.3), (0.3, 0.3), (0.3, 0.1))
        for free in (False, True) for l2 in (10.0, 1.0)]
DECIDABLE_FLOOR = 0.95  # the target (offline-v2.1 with the cal6 parameters passes 149/155)

EMBED_FEATURES = list(FEATURES_LEXICAL) + list(FEATURES_EMBED) + list(FEATURES_MEANING_LEXICAL) + list(FEATURES_MEANING_EMBED)
LEXICAL_FEATURES = list(FEATURES_LEXICAL) + list(FEATURES_MEANING_LEXICAL)
STATS = ("n", "auc", "balanced_accuracy", "kappa", "f1")


# --------------------------------------------------------------------------------------------
# model fitting
# --------------------------------------------------------------------------------------------


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = L2, weights: np.ndarray | None = None,
                 signs: Sequence[int] | None = None) -> tuple[np.ndarray, float]:
    """Weighted L2-penalised logistic regression (intercept not penalised); a coefficient whose
    sign is +1 (-1) is held >= 0 (<= 0), one whose sign is 0 is free."""
    n, d = x.shape
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = x @ theta[:d] + theta[d]
        p = 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))
        eps = 1e-12
        value = -(w * (y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps))).sum() + 0.5 * l2 * (theta[:d] ** 2).sum()
        grad = np.append(x.T @ (w * (p - y)) + l2 * theta[:d], (w * (p - y)).sum())
        return float(value), grad

    signs = list(signs) if signs is not None else [0] * d
    bounds = [(0.0, None) if s > 0 else (None, 0.0) if s < 0 else (None, None) for s in signs] + [(None, None)]
    result = minimize(loss, np.zeros(d + 1), jac=True, method="L-BFGS-B", bounds=bounds)
    return result.x[:d], float(result.x[d])


def _balanced(scores: np.ndarray, pos: np.ndarray, t: float) -> float:
    if pos.all() or not pos.any():
        return 0.0
    hit = scores >= t
    return 0.5 * (float((hit & pos).sum()) / float(pos.sum()) + float((~hit & ~pos).sum()) / float((~pos).sum()))


def pooled_thresholds(tasks: Sequence[tuple[np.ndarray, list[str]]]) -> tuple[float, float]:
    """(t_full, t_partial) over several labelled sets at once, each set counting the same: t_full
    maximises the sum over sets of the balanced accuracy of Complete against the rest; t_partial,
    below it, the sum of the balanced accuracy of Complete or Partial against Incomplete among each
    set's pairs scored under t_full. Candidates are the scores rounded to 3 decimals, the lowest on ties.
    A set that holds one class only adds nothing."""
    cands = np.unique(np.round(np.concatenate([s for s, _ in tasks]), 3))
    pos = [np.array([g == "Complete" for g in gold]) for _, gold in tasks]
    t_full = float(max(cands, key=lambda t: (sum(_balanced(s, p, t) for (s, _), p in zip(tasks, pos)), -t)))
    some = [np.array([g != "Incomplete" for g in gold]) for _, gold in tasks]
    below = cands[cands < t_full]
    if not len(below):
        return t_full, t_full
    t_partial = float(max(below, key=lambda t: (sum(_balanced(s[s < t_full], a[s < t_full], t)
                                                      for (s, _), a in zip(tasks, some)), -t)))
    return t_full, t_partial


def best_threshold(scores: np.ndarray, pos: np.ndarray) -> tuple[float, float]:
    """Threshold maximising balanced accuracy of (score >= t) vs pos, over the scores rounded to 4
    decimals; the lowest such threshold on ties. Counts come from sorted scores, so this is
    O(n log n) (the grouped cross-validation calls it once per fold)."""
    scores, pos = np.asarray(scores, dtype=np.float64), np.asarray(pos, dtype=bool)
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if n_pos == 0 or n_neg == 0:
        return 0.5, -1.0
    cand = np.unique(np.round(scores, 4))
    sorted_pos, sorted_neg = np.sort(scores[pos]), np.sort(scores[~pos])
    tp = n_pos - np.searchsorted(sorted_pos, cand, side="left")  # positives with score >= t
    tn = np.searchsorted(sorted_neg, cand, side="left")  # negatives with score < t
    bal = (tp / n_pos + tn / n_neg) / 2
    k = int(np.argmax(bal))
    return float(cand[k]), float(bal[k])


class Fitted:
    """A standardised sign-constrained logistic model: standardisation and thresholds from the
    expert pairs only, coefficients from the expert pairs plus the weighted extra pairs."""

    def __init__(self, x: np.ndarray, y: np.ndarray, extra: Sequence[tuple[np.ndarray, np.ndarray, float]], l2: float,
                 signs: Sequence[int], gold: list[str] | None = None,
                 tasks: Sequence[tuple[np.ndarray, list[str]]] = ()) -> None:
        self.mean, self.std = x.mean(0), x.std(0)
        self.std[self.std < 1e-9] = 1.0
        xs, ys, ws = [x], [y], [np.ones(len(y))]
        for xe, ye, weight in extra:  # each extra set counts `weight` expert pairs' worth in total
            if len(xe):
                xs.append(xe)
                ys.append(ye)
                ws.append(np.full(len(ye), weight * len(y) / len(ye)))
        self.coef, self.intercept = fit_logistic((np.vstack(xs) - self.mean) / self.std, np.concatenate(ys), l2,
                                                 np.concatenate(ws), signs)
        s = self.score(x)
        if not tasks or gold is None:
            self.t_full, _ = best_threshold(s, y.astype(bool))
            self.t_partial = self.t_full
            if gold is not None:  # partial: Complete+Partial vs Incomplete among the pairs below t_full
                below = s < self.t_full
                any_support = np.array([g in ("Complete", "Partial") for g in gold])
                if below.any() and any_support[below].any() and (~any_support[below]).any():
                    self.t_partial = min(best_threshold(s[below], any_support[below])[0], self.t_full)
            return
        # thresholds over several human-labelled tasks at once (`pooled_thresholds`)
        scored = [(s, list(gold))] + [(self.score(xt), gt) for xt, gt in tasks]
        self.t_full, self.t_partial = pooled_thresholds(scored)

    def score(self, x: np.ndarray) -> np.ndarray:
        return 1 / (1 + np.exp(-(((x - self.mean) / self.std) @ self.coef + self.intercept)))


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------


def expert_inputs(answers: Sequence[Any]) -> tuple[list[PairInput], list[str]]:
    """Judge inputs and expert labels of every expert pair in these answers."""
    inputs, gold = [], []
    for a, si, src, raw in agreement.support_pairs(answers):
        source = a.answer.source(src)
        assert source is not None  # support_pairs keeps only pairs whose source is listed
        inputs.append(OfflineJudge.pair_input(a.answer, a.statements[si], source))
        gold.append(raw)
    return inputs, gold


def unrelated_pairs(inputs: Sequence[PairInput], per_pair: float, seed: int) -> tuple[list[PairInput], list[tuple[str, str]]]:
    """Pairs that certainly do not support: for a share `per_pair` of the expert pairs, the claim
    against a passage cited for another question, and as many again of a claim from another
    question against the pair's passage (question kept: an on-topic source, an off-topic claim).
    Returns the inputs and, per pair, the (anchor, partner) questions, so cross-validation can keep
    only pairs built wholly from its fitting folds."""
    rng = random.Random(seed)
    passages: dict[str, list[str]] = {}
    claims: dict[str, list[str]] = {}
    for p in inputs:
        passages.setdefault(p.question, []).append(p.source)
        claims.setdefault(p.question, []).append(p.statement)
    questions = sorted(passages)
    if len(questions) < 2:
        return [], []
    count = int(round(per_pair * len(inputs)))
    out: list[PairInput] = []
    owners: list[tuple[str, str]] = []
    for kind in ("passage", "claim"):
        for p in rng.sample(list(inputs), min(count, len(inputs))):
            other = rng.choice([x for x in questions if x != p.question])
            if kind == "passage":
                alien = rng.choice(sorted(set(passages[other])))
                out.append(PairInput(p.statement, alien, (alien,), p.question))
            else:
                out.append(PairInput(rng.choice(sorted(set(claims[other]))), p.source, (p.source,), p.question))
            owners.append((p.question, other))
    return out, owners


def uncited_pairs(answers: Sequence[Any], limit: int, seed: int) -> list[PairInput]:
    """A claim against a source of its own answer that it does not cite (and whose text differs
    from every source it cites), for answers that carry passages; at most `limit`, drawn at random."""
    out = []
    with_passages = {a.answer.answer_id: a for a, *_ in agreement.support_pairs(answers)}
    for a in with_passages.values():
        for st in a.statements:
            cited = {src.text for src in (a.answer.source(c) for c in st.citations) if src is not None}
            if not cited:
                continue
            for src in a.answer.sources:
                if src.index not in st.citations and (src.text or "").strip() and src.text not in cited:
                    out.append(OfflineJudge.pair_input(a.answer, st, src))
    random.Random(seed).shuffle(out)
    return out[:limit]


def matrix(feats: Sequence[dict[str, float]], names: Sequence[str]) -> np.ndarray:
    return np.array([[f.get(k, 0.0) for k in names] for f in feats], dtype=np.float64).reshape(len(feats), len(names))


# --------------------------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------------------------


def grouped_cv(x: np.ndarray, y: np.ndarray, groups: list[str], extra: Sequence[tuple[np.ndarray, np.ndarray, float, list]],
               l2: float, signs: Sequence[int], folds: int = CV_FOLDS, shuffles: int = CV_SHUFFLES) -> dict[str, float]:
    """Mean AUC and balanced accuracy on expert pairs over `shuffles` random assignments of
    questions to `folds` folds: no question is ever in both the fitting and the scoring part. An
    extra pair joins a fold's fit only when all the questions it was built from are in that fit."""
    names = sorted(set(groups))
    aucs: list[float] = []
    bals: list[float] = []
    for seed in range(shuffles):
        order = np.random.default_rng(seed).permutation(len(names))
        fold_of = {names[i]: rank % folds for rank, i in enumerate(order)}
        fold = np.array([fold_of[g] for g in groups])
        for f in range(folds):
            tr, te = fold != f, fold == f
            kept = []
            for xe, ye, weight, owners in extra:
                keep = np.array([all(fold_of.get(q, f) != f for q in qs) for qs in owners], dtype=bool)
                kept.append((xe[keep], ye[keep], weight))
            model = Fitted(x[tr], y[tr], kept, l2, signs)
            s_te = model.score(x[te])
            fold_auc = agreement.auc(list(s_te), list(y[te].astype(bool)))
            fold_bal = agreement.balanced_accuracy(list(s_te >= model.t_full), list(y[te].astype(bool)))
            if fold_auc is None or fold_bal is None:
                continue  # a held-out part with a single class has no AUC; it cannot enter the mean
            aucs.append(fold_auc)
            bals.append(fold_bal)
    if not aucs:
        raise ValueError("no cross-validation fold held out both Complete and other pairs")
    return {"auc": round(float(np.mean(aucs)), 4), "balanced_accuracy": round(float(np.mean(bals)), 4),
            "auc_sd": round(float(np.std(aucs)), 4), "folds": folds, "shuffles": shuffles}


def report_block(name: str, scores: np.ndarray, gold: list[str], t_full: float | None = None) -> dict:
    pos = np.array([g == "Complete" for g in gold])
    if t_full is None:
        t_full, _ = best_threshold(scores, pos)
    r = agreement.binary_report(list(scores), list(scores >= t_full), list(pos))
    r["threshold"] = t_full
    print(f"  {name:40s} n={r['n']:5d} AUC={r['auc']:.3f} bal.acc={r['balanced_accuracy']:.3f} "
          f"kappa={r['kappa']:.3f} F1={r['f1'] or 0:.3f} (t={t_full:.3f})")
    return r


def judge_scores(model: Fitted, feats: Sequence[Any], names: Sequence[str]) -> np.ndarray:
    """What the judge reports: the fitted model's score, then its stated rules (contradictions)."""
    s = model.score(matrix([pf.features for pf in feats], names))
    return np.array([apply_rules(p, pf.conflicts, model.t_partial, pf.missing_part, model.t_full)[0]
                     for p, pf in zip(s, feats)])


def coverage_report(judge: OfflineJudge) -> dict[str, dict[str, Any]]:
    """The judge against plain coverage on the check suite's support cases and the teaching corpus."""
    from pipeline.judges.measure import support_eval
    from pipeline.judges.measure.checks import load_cases

    out = {}
    for name, pairs in (("checks", support_eval.check_pairs(load_cases())), ("teaching", support_eval.teaching_pairs())):
        r = support_eval.compare(judge, pairs)
        out[name] = r
        print(f"  {name:10s} n={r['n']:4d} judge AUC={r['judge_auc']:.3f} coverage AUC={r['coverage_auc']:.3f} "
              f"judge bal.acc={r['judge_balanced_accuracy']:.3f}")
    return out


def extra_sets(c: dict[str, Any], names: Sequence[str], syn_fit: list[int], w_uncited: float,
               w_synthetic: float) -> tuple[list, list]:
    """The extra fitting sets (unrelated, uncited, made from sources) as (x, y, weight) for the fit and
    as (x, y, weight, questions per pair) for grouped cross-validation; a set of weight 0 is left out."""
    fp = agreement.question_fingerprint
    x_syn = matrix([c["f_syn"][i].features for i in syn_fit], names)
    sets = [(matrix([pf.features for pf in c["f_u_fit"]], names), None, UNRELATED_WEIGHT,
             [[fp(a), fp(b)] for a, b in c["u_fit_owners"]]),
            (matrix([pf.features for pf in c["f_unc_fit"]], names), None, w_uncited,
             [[fp(p.question)] for p in c["in_unc_fit"]]),
            (x_syn, np.array([c["syn_gold"][i] == "Complete" for i in syn_fit], dtype=np.float64), w_synthetic,
             [[fp(c["in_syn"][i].question)] for i in syn_fit])]
    for kind, weight in WICE_WEIGHTS.items():  # no ExpertQA question: always in every fold's fit
        ks = [k for k, wp in enumerate(c.get("wice_dev", [])) if wp.kind == kind]
        if ks:
            sets.append((matrix([c["f_wice_dev"][k].features for k in ks], names),
                         np.array([c["wice_dev"][k].gold == "Complete" for k in ks], dtype=np.float64), weight,
                         [[] for _ in ks]))
    cv_extra = [(x, np.zeros(len(x)) if y is None else y, w, owners) for x, y, w, owners in sets if w > 0]
    return [(x, y, w) for x, y, w, _ in cv_extra], cv_extra


def threshold_tasks(c: dict[str, Any], names: Sequence[str]) -> list[tuple[np.ndarray, list[str]]]:
    """The labelled sets the thresholds are chosen on besides the expert pairs (`pooled_thresholds`):
    WiCE dev claims against their pages, and WiCE dev supported claims against their supporting
    sentences beside claims against a window of their page away from any support (a faithful
    rewording against an on-topic passage that does not state it)."""
    dev, feats = c.get("wice_dev", []), c.get("f_wice_dev", [])
    page = [k for k, wp in enumerate(dev) if wp.kind == "page"]
    faithful = [k for k, wp in enumerate(dev) if (wp.kind == "support_set" and wp.gold == "Complete") or wp.kind == "near"]
    return [(matrix([feats[k].features for k in ks], names), [dev[k].gold for k in ks]) for ks in (page, faithful) if ks]


def check_suite_features(judge: OfflineJudge, mode: str) -> tuple[list[Any], list[Any]]:
    """The check suite's support cases and the judge's features for them."""
    from pipeline.judges.measure.checks import case_records, load_cases

    cases = [k for k in load_cases() if k.kind == "support"]
    inputs = [OfflineJudge.pair_input(*case_records(k)) for k in cases]
    return cases, judge.support_features(inputs, mode)


def check_suite_passes(model: Fitted, names: Sequence[str], cases: Sequence[Any], feats: Sequence[Any]) -> tuple[int, int]:
    """(passed, total) of the decidable support cases, with the model and the judge's rules."""
    s = judge_scores(model, feats, names)
    labels = ["full" if v >= model.t_full else "partial" if v >= model.t_partial else "none" for v in s]
    passed = [lab in k.expect for lab, k in zip(labels, cases) if k.decidable]
    return sum(passed), len(passed)


def run_grid(c: dict[str, Any], names_all: Sequence[str], syn_fit: list[int], y_fit: np.ndarray, groups: list[str],
             checks: tuple[list[Any], list[Any]]) -> list[dict[str, Any]]:
    """Grouped cross-validation of every configuration in GRID (fitting pairs only), and the decidable
    check-suite cases the configuration's full fit passes. "signed" holds every feature to its sign
    and leaves the context features out; "free" adds them and lets them and q_pass take either sign."""
    rows = []
    all_names = list(names_all) + list(FEATURES_CONTEXT)
    x_all = matrix([pf.features for pf in c["f_fit"]], all_names)
    print(f"grid (grouped CV on the fitting pairs; admissible = at least {DECIDABLE_FLOOR:.1%} of the decidable checks):")
    for w_unc, w_syn, free, l2 in GRID:
        names = [k for k in all_names if free or k not in FEATURES_CONTEXT]
        signs = [0 if free and (k == "q_pass" or k in FEATURES_CONTEXT) else SIGNS[k] for k in names]
        x = x_all[:, [all_names.index(k) for k in names]]
        extra, cv_extra = extra_sets(c, names, syn_fit, w_unc, w_syn)
        cv = grouped_cv(x, y_fit, groups, cv_extra, l2, signs)
        passed, total = check_suite_passes(Fitted(x, y_fit, extra, l2, signs, gold=c["g_fit"]), names, *checks)
        rows.append({"uncited": w_unc, "synthetic": w_syn, "signs": "free" if free else "signed", "l2": l2, **cv,
                     "checks_decidable": f"{passed}/{total}", "admissible": passed / total >= DECIDABLE_FLOOR - 1e-9})
        print(f"  uncited {w_unc:.1f} synthetic {w_syn:.1f} {rows[-1]['signs']:6s} L2 {l2:4.1f}: "
              f"AUC={cv['auc']:.4f} (sd {cv['auc_sd']:.3f}) bal.acc={cv['balanced_accuracy']:.4f} "
              f"checks {passed}/{total}{'' if rows[-1]['admissible'] else ' (below the floor)'}")
    return rows


# --------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------


def _features(judge: OfflineJudge, mode: str, fit: list, held: list, args: argparse.Namespace) -> dict[str, Any]:
    """Every pair's features (cached in --feature-cache when given)."""
    from pipeline.judges.measure.synthetic_pairs import make_pairs

    key = ("shared" if args.keep_shared_questions else "clean", UNRELATED_PER_PAIR, SYNTHETIC_PER_SOURCE, mode, VERSION,
           wice.wice_dir() is not None)
    if args.feature_cache and args.feature_cache.is_file():
        cached = pickle.loads(args.feature_cache.read_bytes())
        if cached.get("key") == key:
            return cached
    c: dict[str, Any] = {"key": key}
    c["in_fit"], c["g_fit"] = expert_inputs(fit)
    c["in_eval"], c["g_eval"] = expert_inputs(held)
    u_fit, c["u_fit_owners"] = unrelated_pairs(c["in_fit"], UNRELATED_PER_PAIR, seed=1)
    u_eval, _ = unrelated_pairs(c["in_eval"], UNRELATED_PER_PAIR, seed=2)
    c["in_unc_fit"] = uncited_pairs(fit, len(c["in_fit"]), seed=5)
    c["in_unc_eval"] = uncited_pairs(held, len(c["in_eval"]), seed=6)
    made = make_pairs(c["in_fit"], SYNTHETIC_PER_SOURCE, seed=3, with_contradictions=True)
    c["syn_kinds"] = [m.kind for m in made]
    c["syn_gold"] = [m.label for m in made]
    c["in_syn"] = [m.pair for m in made]
    for name, pairs in (("fit", c["in_fit"]), ("eval", c["in_eval"]), ("u_fit", u_fit), ("u_eval", u_eval),
                        ("unc_fit", c["in_unc_fit"]), ("unc_eval", c["in_unc_eval"]), ("syn", c["in_syn"])):
        c["f_" + name] = judge.support_features(pairs, mode, prefilter=False) if pairs else []
    if wice.wice_dir() is not None:
        c["wice_dev"] = wice.pairs("dev", kinds=("page", "support_set", "near"))
        c["wice_test"] = wice.pairs("test", kinds=("page", "support_set", "near"))
        for split in ("dev", "test"):
            c[f"f_wice_{split}"] = judge.support_features([wp.pair for wp in c[f"wice_{split}"]], mode, prefilter=False)
    if args.feature_cache:
        args.feature_cache.write_bytes(pickle.dumps(c))
    return c


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="aee judges calibrate", description=__doc__.splitlines()[0])
    ap.add_argument("--path", type=Path, default=None, help="folder of ExpertQA *.jsonl (default: expertqa_dir())")
    ap.add_argument("--out", type=Path, default=PARAMS_PATH)
    ap.add_argument("--dry-run", action="store_true", help="do not write the parameters")
    ap.add_argument("--feature-cache", type=Path, default=None,
                    help="pickle file to reuse computed features between runs (a local scratch file; never commit it)")
    ap.add_argument("--l2", type=float, default=L2)
    ap.add_argument("--grid", action="store_true", help="first print grouped cross-validation of every configuration in GRID")
    ap.add_argument("--fetch-wice", action="store_true",
                    help="download WiCE's pinned claim files into .cache/wice first when they are not found")
    ap.add_argument("--keep-shared-questions", action="store_true",
                    help="also fit on domain-split questions that occur in rand_val (its score is then partly in-sample)")
    args = ap.parse_args(argv)
    folder = args.path or expertqa_dir()
    if folder is None:
        print("ExpertQA not found: pass --path or set EXPERTQA_DIR", file=sys.stderr)
        return 2
    if wice.wice_dir() is None:
        if not args.fetch_wice:
            print("WiCE not found: set WICE_DIR, or add --fetch-wice to download its pinned files into .cache/wice "
                  "(the shipped parameters were fitted with it)", file=sys.stderr)
            return 2
        wice.download_wice()
    answers = load_expertqa(folder)
    fit = [a for a in answers if a.answer.meta.get("split") in FIT_SPLITS]
    held = [a for a in answers if a.answer.meta.get("split") == EVAL_SPLIT]
    held_questions = {agreement.question_fingerprint(a.answer.query) for a in held}
    shared = {agreement.question_fingerprint(a.answer.query) for a in fit} & held_questions
    if not args.keep_shared_questions:
        fit = [a for a in fit if agreement.question_fingerprint(a.answer.query) not in held_questions]
    print(f"{len(shared)} questions occur in both {'+'.join(FIT_SPLITS)} and {EVAL_SPLIT} (any system): "
          f"{'kept in the fit (held-out score partly in-sample)' if args.keep_shared_questions else 'left out of the fit'}")

    judge = OfflineJudge(params_path=Path("/nonexistent"))  # features only; its params are unused
    mode = judge.mode
    t0 = time.perf_counter()
    c = _features(judge, mode, fit, held, args)
    g_fit, g_eval = c["g_fit"], c["g_eval"]
    print(f"features: {len(g_fit)} fit pairs (+{len(c['f_u_fit'])} unrelated, +{len(c['f_unc_fit'])} uncited, "
          f"+{len(c['f_syn'])} made from sources), {len(g_eval)} held-out pairs, {time.perf_counter() - t0:.1f}s (mode {mode})")
    feats_of = {name: [pf.features for pf in c["f_" + name]] for name in ("fit", "eval")}
    y_fit = np.array([g == "Complete" for g in g_fit], dtype=np.float64)
    pos_eval = [g == "Complete" for g in g_eval]

    print("single features (AUC fit / held-out):")
    for k in EMBED_FEATURES:
        if feats_of["fit"] and k in feats_of["fit"][0]:
            a1 = agreement.auc(matrix(feats_of["fit"], [k])[:, 0], list(y_fit.astype(bool)))
            a2 = agreement.auc(matrix(feats_of["eval"], [k])[:, 0], pos_eval)
            print(f"  {k:16s} {a1:.3f} {a2:.3f}")

    from pipeline.judges.measure.support_eval import coverage

    print("baseline: plain coverage (share of the statement's content words found in the source)")
    cov_fit = np.array([coverage(p.statement, p.source) for p in c["in_fit"]])
    cov_eval = np.array([coverage(p.statement, p.source) for p in c["in_eval"]])
    r = report_block("coverage (fit)", cov_fit, g_fit)
    r_cov = report_block(f"coverage ({EVAL_SPLIT})", cov_eval, g_eval, r["threshold"])

    fit_questions = sorted({agreement.question_fingerprint(p.question) for p in c["in_fit"]})
    groups = [agreement.question_fingerprint(p.question) for p in c["in_fit"]]
    syn_fit = [i for i, k in enumerate(c["syn_kinds"]) if k in ("copy", "paraphrase", "other", "partial")]
    params: dict = {"version": VERSION, "fit_splits": list(FIT_SPLITS), "target": "Complete vs Partial/Incomplete",
                    "n_fit_pairs": int(len(y_fit)), "l2": args.l2, "unrelated_pairs": len(c["f_u_fit"]),
                    "uncited_pairs": len(c["f_unc_fit"]), "synthetic_pairs": len(syn_fit),
                    "weights": {"unrelated": UNRELATED_WEIGHT, "uncited": UNCITED_WEIGHT, "synthetic": SYNTHETIC_WEIGHT,
                                **{f"wice_{k}": v for k, v in WICE_WEIGHTS.items()}},
                    "wice_dev_pairs": len(c.get("wice_dev", [])),
                    "thresholds": "pooled: ExpertQA fit pairs, WiCE dev pages, WiCE dev supporting sentences vs off-support windows"}
    if args.grid:
        params["grid"] = run_grid(c, EMBED_FEATURES if mode == "embed" else LEXICAL_FEATURES, syn_fit, y_fit, groups,
                                  check_suite_features(judge, mode))
    for name, names in (("embed", EMBED_FEATURES), ("lexical", LEXICAL_FEATURES)):
        if name == "embed" and mode != "embed":
            continue
        signs = [SIGNS.get(k, 0) for k in names]
        x_fit = matrix(feats_of["fit"], names)
        extra, cv_extra = extra_sets(c, names, syn_fit, UNCITED_WEIGHT, SYNTHETIC_WEIGHT)
        model = Fitted(x_fit, y_fit, extra, args.l2, signs, gold=g_fit, tasks=threshold_tasks(c, names))
        print(f"model {name}:")
        r_fit = report_block(f"{name} (fit)", model.score(x_fit), g_fit, model.t_full)
        cv = grouped_cv(x_fit, y_fit, groups, cv_extra, args.l2, signs)
        print(f"  {name + ' (grouped CV on fit pairs)':40s} AUC={cv['auc']:.3f} (sd {cv['auc_sd']:.3f}) "
              f"bal.acc={cv['balanced_accuracy']:.3f}")
        held_label = "partly in-sample" if args.keep_shared_questions else "held out"
        s_eval = judge_scores(model, c["f_eval"], names)
        r_eval = report_block(f"{name} ({EVAL_SPLIT}, {held_label}, judge)", s_eval, g_eval, model.t_full)
        shares = {}
        for other in ("u_eval", "unc_eval"):
            s_other = judge_scores(model, c["f_" + other], names)
            shares[other] = {"n": int(len(s_other)), "share_full": round(float(np.mean(s_other >= model.t_full)), 4),
                             "share_partial_or_full": round(float(np.mean(s_other >= model.t_partial)), 4)}
            label = "unrelated" if other == "u_eval" else "uncited"
            print(f"  {name} {label} pairs ({EVAL_SPLIT}) n={shares[other]['n']}: labelled full "
                  f"{shares[other]['share_full']:.1%}, full or partial {shares[other]['share_partial_or_full']:.1%}")
        wice_rows = {}
        for kind in ("page", "support_set", "near"):
            ks = [k for k, wp in enumerate(c.get("wice_test", [])) if wp.kind == kind]
            if not ks:
                continue
            s_w = judge_scores(model, [c["f_wice_test"][k] for k in ks], names)
            g_w = [c["wice_test"][k].gold for k in ks]
            full = s_w >= model.t_full
            none = np.array([g == "Incomplete" for g in g_w])
            comp = np.array([g == "Complete" for g in g_w])
            row = {"n": len(ks), "share_full": round(float(full.mean()), 4),
                   "false_support": round(float(full[none].mean()), 4) if none.any() else None,
                   "recall_full": round(float(full[comp].mean()), 4) if comp.any() else None}
            if comp.any() and not comp.all():
                row.update({k: v for k, v in report_block(f"{name} (WiCE test, {kind})", s_w, g_w, model.t_full).items()
                            if k in ("auc", "balanced_accuracy")})
            print(f"  {name} WiCE test {kind}: {row}")
            wice_rows[kind] = row
        s_syn = judge_scores(model, c["f_syn"], names)
        made = {k: round(float(np.mean([s >= model.t_full for s, kk in zip(s_syn, c["syn_kinds"]) if kk == k])), 3)
                for k in sorted(set(c["syn_kinds"]))}
        print(f"  {name} pairs made from sources, share labelled full: {made}")
        for k, coef in sorted(zip(names, model.coef), key=lambda kc: -abs(kc[1])):
            print(f"    {k:16s} {coef:+.3f}")
        params[name] = {"features": names, "mean": model.mean.round(6).tolist(), "std": model.std.round(6).tolist(),
                        "coef": model.coef.round(6).tolist(), "intercept": round(model.intercept, 6),
                        "threshold_full": round(model.t_full, 4), "threshold_partial": round(model.t_partial, 4),
                        "fit": {k: r_fit[k] for k in STATS}, "grouped_cv": cv,
                        EVAL_SPLIT: {k: r_eval[k] for k in STATS}, f"{EVAL_SPLIT}_unrelated": shares["u_eval"],
                        f"{EVAL_SPLIT}_uncited": shares["unc_eval"], "made_pairs_share_full": made,
                        "wice_test": wice_rows}
    main_model = "embed" if "embed" in params else "lexical"
    params["baselines"] = {f"{EVAL_SPLIT}_coverage_auc": r_cov["auc"]}
    # What `judges evaluate` copies into its report and the Judges page shows beside the scores.
    params["calibration"] = {
        "dataset": "expertqa", "fit_splits": "+".join(FIT_SPLITS), "model": main_model,
        "also_fitted_on": f"WiCE dev ({params['wice_dev_pairs']} pairs); WiCE test held out" if params["wice_dev_pairs"] else "",
        "fit_pairs": int(len(y_fit)), "fit_questions": len(fit_questions),
        "unrelated_pairs": params["unrelated_pairs"], "uncited_pairs": params["uncited_pairs"],
        "synthetic_pairs": params["synthetic_pairs"],
        "left_out_questions_shared_with": "" if args.keep_shared_questions else EVAL_SPLIT,
        "cv_auc": params[main_model]["grouped_cv"]["auc"],
        "cv_balanced_accuracy": params[main_model]["grouped_cv"]["balanced_accuracy"],
        "cv_scheme": f"{CV_FOLDS} folds grouped by question x {CV_SHUFFLES} shuffles",
    }
    params["calibration_questions"] = fit_questions
    if not args.dry_run:
        args.out.write_text(json.dumps(params, indent=1) + "\n")
        print(f"wrote {args.out}")
        print("judge vs plain coverage (AUC of full against the rest) with the parameters just written:")
        params["coverage_comparison"] = coverage_report(OfflineJudge(params_path=args.out))
        args.out.write_text(json.dumps(params, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
