"""Calibrate the offline judge's support model on ExpertQA expert labels.

Fits on domain_val + domain_test and reports on rand_val, which stays held out:

    aee judges calibrate [--path DIR] [--out pipeline/judges/offline_params.json]
                         [--keep-shared-questions] [--no-unrelated] [--full-cosine-baseline] [--dry-run]

Pairs: every (claim, cited source) the experts labelled Complete / Partial / Incomplete against a
passage the data carries (systems rr_* and post_hoc_*). Target: Complete vs the rest. Two models are
fitted, one with embedding features ("embed") and one lexical-only ("lexical", the fallback when the
embedding model is missing). Each is a standardised L2-regularised logistic regression (numpy
Newton steps); the "full" threshold maximises balanced accuracy on the expert pairs, the "partial"
threshold maximises balanced accuracy of Complete+Partial vs Incomplete below it.

Held out for real. The ExpertQA files overlap: most of rand_val's questions also occur in the
domain splits, with the same claims, passages and labels (659 of rand_val's 803 expert pairs). A
model fitted on those pairs is partly scored on its own fitting data, which inflated the rand_val
AUC we used to report (0.742 for a model whose held-out AUC was about 0.69). So the fit leaves out
every question that also occurs in rand_val (`--keep-shared-questions` restores the old behaviour,
for comparison), and the script also prints grouped cross-validation on the fitting pairs (folds
by question, 5 folds x 8 shuffles), the estimate stored in the parameters.

Unrelated pairs. ExpertQA pairs a claim only with the evidence it cites, so the experts never
judged an off-topic pair, yet most cells of a support matrix are a statement against a source it
does not cite. Fitted on expert pairs alone, the model extrapolated badly there: an off-topic
statement against an on-topic source scored 0.61 on average, near the partial threshold. So the
fit adds pairs that certainly do not support: a claim against a passage from another question, and
a claim from another question against a passage (UNRELATED_PER_PAIR of each per expert pair,
labelled not Complete). Standardisation and thresholds still come from the expert pairs only; the
agreement figures are computed on expert pairs only. `--no-unrelated` fits without them.

Only parameters are written - no data: coefficients, thresholds, the statistics above and
`calibration_questions`, a short hash per question used in the fit (agreement.question_fingerprint),
so that `judges evaluate` can tell held-out pairs from fitting pairs on any split.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import sys
import time
from pathlib import Path

import numpy as np

from pipeline.importers.expertqa import load_expertqa
from pipeline.judges import agreement
from pipeline.judges.offline import FEATURES_EMBED, FEATURES_LEXICAL, PARAMS_PATH, OfflineJudge
from pipeline.judges.offline_text import apply_rules
from pipeline.paths import expertqa_dir

FIT_SPLITS = ("domain_val", "domain_test")
EVAL_SPLIT = "rand_val"
L2 = 10.0
CV_FOLDS = 5
CV_SHUFFLES = 8
UNRELATED_PER_PAIR = 0.5  # of each kind (passage swapped, claim swapped) per expert pair
VERSION = "cal3"

EMBED_FEATURES = list(FEATURES_LEXICAL) + list(FEATURES_EMBED)
LEXICAL_FEATURES = list(FEATURES_LEXICAL)
STATS = ("n", "auc", "balanced_accuracy", "kappa", "f1")

# A pair as the judge's support_features takes it: (statement, source text, cited texts, question).
PairInput = tuple[str, str, list[str], str]


# --------------------------------------------------------------------------------------------
# model fitting
# --------------------------------------------------------------------------------------------


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = L2, iters: int = 50) -> tuple[np.ndarray, float]:
    """L2-penalised logistic regression by Newton-Raphson (intercept not penalised)."""
    n, d = x.shape
    xa = np.hstack([x, np.ones((n, 1))])
    w = np.zeros(d + 1)
    pen = np.full(d + 1, l2)
    pen[-1] = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(xa @ w, -40, 40)))
        grad = xa.T @ (p - y) + pen * w
        h = (xa * (p * (1 - p))[:, None]).T @ xa + np.diag(pen) + 1e-9 * np.eye(d + 1)
        step = np.linalg.solve(h, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w[:-1], float(w[-1])


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
    """A standardised logistic model: standardisation and thresholds from the expert pairs only,
    coefficients from the expert pairs plus any unrelated pairs (all labelled not Complete)."""

    def __init__(self, x: np.ndarray, y: np.ndarray, x_unrelated: np.ndarray | None, l2: float,
                 gold: list[str] | None = None) -> None:
        self.mean, self.std = x.mean(0), x.std(0)
        self.std[self.std < 1e-9] = 1.0
        xa, ya = x, y
        if x_unrelated is not None and len(x_unrelated):
            xa = np.vstack([x, x_unrelated])
            ya = np.concatenate([y, np.zeros(len(x_unrelated))])
        self.coef, self.intercept = fit_logistic((xa - self.mean) / self.std, ya, l2)
        s = self.score(x)
        self.t_full, _ = best_threshold(s, y.astype(bool))
        self.t_partial = self.t_full
        if gold is not None:  # partial: Complete+Partial vs Incomplete among the pairs below t_full
            below = s < self.t_full
            any_support = np.array([g in ("Complete", "Partial") for g in gold])
            if below.any() and any_support[below].any() and (~any_support[below]).any():
                self.t_partial = min(best_threshold(s[below], any_support[below])[0], self.t_full)

    def score(self, x: np.ndarray) -> np.ndarray:
        return 1 / (1 + np.exp(-(((x - self.mean) / self.std) @ self.coef + self.intercept)))


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------


def collect(answers, judge: OfflineJudge, mode: str) -> tuple[list[dict], list[str], list[PairInput]]:
    """Features, expert labels and judge inputs of every expert pair in these answers."""
    pairs = agreement.support_pairs(answers)
    inputs = []
    for a, si, src, _ in pairs:
        source = a.answer.source(src)
        assert source is not None  # support_pairs keeps only pairs whose source is listed
        inputs.append(OfflineJudge._pair_inputs(a.answer, a.statements[si], source))
    feats = [f for f, _ in judge.support_features(inputs, mode)] if inputs else []
    return feats, [raw for *_, raw in pairs], inputs


def unrelated_pairs(inputs: list[PairInput], per_pair: float, seed: int) -> tuple[list[PairInput], list[tuple[str, str]]]:
    """Pairs that certainly do not support: for a share `per_pair` of the expert pairs, the claim
    against a passage cited for another question, and as many again of a claim from another
    question against the pair's passage (question kept: an on-topic source, an off-topic claim).
    Returns the inputs and, per pair, the (anchor, partner) questions, so cross-validation can keep
    only pairs built wholly from its fitting folds."""
    rng = random.Random(seed)
    passages: dict[str, list[str]] = {}
    claims: dict[str, list[str]] = {}
    for stmt, text, _, q in inputs:
        passages.setdefault(q, []).append(text)
        claims.setdefault(q, []).append(stmt)
    questions = sorted(passages)
    if len(questions) < 2:
        return [], []
    count = int(round(per_pair * len(inputs)))
    out: list[PairInput] = []
    owners: list[tuple[str, str]] = []
    for kind in ("passage", "claim"):
        for stmt, text, _, q in rng.sample(inputs, min(count, len(inputs))):
            other = rng.choice([x for x in questions if x != q])
            if kind == "passage":
                alien = rng.choice(sorted(set(passages[other])))
                out.append((stmt, alien, [alien], q))
            else:
                out.append((rng.choice(sorted(set(claims[other]))), text, [text], q))
            owners.append((q, other))
    return out, owners


def matrix(feats: list[dict], names: list[str]) -> np.ndarray:
    return np.array([[f.get(k, 0.0) for k in names] for f in feats], dtype=np.float64).reshape(len(feats), len(names))


# --------------------------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------------------------


def grouped_cv(x: np.ndarray, y: np.ndarray, groups: list[str], x_unrel: np.ndarray | None,
               unrel_owners: list[tuple[str, str]], l2: float,
               folds: int = CV_FOLDS, shuffles: int = CV_SHUFFLES) -> dict[str, float]:
    """Mean AUC and balanced accuracy on expert pairs over `shuffles` random assignments of
    questions to `folds` folds: no question is ever in both the fitting and the scoring part. An
    unrelated pair joins a fold's fit only when both its questions are in that fit."""
    names = sorted(set(groups))
    aucs: list[float] = []
    bals: list[float] = []
    for seed in range(shuffles):
        order = np.random.default_rng(seed).permutation(len(names))
        fold_of = {names[i]: rank % folds for rank, i in enumerate(order)}
        fold = np.array([fold_of[g] for g in groups])
        for f in range(folds):
            tr, te = fold != f, fold == f
            unrel = None
            if x_unrel is not None and len(x_unrel):
                keep = np.array([fold_of.get(a, f) != f and fold_of.get(b, f) != f for a, b in unrel_owners])
                unrel = x_unrel[keep]
            model = Fitted(x[tr], y[tr], unrel, l2)
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
    print(f"  {name:36s} n={r['n']:5d} AUC={r['auc']:.3f} bal.acc={r['balanced_accuracy']:.3f} "
          f"kappa={r['kappa']:.3f} F1={r['f1'] or 0:.3f} (t={t_full:.3f})")
    return r


