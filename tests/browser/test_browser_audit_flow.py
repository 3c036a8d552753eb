"""The whole audit once, as a researcher does it in a real browser (Debian's chromium via Playwright):
draw a sample of the teaching corpus on the Audit the judge page, label ten items with the keyboard,
read the agreement on the Judges page and publish the labels as the judge `human:audit`, see the
corrected (PPI) columns on the Scorecard, and pick `human:audit` in the Answer inspector. With AEE_SHOTS=1 (tests/shots.py), screenshots
at 1280 and 800 px go to tests/artifacts/. Never runs `playwright install`."""

from __future__ import annotations

import os
import re
import time

import pytest
from audit_fixtures import build_audit_results
from shots import SHOTS_ON
from test_browser import ARTIFACTS, ROOT, _no_error  # noqa: F401 (skips the module without chromium)

from pipeline.testing.app_server import free_port, start_app, stop_app, wait_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

from playwright.sync_api import expect  # noqa: E402  (test_browser skipped the module if it is missing)

KEYS = "1213121312"  # ten answers: full, partial, full, none, ...


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("browser_audit_flow")
    root = build_audit_results(base)
    env = dict(os.environ)
    env.update({"AEE_RESULTS_DIR": str(root), "AEE_CACHE_DIR": str(base / "cache"), "HF_HUB_OFFLINE": "1",
                "PYTHONUNBUFFERED": "1"})
    port = free_port()
    proc = start_app(port, root=ROOT, env=env, log=base / "streamlit.log")
    try:
        yield f"http://127.0.0.1:{port}", root
    finally:
        stop_app(proc)


def _main(pg):
    return pg.locator("[data-testid=stMain]")


def _shots(pg, name: str, anchor: str | None = None, height: int = 1400) -> None:
    """The page (or the part from `anchor` down) at 1280 and 800 px (with AEE_SHOTS=1, tests/shots.py)."""
    if not SHOTS_ON:
        return
    for width in (1280, 800):
        pg.set_viewport_size({"width": width, "height": 1000})
        time.sleep(0.6)
        wait_idle(pg)
        full = int(pg.evaluate("Math.max(1000, document.querySelector('[data-testid=stMain]')?.scrollHeight || 0)"))
        pg.set_viewport_size({"width": width, "height": min(full + 40, 9000)})
        time.sleep(0.8)
        top = 0.0
        if anchor:
            box = pg.get_by_text(anchor).first.bounding_box()
            top = max(0.0, (box or {"y": 0.0})["y"] - 20)
        pg.screenshot(path=str(ARTIFACTS / f"{name}_{width}.png"),
                      clip={"x": 0, "y": top, "width": width, "height": min(height, full + 40 - top)})
    pg.set_viewport_size({"width": 1280, "height": 1000})


