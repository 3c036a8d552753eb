"""The Over time page and the Inspector's side-by-side askings in a real browser, at 800 and 1280 px:
a flipped query's link opens the Inspector with that query's askings next to each other, what a
person sees there (the askings' headings, one metrics column per asking, the matrices), and neither
page scrolls sideways or cuts a control's text. Screenshots go to /tmp/aee-width-shots/ (looked at
by a person when the layout changes; not committed)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from shots import SHOTS_ON
from test_browser import ROOT, _no_error  # noqa: F401  (skips the module without chromium/playwright)
from test_browser_widths import _PROBE, SHOTS, _screenshot
from timing import guard_ms

from pipeline.testing.app_server import free_port, start_app, stop_app, wait_idle
from pipeline.testing.fake_variation import Variation, synthetic_records

pytestmark = pytest.mark.browser

HOSTILE = "<b>Hostile</b> engine"
ENGINES = {"Alpha": Variation(seed=1, accuracy=0.95, perturb=0.1), HOSTILE: Variation(seed=2, accuracy=0.5, perturb=0.5)}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from pipeline.runner import run_dataset

    base = tmp_path_factory.mktemp("over-time-browser")
    data = base / "waves.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in synthetic_records(ENGINES, queries=12, repeats=3, waves=2)),
                    encoding="utf-8")
    env = dict(os.environ)
    env.update({"AEE_RESULTS_DIR": str(base / "results"), "AEE_STUDIES_DIR": str(base / "studies"),
                "AEE_CACHE_DIR": str(base / "cache"), "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1",
                "AEE_OVER_TIME_MEANING": "lexical"})
    for name in ("OPENAI_API_KEY", "AEE_OPENAI_API_KEY"):
        env.pop(name, None)
    saved = os.environ.get("AEE_RESULTS_DIR"), os.environ.get("AEE_OVER_TIME_MEANING")
    os.environ["AEE_RESULTS_DIR"], os.environ["AEE_OVER_TIME_MEANING"] = env["AEE_RESULTS_DIR"], "lexical"
    try:
        run_dataset("waves", data, judge_name="recorded", progress=False)
    finally:
        for key, value in zip(("AEE_RESULTS_DIR", "AEE_OVER_TIME_MEANING"), saved):
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    port = free_port()
    proc = start_app(port, root=ROOT, env=env, log=base / "streamlit.log")
    yield f"http://127.0.0.1:{port}", base / "results"
    stop_app(proc)


def _side_link(results: Path) -> str:
    """The Over time page's first flipped query's link, as the page builds it (rebuilt from the same
    summary the page reads)."""
    import pyarrow.parquet as pq

    from pipeline.consistency.summary import FLIPS_FILE
    from pipeline.storage.store import judge_dirname, result_set

    flips = pq.read_table(result_set("waves", results) / judge_dirname("recorded") / FLIPS_FILE).to_pandas()
    row = flips[(flips["engine"] == HOSTILE) & (flips["metric"] == "citation_accuracy")].iloc[0]
    from dashboard.url_state import page_link

    ids = json.loads(row["answer_ids"])
    return page_link("inspector", {"dataset": "waves", "judge": "recorded", "answer": ids[0], "side": ids})


def _at_two_widths(browser, url: str, heading: str, name: str, check) -> None:
    """Open `url` at 1280 and then 800 px; at each width the page must show `heading` without an error,
    pass `check(page, main)`, neither scroll sideways nor cut a control's text (the widths test's probe),
    and with AEE_SHOTS=1 leave a screenshot named `name`."""
    if SHOTS_ON:
        SHOTS.mkdir(parents=True, exist_ok=True)
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = ctx.new_page()
    problems: list[str] = []
    try:
        for width in (1280, 800):
            pg.set_viewport_size({"width": width, "height": 900})
            pg.goto(url)
            pg.wait_for_selector(f"h1:has-text('{heading}')", timeout=guard_ms(90))  # a hang guard
            wait_idle(pg)
            _no_error(pg)
            check(pg, pg.locator("[data-testid=stMain]"))
            found = pg.evaluate(_PROBE)
            problems += [f"{name} @ {width}px: {p}" for p in found["overflow"] + found["clipped"]]
            if SHOTS_ON:
                _screenshot(pg, width, SHOTS / f"{name}-{width}.png")
    finally:
        ctx.close()
    assert not problems, "\n".join(problems)


def test_the_over_time_page_at_800_and_1280(server, browser):
    server, _ = server

    def check(pg, main) -> None:
        assert "Queries whose rating flipped between repeats" in main.inner_text()
        assert "open in the Inspector" in main.inner_text() or main.locator("canvas").count() > 0

    _at_two_widths(browser, f"{server}/over_time?dataset=waves&judge=recorded&engine=%3Cb%3EHostile%3C%2Fb%3E+engine"
                   "&metric=citation_accuracy&wave=2026-01-05", "Over time", "over_time-flips", check)


def test_a_flip_link_shows_the_askings_side_by_side(server, browser):
    server, results = server

    def check(pg, main) -> None:
        text = main.inner_text()
        for k in (1, 2, 3):
            assert f"Wave 2026-01-05, asking {k}" in text
        assert "Metrics, asking by asking" in text and "change rating between these askings" in text
        assert main.locator("table.aee-mx").count() == 3  # each asking's citation and support matrices
        assert "<b>Hostile</b>" not in main.inner_html()  # the engine's name is text, never markup
        # the answers sit next to each other: two per row, the first two at the same height
        headings = main.locator("h5")
        boxes = [headings.nth(i).bounding_box() for i in range(min(2, headings.count()))]
        assert len(boxes) == 2 and abs(boxes[0]["y"] - boxes[1]["y"]) < 5 and boxes[0]["x"] < boxes[1]["x"]
        assert pg.url.count("side=") == 3

    _at_two_widths(browser, f"{server}/{_side_link(results)}", "Answer inspector", "inspector-side-by-side", check)


def test_the_flips_read_as_cards_on_a_phone(server, browser):
    """Issue 45 item 7: at 390 px the flips table showed only its query column (ratings, values and
    the Inspector link sat off to the right of a data grid). On a phone each flipped query is a card:
    the query on its own line, its ratings and values, then the link, all on screen."""
    server, results = server
    ctx = browser.new_context(viewport={"width": 390, "height": 900})
    try:
        pg = ctx.new_page()
        pg.goto(f"{server}/over_time?dataset=waves&judge=recorded&engine=%3Cb%3EHostile%3C%2Fb%3E+engine"
                "&metric=citation_accuracy&wave=2026-01-05")
        pg.wait_for_selector("h1:has-text('Over time')", timeout=guard_ms(90))  # a hang guard
        wait_idle(pg)
        _no_error(pg)
        cards = pg.locator("[class*=st-key-cards_flips] tbody tr")
        cards.first.wait_for(timeout=guard_ms(60))
        assert cards.count() >= 1
        edges = pg.evaluate("""() => [...document.querySelectorAll('[class*="st-key-cards_flips"] tbody td')]
            .map(td => Math.round(td.getBoundingClientRect().right))""")
        assert max(edges) <= 390, edges  # every cell of every card is on screen
        first = cards.first
        text = first.inner_text()
        assert re.search(r"[▲●▼]{2,3}", text) and "open in the Inspector" in text, text
        assert "Synthetic question number" in text
        link = first.get_by_role("link", name="open in the Inspector")
        assert link.is_visible() and link.bounding_box()["x"] + link.bounding_box()["width"] <= 390
        assert (link.get_attribute("href") or "").count("side=") == 3
        assert pg.locator("[class*=st-key-cards_flips]").evaluate("e => e.scrollWidth <= e.clientWidth + 1")
        if SHOTS_ON:
            SHOTS.mkdir(parents=True, exist_ok=True)
            _screenshot(pg, 390, SHOTS / "over_time-flips-390.png")
    finally:
        ctx.close()


# Every piece of text a person can see in the part of the page from the heading `h` to the next
# heading: its text and where it lies. A data grid draws its cells on a canvas, so a column that sits
# off to the right is not there at all; text hidden by the layout (display: none) has no box.
_SECTION_TEXT = """(h) => {
  const heading = [...document.querySelectorAll('[data-testid=stMain] h3')].find(e => e.innerText.includes(h));
  const blocks = [];
  let block = heading.closest('[data-testid=stElementContainer]');
  for (block = block.nextElementSibling; block && !block.querySelector('h3'); block = block.nextElementSibling) blocks.push(block);
  const out = {text: blocks.map(b => b.innerText).join('\\n'), pieces: [], scrolls: []};
  for (const b of blocks) {
    for (const el of b.querySelectorAll('*')) {
      if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible' && el.clientWidth > 0)
        out.scrolls.push(`${el.tagName} ${el.getAttribute('data-testid') || ''} ${el.scrollWidth} > ${el.clientWidth}`);
    }
    const walk = document.createTreeWalker(b, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      if (!node.textContent.trim()) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      const r = range.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) continue;  // not shown
      out.pieces.push({text: node.textContent.trim(), left: r.left, right: r.right});
    }
  }
  return out;
}"""


def _summary(results: Path) -> dict:
    from pipeline.consistency.summary import SUMMARY_FILE
    from pipeline.storage.store import judge_dirname, result_set

    return json.loads((result_set("waves", results) / judge_dirname("recorded") / SUMMARY_FILE).read_text(encoding="utf-8"))


def test_the_stability_and_icc_tables_fit_a_phone(server, browser):
    """Issue 45: at 390 px the stability and ICC data grids scrolled sideways inside their box, so a
    phone showed the engine and one or two numbers, the rest off to the right. Every column must be
    read on screen: each column's name next to each engine's value for it, all within the 390 px
    viewport, nothing scrolling sideways. The values are the run's own (its over-time summary)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    server, results = server
    summary, wave, width = _summary(results), "2026-01-05", 390
    engines = summary["engines"]
    stability = {(r["engine"], summary["measures"][r["measure"]]): f"{r['value']:.2f}"
                 for r in summary["stability"] if r["wave"] == wave}
    icc = {r["engine"]: r for r in summary["icc"] if r["wave"] == wave and r["metric"] == "citation_accuracy"}
    assert len(stability) == 5 * len(engines) and set(icc) == set(engines)  # the fixture's design
    ctx = browser.new_context(viewport={"width": width, "height": 900})
    try:
        pg = ctx.new_page()
        pg.goto(f"{server}/over_time?dataset=waves&judge=recorded&engine=%3Cb%3EHostile%3C%2Fb%3E+engine"
                f"&metric=citation_accuracy&wave={wave}")
        pg.wait_for_selector("h1:has-text('Over time')", timeout=guard_ms(90))  # a hang guard
        wait_idle(pg)
        _no_error(pg)
        headings = ("How much answers and sources change between repeats", "Repeats against queries and engines")
        try:  # the page has drawn both tables when each section names every engine (a hang guard, not a check)
            pg.wait_for_function(f"""() => {json.dumps(list(headings))}.every(h => {{
                try {{ const t = ({_SECTION_TEXT})(h).text; return {json.dumps(engines)}.every(e => t.includes(e)); }}
                catch (err) {{ return false; }} }})""", timeout=guard_ms(30))
        except PlaywrightTimeout:
            pass  # what is missing is said below
        sections = {"stability": pg.evaluate(_SECTION_TEXT, headings[0]), "icc": pg.evaluate(_SECTION_TEXT, headings[1])}
        for name, seen in sections.items():
            off = [p for p in seen["pieces"] if p["left"] < 0 or p["right"] > width + 0.5]
            assert not off, (name, off)  # every word shown lies on screen
            assert not seen["scrolls"], (name, seen["scrolls"])  # and no box scrolls sideways
        for name, expected in (
                ("stability", {e: [f"{label} {value}" for (engine, label), value in stability.items() if engine == e]
                               for e in engines}),
                ("icc", {e: [f"ICC {icc[e]['icc']:.2f}", f"95% interval [{icc[e]['icc_low']:.2f}, {icc[e]['icc_high']:.2f}]",
                             f"spread between repeats (points) {icc[e]['within_sd']:.1f}",
                             f"spread between queries (points) {icc[e]['between_sd']:.1f}", f"{icc[e]['queries']} queries"]
                         for e in engines})):
            text = sections[name]["text"]
            assert all(e in text for e in engines), (name, text)
            starts = sorted((text.index(e), e) for e in engines)  # each engine's card: its name, then its values
            for k, (start, engine) in enumerate(starts):
                card = text[start:starts[k + 1][0] if k + 1 < len(starts) else len(text)]
                missing = [want for want in expected[engine] if want not in card]
                assert not missing, (name, engine, missing, card)
        assert not pg.evaluate(_PROBE)["overflow"]
        if SHOTS_ON:
            SHOTS.mkdir(parents=True, exist_ok=True)
            _screenshot(pg, width, SHOTS / "over_time-tables-390.png")
    finally:
        ctx.close()
