"""Seeded simulation with known truth for the fitted judge: coverage and width of the cross-fitted
(cross-PPI) interval against the unfitted judge's PPI interval on the same draws, per engine.

`python -m pipeline.audit.fitted_sim` prints the table in docs/benchmarks.md ("Fitted judge,
simulated"). The population is synthetic on purpose: the truth is known exactly, and the people
judge differently from the judge in ways the covariates reveal (figures, statement length, one
engine's sources), which is the situation the fitted judge is for. It is not ExpertQA.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from pipeline.audit.fitted_judge import _default_model, cross_fit, crossppi_stratified, kappa

ENGINES = ("A", "B", "C")


@dataclass
class Population:
    x: np.ndarray  # covariates incl. engine one-hot
    p_full: np.ndarray  # the unfitted judge's probability
    y: np.ndarray  # the people's label (truth, known for every item here)
    answer: np.ndarray
    engine: np.ndarray


def population(seed: int = 0, answers_per_engine: int = 500, strength: float = 1.0) -> Population:
    """`strength` scales how much the people's labels follow the signals (1: as described; 0.35: about
    as loosely as ExpertQA's experts follow the offline judge, kappa near 0.15)."""
    rng = np.random.default_rng(seed)
    xs, ps, ys, ans, eng = [], [], [], [], []
    for e_i, e in enumerate(ENGINES):
        for a in range(answers_per_engine):
            k = int(rng.integers(1, 6))
            signal = rng.normal(0, 1.5, k)
            words = rng.integers(5, 60, k)
            figures = rng.random(k) < 0.3
            p_full = 1 / (1 + np.exp(-(signal + rng.normal(0, 1.0, k))))
            # The people: stricter on figures and long statements, engine C's sources count less.
            logit = strength * (1.2 * signal - 1.5 * figures - 0.03 * (words - 30) - 0.8 * (e == "C")) + 0.3
            y = (rng.random(k) < 1 / (1 + np.exp(-logit))).astype(float)
            onehot = np.zeros((k, len(ENGINES)))
            onehot[:, e_i] = 1
            xs.append(np.column_stack([p_full, np.log1p(words), figures, onehot]))
            ps.append(p_full)
            ys.append(y)
            ans += [f"{e}-{a}"] * k
            eng += [e] * k
    return Population(np.vstack(xs), np.concatenate(ps), np.concatenate(ys), np.array(ans), np.array(eng))


def draw(pop: Population, n_items: int, rng: np.random.Generator) -> np.ndarray:
    """Boolean mask of labelled items: whole answers, the same number of items' worth per engine."""
    mask = np.zeros(len(pop.y), bool)
    for e in ENGINES:
        names = np.unique(pop.answer[pop.engine == e])
        rng.shuffle(names)
        got = 0
        for a in names:
            if got >= n_items // len(ENGINES):
                break
            hit = pop.answer == a
            mask |= hit
            got += int(hit.sum())
    return mask


def one_draw(pop: Population, n_items: int, seed: int, make_model: Callable[[], Any] = _default_model) -> dict:
    rng = np.random.default_rng(seed)
    lab = draw(pop, n_items, rng)
    cf = cross_fit(pop.x[lab], pop.y[lab], pop.answer[lab], pop.x, seed=seed, make_model=make_model)
    out: dict[str, Any] = {"kappa_fitted": kappa(pop.y[lab], cf.yhat),
                           "kappa_judge": kappa(pop.y[lab], pop.p_full[lab])}
    for e in ENGINES:
        in_e, lab_e = pop.engine == e, lab & (pop.engine == e)
        truth = float(pop.y[in_e].mean())
        m_all = len(np.unique(pop.answer[in_e]))
        where = pop.engine[lab] == e  # positions among the labelled items
        kw = dict(lab_strata=[e] * int(lab_e.sum()), lab_answers=pop.answer[lab_e], pop_strata=[e] * int(in_e.sum()),
                  answers_in_stratum={e: m_all})
        fit = crossppi_stratified(pop.y[lab_e], cf.yhat[where], pop_pred=cf.population[in_e], **kw)
        # the fitted model's labels (probability >= 0.5) as the prediction, as the first version on ExpertQA
        hard = crossppi_stratified(pop.y[lab_e], (cf.yhat[where] >= 0.5).astype(float),
                                   pop_pred=(cf.population[in_e] >= 0.5).astype(float), **kw)
        plain = crossppi_stratified(pop.y[lab_e], pop.p_full[lab_e], pop_pred=pop.p_full[in_e][:, None], **kw)
        out[e] = {"truth": truth, "fit": fit, "hard": hard, "plain": plain}
    return out


def table(sizes=(300, 600, 1200), draws: int = 100, seed: int = 0,
          make_model: Callable[[], Any] = _default_model) -> list[dict]:
    pop = population(seed)
    rows = []
    for n in sizes:
        runs = [one_draw(pop, n, seed * 10_000 + d, make_model) for d in range(draws)]
        for e in ENGINES:
            def cov(kind: str, e: str = e, runs: list = runs) -> float:
                return float(np.mean([r[e][kind].low <= r[e]["truth"] <= r[e][kind].high for r in runs]))

            def width(kind: str, e: str = e, runs: list = runs) -> float:
                return float(np.mean([r[e][kind].high - r[e][kind].low for r in runs]))

            rows.append({"n": n, "engine": e, "coverage_fitted": cov("fit"), "coverage_judge": cov("plain"),
                         "width_fitted": width("fit"), "width_judge": width("plain"),
                         "kappa_fitted": float(np.mean([r["kappa_fitted"] for r in runs])),
                         "kappa_judge": float(np.mean([r["kappa_judge"] for r in runs]))})
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--overfit", action="store_true", help="a fully grown tree instead of the logistic model")
    args = ap.parse_args(argv)
    make = _default_model
    if args.overfit:
        from sklearn.tree import DecisionTreeClassifier

        def make() -> Any:
            return DecisionTreeClassifier(random_state=0)
    print("| items | engine | coverage fitted | coverage judge | width fitted | width judge | narrower | "
          "kappa fitted | kappa judge |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in table(draws=args.draws, seed=args.seed, make_model=make):
        narrower = 100 * (1 - r["width_fitted"] / r["width_judge"])
        print(f"| {r['n']} | {r['engine']} | {r['coverage_fitted']:.0%} | {r['coverage_judge']:.0%} | "
              f"{100 * r['width_fitted']:.1f} | {100 * r['width_judge']:.1f} | {narrower:.0f}% | "
              f"{r['kappa_fitted']:.2f} | {r['kappa_judge']:.2f} |")


if __name__ == "__main__":
    main()
