"""The answer pages in a real browser (Debian's chromium, Playwright; one server for the module):
selectors after a dataset switch, ExpertQA statements highlighted in place, the Compare page,
a shared link reopening the same view, and the downloaded HTML report read offline.

Fixture results: tests/answer_fixtures.py. Screenshots go to tests/artifacts/ (gitignored).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from answer_fixtures import HOSTILE, build_results
from shots import SHOTS_ON
from timing import guard, guard_ms

# test_browser_uncertainty takes ARTIFACTS and _idle (below) from this module
from pipeline.testing.app_server import CHROMIUM, start_app, stop_app, wait_idle
from pipeline.testing.app_server import free_port as _free_port

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"

if not CHROMIUM.exists():
    pytest.skip("no /usr/bin/chromium (apt-get install -y chromium chromium-driver)", allow_module_level=True)
try:
    from playwright.sync_api import expect
except ImportError:
    pytest.skip("the playwright Python package is not installed", allow_module_level=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("browser_answers")
    env = dict(os.environ)
    env.update({"AEE_RESULTS_DIR": str(build_results(base)), "AEE_STUDIES_DIR": str(base / "studies"),
                "AEE_CACHE_DIR": str(base / "cache"), "AEE_DATA_DIR": str(base / "data"), "HF_HUB_OFFLINE": "1"})
    port = _free_port()
    proc = start_app(port, root=ROOT, env=env)
    yield f"http://127.0.0.1:{port}"
    stop_app(proc)


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1280, "height": 1000}, accept_downloads=True)
    pg = ctx.new_page()
    yield pg
    ctx.close()


def _idle(pg, timeout: float = 90) -> None:
    """Wait until the script run finished and the page settled."""
    wait_idle(pg, timeout, step=0.3)


def _open(pg, url: str, heading: str) -> None:
    pg.goto(url)
    pg.wait_for_selector(f"h1:has-text('{heading}')", timeout=90_000)
    _idle(pg)
    assert pg.locator("[data-testid=stException]").count() == 0


def _box(pg, label: str):
    """A selectbox by its label, as a person sees it."""
    return pg.locator("[data-testid=stSelectbox]").filter(
        has=pg.locator("[data-testid=stWidgetLabel]", has_text=label)).first


def _shown(pg, label: str) -> str:
    """The value a selectbox displays (what a person reads in the box)."""
    box = pg.get_by_role("combobox", name=label).first
    return box.input_value() if box.evaluate("e => e.tagName") == "INPUT" else box.inner_text()


def _expect_shown(pg, label: str, value: str, timeout: float | None = None) -> None:
    deadline = time.monotonic() + (timeout or guard(10))
    while _shown(pg, label) != value and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _shown(pg, label) == value


def _choose(pg, label: str, option: str) -> None:
    _box(pg, label).click()
    pg.get_by_role("option", name=option, exact=True).click()
    _idle(pg)


def _shot(pg, name: str) -> None:
    if not SHOTS_ON:  # tests/shots.py: AEE_SHOTS=1 takes them
        return
    pg.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_dataset_switch_shows_values_of_the_new_dataset(page, server):
    _open(page, f"{server}/inspector", "Answer inspector")
    _choose(page, "Dataset", "fig7")
    _choose(page, "Judge", "scripted")
    _choose(page, "Engine", "Second engine")
    _expect_shown(page, "Engine", "Second engine")
    _choose(page, "Dataset", "eqa-mini")
    _expect_shown(page, "Judge", "human")
    assert _shown(page, "Engine") in {"bing_chat", "gpt4"}
    assert _shown(page, "Query") in {"How do tide pool animals survive low tide?",
                                     "What did a lighthouse keeper do each day?"}
    assert "judge: human" in page.locator("[data-testid=stCaptionContainer]").all_inner_texts()[1]
    _shot(page, "answers-dataset-switch")


def test_expertqa_statements_are_highlighted_in_place(page, server):
    _open(page, f"{server}/inspector?dataset=eqa-mini&answer=expertqa_mini%3A1%3Abing_chat", "Answer inspector")
    view = page.locator("[data-testid=answer-view]")
    expect(view).to_be_visible(timeout=30_000)
    assert "not located" not in view.inner_text()
    statements = view.locator(".aev-body .stmt")
    assert statements.count() == 4
    assert statements.nth(2).inner_text().startswith("✗Salinity changes after heavy rain")  # only partly supported
    assert "Temperature swings" in statements.nth(1).inner_text()  # the bullet stays inside its claim
    chip = statements.nth(2).locator("button.cite[data-source='2']")
    chip.scroll_into_view_if_needed()
    chip.hover()
    pop = page.locator("[data-testid=citation-popover]")
    expect(pop).to_be_visible(timeout=guard_ms(10))
    assert "Statement: 3" in pop.inner_text() and "partial" in pop.inner_text()
    assert "Rain lowers salinity" in pop.inner_text()  # the passage the experts saw
    _shot(page, "answers-expertqa-in-place")


def test_compare_two_engines_then_two_judges(page, server):
    _open(page, f"{server}/compare?view=engines&dataset=fig7&judge=recorded&answer=fig7&engine_b=Second+engine",
          "Compare")
    views = page.locator("[data-testid=answer-view]")
    expect(views).to_have_count(2, timeout=30_000)
    assert "Zoos confine animals in small spaces" in views.nth(1).inner_text()
    rows = page.locator("[data-testid=stTable] tr").filter(has_text="Citation accuracy")
    assert "50.00%" in rows.first.inner_text()  # Second engine: 1 of its 2 citations is accurate
    _shot(page, "answers-compare-engines")
    page.get_by_text("One answer, two judges", exact=True).click()
    _idle(page)
    _choose(page, "Judge B", "scripted")
    caption = page.get_by_text("items both judges decided differ")
    expect(caption).to_be_visible(timeout=30_000)
    assert "between judge A (recorded) and judge B (scripted)" in caption.inner_text()
    assert "view=judges" in page.url and "judge_b=scripted" in page.url
    _shot(page, "answers-compare-judges")


def test_a_shared_link_reopens_the_same_view(page, server, browser):
    _open(page, f"{server}/inspector?dataset=fig7&judge=scripted", "Answer inspector")
    _choose(page, "Engine", "Second engine")
    page.get_by_text("Paper parity", exact=True).click()
    _idle(page)
    page.get_by_role("button", name="Share this view").click()
    link = page.locator("[data-testid=stPopoverBody] code").first.inner_text().strip()
    assert link.startswith(f"{server}/inspector?") and "answer=second-zoo" in link and "mode=parity" in link
    assert link == page.url  # the address bar says the same
    other = browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()  # another reader
    try:
        _open(other, link, "Answer inspector")
        _expect_shown(other, "Engine", "Second engine")
        _expect_shown(other, "Judge", "scripted")
        assert other.get_by_role("radio", name="Paper parity").is_checked()
        assert "answer id: second-zoo" in other.get_by_text("answer id:").first.inner_text()
        _shot(other, "answers-shared-link")
    finally:
        other.context.close()


def test_html_report_downloads_and_reads_offline(page, server, browser, tmp_path):
    _open(page, f"{server}/inspector?dataset=fig7&judge=recorded&answer=hostile-zoo", "Answer inspector")
    with page.expect_download(timeout=30_000) as info:
        page.get_by_role("button", name="Download as HTML report").click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    assert path.name == "answer-report-hostile-zoo.html"
    doc = path.read_text(encoding="utf-8")
    assert "<script" not in doc.lower().replace("&lt;script", "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in doc  # the engine's name, as text
    ctx = browser.new_context(java_script_enabled=False, offline=True)
    try:
        reader = ctx.new_page()
        fetched: list[str] = []
        reader.on("request", lambda r: fetched.append(r.url))
        reader.goto(path.as_uri())
        text = reader.locator("body").inner_text()
        assert f"Engine: {HOSTILE}" in text
        for needle in ("Zoos confine animals in small spaces", "Some zoos fund conservation",
                       "How far to trust the judge", "Citation accuracy", "Citations: what the answer cites"):
            assert needle in text, needle
        assert fetched == [path.as_uri()]  # nothing else loaded
        if SHOTS_ON:
            reader.screenshot(path=str(ARTIFACTS / "answers-html-report.png"), full_page=True)
    finally:
        ctx.close()
