"""Calibrate the offline judge's support model on ExpertQA expert labels.

Fits on domain_val + domain_test, reports on rand_val without touching it while fitting:

    .venv/bin/python scripts/calibrate_offline.py [--path DIR] [--out pipeline/judges/offline_params.json]
                                                  [--full-cosine-baseline] [--dry-run]

Pairs: every (claim, cited source) the experts labelled Complete / Partial / Incomplete against a
passage the data carries (systems rr_* and post_hoc_*). Target: Complete vs the rest. Two models are
fitted, one with embedding features ("embed") and one lexical-only ("lexical", the fallback when the
embedding model is missing). Each is a standardised L2-regularised logistic regression (numpy
Newton steps); the "full" threshold maximises balanced accuracy on the fitting splits, the
"partial" threshold maximises balanced accuracy of Complete+Partial vs Incomplete below it.
Only parameters are written - no data.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.importers.expertqa import load_expertqa  # noqa: E402
from pipeline.judges import agreement  # noqa: E402
from pipeline.judges.offline import FEATURES_EMBED, FEATURES_LEXICAL, PARAMS_PATH, OfflineJudge  # noqa: E402
from pipeline.paths import expertqa_dir  # noqa: E402

FIT_SPLITS = ("domain_val", "domain_test")
EVAL_SPLIT = "rand_val"
L2 = 10.0

EMBED_FEATURES = list(FEATURES_LEXICAL) + list(FEATURES_EMBED)
LEXICAL_FEATURES = list(FEATURES_LEXICAL)


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
    """Threshold maximising balanced accuracy of (score >= t) vs pos."""
    best_t, best_b = 0.5, -1.0
    for t in np.unique(np.round(scores, 4)):
        pred = scores >= t
        b = agreement.balanced_accuracy(list(pred), list(pos))
        if b is not None and b > best_b:
            best_t, best_b = float(t), b
    return best_t, best_b


def collect(answers, judge: OfflineJudge, mode: str):
    pairs = agreement.support_pairs(answers)
    inputs = []
    for a, si, src, raw in pairs:
        inputs.append(OfflineJudge._pair_inputs(a.answer, a.statements[si], a.answer.source(src)))
    t0 = time.perf_counter()
    feats = judge.support_features(inputs, mode)
    dt = time.perf_counter() - t0
    gold = [raw for *_, raw in pairs]
    return [f for f, _ in feats], gold, inputs, dt


def matrix(feats, names):
    return np.array([[f.get(k, 0.0) for k in names] for f in feats], dtype=np.float64)


def full_cosine_baseline(inputs) -> np.ndarray:
    """Max cosine of the statement against every sentence of the source (slow: embeds all)."""
    from pipeline.judges import embedding
    from pipeline.judges.offline import split_sentences

    texts = []
    for stmt, text, *_ in inputs:
        texts.append(stmt)
        texts.extend(split_sentences(text))
    uniq = list(dict.fromkeys(texts))
    emb = embedding.embed(uniq)
    vecs = {t: emb[i] for i, t in enumerate(uniq)}
    out = []
    for stmt, text, *_ in inputs:
        sents = split_sentences(text)
        out.append(max((float(vecs[stmt] @ vecs[s]) for s in sents), default=0.0))
    return np.array(out)


def report_block(name: str, scores: np.ndarray, gold: list[str], t_full: float | None = None) -> dict:
    pos = np.array([g == "Complete" for g in gold])
    if t_full is None:
        t_full, _ = best_threshold(scores, pos)
    pred = scores >= t_full
    r = agreement.binary_report(list(scores), list(pred), list(pos))
    r["threshold"] = t_full
    print(f"  {name:28s} n={r['n']:5d} AUC={r['auc']:.3f} bal.acc={r['balanced_accuracy']:.3f} "
          f"kappa={r['kappa']:.3f} F1={r['f1'] or 0:.3f} (t={t_full:.3f})")
    return r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", type=Path, default=None, help="folder of ExpertQA *.jsonl (default: expertqa_dir())")
    ap.add_argument("--out", type=Path, default=PARAMS_PATH)
    ap.add_argument("--full-cosine-baseline", action="store_true",
                    help="also embed every source sentence for the max-sentence-cosine baseline (slow)")
    ap.add_argument("--dry-run", action="store_true", help="do not write the parameters")
    ap.add_argument("--feature-cache", type=Path, default=None,
                    help="pickle file to reuse computed features between runs (a local scratch file; never commit it)")
    ap.add_argument("--l2", type=float, default=L2)
    args = ap.parse_args(argv)
    folder = args.path or expertqa_dir()
    if folder is None:
        print("ExpertQA not found: pass --path or set EXPERTQA_DIR", file=sys.stderr)
        return 2
    answers = load_expertqa(folder)
    fit = [a for a in answers if a.answer.meta.get("split") in FIT_SPLITS]
    held = [a for a in answers if a.answer.meta.get("split") == EVAL_SPLIT]
    judge = OfflineJudge(params_path=Path("/nonexistent"))  # features only; its params are unused
    mode = judge.mode
    t0 = time.perf_counter()
    if args.feature_cache and args.feature_cache.is_file():
        import pickle

        (f_fit, g_fit, in_fit, dt_fit), (f_eval, g_eval, in_eval, dt_eval) = pickle.loads(args.feature_cache.read_bytes())
    else:
        f_fit, g_fit, in_fit, dt_fit = collect(fit, judge, mode)
        f_eval, g_eval, in_eval, dt_eval = collect(held, judge, mode)
        if args.feature_cache:
            import pickle

            args.feature_cache.write_bytes(pickle.dumps(((f_fit, g_fit, in_fit, dt_fit), (f_eval, g_eval, in_eval, dt_eval))))
    print(f"features: {len(f_fit)} fit pairs, {len(f_eval)} held-out pairs, {time.perf_counter() - t0:.1f}s (mode {mode})")

    y_fit = np.array([g == "Complete" for g in g_fit], dtype=np.float64)
    pos_eval = np.array([g == "Complete" for g in g_eval])
    print("single features (AUC fit / held-out):")
    for k in EMBED_FEATURES:
        if k in f_fit[0]:
            a1 = agreement.auc(matrix(f_fit, [k])[:, 0], list(y_fit.astype(bool)))
            a2 = agreement.auc(matrix(f_eval, [k])[:, 0], list(pos_eval))
            print(f"  {k:16s} {a1:.3f} {a2:.3f}")

    results: dict = {"fit_splits": list(FIT_SPLITS), "eval_split": EVAL_SPLIT}
    params: dict = {"version": "", "fit_splits": list(FIT_SPLITS), "target": "Complete vs Partial/Incomplete",
                    "n_fit_pairs": int(len(y_fit)), "l2": args.l2}
    print("baselines:")
    results["baseline_token_overlap"] = {
        "fit": report_block("token overlap (fit)", matrix(f_fit, ["recall_all"])[:, 0], g_fit)}
    results["baseline_token_overlap"]["eval"] = report_block(
        "token overlap (held-out)", matrix(f_eval, ["recall_all"])[:, 0], g_eval,
        results["baseline_token_overlap"]["fit"]["threshold"])
    if mode == "embed":
        results["baseline_cos_pass"] = {"fit": report_block("cos(statement, passage) (fit)", matrix(f_fit, ["cos_pass"])[:, 0], g_fit)}
        results["baseline_cos_pass"]["eval"] = report_block(
            "cos(statement, passage) (held-out)", matrix(f_eval, ["cos_pass"])[:, 0], g_eval, results["baseline_cos_pass"]["fit"]["threshold"])
    if args.full_cosine_baseline and mode == "embed":
        t1 = time.perf_counter()
        c_fit, c_eval = full_cosine_baseline(in_fit), full_cosine_baseline(in_eval)
        print(f"  (full cosine baseline embedded in {time.perf_counter() - t1:.0f}s)")
        results["baseline_cos_all"] = {"fit": report_block("max cos, all sents (fit)", c_fit, g_fit)}
        results["baseline_cos_all"]["eval"] = report_block("max cos, all sents (held-out)", c_eval, g_eval,
                                                           results["baseline_cos_all"]["fit"]["threshold"])

    for name, feats in (("embed", EMBED_FEATURES), ("lexical", LEXICAL_FEATURES)):
        if name == "embed" and mode != "embed":
            continue
        x_fit, x_eval = matrix(f_fit, feats), matrix(f_eval, feats)
        mean, std = x_fit.mean(0), x_fit.std(0)
        std[std < 1e-9] = 1.0
        coef, b = fit_logistic((x_fit - mean) / std, y_fit, args.l2)
        s_fit = 1 / (1 + np.exp(-(((x_fit - mean) / std) @ coef + b)))
        s_eval = 1 / (1 + np.exp(-(((x_eval - mean) / std) @ coef + b)))
        t_full, _ = best_threshold(s_fit, y_fit.astype(bool))
        below = s_fit < t_full
        any_sup = np.array([g in ("Complete", "Partial") for g in g_fit])
        if below.sum() and any_sup[below].any() and (~any_sup[below]).any():
            t_partial, _ = best_threshold(s_fit[below], any_sup[below])
            t_partial = min(t_partial, t_full)
        else:
            t_partial = t_full
        print(f"model {name}:")
        r_fit = report_block(f"{name} (fit)", s_fit, g_fit, t_full)
        r_eval = report_block(f"{name} (held-out {EVAL_SPLIT})", s_eval, g_eval, t_full)
        # rand_val shares most of its (question, claim, passage) triples with the domain splits, so
        # its score is largely in-sample; the pairs it does not share are the truly unseen ones
        seen = {(q, st, tx) for st, tx, _, q in in_fit}
        new = np.array([(q, st, tx) not in seen for st, tx, _, q in in_eval])
        r_new = report_block(f"{name} ({EVAL_SPLIT}, unseen pairs)", s_eval[new], [g for g, k in zip(g_eval, new) if k], t_full)
        for k, c in sorted(zip(feats, coef), key=lambda kc: -abs(kc[1])):
            print(f"    {k:16s} {c:+.3f}")
        params[name] = {"features": feats, "mean": mean.round(6).tolist(), "std": std.round(6).tolist(),
                        "coef": coef.round(6).tolist(), "intercept": round(b, 6),
                        "threshold_full": round(t_full, 4), "threshold_partial": round(t_partial, 4),
                        "fit": {k: r_fit[k] for k in ("n", "auc", "balanced_accuracy", "kappa", "f1")},
                        "heldout_rand_val": {k: r_eval[k] for k in ("n", "auc", "balanced_accuracy", "kappa", "f1")},
                        "rand_val_unseen_pairs": {k: r_new[k] for k in ("n", "auc", "balanced_accuracy", "kappa", "f1")}}
        results[name] = {"fit": r_fit, "eval": r_eval}
    params["version"] = "cal2"
    if not args.dry_run:
        args.out.write_text(json.dumps(params, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
