"""How wide the offline judges' uncertain band should be, measured on held-out ExpertQA pairs.

    .venv/bin/python bench/uncertain_band.py [--judge offline|offline:lexical] [--split rand_val] [--json]

For every expert-labelled (claim, source) pair of the split, the judge's score is compared
with the experts' "Complete" label, as `aee judges evaluate` does. For a range of margins around
the judge's full threshold, it prints how many pairs fall inside the band (threshold - margin <=
score < threshold + margin) and how often the full / not-full decision agrees with the experts
inside and outside it, and the accuracy in rings of distance from the threshold. The band's margin in
`pipeline.judges.measure.reliability` and what these figures say about it: docs/judges/uncertainty.md.
"""

from __future__ import annotations

import argparse
import json

from pipeline.importers import known_datasets
from pipeline.importers.expertqa import load_expertqa
from pipeline.judges import get_judge
from pipeline.judges.measure.agreement import support_pairs
from pipeline.judges.measure.reliability import support_band

MARGINS = (0.025, 0.05, 0.075, 0.1, 0.15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge", default="offline", choices=("offline", "offline:lexical"),
                        help="the offline judge or its lexical-only variant (each with its own thresholds)")
    parser.add_argument("--split", default="rand_val")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    path = known_datasets()["expertqa"].path
    if path is None:
        raise SystemExit("error: ExpertQA not found (see docs/data)")
    answers = [a for a in load_expertqa(path) if a.answer.meta.get("split") == args.split]
    judge = get_judge(args.judge, cache=False)
    judge.prefetch(answers)
    scores, gold = [], []
    by_pair = {}
    for a, si, src, raw in support_pairs(answers):
        by_pair.setdefault((a.answer.answer_id, src), (a, []))[1].append((si, raw))
    for (_, src), (a, items) in by_pair.items():
        source = a.answer.source(src)
        verdicts = {v.statement_index: v for v in judge.support(a.answer, [a.statements[si] for si, _ in items], source)}
        for si, raw in items:
            v = verdicts.get(si)
            if v is not None and v.score is not None:
                scores.append(float(v.score))
                gold.append(raw == "Complete")
    band = support_band(args.judge)
    assert band is not None
    t_full = max(band.thresholds)
    rows = []
    for margin in MARGINS:
        inside = [t_full - margin <= s < t_full + margin for s in scores]
        def acc(keep: bool, inside: list[bool] = inside) -> tuple[int, float | None]:
            pairs = [((s >= t_full) == g) for s, g, k in zip(scores, gold, inside) if k == keep]
            return len(pairs), (sum(pairs) / len(pairs) if pairs else None)
        n_in, acc_in = acc(True)
        n_out, acc_out = acc(False)
        rows.append({"margin": margin, "pairs_inside": n_in, "share_inside": n_in / len(scores),
                     "accuracy_inside": acc_in, "accuracy_outside": acc_out})
    # accuracy by distance from the threshold, in rings (not cumulative), to see where labels are weakest
    edges = (0.0, 0.025, 0.05, 0.1, 0.2, 1.0)
    rings = []
    for lo, hi in zip(edges, edges[1:]):
        hits = [((s >= t_full) == g) for s, g in zip(scores, gold) if lo <= abs(s - t_full) < hi]
        rings.append({"distance": f"{lo:.3f}-{hi:.3f}", "pairs": len(hits),
                      "accuracy": sum(hits) / len(hits) if hits else None})
    if args.json:
        print(json.dumps({"judge": args.judge, "split": args.split, "pairs": len(scores), "threshold_full": t_full,
                          "band_margin": band.margin, "rows": rows, "rings": rings}, indent=1))
        return
    print(f"{args.judge} on {args.split}: {len(scores)} pairs; full threshold {t_full:.3f}; band margin in use {band.margin}")
    print(f"{'margin':>7} {'inside':>7} {'share':>6} {'acc in':>7} {'acc out':>8}")
    fmt = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
    for r in rows:
        print(f"{r['margin']:>7} {r['pairs_inside']:>7} {r['share_inside']:>6.1%} {fmt(r['accuracy_inside']):>7} "
              f"{fmt(r['accuracy_outside']):>8}")
    print("accuracy by distance from the threshold:")
    for r in rings:
        print(f"  {r['distance']:>12} {r['pairs']:>5} pairs  accuracy {fmt(r['accuracy']) if r['accuracy'] is not None else 'n/a'}")


if __name__ == "__main__":
    main()
