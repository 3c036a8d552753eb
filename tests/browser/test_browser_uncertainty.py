"""Uncertain labels and the second opinion in a real browser (Debian's chromium, Playwright):
hovering an uncertain citation shows the ≈ marker, the judge's reliability line and a link to the
Judges page; on Re-score one click gives a second opinion (the openai judge against the local fake
server). Screenshots go to tests/artifacts/ (gitignored)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from openai_fixtures import TEST_KEY, smart_reply
from test_browser_answers import ARTIFACTS, _idle

from pipeline.testing.app_server import CHROMIUM, free_port, start_app, stop_app
from pipeline.testing.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.browser

try:
    from playwright.sync_api import expect
except ImportError:
    pytest.skip("the playwright Python package is not installed", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fake():
    with FakeOpenAIServer() as server:
        server.handler = smart_reply({"support": "none"})
        yield server


@pytest.fixture(scope="module")
def server(tmp_path_factory, fake):
    from pipeline.importers import known_datasets
    from pipeline.runner import run_dataset

    base = tmp_path_factory.mktemp("browser_uncertainty")
    results = base / "results"
    run_dataset("demo", known_datasets()["demo"].path, judge_name="offline", root=results, progress=False, use_cache=False)
    env = dict(os.environ)
    env.update({"AEE_RESULTS_DIR": str(results), "AEE_STUDIES_DIR": str(base / "studies"), "AEE_CACHE_DIR": str(base / "cache"),
                "HF_HUB_OFFLINE": "1", "AEE_OPENAI_BASE_URL": fake.base_url, "AEE_OPENAI_API_KEY": TEST_KEY,
                "AEE_OPENAI_MODEL": "fake-model"})
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AEE_NLI_MODEL", "AEE_MINICHECK_BASE_URL"):
        env.pop(name, None)
    port = free_port()
    proc = start_app(port, root=ROOT, env=env)
    yield f"http://127.0.0.1:{port}", results
    stop_app(proc)


@pytest.fixture
def page(browser):
    if not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    ctx = browser.new_context(viewport={"width": 1280, "height": 1000})
    yield ctx.new_page()
    ctx.close()


def _uncertain_answer(results: Path, monkeypatch) -> str:
    from dashboard import data
    from pipeline.report.scoring import answer_report

    monkeypatch.setenv("AEE_RESULTS_DIR", str(results))
    for aid, annotated in sorted(data.annotated_answers("demo", "offline").items()):
        cited = {(st.index, c) for st in annotated.statements for c in st.citations}
        # a chip is drawn for a cited pair only: the answer needs an uncertain label on one
        if any((u["statement"], u["source"]) in cited for u in answer_report(annotated)["uncertain_support"]):
            return aid
    pytest.fail("no uncertain support label on a cited pair in the teaching corpus under the offline judge")


def test_hovering_an_uncertain_citation_shows_the_mark_reliability_and_link(page, server, monkeypatch):
    url, results = server
    answer = _uncertain_answer(results, monkeypatch)
    page.goto(f"{url}/inspector?dataset=demo&judge=offline&answer={answer}")
    page.wait_for_selector("h1:has-text('Answer inspector')", timeout=90_000)
    _idle(page)
    chip = page.locator("button.cite.unc").first
    expect(chip).to_be_visible(timeout=30_000)
    assert "≈" in chip.inner_text() and "uncertain" in (chip.get_attribute("aria-label") or "")
    expect(page.get_by_test_id("legend-uncertain")).to_be_visible()
    chip.hover()
    pop = page.get_by_test_id("citation-popover")
    expect(pop).to_be_visible()
    expect(page.get_by_test_id("popover-uncertain")).to_contain_text("Uncertain: score")
    line = page.get_by_test_id("popover-reliability")
    expect(line).to_contain_text("offline judge:")
    link = line.get_by_role("link", name="Judges page")
    assert link.get_attribute("href") == "judges"
    assert "None" not in pop.inner_text() and "nan" not in pop.inner_text()
    page.screenshot(path=str(ARTIFACTS / "uncertain-popover.png"))
    # the Flags panel counts them apart
    expect(page.get_by_text(re.compile(r"\d+ support labels? uncertain")).first).to_be_visible()


def test_rescore_second_opinion_in_one_click(page, server):
    url, _ = server
    page.goto(f"{url}/rescore")
    page.wait_for_selector("h1:has-text('Re-score an answer')", timeout=90_000)
    _idle(page)
    page.get_by_role("button", name="Load example", exact=True).click()
    _idle(page)
    page.get_by_role("button", name="Score", exact=True).click()
    page.wait_for_selector("text=Metrics for this answer", timeout=120_000)
    _idle(page)
    box = page.locator("[data-testid=stSelectbox]").filter(
        has=page.locator("[data-testid=stWidgetLabel]", has_text="Second judge")).first
    expect(box).to_be_visible(timeout=30_000)
    box.click()
    page.keyboard.type("openai")
    page.keyboard.press("Enter")
    _idle(page)
    expect(page.get_by_role("combobox", name="Second judge")).to_have_value("openai")
    page.get_by_role("button", name="Get a second opinion", exact=True).click()
    page.wait_for_selector("text=Second opinion: offline vs openai", timeout=120_000)
    _idle(page)
    assert page.locator("[data-testid=stException]").count() == 0
    assert page.get_by_text("labels differ between the two judges").count() == 1
    page.screenshot(path=str(ARTIFACTS / "rescore-second-opinion.png"), full_page=True)
