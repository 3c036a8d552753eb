"""Every page of the registry at 390, 800 and 1280 px in a real browser (one server, one browser, one
reused page): the page never scrolls sideways, and no button, widget label or select box cuts its
text. Wide tables and matrices may scroll inside their own panel; that is what they are for.

With AEE_SHOTS=1 (tests/shots.py), screenshots of every page at every width go to AEE_WIDTH_SHOTS
(default /tmp/aee-width-shots/), looked at by a person when the layout changes; not committed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from shots import SHOTS_ON
from test_browser import ROOT, _no_error  # noqa: F401  (skips the module without chromium/playwright)

from dashboard.pages_registry import PAGES
from pipeline.testing.app_server import free_port, start_app, stop_app, wait_idle

pytestmark = pytest.mark.browser

WIDTHS = (390, 800, 1280)
SHOTS = Path(os.environ.get("AEE_WIDTH_SHOTS", "/tmp/aee-width-shots"))

# Everything that scrolls sideways on the page itself, and every control whose text is cut. A table,
# a matrix or a code block may scroll inside its own box (overflow auto/scroll); an element inside
# such a box is not the page overflowing.
LONG_VALUE = 40
_PROBE = """() => {
  const LONG_VALUE = """ + str(LONG_VALUE) + """;
  const out = {overflow: [], clipped: []};
  const doc = document.scrollingElement;
  if (doc.scrollWidth > doc.clientWidth + 1) out.overflow.push(`document ${doc.scrollWidth} > ${doc.clientWidth}`);
  const main = document.querySelector('[data-testid=stMain]');
  if (main && main.scrollWidth > main.clientWidth + 1) {
    // name the culprit: follow the widest child down to the last element that is wider than its parent
    const chain = [];
    for (let el = main; el && el.children.length; ) {
      let widest = null;
      for (const c of el.children) if (!widest || c.scrollWidth > widest.scrollWidth) widest = c;
      if (!widest || widest.scrollWidth <= main.clientWidth) break;
      chain.push(`${widest.tagName.toLowerCase()}[${widest.getAttribute('data-testid') || ''}] `
                 + `${widest.scrollWidth}/${widest.clientWidth} "${(widest.innerText || '').slice(0, 30)}"`);
      el = widest;
    }
    out.overflow.push(`main ${main.scrollWidth} > ${main.clientWidth}: ` + chain.slice(-3).join(' > '));
  }
  const controls = ['button', 'button p', '[data-testid=stWidgetLabel] [data-testid=stMarkdownContainer]',
    '[data-testid=stWidgetLabel] p', '[role=combobox]', '[data-baseweb=tab] p', '[data-testid=stPageLink] p',
    '[data-testid=stPageLink] span', '[data-testid=stRadio] label p', '[data-testid=stMultiSelect] span']
    .map(c => '[data-testid=stMain] ' + c).join(', ');
  for (const el of document.querySelectorAll(controls)) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    // a select box's value is cut whenever it is wider than its box; a long one (a whole question, over
    // LONG_VALUE characters) may end in "..." on a phone: the list shows it whole, the page repeats it
    const field = el.tagName === 'INPUT';
    if (field && (el.value || '').length > LONG_VALUE) continue;
    if (el.scrollWidth > el.clientWidth + 1 && (field || getComputedStyle(el).overflowX !== 'visible')) {
      out.clipped.push(`${el.tagName.toLowerCase()} "${(el.innerText || el.getAttribute('value') || '').slice(0, 50)}" `
                       + `${el.scrollWidth} > ${el.clientWidth}`);
    }
  }
  return out;
}"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The teaching corpus under its recorded labels and the offline-free scripted judge."""
    from pipeline.runner import run_dataset

    base = tmp_path_factory.mktemp("widths")
    results = base / "results"
    run_dataset("demo", progress=False, root=results)
    env = dict(os.environ)
    env.update({"AEE_RESULTS_DIR": str(results), "AEE_STUDIES_DIR": str(base / "studies"),
                "AEE_CACHE_DIR": str(base / "cache"), "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"})
    for name in ("OPENAI_API_KEY", "AEE_OPENAI_API_KEY"):
        env.pop(name, None)
    port = free_port()
    proc = start_app(port, root=ROOT, env=env, log=base / "streamlit.log")
    yield f"http://127.0.0.1:{port}"
    stop_app(proc)


def _screenshot(pg, width: int, path: Path) -> None:
    """The whole page: the app scrolls inside its main panel, so the window is made as tall as it."""
    height = pg.evaluate("Math.max(900, document.querySelector('[data-testid=stMain]')?.scrollHeight || 0)")
    pg.set_viewport_size({"width": width, "height": min(int(height) + 40, 9000)})
    pg.wait_for_timeout(300)
    pg.screenshot(path=str(path))
    pg.set_viewport_size({"width": width, "height": 900})


def test_every_page_at_every_width(server, browser):
    if SHOTS_ON:
        SHOTS.mkdir(parents=True, exist_ok=True)
    ctx = browser.new_context(viewport={"width": WIDTHS[0], "height": 900})
    pg = ctx.new_page()
    problems: list[str] = []
    try:
        # widest first: Streamlit remembers a closed sidebar for the session, and at 1280 px the page
        # must be checked beside an open one (the narrowest main panel a desktop reader gets)
        for width in sorted(WIDTHS, reverse=True):
            pg.set_viewport_size({"width": width, "height": 900})
            for info in PAGES:  # the registry: a page added on another branch is visited too
                pg.goto(f"{server}/{'' if info.default else info.url_path}")
                pg.wait_for_selector("h1", timeout=90_000)
                wait_idle(pg)
                _no_error(pg)
                found = pg.evaluate(_PROBE)
                problems += [f"{info.url_path} @ {width}px: page scrolls sideways: {o}" for o in found["overflow"]]
                problems += [f"{info.url_path} @ {width}px: text cut: {c}" for c in found["clipped"]]
                if SHOTS_ON:
                    _screenshot(pg, width, SHOTS / f"{info.url_path}-{width}.png")
    finally:
        ctx.close()
    assert not problems, "\n".join(problems)


def test_back_after_a_tour_link_takes_one_press(server, browser):
    """The scorecard writes several controls into its address as it opens; Back must not step
    through each of them before reaching the tour again."""
    ctx = browser.new_context(viewport={"width": 800, "height": 900})
    pg = ctx.new_page()
    try:
        pg.goto(f"{server}/tour")
        pg.wait_for_selector("h1:has-text('Start here')", timeout=90_000)
        wait_idle(pg)
        pg.get_by_role("link", name="Open the scorecard (teaching corpus)").click()
        pg.wait_for_selector("h1:has-text('Scorecard')", timeout=90_000)
        wait_idle(pg)
        assert "/scorecard?" in pg.url and "judge=recorded" in pg.url
        pg.go_back()
        pg.wait_for_selector("h1:has-text('Start here')", timeout=30_000)
        assert pg.url.split("?")[0].endswith("/tour")
    finally:
        ctx.close()
