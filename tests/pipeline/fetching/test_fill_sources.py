"""pipeline/fetching/fill_sources.py: `aee run --fetch-missing` fetches the pages of sources that came without
text; and the titles and no-text notes the answer view shows for such sources."""

from __future__ import annotations

from functools import partial

import pytest

from pipeline.fetching.fetch import FetchResult
from pipeline.fetching.fill_sources import fetch_command, fill_missing_texts, needs_fetch
from pipeline.importers.canonical import parse_answer


def _answer():
    return parse_answer({
        "answer_id": "a1", "engine": "E", "query": "Do trees cool streets?", "query_type": "expertise",
        "answer": "Trees shade streets [1]. Shade lowers heat [2]. Parks help [3]. Rivers too [4].",
        "sources": [{"index": 1, "url": "https://shade.example.org/trees", "text": ""},
                    {"index": 2, "url": "https://gone.example.org/page", "text": ""},
                    {"index": 3, "url": "https://parks.example.org/", "text": "Parks are cooler."},
                    {"index": 4, "url": "ftp://old.example.org/file", "text": ""}]}, "test")


def _fake(url: str) -> FetchResult:
    if "gone" in url:
        return FetchResult(url, url, False, 404, "http 404 Not Found")
    return FetchResult(url, url, True, 200, "", "text/html", title="Street trees", text="Trees shade streets in summer.")


def test_missing_texts_are_fetched_and_failures_marked_dead():
    asked: list[str] = []

    def fake(url: str) -> FetchResult:
        asked.append(url)
        return _fake(url)

    filled = fill_missing_texts(_answer(), fetch=fake)
    by_index = {s.index: s for s in filled.answer.sources}
    assert asked == ["https://shade.example.org/trees", "https://gone.example.org/page"]  # no text, http(s) only
    assert (by_index[1].text, by_index[1].fetch_ok, by_index[1].text_origin, by_index[1].title) == (
        "Trees shade streets in summer.", True, "page", "Street trees")
    assert by_index[2].fetch_ok is False and by_index[2].text == ""  # a dead source now
    assert by_index[3].text == "Parks are cooler." and by_index[3].fetch_ok is None  # had text: untouched
    assert by_index[4].fetch_ok is None  # not a web address: left alone
    assert filled.answer.meta["sources"] == "fetch" and filled.statements == _answer().statements
    again = fill_missing_texts(filled, fetch=fake)
    assert again is filled and len(asked) == 2  # nothing left to fetch: the same object, no new request


def test_run_with_fetch_missing_records_it_in_the_manifest(tmp_path):
    import json

    from pipeline.runner import run_dataset
    from pipeline.storage.store import table_path

    path = tmp_path / "answers.jsonl"
    obj = {"answer_id": "a1", "engine": "E", "query": "Do trees cool streets?", "query_type": "expertise",
           "answer": "Trees shade streets [1].", "sources": [{"index": 1, "url": "https://shade.example.org/trees"}],
           "labels": {"statements": [{"text": "Trees shade streets [1].", "relevant": True, "supported_by": [1]}]}}
    path.write_text(json.dumps(obj) + "\n")
    result = run_dataset("mine", path, root=tmp_path / "results", progress=False,
                         transform=partial(fill_missing_texts, fetch=_fake), config_extra={"fetch_missing": True})
    manifest = json.loads(table_path("mine", "summary", result.judge, tmp_path / "results").with_name("manifest.json").read_text())
    assert manifest["config"]["fetch_missing"] is True and manifest["config"]["sources"] == {"fetch": 1}


@pytest.mark.parametrize("url, text, ok, expected", [
    ("https://a.example.org/x", "", None, True), ("http://a.example.org", "  ", None, True),
    ("https://a.example.org/x", "", False, False), ("https://a.example.org/x", "text", None, False),
    ("", "", None, False), ("javascript:alert(1)", "", None, False),
])
def test_what_needs_a_fetch(url, text, ok, expected):
    assert needs_fetch(url, text, ok) is expected


def test_the_command_named_in_the_popover_exists():
    from pipeline.cli import build_parser

    args = build_parser().parse_args(fetch_command("expertqa").split()[1:])
    assert args.fetch_missing is True and args.dataset == "expertqa" and args.judge == "offline"


@pytest.mark.parametrize("title, url, shown", [
    ("Urban heat", "https://x.example.org/a", "Urban heat"),
    ("", "https://www.epa.gov/heatislands/reduce/?utm_source=x", "epa.gov/heatislands/reduce"),
    ("", "https://en.wikipedia.org/wiki/Urban_heat_island", "en.wikipedia.org/wiki/Urban_heat_island"),
    ("", "https://site.example.org/caf%C3%A9s", "site.example.org/cafés"),
    ("", "https://site.example.org/", "site.example.org"),
    ("", "", "(no title, no address)"),
    ("", "not a url", "not a url"),
])
def test_a_source_without_title_shows_its_site_and_path(title, url, shown):
    from dashboard.answer_model import source_title

    assert source_title(title, url) == shown


def test_popover_says_why_a_source_has_no_text_and_how_to_fetch_it():
    from dashboard import answer_model
    from pipeline.metrics import ScoreConfig
    from pipeline.report.scoring import answer_report

    annotated = _answer()
    rep = answer_report(annotated, ScoreConfig("strict", "exact"), "recorded")
    data = answer_model.component_data(annotated, rep, [], no_text=answer_model.no_text_hint("expertqa"))
    one = data["sources"]["1"]
    assert one["title"] == "shade.example.org/trees"
    assert "aee run --dataset expertqa --judge offline --fetch-missing" in one["no_text"]
    assert "dead sources" in one["no_text"] and "stay as they are" in one["no_text"]
    assert data["sources"]["3"]["no_text"] == ""
    hidden = answer_model.component_data(annotated, rep, [], participant=True, no_text="x")
    assert hidden["sources"]["1"]["no_text"] == answer_model.NO_TEXT_PARTICIPANT  # a participant sees no audit advice
