"""What a person reads on a phone (390 px), in a real browser (issue 45): the columns that carry a
verdict are on screen without scrolling a table sideways. Screenshots go to /tmp/aee-narrow-shots/
(looked at before committing)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_browser import ROOT, _no_error  # noqa: F401  (skips the module without chromium/playwright)

from pipeline.testing.app_server import free_port, start_app, stop_app, wait_idle

pytestmark = pytest.mark.browser
SHOTS = Path("/tmp/aee-narrow-shots")
PHONE = 390


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from pipeline.runner import run_dataset

    base = tmp_path_factory.mktemp("narrow")
    results = base / "results"
    run_dataset("demo", progress=False, root=results)
    env = dict(os.environ)
    env.update({"AEE_RESULTS_DIR": str(results), "AEE_STUDIES_DIR": str(base / "studies"),
                "AEE_CACHE_DIR": str(base / "cache"), "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"})
    port = free_port()
    proc = start_app(port, root=ROOT, env=env, log=base / "streamlit.log")
    SHOTS.mkdir(exist_ok=True)
    yield f"http://127.0.0.1:{port}"
    stop_app(proc)


def _open(pg, url: str) -> None:
    pg.goto(url)
    pg.wait_for_selector("h1", timeout=90_000)
    wait_idle(pg)
    _no_error(pg)


# The right edge of each named header cell of the first table that has them, in the window's pixels.
_HEADER_EDGES = """(names) => {
  for (const table of document.querySelectorAll('[data-testid=stMain] table')) {
    const cells = [...table.querySelectorAll('thead th')];
    const found = {};
    for (const name of names) {
      const cell = cells.find(c => c.innerText.trim() === name);
      if (cell) found[name] = Math.round(cell.getBoundingClientRect().right);
    }
    if (Object.keys(found).length === names.length) return found;
  }
  return null;
}"""


def test_the_study_verdict_columns_are_on_a_phone_screen(server, browser):
    """Item 12: Usability study's p, significant and d columns were off-screen at 390 px."""
    ctx = browser.new_context(viewport={"width": PHONE, "height": 900})
    try:
        pg = ctx.new_page()
        _open(pg, f"{server}/study")
        names = ["significant", "p, Holm", "Cohen's d [95% CI]"]
        edges = pg.evaluate(_HEADER_EDGES, names)
        assert edges is not None, "no table with the test columns"
        assert all(right <= PHONE for right in edges.values()), edges
        table = pg.locator("[data-testid=stMain] [data-testid=stTable]").filter(has_text="Cohen's d").first
        table.scroll_into_view_if_needed()
        table.screenshot(path=str(SHOTS / "study-tests-390.png"))
    finally:
        ctx.close()
