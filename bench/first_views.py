"""Rows t5 (issue 43): first views of every page when the pipeline writes the pages' records.

The over-time corpora of bench/over_time.py (9 fake engines x Q queries x 2 repeats x W weekly waves,
canonical records carrying their labels) go through `aee run --judge recorded` twice per size, side
by side: once as sets were written before (`AEE_PAGE_RECORDS=off`) and once with the pages' records
(pipeline/page_records.py). Then, per size:

* every registry page in its own fresh process under Streamlit's AppTest on the set with records:
  one cold run (imports and empty caches: a server's first visitor) and three warm ones
  (bench/pages_scale.py's `time_page`), with the process's peak resident memory;
* the four pages that built every annotated answer (Answer inspector, Compare, Audit the judge,
  Conflicting evidence) the same way on the set without records: the "before";
* one process that opens every page in turn, cold then warm, as one server would, on each set: its
  peak resident memory after the last page;
* the run's time and the set's size on disk with and without the records.

Goals (issue 43): first view under 5 s and warm under 2 s on every page at 140k answers, the server
under 1.5 GB after every page, the run's time per answer at most 10% worse.

    python bench/first_views.py --sizes 1k,20k [--keep DIR]     # DIR keeps (and reuses) the built sets
    python bench/first_views.py --sizes 1k,140k --keep DIR --skip-plain 140k   # 140k with records only
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("inspector.py", "compare.py", "audit.py", "conflict.py")  # built every annotated answer before
FIRST_TARGET_S, WARM_TARGET_S, MEMORY_TARGET_MB, RUN_TARGET = 5.0, 2.0, 1536.0, 1.10

_SERVER = """
import sys, time, resource
from streamlit.testing.v1 import AppTest
def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
pages, dataset = sys.argv[1].split(","), sys.argv[2]
for path in pages:
    at = AppTest.from_file(path, default_timeout=1800)
    at.query_params["dataset"] = dataset
    at.query_params["judge"] = "recorded"
    t = time.perf_counter(); at.run(); cold = time.perf_counter() - t
    t = time.perf_counter(); at.run(); warm = time.perf_counter() - t
    bad = str(at.exception[0].message)[:200].replace(" ", "_") if at.exception else "-"
    print("PAGE", path.rsplit("/", 1)[-1], cold, warm, rss_mb(), bad, flush=True)
print("PEAK", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, flush=True)
"""


def _env(folder: Path, records: bool) -> dict[str, str]:
    import pages_scale

    return {**pages_scale.env(folder), "AEE_PAGE_RECORDS": "on" if records else "off"}


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def build(label: str, base: Path, records: bool) -> dict:
    """One size through `aee run` in a fresh process, into base/<label>/<with|without>; reused when built."""
    import over_time

    folder = base / label / ("with" if records else "without")
    folder.mkdir(parents=True, exist_ok=True)
    done = folder / "built.txt"
    name = f"over-time-{label}"
    if not done.is_file():
        corpus = base / label / "corpus"
        corpus.mkdir(exist_ok=True)
        path = corpus / f"over-time-{label}.jsonl"
        n = sum(1 for _ in path.open()) if path.is_file() else over_time.make_corpus(label, corpus)[1]
        load = os.getloadavg()[0]
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "pipeline", "run", "--dataset", name, "--path", str(path), "--judge",
                              "recorded", "--no-progress"], cwd=ROOT, env=_env(folder, records), check=True,
                             capture_output=True, text=True, timeout=4 * 3600).stdout
        # the run's own account of the records' share, timed in the same process (robust to the load)
        line = next((x for x in out.splitlines() if x.startswith("pages' records: ")), "")
        inside = [line.split()[2], line.split()[6]] if line else ["nan", "nan"]
        done.write_text(f"{n} {time.perf_counter() - t} {load} {inside[0]} {inside[1]}\n")
    count, seconds, load, *inside = (done.read_text().split() + ["nan"] * 4)[:5]
    from pipeline.page_records import RECORD_FILES
    from pipeline.storage.store import result_set

    current = result_set(name, folder / "results")
    record_bytes = sum(p.stat().st_size for p in current.rglob("*.parquet")
                       if p.name in RECORD_FILES or p.name == "answer_index.parquet")
    return {"label": label, "answers": int(count), "run_s": float(seconds), "load": float(load), "folder": folder,
            "records_s": float(inside[0]), "inner_run_s": float(inside[1]),
            "set_bytes": _bytes(current), "record_bytes": record_bytes, "records": records}


def time_pages(built: dict, scripts: tuple[str, ...] | None = None) -> dict[str, dict]:
    """Each page in its own fresh process (bench/pages_scale.py): cold, warm, peak memory."""
    import pages_scale

    from dashboard.pages_registry import PAGES

    wanted = scripts or tuple(p.script for p in PAGES)
    return {s: pages_scale.time_page(s, f"over-time-{built['label']}", built["folder"]) for s in wanted}


def serve_all(built: dict) -> dict:
    """Every page opened in turn in one process, as one server would: per page cold, warm and
    resident memory after it, then the process's peak."""
    from dashboard.pages_registry import PAGES, PAGES_DIR

    paths = ",".join(str(PAGES_DIR / p.script) for p in PAGES)
    out = subprocess.run([sys.executable, "-c", _SERVER, paths, f"over-time-{built['label']}"], cwd=ROOT,
                         env=_env(built["folder"], built["records"]), capture_output=True, text=True, timeout=4 * 3600)
    pages, peak = {}, None
    for line in out.stdout.splitlines():
        if line.startswith("PAGE "):
            _, script, cold, warm, rss, bad = line.split()
            pages[script] = {"cold": float(cold), "warm": float(warm), "rss_mb": float(rss), "error": "" if bad == "-" else bad}
        elif line.startswith("PEAK "):
            peak = float(line.split()[1])
    if peak is None:
        tail = (out.stdout + out.stderr).strip().splitlines()[-1:] or ["no output"]
        return {"error": tail[0][:300], "pages": pages}
    return {"peak_mb": peak, "pages": pages}