def test_a_researcher_audits_the_judge_end_to_end(browser, server):
    url, root = server
    pg = browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()

    # 1. draw a sample of the teaching corpus under the scripted judge
    pg.goto(f"{url}/audit?dataset=demo")
    pg.wait_for_selector("h1:has-text('Audit the judge')", timeout=90_000)
    wait_idle(pg)
    pg.get_by_text("Draw a sample", exact=True).click()
    wait_idle(pg)
    pg.get_by_label("Judge to audit").click()
    pg.get_by_role("option", name="scripted", exact=True).click()
    wait_idle(pg)
    pg.get_by_role("spinbutton", name="Items (about)").fill("100")  # the page drafts more (enough for every engine); this flow wants 100
    pg.get_by_role("button", name="Draw and register the sample").click()
    expect(_main(pg)).to_contain_text("Sample demo-scripted-pair-all-n100-s0", timeout=90_000)
    wait_idle(pg)
    assert "Once people have labelled items" in _main(pg).inner_text()  # nothing to publish yet

    # 2. label ten items with the keyboard
    pg.get_by_text("Label", exact=True).first.click()
    wait_idle(pg)
    pg.get_by_role("textbox", name="Your name").fill("Ana")
    pg.get_by_role("button", name="Start labelling").click()
    pg.wait_for_selector("[data-testid=audit-item]", timeout=90_000)
    wait_idle(pg)
    total = int(re.search(r"Item 1 of (\d+)", _main(pg).inner_text()).group(1))
    for k, key in enumerate(KEYS, start=1):
        pg.keyboard.press(key)
        expect(_main(pg)).to_contain_text(f"Item {k + 1} of {total}", timeout=60_000)
        wait_idle(pg)
    assert f"10 of {total} answered" in _main(pg).inner_text()
    _shots(pg, "audit_flow_label")

    # 3. the Judges page: Ana against the judge; publish her labels as the judge human:audit
    pg.goto(f"{url}/judges")
    pg.wait_for_selector("h1", timeout=90_000)
    wait_idle(pg)
    expect(_main(pg)).to_contain_text("Judge scripted against each person", timeout=90_000)
    section = _main(pg).inner_text()
    assert re.search(r"Ana\s+10\s+", section), section[section.find("against each person"):][:400]
    pg.get_by_role("button", name="Publish as judge human:audit").click()
    expect(_main(pg)).to_contain_text("published judge human:audit of demo: labels of 1 person (Ana)", timeout=120_000)
    wait_idle(pg)
    _shots(pg, "audit_flow_judges", anchor="Checked by people: audits of the judge", height=2300)

    # 4. the Scorecard's corrected columns for the audited judge
    pg.goto(f"{url}/scorecard?dataset=demo&judge=scripted")
    pg.wait_for_selector("h1", timeout=90_000)
    wait_idle(pg)
    toggle = pg.get_by_text("Show the corrected values beside the judge's")
    toggle.scroll_into_view_if_needed()
    toggle.click()
    expect(_main(pg)).to_contain_text("corrected (PPI) [95%]", timeout=90_000)
    wait_idle(pg)
    text = _main(pg).inner_text()
    # ten labels cannot carry an interval: the cell says how many more it needs, and shows no value
    assert re.search(r"Citation accuracy: needs \d+ more labelled statements", text), text[text.find("corrected (PPI)"):][:600]
    # a colleague labels the rest of the sample (written to the same label store the page writes)
    from pipeline.audit.labels import LabelStore, labels_path
    from pipeline.audit.sample import load_sample

    sample = load_sample("demo-scripted-pair-all-n100-s0", root)
    LabelStore(labels_path(root)).record_many(
        [(sample.sample_id, item, "Ben", "support", ("full", "none", "full", "partial")[k % 4])
         for k, item in enumerate(sample.items["item_id"])], "test")
    pg.reload()
    pg.wait_for_selector("h1", timeout=90_000)
    wait_idle(pg)
    expect(_main(pg)).to_contain_text("corrected (PPI) [95%]", timeout=90_000)
    wait_idle(pg)
    text = _main(pg).inner_text()
    row = text[text.find("Citation accuracy", text.find("corrected (PPI)")):][:400]
    assert re.search(r"\d+\.\d%\s*\[\d+\.\d%, \d+\.\d%\]", row), row  # a corrected value with its interval
    _shots(pg, "audit_flow_scorecard", anchor="Checked by people: corrected values", height=1300)

    # 5. the people as a judge in the Answer inspector, from the Judges page's link: an answer Ana labelled
    pg.goto(f"{url}/judges")
    pg.wait_for_selector("h1", timeout=90_000)
    wait_idle(pg)
    link = pg.get_by_role("link", name="The Answer inspector with human:audit")
    link.scroll_into_view_if_needed()
    link.click()
    pg.wait_for_selector("h1:has-text('Answer inspector')", timeout=90_000)
    wait_idle(pg)
    expect(_main(pg)).to_contain_text("human:audit labels: what the people who audited a sample here said",
                                      timeout=60_000)
    text = _main(pg).inner_text()
    assert "judge: human:audit" in text
    assert "Not checked: all" not in text  # the linked answer holds some of Ana's labels
    _no_error(pg)
    _shots(pg, "audit_flow_inspector", height=1600)
