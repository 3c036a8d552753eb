"""Twenty people at once on one real Streamlit server (Debian's chromium through async Playwright).

Each of 20 browser contexts (one browser) opens Re-score (with AEE_CROWD_SESSION=full, first the
Scorecard and then the Answer inspector, as bench/run.py row w does), where it pastes its own query and answer (distinct marker text per user) and
runs a score with the offline judge. We time page-ready (navigation or click until a known element
of the page is visible), assert all 20 succeed, and assert session state never leaks: every user
sees its own marker in the re-score inputs and result, and no other user's marker anywhere.
p50/p95 go to stdout and tests/artifacts/concurrency.json (gitignored). Never runs
`playwright install`.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
import uuid
from pathlib import Path

import pytest
from timing import guard, guard_ms

from pipeline.testing.app_server import CHROMIUM, CHROMIUM_ARGS, IDLE_CHECK, free_port, idle_key, start_app, stop_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
USERS = 20
# Each user's visit: "short" (the default) opens Re-score straight away, types and scores (where
# the session state lives, so where a leak would show); "full" first opens the Scorecard and the
# Answer inspector as a reader would. bench/run.py row w runs this test with full sessions and
# reports their page-ready times.
SESSION = os.environ.get("AEE_CROWD_SESSION", "short")
# What this test asserts is that all 20 users succeed and none sees another's data; the timings
# are reported, not asserted. On two cores shared by the server and 20 renderers the slowest page
# took 143 s once while other work loaded the machine, so a step may wait up to 5 minutes, times the
# slowdown measured at the start (tests/timing.py).
WAIT_MS = guard_ms(100)

if not CHROMIUM.exists():
    pytest.skip("no /usr/bin/chromium (apt-get install -y chromium chromium-driver)", allow_module_level=True)
try:
    from playwright.async_api import TimeoutError as PlaywrightTimeout
    from playwright.async_api import async_playwright
except ImportError:
    pytest.skip("the playwright Python package is not installed", allow_module_level=True)
_missing = [p for p in ("app.py", "pages/scorecard.py", "pages/inspector.py") if not (ROOT / p).is_file()]
if _missing:
    pytest.skip(f"the app is not complete yet: missing {', '.join(_missing)}", allow_module_level=True)
HAS_RESCORE = (ROOT / "pages" / "rescore.py").is_file()

ANSWER_LABEL = "Answer (markdown with markers such as [1] or [2, 3])"
SOURCE_TEXT_LABEL = "[1] Text of the source (leave empty to fetch it from the URL)"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from pipeline.runner import run_dataset

    base = tmp_path_factory.mktemp("concurrency")
    results = base / "results"
    run_dataset("demo", root=results, progress=False)
    env = dict(os.environ)
    env.update({"AEE_RESULTS_DIR": str(results), "AEE_STUDIES_DIR": str(base / "studies"),
                "AEE_CACHE_DIR": str(base / "cache"), "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"})
    for name in ("OPENAI_API_KEY", "AEE_OPENAI_API_KEY", "AEE_OPENAI_BASE_URL", "OPENAI_BASE_URL"):
        env.pop(name, None)
    port = free_port()
    proc = start_app(port, root=ROOT, env=env, log=base / "streamlit.log")
    try:
        yield {"url": f"http://127.0.0.1:{port}", "pid": proc.pid}
    finally:
        stop_app(proc)


async def _idle(page, timeout: float | None = None) -> None:
    """Wait until no script run is in progress for ~1 s (three quiet looks inside the page)."""
    try:
        await page.wait_for_function(IDLE_CHECK, arg=[3, idle_key()], polling=350, timeout=(timeout or guard(40)) * 1000)
    except PlaywrightTimeout:
        raise TimeoutError("the page kept running for too long") from None


async def _fill(page, label: str, value: str) -> None:
    box = page.get_by_role("textbox", name=label, exact=True)
    await box.fill(value)
    await box.press("Tab")  # streamlit commits text widgets on blur
    await _idle(page)


async def _no_error(page, where: str) -> None:
    errors = page.locator("[data-testid=stException]")
    if await errors.count():
        raise AssertionError(f"{where}: {await errors.first.inner_text()}")


async def _user(browser, server: str, k: int, marker: str, markers: list[str]) -> dict:
    """One user's visit; returns its page-ready times (seconds) and what it saw."""
    ctx = await browser.new_context(viewport={"width": 1280, "height": 1000})
    page = await ctx.new_page()
    page.set_default_timeout(WAIT_MS)
    ready: dict[str, float] = {}
    try:
        if SESSION == "full" or not HAS_RESCORE:
            t = time.perf_counter()
            await page.goto(f"{server}/scorecard", timeout=WAIT_MS)
            await page.get_by_role("tab", name="Table").first.wait_for(state="visible")
            ready["scorecard"] = time.perf_counter() - t
            await _idle(page)
            await _no_error(page, "scorecard")

            t = time.perf_counter()
            await page.locator("[data-testid=stSidebarNav]").get_by_role("link", name="Answer inspector").click()
            await page.locator("[data-testid=answer-view]").first.wait_for(state="visible")
            ready["inspector"] = time.perf_counter() - t
            await _idle(page)
            await _no_error(page, "inspector")

        if HAS_RESCORE:
            t = time.perf_counter()
            if SESSION == "full":
                await page.locator("[data-testid=stSidebarNav]").get_by_role("link", name="Re-score").click()
            else:
                await page.goto(f"{server}/rescore", timeout=WAIT_MS)
            await page.get_by_role("textbox", name="Query", exact=True).wait_for(state="visible")
            ready["rescore"] = time.perf_counter() - t
            await _idle(page)
            query = f"Should zoos be abolished, asks {marker}?"
            answer = f"Zoos keep animals in small enclosures, notes {marker} [1]."
            await _fill(page, "Query", query)
            await _fill(page, ANSWER_LABEL, answer)
            await _fill(page, "[1] Title", f"Enclosures {marker}")
            await _fill(page, SOURCE_TEXT_LABEL, "Most zoo enclosures are small compared with wild ranges.")
            t = time.perf_counter()
            await page.get_by_role("button", name="Score", exact=True).click()
            await page.get_by_text("Metrics for this answer").first.wait_for(state="visible")
            ready["rescore_scored"] = time.perf_counter() - t
            await _idle(page)
            await _no_error(page, "re-score")
            # what this session shows: its own inputs and result, nobody else's
            seen_query = await page.get_by_role("textbox", name="Query", exact=True).input_value()
            seen_answer = await page.get_by_role("textbox", name=ANSWER_LABEL, exact=True).input_value()
            shown = await page.locator("[data-testid=stMain]").inner_text()
            view = await page.locator("[data-testid=answer-view]").first.inner_text()
            others = [m for m in markers if m != marker and (m in shown or m in view or m in seen_query or m in seen_answer)]
            assert seen_query == query, f"user {k} sees query {seen_query!r}"
            assert seen_answer == answer, f"user {k} sees answer {seen_answer!r}"
            assert marker in view, f"user {k}'s result does not show its own answer"
            assert not others, f"user {k} sees other users' text: {others}"
        return {"user": k, "ready": ready}
    finally:
        await ctx.close()