def measure(sizes: tuple[str, ...], base: Path, skip_plain: tuple[str, ...] = (), say: Callable[[str], None] = print) -> dict:
    """Everything the rows and the table need, size by size (the without-records set built first)."""
    out: dict[str, dict] = {}
    for label in dict.fromkeys(sizes):
        got: dict[str, Any] = {}
        if label not in skip_plain:
            got["without"] = build(label, base, records=False)
            say(f"built {label} without records: {got['without']['run_s']:.1f} s")
        got["with"] = build(label, base, records=True)
        say(f"built {label} with records: {got['with']['run_s']:.1f} s")
        got["pages"] = time_pages(got["with"])
        for script, r in got["pages"].items():
            say(f"  {label} {script}: {r}")
        if "without" in got:
            got["pages_before"] = time_pages(got["without"], HEAVY)
            for script, r in got["pages_before"].items():
                say(f"  {label} before {script}: {r}")
            got["server_before"] = serve_all(got["without"])
            say(f"  {label} server without records: peak {got['server_before'].get('peak_mb')} MB")
        got["server"] = serve_all(got["with"])
        say(f"  {label} server with records: peak {got['server'].get('peak_mb')} MB")
        out[label] = got
    return out


def o_ok(got: dict) -> bool:
    """Both runs of a size were timed here (not reused from elsewhere)."""
    return all(got[k]["run_s"] == got[k]["run_s"] for k in ("with", "without"))


