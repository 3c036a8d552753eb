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
    both = len(a & b)
    return both / (len(a) + len(b) - both)


# Candidate pairs come from an index of shingles, so the work grows with the text, not with the
# square of the number of sources (500 long pages made every answer cost minutes). A page with many
# shingles is indexed by a fixed 1-in-SAMPLE_EVERY sample of them (the same hash values for every
# page, so two near-duplicates keep near-identical samples); a pair is a candidate when its samples
# overlap by CANDIDATE_SHARE of the threshold, and candidates get the exact Jaccard. With at least
# SAMPLE_FROM / SAMPLE_EVERY = 250 sampled shingles, a pair at the threshold misses that bar with a
# probability below 1e-8; shorter pages are indexed whole, which is exact.
SAMPLE_FROM = 2_000
SAMPLE_EVERY = 8
CANDIDATE_SHARE = 0.6


def _sample(prints: set[int]) -> set[int]:
    return prints if len(prints) < SAMPLE_FROM else {h for h in prints if h % SAMPLE_EVERY == 0}


def duplicate_pairs(sources: tuple[Source, ...] | list[Source], threshold: float = DUPLICATE_JACCARD) -> list[tuple[int, int, float]]:
    """(index a, index b, similarity) for source pairs with near-identical text or the same URL,
    in source order."""
    key = (tuple(sources), threshold)
    found = _DUPLICATES.get(key)
    if found is None:
        found = _duplicate_pairs(list(sources), threshold)
        if len(_DUPLICATES) >= 8:  # the last answers only: metrics ask again for each scoring rule
            _DUPLICATES.pop(next(iter(_DUPLICATES)))
        _DUPLICATES[key] = found
    return list(found)


_DUPLICATES: dict[tuple, list[tuple[int, int, float]]] = {}


def _duplicate_pairs(sources: list[Source], threshold: float) -> list[tuple[int, int, float]]:
    prints = [shingles(s.text) for s in sources]
    samples = [_sample(h) for h in prints]
    index: dict[int, list[int]] = {}
    for k, sample in enumerate(samples):
        for h in sample:
            index.setdefault(h, []).append(k)
    shared: dict[tuple[int, int], int] = {}
    for members in index.values():
        if len(members) > 1:
            for i, a in enumerate(members):
                for b in members[i + 1:]:
                    shared[(a, b)] = shared.get((a, b), 0) + 1
    urls = [normalise_url(s.url) if s.url else "" for s in sources]
    by_url: dict[str, list[int]] = {}
    for k, url in enumerate(urls):
        if url:
            by_url.setdefault(url, []).append(k)
    same_url = {(a, b) for group in by_url.values() for i, a in enumerate(group) for b in group[i + 1:]}
    candidates = set(same_url)
    for (a, b), n in shared.items():
        union = len(samples[a]) + len(samples[b]) - n
        if union and n / union >= CANDIDATE_SHARE * threshold:
            candidates.add((a, b))
    pairs = []
    for a, b in sorted(candidates):
        ha, hb = prints[a], prints[b]
        sim = 1.0 if (a, b) in same_url else jaccard(ha, hb)
        if sim >= threshold and ((a, b) in same_url or (ha and hb)):
            pairs.append((sources[a].index, sources[b].index, round(sim, 4)))
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
    "official statistics",
    "news",
    "encyclopedia",
    "forum/social",
    "video",
    "blog/commercial",
    "unknown",
)

# Publishers of official figures: statistics offices, central banks and their data services,
# international organisations' data portals. Their pages are tables and series, not opinion, and an
# engine citing FRED for a population figure cites a primary source, not a "blog/commercial" page.
# Matched on whole host names or their parent domains (see `_host_matches`), checked before the
# generic rules so that, say, data.worldbank.org is not read as an unknown commercial site.
OFFICIAL_STATISTICS: tuple[str, ...] = (
    "stlouisfed.org", "federalreserve.gov", "bls.gov", "census.gov", "bea.gov", "eia.gov",
    "ons.gov.uk", "bankofengland.co.uk", "statcan.gc.ca", "bankofcanada.ca", "abs.gov.au", "rba.gov.au",
    "stats.govt.nz", "destatis.de", "bundesbank.de", "insee.fr", "banque-france.fr", "istat.it", "ine.es",
    "cbs.nl", "scb.se", "ssb.no", "dst.dk", "stat.fi", "cso.ie", "statistik.at", "bfs.admin.ch", "ksh.hu",
    "stat.gov.pl", "czso.cz", "e-stat.go.jp", "stat.go.jp", "boj.or.jp", "kostat.go.kr", "stats.gov.cn",
    "ibge.gov.br", "inegi.org.mx", "indec.gob.ar", "mospi.gov.in", "rbi.org.in", "statssa.gov.za",
    "ec.europa.eu/eurostat", "ecb.europa.eu", "oecd.org", "data.oecd.org", "worldbank.org", "imf.org", "bis.org",
    "data.un.org", "unstats.un.org", "ilostat.ilo.org", "data.who.int",
)
_STATISTICS_PATHS = tuple(x for x in OFFICIAL_STATISTICS if "/" in x)
_STATISTICS_HOSTS = frozenset(x for x in OFFICIAL_STATISTICS if "/" not in x)


def _host_matches(host: str, domains: frozenset[str]) -> bool:
    """The host is one of the domains or a subdomain of one (fred.stlouisfed.org)."""
    labels = host.split(".")
    return any(".".join(labels[k:]) in domains for k in range(len(labels) - 1))


_TYPE_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("video", ("youtube.com", "youtu.be", "vimeo.com", "tiktok.com", "dailymotion.com")),
    ("encyclopedia", ("wikipedia.org", "britannica.com", "wikiwand.com", "encyclopedia.com", "scholarpedia.org")),
    ("forum/social", ("reddit.com", "quora.com", "stackexchange.com", "stackoverflow.com", "twitter.com",
                      "x.com", "facebook.com", "linkedin.com", "medium.com", "instagram.com", "tumblr.com")),
    ("research/academic", ("arxiv.org", "doi.org", "nih.gov", "ncbi.nlm.nih.gov", "pubmed", "springer.com",
                           "sciencedirect.com", "nature.com", "wiley.com", "jstor.org", "researchgate.net",
                           "semanticscholar.org", "acm.org", "ieee.org", "plos.org", "frontiersin.org", "ourworldindata.org",
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
    host = host.removeprefix("www.")
    path = (urlsplit(url.strip()).path or "").lower()
    if _host_matches(host, _STATISTICS_HOSTS) or any(
            f"{host}{path}".startswith(p) for p in _STATISTICS_PATHS):
        return "official statistics"
    for kind, needles in _TYPE_RULES:
        if any(n in host for n in needles):
            return kind
    labels = host.split(".")
    if "edu" in labels or "ac" in labels or host.startswith("scholar."):
        return "research/academic"
    # gov, gouv, govt (New Zealand), gob (Spanish-speaking countries), gc (Canada), go (Japan, Korea),
    # europa.eu (the EU's institutions)
    if {"gov", "gouv", "govt", "gob", "gc", "mil"} & set(labels) or labels[-1] == "int" or host.endswith("europa.eu") \
            or (len(labels) >= 3 and labels[-2] == "go"):
        return "government"
    if "blog" in host or "wordpress" in host or "blogspot" in host or "substack" in host:
        return "blog/commercial"
    return "blog/commercial"


def dead_sources(sources: tuple[Source, ...] | list[Source]) -> list[int]:
    """Indexes of sources whose fetch failed."""
    return [s.index for s in sources if s.fetch_ok is False]
