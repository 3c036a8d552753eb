"""Runs `aee` with a crash hook on the write path's named points (pipeline/storage/faults.py).

    python tests/crash_driver.py LOG KILL_AT -- run --dataset ... (any `aee` arguments)

Every point the run passes is appended to LOG, one name a line. With KILL_AT = n > 0 the process
sends itself SIGKILL right after the n-th point: a real kill -9, nothing cleans up. `run_in_child`
does the same in a process forked from a multiprocessing fork server that has imported the
pipeline already (a trial then costs the run, not the imports).
"""

from __future__ import annotations

import os
import signal
import sys


def main() -> int:
    log_path, kill_at = sys.argv[1], int(sys.argv[2])
    return run(log_path, kill_at, sys.argv[sys.argv.index("--") + 1:])


def run_in_child(log_path: str, kill_at: int, argv: list[str], env: dict[str, str]) -> None:
    """A multiprocessing target: `run` with these environment variables; exits with its code."""
    from pipeline.testing.crash_trials import apply_env

    apply_env(env)  # also what the pipeline read at import in the fork server
    code = run(log_path, kill_at, argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run(log_path: str, kill_at: int, argv: list[str]) -> int:
    from pipeline.cli import main as aee
    from pipeline.storage import faults

    seen = 0
    log = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 - open until the process ends or is killed

    def hook(name: str) -> None:
        nonlocal seen
        seen += 1
        log.write(name + "\n")
        log.flush()
        if seen == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    faults.set_hook(hook)
    return aee(argv)


if __name__ == "__main__":
    # Run as a script, Python puts tests/ first on sys.path, and tests/pipeline/ (the pipeline's tests,
    # a folder without __init__) would then be taken for the `pipeline` package when the package is
    # installed in editable mode (its finder comes after the path's). The checkout's root goes first.
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
