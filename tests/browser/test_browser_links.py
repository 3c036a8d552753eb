"""Every page's address reopens what the page showed: in a real browser (Debian's chromium through
Playwright), each page is opened, its controls are changed the way a reader would, and the address
it then shows is opened in a fresh browser context (no session, no cookies). What the main area
shows must be the same. A page opened directly must not ask for anything that answers 4xx (it once
asked `/<page>/_stcore/health` and `/<page>/_stcore/host-config` first).

Screenshots of both views go to tests/artifacts/ (gitignored). Never runs `playwright install`.
"""

from __future__ import annotations

import os
import re
import time

import pytest
from test_browser import ROOT, _no_error, _shot  # noqa: F401 (also skips without chromium)

from pipeline.testing.app_server import free_port, start_app, stop_app, wait_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

from playwright.sync_api import expect  # noqa: E402  (test_browser skipped the module if it is missing)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The teaching corpus under two judges (its recorded labels, the lexical offline judge), the
    ExpertQA sample (fields) and a recorded class study."""
    from pipeline.runner import run_dataset
    from pipeline.study import recorder

    base = tmp_path_factory.mktemp("links")
    env = dict(os.environ)
    env.update({"AEE_RESULTS_DIR": str(base / "results"), "AEE_STUDIES_DIR": str(base / "studies"),
                "AEE_CACHE_DIR": str(base / "cache"), "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"})
    for name in ("OPENAI_API_KEY", "AEE_OPENAI_API_KEY"):
        env.pop(name, None)
    run_dataset("demo", progress=False, root=base / "results")
    run_dataset("demo", judge_name="offline:lexical", progress=False, root=base / "results")
    run_dataset("expertqa", ROOT / "tests" / "fixtures" / "expertqa_mini.jsonl", progress=False, root=base / "results")
    with pytest.MonkeyPatch.context() as mp:  # the recorder writes where the server will read
        mp.setenv("AEE_STUDIES_DIR", env["AEE_STUDIES_DIR"])
        events = []
        for q, (participant, engine, hovers) in enumerate([("P01", "Lumen", 3), ("P01", "Parrot", 1), ("P02", "Lumen", 2),
                                                           ("P02", "Parrot", 0), ("P03", "Lumen", 4), ("P03", "Parrot", 1)]):
            row = dict(participant=participant, session="s1", engine=engine, query_id=f"q{q}", query_type="debate",
                       alignment="none")
            events += [dict(row, event="shown", source_rank=None), dict(row, event="displayed", source_rank=1),
                       dict(row, event="displayed", source_rank=2), dict(row, event="cited", source_rank=1)]
            events += [dict(row, event="hover", source_rank=r) for r in range(1, hovers + 1)]
        recorder.append_events("class-links", events)
    port = free_port()
    proc = start_app(port, root=ROOT, env=env, log=base / "streamlit.log")
    yield f"http://127.0.0.1:{port}"
    stop_app(proc)


# ---- what a reader does --------------------------------------------------------------------------


def _idle(pg) -> None:
    wait_idle(pg)
    time.sleep(0.5)  # a widget's change reaches the server, then the rerun starts
    wait_idle(pg)


def _radio(pg, label: str, option: str) -> None:
    pg.locator("[data-testid=stRadio]").filter(has_text=label).get_by_text(option, exact=True).click()
    _idle(pg)


def _toggle(pg, label: str) -> None:
    pg.get_by_text(label, exact=True).click()
    _idle(pg)


def _select(pg, label: str, option: str) -> None:
    box = pg.get_by_role("combobox", name=re.compile(re.escape(label)))
    box.click()
    box.fill(option)  # a selectbox filters its options as one types
    pg.get_by_role("option", name=option, exact=True).click()
    _idle(pg)


def _tab(pg, label: str) -> None:
    pg.get_by_role("tab", name=label).click()
    _idle(pg)


def _pill(pg, label: str) -> None:
    pg.locator("[data-testid=stButtonGroup]").get_by_role("button", name=label, exact=True).click()
    _idle(pg)


def _tick(pg, step: int) -> None:
    pg.get_by_text("Done", exact=True).nth(step).click()
    _idle(pg)


# ---- what the page shows -------------------------------------------------------------------------

_VOLATILE = re.compile(r"Recorded in this browser session[^\n]*|Running\.\.\.|\u200b")


def _shown(pg) -> str:
    """The main area's visible text (charts' text included), whitespace normalised."""
    text = pg.locator("[data-testid=stMain]").inner_text()
    return " ".join(_VOLATILE.sub("", text).split())


def _open(browser, url: str, bad: list) -> tuple:
    ctx = browser.new_context(viewport={"width": 1280, "height": 1000})
    pg = ctx.new_page()
    pg.on("response", lambda r: bad.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    pg.goto(url)
    pg.wait_for_selector("[data-testid=stMain] h1", timeout=90_000)
    _idle(pg)
    return ctx, pg


def _changes_scorecard(pg) -> None:
    _radio(pg, "Query type", "debate")
    _radio(pg, "Scoring rules", "Paper parity")
    _toggle(pg, "Compare with published scorecards")
    _select(pg, "Published scorecard", "DeepTRACE 2025, generative search")
    _pill(pg, "Basic statistics")
    _tab(pg, "Values with intervals")


def _changes_confidence(pg) -> None:
    _toggle(pg, "Show the published distribution (AEE Fig. 8b)")


def _changes_inspector(pg) -> None:
    _select(pg, "Engine", "Quarry")
    _radio(pg, "Scoring rules", "Paper parity")


def _changes_compare(pg) -> None:
    _radio(pg, "Compare", "One answer, two judges")
    _toggle(pg, "Show only the items that differ")


def _changes_study(pg) -> None:
    _radio(pg, "Log", "Recorded study")
    _select(pg, "First condition", "Parrot")


def _changes_conflict(pg) -> None:
    _radio(pg, "Group by", "domain")
    _select(pg, "Judge", "offline:lexical")


def _changes_engines(pg) -> None:
    _select(pg, "Engine A", "Quarry")
    _select(pg, "Engine B", "Lumen")


def _changes_tour(pg) -> None:
    _tick(pg, 0)
    _tick(pg, 2)


PAGES = {  # page address: what a reader changes there (None: a page without controls)
    "scorecard?dataset=demo": _changes_scorecard,
    "confidence?dataset=demo": _changes_confidence,
    "inspector?dataset=demo": _changes_inspector,
    "compare?dataset=demo": _changes_compare,
    "engines?dataset=demo": _changes_engines,
    "study": _changes_study,
    "conflict?dataset=demo": _changes_conflict,
    "tour": _changes_tour,
    "": None,
    "judges": None,
    "audit": None,
    "methodology": None,
    "rescore": None,
    "over_time": None,
}


def test_every_page_of_the_registry_is_tried():
    from dashboard.pages_registry import PAGES as REGISTRY

    tried = {start.split("?")[0] or "home" for start in PAGES}
    assert tried == {p.url_path for p in REGISTRY}


@pytest.mark.parametrize("start", list(PAGES), ids=lambda s: s.split("?")[0] or "home")
def test_a_pages_address_reopens_what_it_showed(browser, server, start):
    bad: list[str] = []
    ctx, pg = _open(browser, f"{server}/{start}", bad)
    _no_error(pg)
    before_url = pg.url
    change = PAGES[start]
    if change is not None:
        change(pg)
        _no_error(pg)
        assert pg.url != before_url, "changing the controls should change the address"
    url, shown = pg.url, _shown(pg)
    name = start.split("?")[0] or "home"
    _shot(pg, f"link-{name}-changed")
    ctx.close()

    ctx, fresh = _open(browser, url, bad)  # another browser context: nothing remembered
    _no_error(fresh)
    _shot(fresh, f"link-{name}-reopened")
    again = _shown(fresh)
    ctx.close()
    assert again == shown, f"{url} shows something else when opened afresh"
    assert bad == [], bad  # no /<page>/_stcore/... probes, nothing else failing


def test_tour_ticks_survive_a_reload(browser, server):
    bad: list[str] = []
    ctx, pg = _open(browser, f"{server}/tour", bad)
    _tick(pg, 1)
    expect(pg.get_by_text("1 of 4 steps done")).to_be_visible()
    pg.reload()
    pg.wait_for_selector("h1:has-text('Start here')", timeout=90_000)
    _idle(pg)
    expect(pg.get_by_text("1 of 4 steps done")).to_be_visible()
    assert "done=2" in pg.url
    ctx.close()
