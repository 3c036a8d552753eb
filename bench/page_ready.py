"""Per-page ready time in a real browser (Debian's chromium via Playwright), cold and warm, plus a
full-page screenshot of each page and a list of every request that left 127.0.0.1.

"Ready" is the time from navigation until the page's title (h1) is shown and the script run has
finished (no running indicator for three checks in a row, 0.2 s apart; the 0.6 s of quiet is
subtracted). "Cold" is the first visit to a page after the server started (empty data caches);
"warm" is a second visit in a fresh browser tab, when the server's caches are filled.

    .venv/bin/python bench/page_ready.py                      # starts its own server on the results folder
    .venv/bin/python bench/page_ready.py --url http://127.0.0.1:8501 --shots /tmp/shots
    .venv/bin/python bench/page_ready.py --pages scorecard,study --query dataset=expertqa
    .venv/bin/python bench/page_ready.py --server-side   # no browser: each page's script under AppTest

--server-side runs each page in a fresh process with Streamlit's AppTest, twice (cold caches, then
warm), and prints wall and CPU seconds of the script run; CPU seconds hardly move when other
processes load the machine, wall seconds in a browser do.

Timings on a shared 2-core machine are noisy: compare runs on the same machine only.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

from pipeline.testing.app_server import CHROMIUM, CHROMIUM_ARGS, free_port, start_app, stop_app, wait_idle

ROOT = Path(__file__).resolve().parent.parent
QUIET_CHECKS, QUIET_STEP = 3, 0.2


def start_server(port: int) -> subprocess.Popen:
    """The dashboard (`streamlit run dashboard/serve.py`) on 127.0.0.1:port; returns once /_stcore/health answers."""
    try:
        return start_app(port, root=ROOT)
    except RuntimeError as exc:
        raise SystemExit(f"error: {exc}") from exc


def wait_ready(pg, timeout: float = 120) -> None:
    """Until the page shows its h1 and the script run has been idle for QUIET_CHECKS checks."""
    wait_idle(pg, timeout, ready="[data-testid=stMain] h1", step=QUIET_STEP, checks=QUIET_CHECKS)


def page_slugs() -> list[str]:
    from dashboard.pages_registry import PAGES

    return [p.script.removesuffix(".py") for p in PAGES]


_SERVER_SIDE = """
import sys, time
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(sys.argv[1], default_timeout=300)
for visit in ("cold", "warm"):
    wall, cpu = time.perf_counter(), time.process_time()
    at.run()
    print(visit, time.perf_counter() - wall, time.process_time() - cpu, bool(at.exception))
"""


def server_side(slugs: list[str]) -> int:
    """Each page's script under AppTest in a fresh process: (cold, warm) wall and CPU seconds."""
    pages_dir = ROOT / "pages"  # this checkout's pages (not an installed copy's)
    print(f"{'page':<14} {'cold wall':>9} {'cold cpu':>9} {'warm wall':>9} {'warm cpu':>9}")
    failed = False
    for slug in slugs:
        out = subprocess.run([sys.executable, "-c", _SERVER_SIDE, str(pages_dir / f"{slug}.py")], cwd=ROOT,
                             capture_output=True, text=True, timeout=900)
        rows = {parts[0]: parts[1:] for parts in (line.split() for line in out.stdout.splitlines()) if parts}
        if set(rows) != {"cold", "warm"} or any(r[2] == "True" for r in rows.values()):
            print(f"{slug:<14} failed: {out.stderr.strip().splitlines()[-1:] or out.stdout}")
            failed = True
            continue
        cold, warm = rows["cold"], rows["warm"]
        print(f"{slug:<14} {float(cold[0]):9.2f} {float(cold[1]):9.2f} {float(warm[0]):9.2f} {float(warm[1]):9.2f}")
    return 1 if failed else 0


FLOOR_SCRIPT = "import streamlit as st\n\nst.title(\"Floor\")\n"


