"""Scale rows of the benchmark: a whole run on synthetic corpora of growing size.

A corpus of N answers is made by resampling ExpertQA's questions (each line of its files holds one
question answered by several systems; lines are drawn with replacement, with a fixed seed, and
written again, so every copy gets its own answer ids), or the teaching corpus when ExpertQA is not
on this machine (answers copied with new ids). Each size runs `aee run` in its own process with
fresh results and cache folders; the wall time, the process's CPU time and its peak resident memory
(VmHWM) are read from that process. With `--executor ray` the runs go to a Ray cluster started on
this machine's loopback for the benchmark (pipeline/testing/ray_cluster.py, `--ray-cpus` CPUs,
stopped at the end); CPU time and memory are then the driver's (the process running `aee run`),
not the workers'.

Targets (issues 12 and 26): time grows linearly (20k / 1k time ratio <= 22, on either executor) and
the driver's peak memory stays flat (20k within 1.3x of 1k: the runner streams chunks; nothing
holds the whole corpus). On a machine shared with other work the wall time is noisy; the CPU time
ratio says what the code costs.

    .venv/bin/python bench/scale.py --sizes 1000,5000,20000 --judge human --executor local,ray
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# Runs the CLI in this process and reports the process's peak RSS on stderr at exit: its own
# high-water mark, VmHWM, which starts afresh at exec. (ru_maxrss does not: Linux carries the forking
# parent's peak across exec, so it would report the benchmark's own size.)
_RSS_WRAPPER = """
import resource, sys
from pipeline.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:")).split()[1]
usage = resource.getrusage(resource.RUSAGE_SELF)
sys.stderr.write("\\nBENCH_VMHWM_KB %s\\nBENCH_CPU_S %.3f\\n" % (hwm, usage.ru_utime + usage.ru_stime))
sys.exit(code)
"""


def make_corpus(size: int, folder: Path, seed: int = 7) -> tuple[Path, str, str]:
    """Write a corpus of at least `size` answers; returns (path, format, judge with labels)."""
    from pipeline.storage.paths import data_dir, expertqa_dir

    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    source = expertqa_dir()
    if source is not None:
        lines = [line for f in sorted(source.glob("*.jsonl")) for line in f.read_text(encoding="utf-8").splitlines()
                 if line.strip()]
        counts = [len(json.loads(line).get("answers") or {}) for line in lines]
        path = folder / "scale.jsonl"
        total = 0
        with path.open("w", encoding="utf-8") as out:
            while total < size:
                k = rng.randrange(len(lines))
                out.write(lines[k] + "\n")  # answer ids come from the line number: every copy is new
                total += counts[k]
        return path, "expertqa", "human"
    demo = [json.loads(line) for line in (data_dir() / "demo" / "answers.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]
    path = folder / "scale.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for i in range(size):
            obj = dict(rng.choice(demo))
            obj["answer_id"] = f"{obj['answer_id']}-copy{i}"
            out.write(json.dumps(obj, ensure_ascii=False) + "\n")
    return path, "canonical", "recorded"


def measured_run(cli_args: list[str], tmp: Path, name: str, timeout: float, what: str,
                 env: dict[str, str] | None = None) -> tuple[str, float, float]:
    """`aee <cli_args>` in a fresh process with its own results and cache folders under `tmp`
    (named after `name`): (its stdout, wall seconds, peak RSS in MB). RuntimeError naming `what`
    when the run fails, or when the peak is not reported. `env`: the environment to start from."""
    stdout, seconds, peak_mb, _ = measured_run_cpu(cli_args, tmp, name, timeout, what, env)
    return stdout, seconds, peak_mb


def measured_run_cpu(cli_args: list[str], tmp: Path, name: str, timeout: float, what: str,
                     env: dict[str, str] | None = None) -> tuple[str, float, float, float]:
    """`measured_run`, plus the process's CPU seconds (user + system)."""
    env = dict(os.environ if env is None else env)
    env.update({"AEE_RESULTS_DIR": str(tmp / f"results-{name}"), "AEE_CACHE_DIR": str(tmp / f"cache-{name}"),
                "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"})
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _RSS_WRAPPER, *cli_args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{what} exited {proc.returncode}: {proc.stderr.strip()[-400:]}")
    match = re.search(r"BENCH_VMHWM_KB (\d+)", proc.stderr)
    cpu = re.search(r"BENCH_CPU_S ([0-9.]+)", proc.stderr)
    if not match or not cpu:
        raise RuntimeError("peak RSS not reported (needs Linux /proc)")
    return proc.stdout, seconds, int(match.group(1)) / 1024, float(cpu.group(1))


def run_size(size: int, judge: str | None, tmp: Path, cluster: Any = None) -> dict:
    """One end-to-end run of a corpus of `size` answers in a fresh process: seconds, CPU seconds and
    peak MB (on the Ray `cluster` when one is given)."""
    path, fmt, carried = make_corpus(size, tmp / f"corpus-{size}")
    judge = judge or carried
    args = ["run", "--dataset", f"scale-{size}", "--path", str(path), "--format", fmt, "--judge", judge,
            "--limit", str(size), "--no-progress"]
    executor = "local"
    if cluster is not None:
        executor = "ray"
        args += ["--executor", "ray", "--address", cluster.address]
    stdout, seconds, peak_mb, cpu = measured_run_cpu(args, tmp, f"{size}-{judge}-{executor}", 7200,
                                                     f"run of {size} answers ({executor})",
                                                     env=cluster.env() if cluster is not None else None)
    hits = re.search(r"judge cache: (\d+) hits, (\d+) misses", stdout)
    return {"size": size, "judge": judge, "format": fmt, "executor": executor, "seconds": round(seconds, 2),
            "cpu_seconds": round(cpu, 2), "peak_mb": round(peak_mb, 1),
            "cache_hits": int(hits.group(1)) if hits else None, "cache_misses": int(hits.group(2)) if hits else None}


def run_sizes(sizes: list[int], judge: str | None, executor: str = "local", ray_cpus: int = 2) -> list[dict]:
    """Every size in turn; with `executor` "ray", on one loopback cluster of `ray_cpus` CPUs started
    for these runs and stopped after them, whatever happens."""
    with tempfile.TemporaryDirectory() as tmp:
        if executor == "local":
            return [run_size(size, judge, Path(tmp)) for size in sizes]
        from pipeline.testing.ray_cluster import LoopbackCluster

        with LoopbackCluster(head_cpus=ray_cpus) as cluster:
            return [run_size(size, judge, Path(tmp), cluster) for size in sizes]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,5000,20000")
    ap.add_argument("--judge", default=None, help="judge to run (default: the labels the corpus carries)")
    ap.add_argument("--executor", default="local", help="local, ray, or both: local,ray")
    ap.add_argument("--ray-cpus", type=int, default=2, help="CPUs of the loopback Ray cluster (default 2)")
    args = ap.parse_args(argv)
    for executor in args.executor.split(","):
        for result in run_sizes([int(s) for s in args.sizes.split(",")], args.judge, executor.strip(), args.ray_cpus):
            print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
