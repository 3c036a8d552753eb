"""The project's benchmark: one table of ratios, each measured side by side in the same run.

    .venv/bin/python bench/run.py            # full inputs (what `make bench` runs)
    .venv/bin/python bench/run.py --json     # the same rows as JSON
    .venv/bin/python bench/run.py --quick    # small inputs, for the smoke test
    .venv/bin/python bench/run.py --only a,b # some rows only
    .venv/bin/python bench/run.py --markdown # the table plus the machine, for docs/benchmarks.md

Rows (letters as in docs/benchmarks.md):
  a/b  LLM judge calls and input tokens: PairwiseReferenceJudge (one call per statement x source,
       whole document) vs the batched OpenAIJudge (all statements of an answer against one source,
       selected passages). Support stage only, on ExpertQA domain_test claims x sources with text,
       both against the local fake OpenAI server (pipeline/testing/fake_openai.py) answering from a
       deterministic handler; counted on the server's request log.
  c    Full annotate (relevance, confidence, support) with CachingJudge over the batched judge:
       cold (fresh SQLite cache) vs cached (second run; the server must see zero requests).
  d    Source necessity: exact (integer program) vs greedy, on seeded sparse support matrices, and
       the worst case over dense random ones (the solver stops at 1 s).
  e    Offline judge: pairs/s in embedding mode vs lexical-only mode, and seconds for every
       claim x source pair of the three ExpertQA files once the model is loaded.
  f    Scorecard page server time (Streamlit AppTest), cold caches vs warm, largest dataset.
  g    Peak RSS of `python -m pipeline run --dataset demo`: recorded labels vs the offline judge.
  h    Scale (bench/scale.py): whole runs on resampled ExpertQA corpora (teaching corpus when
       ExpertQA is absent) of 1,000, 5,000 and 20,000 answers with the human judge, on the local
       executor and on Ray (a loopback cluster of 2 CPUs; the labels the data carries then travel
       through the actor pool too), and of 1,000 and 5,000 with the offline judge; wall time, CPU
       time and peak RSS per size, each in a fresh process. Linear time: size ratio / time ratio
       (target 20k/1k time ratio <= 22, i.e. ratio >= 0.91); flat memory: peak RSS small / large
       (target 20k within 1.3x of 1k).
  i    One deep-research answer (200 sources x 140 statements, bench/deep_research.py) judged offline
       end to end: without vs with the judge's first pass, the time against the 10 s target, and
       ExpertQA rand_val agreement without vs with the first pass (unchanged by construction).
  j    `aee collect` wall time for 200 answers (40 with --quick) from the fake engine server
       (pipeline/testing/fake_engines.py, every answer 50 ms late, as a slow provider): --concurrency 1
       vs --concurrency 4, each into a fresh folder; target ratio >= 3.
  k    Prediction-powered scorecards (bench/audit_ppi.py): on ExpertQA, samples of about 100, 200
       and 400 (claim, cited source) pairs with the experts' labels standing in for the annotators;
       interval width of human-only vs PPI estimates of unsupported statements and citation
       accuracy, with the judge-only (offline) error, each estimate's mean error and how often its
       interval covers the value from all expert labels, over 200 draws per size.
  l    The offline judge on all of ExpertQA on Ray: one node with 1 CPU vs two nodes with 1 CPU
       each, both on this machine's loopback (bench/ray_rows.py); the ratio is the speed-up.
  m    An LLM judge on Ray against the fake server at 300 ms per reply: requests in flight vs the
       bound of 8 shared by two workers (bench/ray_rows.py).
  n    Every dashboard page in a real browser (Debian's chromium, bench/page_ready.py), a row per
       page: seconds from navigation until the page's title is shown and its script run is over
       (server + render), each visit in a fresh browser context, warm (median of five visits after
       a first one; target: under 2 s). Baseline: a bare Streamlit app showing one title, visited
       right before each page visit, so the page's own cost reads apart from the machine's load. The
       server reads the default build (`aee build-default`: teaching corpus, ExpertQA with its
       experts' labels, judge agreement and checks); every page opens on ExpertQA.
  o    The largest answer the limits allow (bench/worst_case.py: 92 sources of 108,000 characters,
       ~940 statements, ~87,000 pairs) and the same answer with 1/8, 1/4 and 1/2 of its sources:
       `aee run --judge offline` on each in a fresh process, wall time and peak RSS per size; time
       and memory per unit of input size against the smallest, so a ratio near 1 (or above: the fixed
       part of the cost) means linear.
  p    The offline encoder: texts/s encoding each text alone vs in shared batches, and whether every
       vector is bit for bit the same both ways (a resumed run embeds texts in other batches).
  q    Coverage per cell of the prediction-powered scorecard (bench/ppi_coverage.py): on ExpertQA, the
       experts as annotators, the audit sample drawn 200 times at about 100, 300 and 600 pairs; for
       every engine x metric cell and all engines, how often the 95% interval holds the experts'
       value (goal >= 93%), with the mean width; relevant statements from a statement sample of the
       experts' relevance at the same sizes.
  t    Audits over time (bench/over_time.py): fake-engine corpora of 1,008 and 20,016 answers (9 engines,
       2 repeats, weekly waves; 140,400 with `python bench/over_time.py --sizes 1k,140k`): `aee run`
       with its over-time summaries and those summaries alone, time per answer (1 = linear); the
       Over time page's warm view (AppTest), target under 2 s; t4: every registry page's warm view
       on the same result sets (bench/pages_scale.py), target under 2 s.
  u/v/w The full-size runs of tests that run smaller in `make test` (bench/suite_rows.py): kill -9
       at 20 random moments then rerun; the first 200 ExpertQA answers locally vs on Ray; 20 browser
       users at once with full sessions.

Each row registers itself in a row module (bench/*_rows.py, with `@row(letter, title)` from
bench/registry.py); this file only finds them, runs them in letter order and prints the table.

Each row reads "baseline vs ours": `ratio` is how many times better `ours` is than `baseline`
(baseline / ours for costs such as calls, tokens, seconds and MB; ours / baseline for rates such as
pairs/s). A ratio below 1 means the second thing costs more. Everything runs offline: the only
network traffic goes to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Sequence

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# An LLM endpoint configured in the environment must never be reached from here.
for _var in ("AEE_OPENAI_BASE_URL", "OPENAI_BASE_URL", "AEE_OPENAI_API_KEY", "OPENAI_API_KEY",
             "AEE_OPENAI_MODEL", "AEE_OPENAI_JSON_MODE", "AEE_OPENAI_API_VERSION"):
    os.environ.pop(_var, None)

if str(Path(__file__).resolve().parent) not in sys.path:  # the row modules import their neighbours by name
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from registry import discover  # noqa: E402 - bench/registry.py, after the environment above is set
from rows import COLUMNS, Row, cost_row, rate_row, skipped  # noqa: E402,F401 - bench/rows.py (for callers)
from table import machine, markdown_table, text_table  # noqa: E402 - bench/table.py


def run_all(quick: bool, only: set[str] | None = None, progress: bool = True) -> list[Row]:
    rows: list[Row] = []
    for key, bench in discover().items():
        if only and key not in only and not (key == "a" and "b" in only):
            continue
        if progress:
            print(f"[bench] {bench.title} ...", file=sys.stderr, flush=True)
        t = time.perf_counter()
        try:
            rows.extend(bench.fn(quick))
        except Exception as exc:  # noqa: BLE001 - one broken row must not hide the others
            rows.append(skipped(bench.title, f"{type(exc).__name__}: {exc}"))
        if progress:
            print(f"[bench]   {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark table: each ratio measured side by side in this run.")
    parser.add_argument("--json", action="store_true", help="print the rows as a JSON list")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table with the machine")
    parser.add_argument("--quick", action="store_true", help="small inputs (smoke test)")
    parser.add_argument("--only", help="comma-separated row letters, e.g. a,c,d")
    parser.add_argument("--markdown-out", metavar="FILE", help="also write the markdown table and machine to FILE")
    args = parser.parse_args(argv)
    only = {x.strip().lower() for x in args.only.split(",")} if args.only else None
    started = time.perf_counter()
    rows = run_all(args.quick, only)
    total = time.perf_counter() - started
    m = machine()
    cmd = ".venv/bin/python bench/run.py" + (" --quick" if args.quick else "") + (f" --only {args.only}" if args.only else "")
    markdown = (f"Machine: {m['nproc']} CPUs ({m['cpu']}), {m['ram']} RAM, Python {m['python']}, {m['os']}; "
                f"{m['date']}; whole run {total:.0f} s.\n\nCommand: `{cmd}` (what `make bench` runs)\n\n"
                + markdown_table(rows) + "\n")
    if args.markdown_out:
        Path(args.markdown_out).write_text(markdown, encoding="utf-8")
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
    elif args.markdown:
        print(markdown, end="")
    else:
        m = machine()
        print(f"bench/run.py{' --quick' if args.quick else ''}: {m['nproc']} CPUs ({m['cpu']}), {m['ram']} RAM, "
              f"Python {m['python']}, {m['date']}, {total:.0f} s")
        print(text_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
