"""The real app in a real browser: Debian's chromium driven by Playwright against `streamlit run`.

Checks every page of the navigation renders, the answer component's popover, live re-scoring,
that hostile answer text never runs as script, and that study mode logs hovers and clicks.
Screenshots go to tests/artifacts/ (gitignored). Never runs `playwright install`.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from shots import SHOTS_ON
from timing import guard_ms

from pipeline.testing.app_server import CHROMIUM, free_port, start_app, stop_app, wait_idle

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
WORKED = ROOT / "tests" / "fixtures" / "worked_example.json"
HOSTILE = ('Zoos harm animals <img src=x onerror="window.__pwned=1"> [1]. '
           '<script>window.__pwned=1</script> Read [this](javascript:window.__pwned=1) [2].')

if not CHROMIUM.exists():
    pytest.skip("no /usr/bin/chromium (apt-get install -y chromium chromium-driver)", allow_module_level=True)
try:
    from playwright.sync_api import expect
except ImportError:
    pytest.skip("the playwright Python package is not installed", allow_module_level=True)
if not (ROOT / "app.py").is_file():
    pytest.skip("app.py (the navigation) is not in the project yet", allow_module_level=True)


@pytest.fixture(scope="module")
def server_env(tmp_path_factory):
    from pipeline.runner import run_dataset

    base = tmp_path_factory.mktemp("browser")
    results = base / "results"
    run_dataset("fig7", WORKED, root=results, progress=False)
    env = dict(os.environ)
    env.update({"AEE_RESULTS_DIR": str(results), "AEE_STUDIES_DIR": str(base / "studies"),
                "AEE_CACHE_DIR": str(base / "cache"), "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"})
    for name in ("OPENAI_API_KEY", "AEE_OPENAI_API_KEY"):
        env.pop(name, None)
    return env


@pytest.fixture(scope="module")
def server(server_env, tmp_path_factory):
    port = free_port()
    proc = start_app(port, root=ROOT, env=server_env, log=tmp_path_factory.mktemp("streamlit") / "streamlit.log")
    yield f"http://127.0.0.1:{port}"
    stop_app(proc)


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1280, "height": 1000})
    pg = ctx.new_page()
    yield pg
    ctx.close()


def _open(pg, server: str, title: str) -> None:
    pg.goto(server)
    pg.wait_for_selector("[data-testid=stSidebarNav]", timeout=90_000)
    wait_idle(pg)
    pg.locator("[data-testid=stSidebarNav]").get_by_role("link", name=title).click()
    pg.wait_for_selector(f"h1:has-text('{title.split()[0]}')", timeout=90_000)
    wait_idle(pg)


def _no_error(pg) -> None:
    assert pg.locator("[data-testid=stException]").count() == 0, pg.locator("[data-testid=stException]").first.inner_text()
    assert "Traceback" not in pg.locator("[data-testid=stMain]").inner_text()


def _shot(pg, name: str) -> None:
    if not SHOTS_ON:  # tests/shots.py: AEE_SHOTS=1 takes them
        return
    height = pg.evaluate("Math.max(1000, document.querySelector('[data-testid=stMain]')?.scrollHeight || 0)")
    pg.set_viewport_size({"width": 1280, "height": min(int(height) + 40, 8000)})
    time.sleep(0.8)
    pg.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    pg.set_viewport_size({"width": 1280, "height": 1000})


def _pwned(pg) -> list:
    out = []
    for frame in pg.frames:
        try:
            out.append(frame.evaluate("() => window.__pwned === undefined ? null : window.__pwned"))
        except Exception as exc:  # a frame that went away
            out.append(f"unreadable: {type(exc).__name__}")
    return [v for v in out if v is not None]


def _fill(locator, value: str) -> None:
    locator.fill(value)
    locator.press("Tab")  # streamlit commits text widgets on blur


def test_every_page_renders(page, server):
    page.goto(server)
    page.wait_for_selector("[data-testid=stSidebarNav]", timeout=90_000)
    wait_idle(page)
    links = page.locator("[data-testid=stSidebarNav] a")
    titles = [links.nth(k).inner_text().strip().splitlines()[-1].strip() for k in range(links.count())]
    assert "Answer inspector" in titles and "Re-score" in titles
    for title in titles:
        page.locator("[data-testid=stSidebarNav]").get_by_role("link", name=title).click()
        page.wait_for_selector("[data-testid=stMain] h1", timeout=90_000)
        wait_idle(page)
        _no_error(page)
        _shot(page, "page-" + re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-"))


def test_inspector_hover_shows_source_passage(page, server):
    _open(page, server, "Answer inspector")
    _no_error(page)
    chip = page.locator("button.cite[data-source='1']").first
    chip.scroll_into_view_if_needed()
    chip.hover()
    pop = page.locator("[data-testid=citation-popover]")
    expect(pop).to_be_visible(timeout=guard_ms(10))
    text = pop.inner_text()
    assert "Source one" in text and "https://a.example.org/1" in text
    assert "Start of the source text" in text and "one" in text
    assert "full" in text  # the judge's label for statement 1 x source 1
    link = pop.locator(".url a")  # the source link (the popover also links the Judges page)
    assert link.get_attribute("rel") == "noopener noreferrer" and link.get_attribute("href") == "https://a.example.org/1"
    _shot(page, "inspector-hover")
    # click pins it; Escape closes it
    chip.click()
    expect(pop).to_be_visible()
    page.keyboard.press("Escape")
    expect(pop).to_be_hidden()


def _paste_answer(page, answer: str, sources: list[tuple[str, str, str]]) -> None:
    _fill(page.get_by_role("textbox", name="Query", exact=True), "Should zoos be abolished?")
    _fill(page.get_by_role("textbox", name="Answer (markdown with markers such as [1] or [2, 3])", exact=True), answer)
    wait_idle(page)
    n = page.get_by_role("spinbutton", name="Number of sources")
    _fill(n, str(len(sources)))
    wait_idle(page)
    for k, (title, url, text) in enumerate(sources, start=1):
        _fill(page.get_by_role("textbox", name=f"[{k}] Title", exact=True), title)
        _fill(page.get_by_role("textbox", name=f"[{k}] URL", exact=True), url)
        _fill(page.get_by_role("textbox", name=f"[{k}] Text of the source (leave empty to fetch it from the URL)", exact=True), text)
    wait_idle(page)
    page.get_by_role("button", name="Score", exact=True).click()
    page.wait_for_selector("text=Metrics for this answer", timeout=120_000)
    wait_idle(page)


def test_rescore_scores_a_pasted_answer(page, server):
    _open(page, server, "Re-score")
    _paste_answer(page, "Zoos keep animals in small enclosures [1]. Many visitors learn about wildlife [2].",
                  [("Enclosures", "https://a.example.org/z", "Most zoo enclosures are small compared with wild ranges."),
                   ("Visitors", "https://b.example.org/v", "Surveys show visitors learn about wildlife at zoos.")])
    _no_error(page)
    expect(page.locator("button.cite")).to_have_count(2, timeout=30_000)  # the component mounts after the run
    assert page.locator(".stmt").count() >= 2
    assert page.get_by_text("Citation accuracy").count() >= 1
    _shot(page, "rescore-scored")


def test_hostile_answer_runs_no_script(page, server):
    _open(page, server, "Re-score")
    _paste_answer(page, HOSTILE,
                  [('<img src=x onerror="window.__pwned=1">', "javascript:window.__pwned=1", "<script>window.__pwned=1</script> text"),
                   ("<b>two</b>", "https://b.example.org/<script>", 'plain "quoted" <svg onload="window.__pwned=1">')])
    _no_error(page)
    chips = page.locator("button.cite")
    expect(chips.nth(1)).to_be_attached(timeout=30_000)  # the component mounts after the script run
    for k in range(chips.count()):
        chips.nth(k).scroll_into_view_if_needed()
        chips.nth(k).hover()
        time.sleep(0.3)
        chips.nth(k).click()
        time.sleep(0.3)
    pop = page.locator("[data-testid=citation-popover]")
    assert "not a web link" in pop.inner_text() or page.locator("button.cite[data-source='1']").count()
    assert page.locator("a[href^='javascript']").count() == 0
    assert page.locator("img[src=x]").count() == 0 and page.locator("script:has-text('__pwned')").count() == 0
    assert "<script>window.__pwned=1</script>" in page.locator("[data-testid=answer-view]").inner_text()
    time.sleep(1)
    assert _pwned(page) == []
    _shot(page, "rescore-hostile")


def test_study_mode_logs_hover_and_click(page, server, server_env, monkeypatch):
    monkeypatch.setenv("AEE_STUDIES_DIR", server_env["AEE_STUDIES_DIR"])
    from pipeline.study import recorder

    _open(page, server, "Answer inspector")
    page.get_by_text("Study mode", exact=True).click()
    wait_idle(page)
    _fill(page.get_by_role("textbox", name="Study id", exact=True), "browser-study")
    _fill(page.get_by_role("textbox", name="Participant code", exact=True), "P01")
    _fill(page.get_by_role("textbox", name="Session", exact=True), "s1")
    page.wait_for_selector("text=Recording for participant P01", timeout=30_000)
    wait_idle(page)
    chip2 = page.locator("button.cite[data-source='2']").first
    chip2.scroll_into_view_if_needed()
    chip2.hover()
    time.sleep(1.5)  # hovers are sent after a short pause
    wait_idle(page)
    chip3 = page.locator("button.cite[data-source='3']").first
    chip3.click()
    deadline = time.monotonic() + 30
    log = recorder.load_study_log("browser-study")
    while time.monotonic() < deadline and not {"hover", "click"} <= set(log["event"]):
        time.sleep(0.5)
        log = recorder.load_study_log("browser-study")
    assert {"hover", "click"} <= set(log["event"]), log
    hover = log[log["event"] == "hover"].iloc[0]
    click = log[log["event"] == "click"].iloc[0]
    assert hover["source_rank"] == 2 and click["source_rank"] == 3
    assert set(log["participant"]) == {"P01"} and set(log["engine"]) == {"Example engine"}
    assert set(log["query_type"]) == {"debate"}
    # the answer itself was recorded as shown, with its five sources displayed, before any hover
    assert (log["event"] == "shown").sum() == 1 and set(log.loc[log["event"] == "displayed", "source_rank"]) == {1, 2, 3, 4, 5}
    wait_idle(page)
    assert page.get_by_text(re.compile(r"Recorded in this browser session: 1 answer\(s\) shown, [1-9]\d* event")).count() == 1
    # the participant leaves (the tab is hidden): the time the answer was on screen is reported
    time.sleep(1.0)
    page.evaluate("Object.defineProperty(document, 'hidden', {value: true, configurable: true});"
                  "document.dispatchEvent(new Event('visibilitychange'))")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "dwell" not in set(log["event"]):
        time.sleep(0.5)
        log = recorder.load_study_log("browser-study")
    dwell = log.loc[log["event"] == "dwell", "dwell_seconds"]
    assert len(dwell) == 1 and 1.0 <= float(dwell.iloc[0]) < 600, log
    page.evaluate("Object.defineProperty(document, 'hidden', {value: false, configurable: true});"
                  "document.dispatchEvent(new Event('visibilitychange'))")
    _shot(page, "inspector-study-mode")

    # The study page then finds the recorded study and counts what was logged. Hovers and clicks
    # arrive as beacons, one request each, and a busy machine may still be writing one: the count is
    # taken once the log has stopped growing.
    n_events, deadline = -1, time.monotonic() + 30  # a hang guard
    while time.monotonic() < deadline:
        logged = len(recorder.load_study_log("browser-study"))
        if logged == n_events:
            break
        n_events = logged
        time.sleep(1.0)
    page.locator("[data-testid=stSidebarNav]").get_by_role("link", name="Usability study").click()
    page.wait_for_selector("h1:has-text('Usability')", timeout=90_000)
    wait_idle(page)
    page.get_by_text("Recorded study", exact=True).first.click()
    wait_idle(page)
    page.wait_for_selector(f"text={n_events} recorded events", timeout=60_000)
    assert page.get_by_text(f"{n_events} recorded events").count() >= 1
    _shot(page, "study-recorded")


def test_conflict_page_shows_a_probe_run(page, server, server_env):
    from conflict_fixtures import write_probe_run

    write_probe_run(Path(server_env["AEE_RESULTS_DIR"]))  # the page lists runs on every script run
    _open(page, server, "Conflicting evidence")
    _no_error(page)
    expect(page.get_by_text("None of the 5 sources listed by the 1 debate answer has")).to_be_visible(timeout=30_000)
    page.get_by_role("tab", name="Convincingness probe").click()
    wait_idle(page)
    expect(page.get_by_text("This run used the bundled illustrative question set")).to_be_visible(timeout=30_000)
    main = page.locator("[data-testid=stMain]")
    expect(main.locator(".js-plotly-plot")).to_have_count(2, timeout=30_000)  # effects and win-rates
    page.locator("[data-testid=stMain] .js-plotly-plot").first.scroll_into_view_if_needed()
    assert "relevance_prefix vs control" in main.locator(".js-plotly-plot").first.inner_text()
    assert "First passage's side taken" in main.inner_text() and "100.0%" in main.inner_text()
    _no_error(page)
    _shot(page, "conflict-probe")


def test_dark_theme_screenshots(browser, server_env, tmp_path):
    port = free_port()
    proc = start_app(port, root=ROOT, env=server_env, log=tmp_path / "streamlit.log", extra=("--theme.base", "dark"))
    try:
        ctx = browser.new_context(viewport={"width": 1280, "height": 1000}, color_scheme="dark")
        pg = ctx.new_page()
        _open(pg, f"http://127.0.0.1:{port}", "Answer inspector")
        _no_error(pg)
        chip = pg.locator("button.cite[data-source='2']").first
        chip.scroll_into_view_if_needed()
        chip.hover()
        expect(pg.locator("[data-testid=citation-popover]")).to_be_visible(timeout=guard_ms(10))
        _shot(pg, "inspector-dark")
        ctx.close()
    finally:
        stop_app(proc)


def test_artifacts_are_ignored():
    ignored = (ROOT / ".gitignore").read_text()
    assert "tests/artifacts/" in ignored


def test_rescore_paste_anything_fills_the_form_then_scores(page, server):
    _open(page, server, "Re-score")
    pasted = ("Zoos keep animals in small enclosures [1]. Many visitors learn about wildlife [2].\n\nSources:\n"
              "[1] Enclosures <b>big</b> - https://a.example.org/z\n[2] https://b.example.org/v")
    _fill(page.get_by_role("textbox", name="Paste anything", exact=True), pasted)
    wait_idle(page)
    page.get_by_role("button", name="Fill the form", exact=True).click()
    wait_idle(page)
    _no_error(page)
    assert page.get_by_role("textbox", name="[1] URL", exact=True).input_value() == "https://a.example.org/z"
    assert page.get_by_role("textbox", name="[1] Title", exact=True).input_value() == "Enclosures <b>big</b>"
    assert "2 source(s)" in page.locator("[data-testid=stMain]").inner_text()
    for k, text in ((1, "Most zoo enclosures are small compared with wild ranges."),
                    (2, "Surveys show visitors learn about wildlife at zoos.")):
        _fill(page.get_by_role("textbox", name=f"[{k}] Text of the source (leave empty to fetch it from the URL)", exact=True), text)
    _fill(page.get_by_role("textbox", name="Query", exact=True), "Should zoos be abolished?")
    wait_idle(page)
    page.get_by_role("button", name="Score", exact=True).click()
    page.wait_for_selector("text=Metrics for this answer", timeout=120_000)
    wait_idle(page)
    assert page.locator("button.cite").count() == 2 and page.locator("b:has-text('big')").count() == 0
    _shot(page, "rescore-paste")
    page.get_by_role("button", name="Clear", exact=True).click()
    wait_idle(page)
    assert page.get_by_role("textbox", name="Paste anything", exact=True).input_value() == ""
    assert page.locator("text=Metrics for this answer").count() == 0


def test_the_last_answer_is_timed_when_the_participant_closes_the_tab(browser, server, server_env, monkeypatch):
    """Issue 45 item 12: the time on the answer a participant read last was lost when they closed the
    tab (the component's state message needs a script run the closed page never gets). A beacon
    (dashboard/study_beacon.py) carries it as the page goes away: closing the tab, or going to another site."""
    monkeypatch.setenv("AEE_STUDIES_DIR", server_env["AEE_STUDIES_DIR"])
    from pipeline.study import recorder

    for study, leave in (("leave-close", "close"), ("leave-away", "away")):
        ctx = browser.new_context(viewport={"width": 390, "height": 900})
        pg = ctx.new_page()
        pg.goto(f"{server}/inspector?study={study}")
        pg.wait_for_selector("h1:has-text('Answer inspector')", timeout=90_000)
        wait_idle(pg)
        _fill(pg.get_by_role("textbox", name="Participant code", exact=True), "P09")
        pg.wait_for_selector("text=Recording for participant P09", timeout=30_000)
        wait_idle(pg)
        pg.locator("[data-testid=answer-view]").first.wait_for(timeout=30_000)
        started = time.monotonic()
        time.sleep(2.0)  # reading
        if leave == "close":
            pg.close(run_before_unload=True)
        else:
            pg.goto("about:blank")
        read = time.monotonic() - started
        deadline = time.monotonic() + 30
        log = recorder.load_study_log(study)
        while time.monotonic() < deadline and "dwell" not in set(log["event"]):
            time.sleep(0.5)
            log = recorder.load_study_log(study)
        ctx.close()
        dwell = log.loc[log["event"] == "dwell", "dwell_seconds"]
        assert len(dwell) == 1, (leave, log)  # once, though both visibilitychange and pagehide fired
        # on screen from before the 2 s of reading until the page went: at least those 2 s, and not
        # more than the whole visit (a hang guard's slack for a loaded machine)
        assert 2.0 <= float(dwell.iloc[0]) <= read + 60, (leave, float(dwell.iloc[0]), read)
        assert set(log.loc[log["event"] == "dwell", "participant"]) == {"P09"}
        assert (log["event"] == "shown").sum() == 1


def test_the_idle_wait_waits_for_skeletons_and_requested_runs(page):
    """`wait_idle` is what every browser test reads a page after. A page whose script run is over can
    still be drawing: Streamlit shows a `stSkeleton` while an element kind's code loads, and between a
    widget change and the run it asks for the state is `rerunRequested`. CI once read a reopened page
    with its headings but none of its widgets. A static page stands in for the app here: the wait
    must not call either state idle, and must call the page idle once they are gone."""
    from pipeline.testing.app_server import IDLE_CHECK, idle_key

    def quiet_within(seconds: float) -> bool:
        try:
            page.wait_for_function(IDLE_CHECK, arg=[3, idle_key()], polling=100, timeout=seconds * 1000)
            return True
        except Exception as exc:  # Playwright's TimeoutError
            assert "Timeout" in type(exc).__name__, exc
            return False

    page.set_content('<div data-testid="stApp" data-test-script-state="notRunning">'
                     '<section data-testid="stMain"><h1>Page</h1><div data-testid="stSkeleton"></div></section></div>')
    assert not quiet_within(1.5), "a skeleton (an element still loading) counted as idle"
    page.evaluate("document.querySelector('[data-testid=stSkeleton]').remove()")
    assert quiet_within(guard_ms(20) / 1000), "the page without a skeleton never counted as idle"
    page.evaluate("document.querySelector('[data-testid=stApp]').setAttribute('data-test-script-state', 'rerunRequested')")
    assert not quiet_within(1.5), "a requested rerun counted as idle"
    page.evaluate("document.querySelector('[data-testid=stApp]').setAttribute('data-test-script-state', 'running')")
    assert not quiet_within(1.5), "a running script counted as idle"
    page.evaluate("document.querySelector('[data-testid=stApp]').setAttribute('data-test-script-state', 'notRunning')")
    assert quiet_within(guard_ms(20) / 1000)
