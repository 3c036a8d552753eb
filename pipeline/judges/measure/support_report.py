"""How a support judge compares with people on data it was not fitted on: one table per labelled set.

    python -m pipeline.judges.measure.support_report --judge offline [--json OUT]

For each set: AUC of the judge's score for people's full support against the rest; balanced accuracy
of its `full` label; recall of people's full support (the share of pairs people call fully supported
that the judge calls `full`); the false-support rate (the share of pairs people say give no support
that the judge calls `full`); and pooled citation precision per engine, judge against people (the
share of cited pairs labelled full, pooled over citations).

The sets, all held out from `aee judges calibrate`'s fit:

- ExpertQA rand_val: every (claim, cited source) pair the experts judged (Complete = full,
  Incomplete = no support); engines are ExpertQA's systems;
- WiCE test: every claim against the page it cites (supported = full, not supported = no support),
  and the claim against its first minimal supporting set ("WiCE test, supporting sentences");
- the behavioural check suite's support cases, per capability (`data/judge_checks`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from pipeline.judges.measure import agreement
from pipeline.judges.measure.support_eval import EXPERT_TO_LABEL, LabelledPair, judge_scores
from pipeline.records import Answer, Source, Statement


def _rates(judged: Sequence[tuple[float, str]], gold: Sequence[str]) -> dict[str, Any]:
    full = [lab == "full" for _, lab in judged]
    pos = [g == "full" for g in gold]
    none = [g == "none" for g in gold]
    n_pos, n_none = sum(pos), sum(none)
    auc = agreement.auc([s for s, _ in judged], pos) if 0 < n_pos < len(pos) else None
    bal = agreement.balanced_accuracy(full, pos) if 0 < n_pos < len(pos) else None
    return {
        "n": len(gold), "auc": None if auc is None else round(auc, 3), "balanced_accuracy": None if bal is None else round(bal, 3),
        "recall_full": round(sum(f and p for f, p in zip(full, pos)) / n_pos, 3) if n_pos else None,
        "false_support": round(sum(f and x for f, x in zip(full, none)) / n_none, 3) if n_none else None,
        "n_none": n_none,
        "judge_full": round(sum(full) / len(full), 3) if full else None,
        "people_full": round(n_pos / len(pos), 3) if pos else None,
    }


def _per_engine(pairs: Sequence[LabelledPair], judged: Sequence[tuple[float, str]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    engines = sorted({p.answer.engine for p in pairs})
    for e in engines:
        ks = [k for k, p in enumerate(pairs) if p.answer.engine == e]
        out[e] = {"n": len(ks), "people": round(100 * sum(pairs[k].label == "full" for k in ks) / len(ks), 1),
                  "judge": round(100 * sum(judged[k][1] == "full" for k in ks) / len(ks), 1)}
    return out


def wice_pairs(kind: str = "page", split: str = "test") -> list[LabelledPair]:
    """WiCE pairs as records the judges read (one answer per claim, its page as source 1)."""
    from pipeline.judges.measure import wice

    out = []
    for k, wp in enumerate(wice.pairs(split, kinds=(kind,))):
        answer_id = f"wice-{split}-{kind}-{k}"
        source = Source(index=1, url="", title="cited page", text=wp.pair.source, fetch_ok=True)
        answer = Answer(answer_id=answer_id, engine="wice", query=wp.pair.question or wp.pair.statement,
                        query_type="expertise", text=wp.pair.statement + " [1]", sources=(source,))
        statement = Statement(answer_id=answer_id, index=0, text=wp.pair.statement + " [1]", start=0,
                              end=len(wp.pair.statement) + 4, citations=(1,))
        out.append(LabelledPair(answer, statement, source, EXPERT_TO_LABEL[wp.gold], wp.claim_id))
    return out


def report(judge_name: str, expertqa: Path | None = None, wice_ok: bool = True) -> dict[str, Any]:
    from pipeline.judges import get_judge
    from pipeline.judges.measure.checks import load_cases
    from pipeline.judges.measure.support_eval import check_pairs, expertqa_pairs

    judge = get_judge(judge_name)
    out: dict[str, Any] = {"judge": judge.name, "prompt_version": judge.prompt_version, "sets": {}}
    sets: list[tuple[str, list[LabelledPair]]] = []
    if expertqa is not None:
        from pipeline.importers.expertqa import load_expertqa

        held = [a for a in load_expertqa(expertqa) if a.answer.meta.get("split") == "rand_val"]
        sets.append(("ExpertQA rand_val", expertqa_pairs(held)))
    if wice_ok:
        sets.append(("WiCE test, cited page", wice_pairs("page")))
        sets.append(("WiCE test, supporting sentences", wice_pairs("support_set")))
    checks = check_pairs(load_cases())
    sets.append(("check suite", checks))
    for name, pairs in sets:
        judged = judge_scores(judge, pairs)
        row = _rates(judged, [p.label for p in pairs])
        if name.startswith("ExpertQA"):
            row["per_engine"] = _per_engine(pairs, judged)
        if name == "check suite":
            caps: dict[str, list[int]] = {}
            expect = {c.id: c.expect for c in load_cases() if c.kind == "support"}
            for p, (_, lab) in zip(pairs, judged):
                counts = caps.setdefault(p.group, [0, 0])
                counts[0] += lab in expect[p.answer.answer_id]
                counts[1] += 1
            row["passed_by_capability"] = {k: f"{a}/{b}" for k, (a, b) in sorted(caps.items())}
            row["passed"] = sum(a for a, _ in caps.values())
        out["sets"][name] = row
    return out


def print_report(r: dict[str, Any]) -> None:
    print(f"{r['judge']} ({r['prompt_version']})")
    for name, row in r["sets"].items():
        def f(x: Any) -> str:
            return "n/a" if x is None else f"{x:.3f}"

        print(f"  {name:34s} n={row['n']:4d} AUC={f(row['auc'])} bal.acc={f(row['balanced_accuracy'])} "
              f"recall(full)={f(row['recall_full'])} false support={f(row['false_support'])} (of {row['n_none']}) "
              f"full: judge {f(row['judge_full'])} people {f(row['people_full'])}")
        for e, v in row.get("per_engine", {}).items():
            print(f"      {e:24s} n={v['n']:4d} citation precision: people {v['people']:5.1f} judge {v['judge']:5.1f}")
        if "passed_by_capability" in row:
            print(f"      passed {row['passed']}/{row['n']}: " + ", ".join(f"{k} {v}" for k, v in row["passed_by_capability"].items()))


def main(argv: list[str] | None = None) -> int:
    from pipeline.judges.measure.wice import wice_dir
    from pipeline.storage.paths import expertqa_dir

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--judge", default="offline")
    ap.add_argument("--json", type=Path, default=None, help="also write the report as JSON here")
    args = ap.parse_args(argv)
    eqa = expertqa_dir()
    if eqa is None:
        print("note: ExpertQA not found (EXPERTQA_DIR): its rows are left out", file=sys.stderr)
    if wice_dir() is None:
        print("note: WiCE not found (WICE_DIR): its rows are left out", file=sys.stderr)
    r = report(args.judge, eqa, wice_dir() is not None)
    print_report(r)
    if args.json:
        args.json.write_text(json.dumps(r, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