async def _crowd(server: str) -> tuple[list, float]:
    markers = [f"user{k:02d}x{uuid.uuid4().hex[:8]}" for k in range(USERS)]
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            # warm the server once (imports, the offline judge's model) so the crowd measures serving
            warm = await _user(browser, server, -1, "warmupuser", ["warmupuser"])
            t = time.perf_counter()
            results = await asyncio.gather(*(_user(browser, server, k, markers[k], markers) for k in range(USERS)),
                                           return_exceptions=True)
            wall = time.perf_counter() - t
        finally:
            await browser.close()
    return [warm, *results], wall


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process so far (Linux /proc), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def test_twenty_concurrent_users(server):
    started = time.perf_counter()
    cpu_before = _cpu_seconds(server["pid"])
    (warm, *results), wall = asyncio.run(_crowd(server["url"]))
    cpu_after = _cpu_seconds(server["pid"])
    failures = [f"user {k}: {type(r).__name__}: {r}" for k, r in enumerate(results) if isinstance(r, BaseException)]
    assert not failures, "\n".join(failures)
    assert len(results) == USERS

    report: dict = {"users": USERS, "session": SESSION, "crowd_wall_seconds": round(wall, 2),
                    "total_seconds": round(time.perf_counter() - started, 2),
                    "server_cpu_seconds": None if cpu_before is None or cpu_after is None else round(cpu_after - cpu_before, 1),
                    "cores": os.cpu_count(),
                    "rescore_step": "run" if HAS_RESCORE else "skipped: pages/rescore.py is absent",
                    "warmup_seconds": {k: round(v, 2) for k, v in warm["ready"].items()}, "pages": {}}
    for name in results[0]["ready"]:
        times = [r["ready"][name] for r in results]
        report["pages"][name] = {"p50": round(_pct(times, 50), 3), "p95": round(_pct(times, 95), 3),
                                 "max": round(max(times), 3), "n": len(times)}
    everything = [v for r in results for v in r["ready"].values()]
    report["all"] = {"p50": round(_pct(everything, 50), 3), "p95": round(_pct(everything, 95), 3)}
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "concurrency.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"\n{USERS} concurrent users on {os.cpu_count()} cores, crowd wall {wall:.1f} s, streamlit server CPU "
          f"{report['server_cpu_seconds']} s incl. warm-up user (page-ready seconds):")
    for name, s in report["pages"].items():
        print(f"  {name:<16} p50 {s['p50']:6.2f}  p95 {s['p95']:6.2f}  max {s['max']:6.2f}")
    if not HAS_RESCORE:
        print("  re-score step skipped: pages/rescore.py is absent")
