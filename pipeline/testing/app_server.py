"""The dashboard served on 127.0.0.1 for browser tests and benchmarks (`tests/browser/test_browser*.py`,
`tests/browser/test_concurrency.py`, `bench/page_ready.py`): start the dashboard from a checkout as `aee app`
does (`streamlit run dashboard/serve.py`: the app plus the page-address middleware)
on a free port and wait until it answers, stop it, and wait until a Playwright page has finished
its script run. Debian's chromium and the flags every run gives it are named here once.

Nothing here imports Streamlit or Playwright: the app runs in a child process and a page is
whatever Playwright page object the caller holds.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Mapping

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "IDLE_CHECK", "free_port", "idle_key", "start_app", "stop_app", "wait_idle"]


def _chromium() -> Path:
    """Debian's chromium; AEE_CHROMIUM names another. Not Debian's chromium-headless-shell, though it
    costs less (the widths test took 167 CPU-seconds with it against 194 with the whole browser, once),
    but it lays text out a few pixels wider (a select box's value measured 155 px in a 150 px box there
    and fit in chromium), and these tests check what a reader's browser shows (2026-11-29)."""
    return Path(os.environ.get("AEE_CHROMIUM") or "/usr/bin/chromium")


CHROMIUM = _chromium()
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
HEALTH_TIMEOUT = 300.0  # a hang guard: the wait ends when /_stcore/health answers (~2 s quiet, more when loaded)
SERVE = "dashboard/serve.py"  # the ASGI entry `aee app` runs (relative to the checkout)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(port: int, *, root: Path, env: Mapping[str, str] | None = None, log: Path | None = None,
              extra: tuple[str, ...] = (), script: str = SERVE, address: str = "127.0.0.1") -> subprocess.Popen:
    """`streamlit run dashboard/serve.py` (or another `script`) in the checkout `root`, on 127.0.0.1:`port`,
    with `env` (default: this process's) and `extra` Streamlit options; returns once /_stcore/health answers "ok".
    `address` is another loopback address (127.0.0.2) for a server that plays "served to a network"
    (dashboard.room_gate) without leaving the machine; anything outside 127.0.0.0/8 is refused.
    Its output goes to `log` when given (and ends the error when the server exits early), else
    nowhere. RuntimeError when it exits or does not answer within HEALTH_TIMEOUT (then it is killed)."""
    if not address.startswith("127."):
        raise ValueError(f"test servers listen on 127.0.0.0/8 only, not {address}")
    cmd = [sys.executable, "-m", "streamlit", "run", script, "--server.headless", "true", "--server.port", str(port),
           "--server.address", address, "--browser.gatherUsageStats", "false", *extra]
    if log is None:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    else:
        with log.open("wb") as out:  # the child keeps its own handle
            proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + HEALTH_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            said = log.read_text(errors="replace")[-2000:] if log is not None else f"exit code {proc.returncode}"
            raise RuntimeError(f"streamlit exited: {said}")
        try:
            with urllib.request.urlopen(f"http://{address}:{port}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"streamlit did not answer /_stcore/health within {HEALTH_TIMEOUT:g} s")


def stop_app(proc: subprocess.Popen) -> None:
    """Ask the server to stop; kill it when it has not within 10 s."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


# One look: is the page still changing? Busy while a script run is requested or in progress (the
# status widget shows while Streamlit reruns) and while any element is still a skeleton: Streamlit
# loads most element kinds' code on first use (React.lazy) and shows `stSkeleton` meanwhile, so in a
# fresh browser context under load the run can be over while widgets, tables and charts are not yet
# drawn (CI once read a reopened page with its headings but none of its widgets). The count of quiet
# looks in a row lives on `window`, so a navigation starts it again at 0.
IDLE_CHECK = """([checks, key]) => {
  const app = document.querySelector('[data-testid=stApp]');
  const state = app ? app.getAttribute('data-test-script-state') : 'initial';
  const busy = !app || state === 'running' || state === 'rerunRequested'
               || !!document.querySelector('[data-testid=stStatusWidget]')
               || !!document.querySelector('[data-testid=stSkeleton]');
  window[key] = busy ? 0 : (window[key] || 0) + 1;
  return window[key] >= checks;
}"""


def idle_key() -> str:
    """A fresh name for one wait's count of quiet looks (a wait never inherits an earlier one's)."""
    return f"__aeeQuiet{time.monotonic_ns()}"


def wait_idle(page: Any, timeout: float = 90, *, ready: str = "[data-testid=stMain]", step: float = 0.4,
              checks: int = 3) -> None:
    """Wait until `ready` is on the page and no script run has been in progress for `checks` looks
    in a row, `step` seconds apart. After `timeout` seconds it returns anyway: what the caller
    looks for next says what did not appear.

    The looks run inside the page (Playwright's wait_for_function polling), not from here, where each
    look was two round trips through Playwright's driver."""
    page.wait_for_selector(ready, timeout=timeout * 1000)
    try:
        page.wait_for_function(IDLE_CHECK, arg=[checks, idle_key()], polling=step * 1000, timeout=timeout * 1000)
    except Exception as exc:  # Playwright's TimeoutError (not imported here: see the module doc)
        if "Timeout" not in type(exc).__name__:
            raise
