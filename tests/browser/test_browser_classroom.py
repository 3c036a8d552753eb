"""The classroom path in a real browser (Debian's chromium via Playwright): a teacher walks the four
steps of "Start here" on the teaching corpus, a class study comparing two engines gets its tests
(or the reason it cannot), and none of those pages asks anything of a host other than 127.0.0.1
(the favicon used to come from a font CDN). Screenshots go to tests/artifacts/. Never runs `playwright install`.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlparse

import pytest
from test_browser import ROOT, _no_error, _shot, page  # noqa: F401 (page: a fixture)

from pipeline.testing.app_server import free_port, start_app, stop_app, wait_idle

pytestmark = pytest.mark.browser

from playwright.sync_api import expect  # noqa: E402  (test_browser skipped the module if it is missing)


def _class_events(study: str, rows: list[tuple[str, str, int, int]]) -> None:
    """Record a class study: (participant, engine, sources hovered, sources clicked) per question."""
    from pipeline.study import recorder

    events = []
    for q, (participant, engine, hovers, clicks) in enumerate(rows):
        for event, n in (("hover", hovers), ("click", clicks)):
            events += [dict(participant=participant, session="s1", engine=engine, query_id=f"q{q}",
                            query_type="debate", alignment="none", event=event, source_rank=r)
                       for r in range(1, n + 1)]
    recorder.append_events(study, events)


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    """A server on the teaching corpus (its recorded labels) with two recorded class studies: one
    with three students per engine, one too small for a t test."""
    from pipeline.runner import run_dataset

    base = tmp_path_factory.mktemp("classroom")
    env = dict(os.environ)
    env.update({"AEE_RESULTS_DIR": str(base / "results"), "AEE_STUDIES_DIR": str(base / "studies"),
                "AEE_CACHE_DIR": str(base / "cache"), "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"})
    for name in ("OPENAI_API_KEY", "AEE_OPENAI_API_KEY"):
        env.pop(name, None)
    run_dataset("demo", progress=False, root=base / "results")
    with pytest.MonkeyPatch.context() as mp:  # the recorder writes where the server will read
        mp.setenv("AEE_STUDIES_DIR", env["AEE_STUDIES_DIR"])
        _class_events("class-a", [("P01", "Lumen", 3, 1), ("P01", "Parrot", 1, 0), ("P02", "Lumen", 4, 2),
                                  ("P02", "Parrot", 2, 1), ("P03", "Lumen", 2, 1), ("P03", "Parrot", 1, 0)])
        _class_events("class-b", [("P01", "Lumen", 3, 1), ("P02", "Parrot", 1, 0), ("P03", "Parrot", 2, 1)])
    port = free_port()
    proc = start_app(port, root=ROOT, env=env, log=base / "streamlit.log")
    yield f"http://127.0.0.1:{port}"
    stop_app(proc)


def _main_text(page) -> str:
    return page.locator("[data-testid=stMain]").inner_text()


def _back_to_tour(page) -> None:
    page.locator("[data-testid=stSidebarNav]").get_by_role("link", name="Start here").click()
    page.wait_for_selector("h1:has-text('Start here')", timeout=90_000)
    wait_idle(page)


def _tick(page, step: int) -> None:
    page.get_by_text("Done", exact=True).nth(step).click()
    wait_idle(page)


def _watch_requests(page) -> list[str]:
    """Every request the page makes to a host other than 127.0.0.1 (the favicon once came from a CDN)."""
    outside: list[str] = []
    page.on("request", lambda r: outside.append(r.url)
            if urlparse(r.url).hostname not in {"127.0.0.1", None} and not r.url.startswith(("data:", "blob:"))
            else None)
    return outside


def test_teacher_walks_the_four_steps(page, classroom):
    outside = _watch_requests(page)
    page.goto(f"{classroom}/tour")
    page.wait_for_selector("h1:has-text('Start here')", timeout=90_000)
    wait_idle(page)
    _no_error(page)
    assert "0 of 4 steps done" in _main_text(page)
    _shot(page, "tour-start")

    # Step 1: the scorecard opens on the teaching corpus with its recorded labels
    page.get_by_role("link", name="Open the scorecard (teaching corpus)").click()
    page.wait_for_selector("h1:has-text('Scorecard')", timeout=90_000)
    wait_idle(page)
    _no_error(page)
    assert "dataset=demo" in page.url and "judge=recorded" in page.url
    main = _main_text(page)
    assert "Teaching corpus · judge recorded" in main
    grid = page.locator("table.aee-grid").first.inner_text()
    assert "Uncited sources" in grid and "(%, ↓ better)" in grid
    sidebar = page.locator("[data-testid=stSidebar]").inner_text()
    assert "Teaching corpus is illustrative" in sidebar
    _shot(page, "tour-step1-scorecard")
    _back_to_tour(page)
    _tick(page, 0)
    expect(page.get_by_text("1 of 4 steps done")).to_be_visible()

    # Step 2: one answer of the teaching corpus in the inspector
    tour_text = _main_text(page)
    engine = re.search(r"up close: (Lumen|Parrot|Quarry)'s answer", tour_text).group(1)
    page.get_by_role("link", name="Open this answer in the Answer inspector").click()
    page.wait_for_selector("h1:has-text('Answer inspector')", timeout=90_000)
    wait_idle(page)
    _no_error(page)
    assert "dataset=demo" in page.url
    page.wait_for_selector("[data-testid=answer-view], iframe", timeout=60_000)
    assert re.search(r"Lumen|Parrot|Quarry", _main_text(page))  # a teaching-corpus answer, not another dataset's
    _shot(page, "tour-step2-inspector")
    _back_to_tour(page)
    assert "1 of 4 steps done" in _main_text(page)  # the tick survived the visit
    _tick(page, 1)

    # Step 3: Re-score opens with the same answer chosen as the teaching example; load and score it
    page.get_by_role("button", name="Open Re-score with this answer").click()
    page.wait_for_selector("h1:has-text('Re-score')", timeout=90_000)
    wait_idle(page)
    page.get_by_role("button", name="Load example").click()
    wait_idle(page)
    # the example the tour chose is the answer of step 2
    assert page.get_by_role("textbox", name="Engine", exact=True).input_value() == engine
    page.get_by_role("button", name="Score", exact=True).click()
    page.wait_for_selector("text=Metrics for this answer", timeout=180_000)
    wait_idle(page)
    _no_error(page)
    _shot(page, "tour-step3-rescore")
    _back_to_tour(page)
    _tick(page, 2)

    # Step 4: nothing is recorded under today's class id yet, so its button is off and says why; the
    # last study recorded on this machine opens by link instead
    expect(page.get_by_role("button", name="Open the recorded study")).to_be_disabled()
    assert "Nothing recorded in" in _main_text(page)
    page.get_by_role("link", name=re.compile("Open the last study recorded on this machine")).click()
    page.wait_for_selector("h1:has-text('Usability')", timeout=90_000)
    wait_idle(page)
    _no_error(page)
    main = _main_text(page)
    assert "participant x question rows" in main and "log=recorded" in page.url
    expect(page.get_by_text("Lumen vs Parrot").first).to_be_visible()
    _shot(page, "tour-step4-study")
    _back_to_tour(page)
    _tick(page, 3)
    expect(page.get_by_text("All four steps done")).to_be_visible()
    _shot(page, "tour-done")
    icon = page.locator("link[rel*=icon]").first.get_attribute("href") or ""
    assert not icon.startswith("http") or urlparse(icon).hostname == "127.0.0.1", icon
    assert outside == []  # overview of requests over tour, scorecard, inspector, re-score and study


def _recorded(page, server: str, study: str) -> str:
    page.goto(f"{server}/study")
    page.wait_for_selector("h1:has-text('Usability')", timeout=90_000)
    wait_idle(page)
    page.get_by_text("Recorded study", exact=True).first.click()
    wait_idle(page)
    box = page.get_by_role("combobox", name=re.compile("Recorded study"))
    box.click()
    page.get_by_role("option", name=study, exact=True).click()
    wait_idle(page)
    _no_error(page)
    return _main_text(page)


def test_class_study_comparing_two_engines_gets_its_tests_or_the_reason(page, classroom):
    outside = _watch_requests(page)
    text = _recorded(page, classroom, "class-a")
    # Lumen hovered 3, 4, 2 and Parrot 1, 2, 1: Student t = 2.50 on 4 df (hand-checked)
    table = page.locator("[data-testid=stTable]").filter(has_text="Lumen vs Parrot").first
    expect(table).to_be_visible()
    assert re.search(r"2\.50 \(df.4\)", table.inner_text())
    assert "3.00 ± 1.00" in table.inner_text() and "1.33 ± 0.58" in table.inner_text()
    assert "None" not in text and "nan" not in text
    _shot(page, "study-class-two-engines")

    # a class too small for a t test: the table says why instead of printing blanks
    box = page.get_by_role("combobox", name=re.compile("Recorded study"))
    box.click()
    page.get_by_role("option", name="class-b", exact=True).click()
    wait_idle(page)
    table = page.locator("[data-testid=stTable]").filter(has_text="Lumen vs Parrot").first
    expect(table).to_contain_text("n/a: too few participants")
    expect(page.get_by_text(re.compile(r"hovered: too few participants: Lumen has 1 row \(1 participant\)"))).to_be_visible()
    _shot(page, "study-class-too-small")
    assert outside == []
