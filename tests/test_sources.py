"""Source analysis: near-duplicates by shingles or URL, source types, dead sources."""

from __future__ import annotations

from tolerances import ENCODER, close

from pipeline.records import Source
from pipeline.sources import dead_sources, duplicate_pairs, normalise_url, source_type

TEXT = ("City tree canopy lowers surface temperatures on hot afternoons by several degrees in dense districts. "
        "Planting programmes that favour broad crowns give the largest gains, according to the survey. "
        "Maintenance budgets decide whether young trees survive their first three summers in the street.")


def test_near_duplicate_text_is_found_and_different_text_is_not():
    copy = Source(2, "https://mirror.example.org/x", text=TEXT.replace("several", "a few"))
    other = Source(3, "https://c.example.org", text="Bus lanes shorten commuting times for riders in most networks.")
    pairs = duplicate_pairs([Source(1, "https://a.example.org", text=TEXT), copy, other])
    assert [(a, b) for a, b, _ in pairs] == [(1, 2)]
    assert 0.5 <= pairs[0][2] < 1


def test_same_url_counts_as_duplicate_even_without_text():
    pairs = duplicate_pairs([Source(1, "https://www.Example.org/page/"), Source(2, "https://example.org/page#top")])
    assert pairs == close([(1, 2, 1.0)], ENCODER)
    assert normalise_url("HTTPS://www.Example.org/a/?q=1#x") == "example.org/a?q=1"


def test_source_types():
    assert source_type("https://en.wikipedia.org/wiki/Zoo") == "encyclopedia"
    assert source_type("https://www.ncbi.nlm.nih.gov/pmc/articles/1") == "research/academic"
    assert source_type("https://cs.stanford.edu/x") == "research/academic"
    assert source_type("https://www.epa.gov/air") == "government"
    assert source_type("https://www.reuters.com/world") == "news"
    assert source_type("https://www.reddit.com/r/x") == "forum/social"
    assert source_type("https://youtu.be/abc") == "video"
    assert source_type("https://shop.example.com/blog/post") == "blog/commercial"
    assert source_type("not a url") == "unknown"


def test_dead_sources():
    assert dead_sources([Source(1, fetch_ok=True), Source(2, fetch_ok=False), Source(3)]) == [2]