def rows(result: dict, cost_row: Callable[..., Any], skipped: Callable[..., Any]) -> list:
    """Rows t5: per size the run and disk with vs without records, the four pages' first view before
    vs after, the server's peak memory before vs after, and every page's cold view at the largest size."""
    from dashboard.pages_registry import PAGES

    out = []
    titles = {p.script: p.url_path for p in PAGES}
    for label, got in result.items():
        w = got["with"]
        if w["records_s"] == w["records_s"]:  # not NaN: this run said how long its records took
            inner = w["inner_run_s"]
            out.append(cost_row(f"t5. aee run, {label} answers: the run less its pages' records vs the whole run",
                                inner - w["records_s"], inner, "s",
                                f"timed inside the run ({w['records_s']:.2f} s of {inner:.1f} s, "
                                f"+{w['records_s'] / max(inner - w['records_s'], 1e-9) * 100:.1f}%; goal at most +10%)"))
        if "without" in got and o_ok(got):
            o = got["without"]
            out.append(cost_row(f"t5. aee run, {label} answers: without vs with the pages' records",
                                o["run_s"] / o["answers"] * 1000, w["run_s"] / w["answers"] * 1000, "s per 1k answers",
                                f"{o['run_s']:.1f} s vs {w['run_s']:.1f} s for {w['answers']:,} answers "
                                f"({(w['run_s'] / o['run_s'] - 1) * 100:+.0f}%; goal at most +10%); load average "
                                f"{o['load']:.1f} and {w['load']:.1f} at the start of each run"))
            out.append(cost_row(f"t5. result set on disk, {label} answers: without vs with the records",
                                o["set_bytes"] / 1e6, w["set_bytes"] / 1e6, "MB",
                                f"the records take {w['record_bytes'] / 1e6:.1f} MB "
                                f"({w['record_bytes'] / max(w['set_bytes'], 1) * 100:.1f}% of the set)"))
        if "without" in got:
            o = got["without"]
            for script in HEAVY:
                a, b = got["pages_before"][script], got["pages"][script]
                name = f"t5. page {titles[script]} first view, {label} answers: before vs with the records"
                if "error" in a or "error" in b:
                    out.append(skipped(name, f"the page failed: {a.get('error') or b.get('error')}"))
                    continue
                out.append(cost_row(name, a["cold"], b["cold"], "s",
                                    f"AppTest server time of a fresh process's first run (warm {a['warm']:.2f} s vs "
                                    f"{b['warm']:.2f} s; peak memory {a.get('rss_mb', 0):.0f} vs {b.get('rss_mb', 0):.0f} MB); "
                                    f"goal under {FIRST_TARGET_S:g} s: {'met' if b['cold'] < FIRST_TARGET_S else 'NOT met'}; "
                                    f"load average {a['load']:.1f} and {b['load']:.1f}"))
            sb, sa = got.get("server_before", {}), got["server"]
            if "peak_mb" in sb and "peak_mb" in sa:
                out.append(cost_row(f"t5. one server opening every page, {label} answers: peak memory before vs with",
                                    sb["peak_mb"], sa["peak_mb"], "MB",
                                    f"goal under {MEMORY_TARGET_MB:.0f} MB: {'met' if sa['peak_mb'] < MEMORY_TARGET_MB else 'NOT met'}"))
        elif "peak_mb" in got["server"]:
            out.append(cost_row(f"t5. one server opening every page, {label} answers (with records)", MEMORY_TARGET_MB,
                                got["server"]["peak_mb"], "MB", "baseline = the 1.5 GB goal; ratio above 1 = under it"))
    sizes = list(result)
    small, large = sizes[0], sizes[-1]
    for p in PAGES:
        a, b = result[small]["pages"][p.script], result[large]["pages"][p.script]
        name = f"t5. page {p.url_path} first view with records: {small} vs {large} answers"
        if "error" in a or "error" in b:
            out.append(skipped(name, f"the page failed: {a.get('error') or b.get('error')}"))
            continue
        ok = b["cold"] < FIRST_TARGET_S and b["warm"] < WARM_TARGET_S
        out.append(cost_row(name, a["cold"], b["cold"], "s",
                            f"warm {a['warm']:.2f} s and {b['warm']:.2f} s; goals at {large} (first < {FIRST_TARGET_S:g} s, "
                            f"warm < {WARM_TARGET_S:g} s): {'met' if ok else 'NOT met'}"))
    return out