def full_cosine_baseline(inputs: list[PairInput]) -> np.ndarray:
    """Max cosine of the statement against every sentence of the source (slow: embeds all)."""
    from pipeline.judges import embedding
    from pipeline.judges.offline_text import split_sentences

    texts = []
    for stmt, text, *_ in inputs:
        texts.append(stmt)
        texts.extend(split_sentences(text))
    uniq = list(dict.fromkeys(texts))
    vecs = dict(zip(uniq, embedding.embed(uniq)))
    return np.array([max((float(vecs[stmt] @ vecs[s]) for s in split_sentences(text)), default=0.0)
                     for stmt, text, *_ in inputs])


# --------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="aee judges calibrate", description=__doc__.splitlines()[0])
    ap.add_argument("--path", type=Path, default=None, help="folder of ExpertQA *.jsonl (default: expertqa_dir())")
    ap.add_argument("--out", type=Path, default=PARAMS_PATH)
    ap.add_argument("--full-cosine-baseline", action="store_true",
                    help="also embed every source sentence for the max-sentence-cosine baseline (slow)")
    ap.add_argument("--dry-run", action="store_true", help="do not write the parameters")
    ap.add_argument("--feature-cache", type=Path, default=None,
                    help="pickle file to reuse computed features between runs (a local scratch file; never commit it)")
    ap.add_argument("--l2", type=float, default=L2)
    ap.add_argument("--keep-shared-questions", action="store_true",
                    help="also fit on domain-split questions that occur in rand_val (its score is then partly in-sample)")
    ap.add_argument("--no-unrelated", action="store_true", help="fit on the expert pairs only")
    args = ap.parse_args(argv)
    folder = args.path or expertqa_dir()
    if folder is None:
        print("ExpertQA not found: pass --path or set EXPERTQA_DIR", file=sys.stderr)
        return 2
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
    cache_key = ("shared" if args.keep_shared_questions else "clean", UNRELATED_PER_PAIR, mode)
    cached = None
    if args.feature_cache and args.feature_cache.is_file():
        cached = pickle.loads(args.feature_cache.read_bytes())
        cached = cached if cached.get("key") == cache_key else None
    if cached is None:
        f_fit, g_fit, in_fit = collect(fit, judge, mode)
        f_eval, g_eval, in_eval = collect(held, judge, mode)
        u_fit, u_fit_owners = unrelated_pairs(in_fit, UNRELATED_PER_PAIR, seed=1)
        u_eval, _ = unrelated_pairs(in_eval, UNRELATED_PER_PAIR, seed=2)
        fu_fit = [f for f, _ in judge.support_features(u_fit, mode)] if u_fit else []
        fu_eval = [f for f, _ in judge.support_features(u_eval, mode)] if u_eval else []
        cached = dict(key=cache_key, f_fit=f_fit, g_fit=g_fit, in_fit=in_fit, f_eval=f_eval, g_eval=g_eval,
                      in_eval=in_eval, fu_fit=fu_fit, u_fit_owners=u_fit_owners, fu_eval=fu_eval)
        if args.feature_cache:
            args.feature_cache.write_bytes(pickle.dumps(cached))
    c = cached
    f_fit, g_fit, in_fit, f_eval, g_eval = c["f_fit"], c["g_fit"], c["in_fit"], c["f_eval"], c["g_eval"]
    print(f"features: {len(f_fit)} fit pairs (+{len(c['fu_fit'])} unrelated), {len(f_eval)} held-out pairs "
          f"(+{len(c['fu_eval'])} unrelated), {time.perf_counter() - t0:.1f}s (mode {mode})")

    y_fit = np.array([g == "Complete" for g in g_fit], dtype=np.float64)
    pos_eval = np.array([g == "Complete" for g in g_eval])
    print("single features (AUC fit / held-out):")
    for k in EMBED_FEATURES:
        if k in f_fit[0]:
            a1 = agreement.auc(matrix(f_fit, [k])[:, 0], list(y_fit.astype(bool)))
            a2 = agreement.auc(matrix(f_eval, [k])[:, 0], list(pos_eval))
            print(f"  {k:16s} {a1:.3f} {a2:.3f}")

    print("baselines:")
    baselines = [("token overlap", "recall_all")] + ([("cos(statement, passage)", "cos_pass")] if mode == "embed" else [])
    for label, feature in baselines:
        r = report_block(f"{label} (fit)", matrix(f_fit, [feature])[:, 0], g_fit)
        report_block(f"{label} ({EVAL_SPLIT})", matrix(f_eval, [feature])[:, 0], g_eval, r["threshold"])
    if args.full_cosine_baseline and mode == "embed":
        t1 = time.perf_counter()
        c_fit, c_eval = full_cosine_baseline(in_fit), full_cosine_baseline(c["in_eval"])
        print(f"  (full cosine baseline embedded in {time.perf_counter() - t1:.0f}s)")
        r = report_block("max cos, all sentences (fit)", c_fit, g_fit)
        report_block(f"max cos, all sentences ({EVAL_SPLIT})", c_eval, g_eval, r["threshold"])

    fit_questions = sorted({agreement.question_fingerprint(q) for *_, q in in_fit})
    groups = [agreement.question_fingerprint(q) for *_, q in in_fit]
    owners = [(agreement.question_fingerprint(a), agreement.question_fingerprint(b)) for a, b in c["u_fit_owners"]]
    use_unrelated = not args.no_unrelated
    params: dict = {"version": VERSION, "fit_splits": list(FIT_SPLITS), "target": "Complete vs Partial/Incomplete",
                    "n_fit_pairs": int(len(y_fit)), "l2": args.l2,
                    "unrelated_pairs": len(c["fu_fit"]) if use_unrelated else 0}
    for name, feats in (("embed", EMBED_FEATURES), ("lexical", LEXICAL_FEATURES)):
        if name == "embed" and mode != "embed":
            continue
        x_fit, x_eval = matrix(f_fit, feats), matrix(f_eval, feats)
        xu_fit, xu_eval = matrix(c["fu_fit"], feats), matrix(c["fu_eval"], feats)
        model = Fitted(x_fit, y_fit, xu_fit if use_unrelated else None, args.l2, gold=g_fit)
        print(f"model {name}{'' if use_unrelated else ' (expert pairs only)'}:")
        r_fit = report_block(f"{name} (fit)", model.score(x_fit), g_fit, model.t_full)
        cv = grouped_cv(x_fit, y_fit, groups, xu_fit if use_unrelated else None, owners, args.l2)
        print(f"  {name + ' (grouped CV on fit pairs)':36s} AUC={cv['auc']:.3f} (sd {cv['auc_sd']:.3f}) "
              f"bal.acc={cv['balanced_accuracy']:.3f}")
        held_label = "partly in-sample" if args.keep_shared_questions else "held out"
        s_eval = model.score(x_eval)
        report_block(f"{name} ({EVAL_SPLIT}, {held_label}, model)", s_eval, g_eval, model.t_full)
        # what the judge itself reports: the fitted model plus its stated rules (number conflicts)
        s_judge = np.array([apply_rules(p, f, model.t_full)[0] for p, f in zip(s_eval, f_eval)])
        r_eval = report_block(f"{name} ({EVAL_SPLIT}, {held_label}, judge)", s_judge, g_eval, model.t_full)
        su = model.score(xu_eval)
        unrelated = {"n": int(len(su)), "mean_score": round(float(su.mean()), 4),
                     "share_full": round(float(np.mean(su >= model.t_full)), 4),
                     "share_partial_or_full": round(float(np.mean(su >= model.t_partial)), 4)}
        print(f"  {name + ' unrelated pairs (' + EVAL_SPLIT + ')':36s} n={unrelated['n']:5d} mean score="
              f"{unrelated['mean_score']:.3f} labelled full {unrelated['share_full']:.1%}, "
              f"full or partial {unrelated['share_partial_or_full']:.1%}")
        for k, coef in sorted(zip(feats, model.coef), key=lambda kc: -abs(kc[1])):
            print(f"    {k:16s} {coef:+.3f}")
        params[name] = {"features": feats, "mean": model.mean.round(6).tolist(), "std": model.std.round(6).tolist(),
                        "coef": model.coef.round(6).tolist(), "intercept": round(model.intercept, 6),
                        "threshold_full": round(model.t_full, 4), "threshold_partial": round(model.t_partial, 4),
                        "fit": {k: r_fit[k] for k in STATS}, "grouped_cv": cv,
                        EVAL_SPLIT: {k: r_eval[k] for k in STATS}, f"{EVAL_SPLIT}_unrelated": unrelated}
    main_model = "embed" if "embed" in params else "lexical"
    # What `judges evaluate` copies into its report and the Judges page shows beside the scores.
    params["calibration"] = {
        "dataset": "expertqa", "fit_splits": "+".join(FIT_SPLITS), "model": main_model,
        "fit_pairs": int(len(y_fit)), "fit_questions": len(fit_questions),
        "unrelated_pairs": params["unrelated_pairs"],
        "left_out_questions_shared_with": "" if args.keep_shared_questions else EVAL_SPLIT,
        "cv_auc": params[main_model]["grouped_cv"]["auc"],
        "cv_balanced_accuracy": params[main_model]["grouped_cv"]["balanced_accuracy"],
        "cv_scheme": f"{CV_FOLDS} folds grouped by question x {CV_SHUFFLES} shuffles",
    }
    params["calibration_questions"] = fit_questions
    if not args.dry_run:
        args.out.write_text(json.dumps(params, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