def start_floor(folder: Path, port: int) -> subprocess.Popen:
    """A Streamlit app that shows one title and nothing else, on 127.0.0.1:port: what any page costs
    before its own content (the frontend, the websocket, a script run), to time pages against."""
    script = folder / "floor.py"
    script.write_text(FLOOR_SCRIPT, encoding="utf-8")
    return start_app(port, root=folder, script=str(script))


def measure(url: str, slugs: list[str], query: str = "", warm_visits: int = 1, shots: Path | None = None,
            width: int = 1280, floor_url: str | None = None) -> tuple[dict[str, list[float]], list[str]]:
    """{page: [cold, warm, warm, ...]} seconds until each page is ready, every visit in a fresh
    browser context (no session: the server runs the page's script from the start), cold visits of
    all pages first, then the warm ones; and every request that left 127.0.0.1. With `floor_url`,
    each warm visit of a page is paired with a visit of that bare app right before it, stored under
    "floor:<page>", so a page's own cost can be read apart from the machine's load at that moment."""
    from playwright.sync_api import sync_playwright

    outside: list[str] = []
    times: dict[str, list[float]] = {s: [] for s in slugs}
    if floor_url:
        times.update({f"floor:{s}": [] for s in slugs})
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        for visit in range(1 + warm_visits):
            for slug in slugs:
                if floor_url and visit:
                    ctx = browser.new_context(viewport={"width": width, "height": 1000})
                    pg = ctx.new_page()
                    start = time.perf_counter()
                    pg.goto(floor_url)
                    wait_ready(pg)
                    times[f"floor:{slug}"].append(time.perf_counter() - start - QUIET_CHECKS * QUIET_STEP)
                    ctx.close()
                ctx = browser.new_context(viewport={"width": width, "height": 1000})
                pg = ctx.new_page()
                pg.on("request", lambda r: outside.append(r.url)
                      if urlparse(r.url).hostname not in {"127.0.0.1", "localhost", None} and
                      not r.url.startswith(("data:", "blob:")) else None)
                target = f"{url}/{'' if slug == 'home' else slug}" + (f"?{query}" if query else "")
                start = time.perf_counter()
                pg.goto(target)
                wait_ready(pg)
                times[slug].append(time.perf_counter() - start - QUIET_CHECKS * QUIET_STEP)
                if shots and visit == warm_visits:
                    height = pg.evaluate("Math.max(1000, document.querySelector('[data-testid=stMain]')"
                                         "?.scrollHeight || 0)")
                    pg.set_viewport_size({"width": width, "height": min(int(height) + 40, 9000)})
                    time.sleep(0.8)
                    pg.screenshot(path=str(shots / f"{slug}.png"), full_page=True)
                ctx.close()
        browser.close()
    return times, outside


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running app (default: start one on a free port)")
    parser.add_argument("--pages", help="comma-separated page slugs (default: every page in the registry)")
    parser.add_argument("--query", default="", help="query string added to every page URL, e.g. dataset=expertqa")
    parser.add_argument("--shots", help="folder for full-page screenshots (default: none)")
    parser.add_argument("--server-side", action="store_true", help="AppTest in a fresh process per page, no browser")
    args = parser.parse_args()
    if args.server_side:
        return server_side(args.pages.split(",") if args.pages else page_slugs())

    proc = None
    url = args.url
    if not url:
        port = free_port()
        proc = start_server(port)
        url = f"http://127.0.0.1:{port}"
    slugs = args.pages.split(",") if args.pages else page_slugs()
    shots = Path(args.shots) if args.shots else None
    if shots:
        shots.mkdir(parents=True, exist_ok=True)
    try:
        times, outside = measure(url, slugs, args.query, 1, shots)
    finally:
        if proc is not None:
            stop_app(proc)
    print(f"{'page':<14} {'cold s':>7} {'warm s':>7}")
    for slug in slugs:
        cold, warm = times[slug][:2]
        print(f"{slug:<14} {cold:7.2f} {warm:7.2f}")
    print(f"requests outside 127.0.0.1: {len(outside)}")
    for u in sorted(set(outside)):
        print(f"  {u}")
    return 1 if outside else 0


if __name__ == "__main__":
    raise SystemExit(main())