def table(result: dict) -> str:
    """Markdown: every page's cold and warm view at every size (with records), the four pages before,
    and the server's memory."""
    from dashboard.pages_registry import PAGES

    sizes = list(result)
    head = "| page | " + " | ".join(f"{s} cold | {s} warm" for s in sizes) + " | goals met at the largest |"
    lines = [head, "|---|" + "---:|---:|" * len(sizes) + "---|"]
    for p in PAGES:
        cells = []
        for s in sizes:
            r = result[s]["pages"][p.script]
            cells += ["failed", r["error"][:60].replace("|", "/")] if "error" in r else [f"{r['cold']:.2f}", f"{r['warm']:.2f}"]
        r = result[sizes[-1]]["pages"][p.script]
        ok = "error" not in r and r["cold"] < FIRST_TARGET_S and r["warm"] < WARM_TARGET_S
        lines.append(f"| {p.title} (`{p.url_path}`) | " + " | ".join(cells) + f" | {'yes' if ok else 'NO'} |")
    lines += ["", "| page, one server opening every page in turn | " + " | ".join(f"{s} cold | {s} warm | {s} MB after"
                                                                          for s in sizes) + " |",
              "|---|" + "---:|---:|---:|" * len(sizes)]
    for p in PAGES:
        cells = []
        for s in sizes:
            r = result[s]["server"].get("pages", {}).get(p.script)
            cells += [f"{r['cold']:.2f}", f"{r['warm']:.2f}", f"{r['rss_mb']:.0f}"] if r and not r["error"] else ["-", "-", "-"]
        lines.append(f"| {p.title} | " + " | ".join(cells) + " |")
    before = [s for s in sizes if "pages_before" in result[s]]
    if before:
        lines += ["", "| page, without records (before) | " + " | ".join(f"{s} cold | {s} warm" for s in before) + " |",
                  "|---|" + "---:|---:|" * len(before)]
        titles = {p.script: p.title for p in PAGES}
        for script in HEAVY:
            cells = []
            for s in before:
                r = result[s]["pages_before"][script]
                cells += ["failed", "-"] if "error" in r else [f"{r['cold']:.2f}", f"{r['warm']:.2f}"]
            lines.append(f"| {titles[script]} | " + " | ".join(cells) + " |")
    lines += ["", "| size | aee run without | with records | records inside the run | set on disk without | with | "
              "records | server peak without | with |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def secs(x: float) -> str:
        return f"{x:.1f} s" if x == x else "-"

    for s in sizes:
        w, o = result[s]["with"], result[s].get("without")
        sb, sa = result[s].get("server_before", {}), result[s]["server"]
        share = (f"{w['records_s']:.2f} s of {w['inner_run_s']:.1f} s "
                 f"(+{w['records_s'] / max(w['inner_run_s'] - w['records_s'], 1e-9) * 100:.1f}%)"
                 if w["records_s"] == w["records_s"] else "-")
        lines.append(f"| {s} ({w['answers']:,} answers) | {secs(o['run_s']) if o else '-'} | {secs(w['run_s'])} | {share} | "
                     + (f"{o['set_bytes'] / 1e6:.1f} MB | " if o else "- | "))
        lines[-1] += (f"{w['set_bytes'] / 1e6:.1f} MB | {w['record_bytes'] / 1e6:.1f} MB | "
                      f"{sb.get('peak_mb', float('nan')):.0f} MB | {sa.get('peak_mb', float('nan')):.0f} MB |")
    return "\n".join(lines) + "\n"


def bench_first_views(quick: bool, cost_row: Callable[..., Any], skipped: Callable[..., Any]) -> list:
    """Rows t5 (module docstring). --quick: one skipped row (four builds and ~40 fresh processes)."""
    if quick:
        return [skipped("t5. first views with the pages' records", "full sizes only (python bench/first_views.py "
                        "--sizes 1k,20k)")]
    import tempfile

    with tempfile.TemporaryDirectory(prefix="aee-first-views-") as tmp:
        return rows(measure(("1k", "20k"), Path(tmp), say=lambda _: None), cost_row, skipped)


if __name__ == "__main__":
    import argparse
    import json

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    parser = argparse.ArgumentParser(description="first views of every page with the pages' records (rows t5)")
    parser.add_argument("--sizes", default="1k,20k", help="comma-separated: tiny, 1k, 20k, 140k (first = baseline)")
    parser.add_argument("--keep", help="folder that keeps (and reuses) the built result sets")
    parser.add_argument("--skip-plain", default="", help="sizes built with records only (no before)")
    args = parser.parse_args()
    import tempfile

    from rows import cost_row as _cost
    from rows import skipped as _skip
    from table import text_table

    keep = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="aee-first-views-"))
    print(f"load average at the start: {os.getloadavg()}", flush=True)
    found = measure(tuple(s.strip() for s in args.sizes.split(",")), keep,
                    tuple(s.strip() for s in args.skip_plain.split(",") if s.strip()))
    (keep / "first_views.json").write_text(json.dumps(found, default=str, indent=1))
    print(text_table(rows(found, _cost, _skip)))
    print(table(found))
    print(f"load average at the end: {os.getloadavg()}", flush=True)
