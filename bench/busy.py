"""Keep the CPUs busy while something else runs: N processes that spin until told to stop.

The test suite must pass on a loaded machine (its time limits only guard hangs), and this is how to
show it:

    .venv/bin/python bench/busy.py --procs 6 -- .venv/bin/python -m pytest -q -n 2
    .venv/bin/python bench/busy.py --procs 6 -- make test

or from Python:

    with busy_loops(6):
        ...

The spinners run at normal priority (each wants a whole core, as another session's tests would),
are started before the command and killed after it, whatever happens to it; the command's exit
status is returned. The load average before and after is printed to stderr so a report can quote it.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any


def _spin() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    x = 0
    while True:  # pure-Python arithmetic: one core per process, no memory traffic to speak of
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF


def load_average() -> str:
    """The 1, 5 and 15 minute load averages from /proc/loadavg, or '?' off Linux."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


@contextlib.contextmanager
def busy_loops(procs: int) -> Iterator[list[Any]]:
    """`procs` busy-loop processes for the duration of the block; always stopped at its end."""
    ctx = multiprocessing.get_context("spawn")  # no copy of the caller's state, nothing inherited to clean up
    spinners = [ctx.Process(target=_spin, name=f"busy-{k}", daemon=True) for k in range(procs)]
    try:
        for p in spinners:
            p.start()
        yield spinners
    finally:
        for p in spinners:
            if p.is_alive():
                p.terminate()
        for p in spinners:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run a command beside N busy-loop processes (a loaded machine).",
                                     usage="%(prog)s [--procs N] -- COMMAND [ARGS...]")
    parser.add_argument("--procs", type=int, default=6, help="busy-loop processes (default 6)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.procs < 0:
        parser.error("--procs must be 0 or more")
    if not command:
        parser.error("give the command to run after --")
    print(f"[busy] load average before: {load_average()}; starting {args.procs} busy loops", file=sys.stderr, flush=True)
    started = time.monotonic()
    with busy_loops(args.procs):
        try:
            code = subprocess.call(command)
        except KeyboardInterrupt:
            code = 130
        at_end = load_average()
    print(f"[busy] {' '.join(command)}: exit {code} after {time.monotonic() - started:.0f} s; "
          f"load average at its end: {at_end}; busy loops stopped", file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
