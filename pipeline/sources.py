"""Source analysis: near-duplicate content, source type from the URL, dead sources.

Finding S.IV of the usability study is that engines list redundant sources with duplicate
content; these helpers make that visible per answer.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from pipeline.records import Source

_WORD = re.compile(r"\w+", re.UNICODE)
SHINGLE_SIZE = 5
DUPLICATE_JACCARD = 0.5  # shingle overlap above which two sources count as near-duplicates


def shingles(text: str, size: int = SHINGLE_SIZE) -> set[int]:
    """Hashes of overlapping word n-grams of the lower-cased text."""
    words = _WORD.findall(text.lower())
    if len(words) < size:
        return {hash(tuple(words))} if words else set()
    return {hash(tuple(words[k : k + size])) for k in range(len(words) - size + 1)}


def jaccard(a: set[int], b: set[int]) -> float:
    """Jaccard similarity of two sets (0 when both are empty)."""
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


def duplicate_pairs(sources: tuple[Source, ...] | list[Source], threshold: float = DUPLICATE_JACCARD) -> list[tuple[int, int, float]]:
    """(index a, index b, similarity) for source pairs with near-identical text or the same URL."""
    prints = [(s, shingles(s.text)) for s in sources]
    pairs = []
    for a in range(len(prints)):
        for b in range(a + 1, len(prints)):
            sa, ha = prints[a]
            sb, hb = prints[b]
            same_url = bool(sa.url) and normalise_url(sa.url) == normalise_url(sb.url)
            sim = 1.0 if same_url else jaccard(ha, hb)
            if sim >= threshold and (same_url or (ha and hb)):
                pairs.append((sa.index, sb.index, round(sim, 4)))
    return pairs


def normalise_url(url: str) -> str:
    """Lower-case scheme and host, drop the fragment, a trailing slash and a leading www."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return url.strip()
    host = (parts.hostname or "").lower().removeprefix("www.")
    path = parts.path.rstrip("/")
    query = f"?{parts.query}" if parts.query else ""
    return f"{host}{path}{query}"


SOURCE_TYPES: tuple[str, ...] = (
    "research/academic",
    "government",
    "news",
    "encyclopedia",
    "forum/social",
    "video",
    "blog/commercial",
    "unknown",
)

_TYPE_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("video", ("youtube.com", "youtu.be", "vimeo.com", "tiktok.com", "dailymotion.com")),
    ("encyclopedia", ("wikipedia.org", "britannica.com", "wikiwand.com", "encyclopedia.com", "scholarpedia.org")),
    ("forum/social", ("reddit.com", "quora.com", "stackexchange.com", "stackoverflow.com", "twitter.com",
                      "x.com", "facebook.com", "linkedin.com", "medium.com", "instagram.com", "tumblr.com")),
    ("research/academic", ("arxiv.org", "doi.org", "nih.gov", "ncbi.nlm.nih.gov", "pubmed", "springer.com",
                           "sciencedirect.com", "nature.com", "wiley.com", "jstor.org", "researchgate.net",
                           "semanticscholar.org", "acm.org", "ieee.org", "plos.org", "frontiersin.org",
                           "mdpi.com", "tandfonline.com", "sagepub.com", "ssrn.com", "scholar.google")),
    ("news", ("nytimes.com", "bbc.co", "theguardian.com", "reuters.com", "apnews.com", "cnn.com",
              "washingtonpost.com", "forbes.com", "bloomberg.com", "npr.org", "aljazeera.com",
              "wsj.com", "ft.com", "economist.com", "cnbc.com", "foxnews.com", "nbcnews.com",
              "usatoday.com", "time.com", "theatlantic.com", "vox.com", "news.")),
)


def source_type(url: str) -> str:
    """Coarse type of a source from its URL (a heuristic; "unknown" when nothing matches)."""
    try:
        host = (urlsplit(url.strip()).hostname or "").lower()
    except ValueError:
        return "unknown"
    if not host:
        return "unknown"
    for kind, needles in _TYPE_RULES:
        if any(n in host for n in needles):
            return kind
    labels = host.split(".")
    if "edu" in labels or "ac" in labels or host.startswith("scholar."):
        return "research/academic"
    if "gov" in labels or "gouv" in labels or "mil" in labels or labels[-1] == "int":
        return "government"
    if "blog" in host or "wordpress" in host or "blogspot" in host or "substack" in host:
        return "blog/commercial"
    return "blog/commercial"


def dead_sources(sources: tuple[Source, ...] | list[Source]) -> list[int]:
    """Indexes of sources whose fetch failed."""
    return [s.index for s in sources if s.fetch_ok is False]
