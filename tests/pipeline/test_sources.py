"""Source analysis: near-duplicates by shingles or URL, source types, dead sources."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
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


def _naive_duplicate_pairs(sources, threshold=0.5):
    """Every pair compared: the definition the indexed search must agree with."""
    from pipeline.sources import jaccard, normalise_url, shingles

    out = []
    for i, a in enumerate(sources):
        for b in sources[i + 1:]:
            ha, hb = shingles(a.text), shingles(b.text)
            same = bool(a.url) and bool(normalise_url(a.url)) and normalise_url(a.url) == normalise_url(b.url)
            sim = 1.0 if same else jaccard(ha, hb)
            if sim >= threshold and (same or (ha and hb)):
                out.append((a.index, b.index, round(sim, 4)))
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from("tree shade heat city park water river cool".split()), max_size=40),
                          st.sampled_from(["", "https://a.org/x", "https://b.org/y", "http://www.a.org/x/"])),
                max_size=8))
def test_indexed_duplicate_search_matches_comparing_every_pair(rows):
    sources = [Source(k + 1, url, "", " ".join(words)) for k, (words, url) in enumerate(rows)]
    assert duplicate_pairs(sources) == _naive_duplicate_pairs(sources)


def test_long_near_duplicates_are_found_through_the_sample():
    import random

    rng = random.Random(5)
    vocab = [f"w{i}" for i in range(3000)]
    base = [rng.choice(vocab) for _ in range(6000)]  # ~6,000 shingles: sampled
    edited = list(base)
    for k in rng.sample(range(len(base)), 350):  # ~1,750 of ~6,000 shingles change: Jaccard ~0.55
        edited[k] = rng.choice(vocab)
    other = [rng.choice(vocab) for _ in range(6000)]
    sources = [Source(1, "", "", " ".join(base)), Source(2, "", "", " ".join(edited)), Source(3, "", "", " ".join(other))]
    assert duplicate_pairs(sources) == _naive_duplicate_pairs(sources)
    assert [(a, b) for a, b, _ in duplicate_pairs(sources)] == [(1, 2)]


@pytest.mark.parametrize("url, kind", [
    ("https://fred.stlouisfed.org/series/MOSTLP", "official statistics"),  # issue 32: FRED is not blog/commercial
    ("https://www.stlouisfed.org/on-the-economy", "official statistics"),
    ("https://www.census.gov/quickfacts/fact/table", "official statistics"),
    ("https://www150.statcan.gc.ca/t1/tbl1/en", "official statistics"),
    ("https://www.destatis.de/EN/Themes", "official statistics"),
    ("https://ec.europa.eu/eurostat/databrowser", "official statistics"),
    ("https://data.worldbank.org/indicator/SP.POP.TOTL", "official statistics"),
    ("https://ec.europa.eu/commission/presscorner", "government"),
    ("https://www.justice.gc.ca/eng", "government"),
    ("https://www.mhlw.go.jp/english", "government"),
    ("https://ourworldindata.org/population-growth", "research/academic"),
    ("https://notstlouisfed.org/series", "blog/commercial"),  # a look-alike name is not the publisher
    ("https://gocardless.com/guides", "blog/commercial"),
])
def test_data_publishers_and_governments_by_their_domains(url, kind):
    assert source_type(url) == kind
