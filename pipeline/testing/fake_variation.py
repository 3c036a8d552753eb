"""Controlled randomness for the fake engines: answers that change between repeats at known rates.

A real engine asked the same question twice cites other sources and words its answer otherwise.
The consistency figures (pipeline/consistency/) are only testable against answers whose change is
known in advance, so a fake engine with a `Variation` draws every answer from a seeded generator:

- each query has a pool of `pool` source URLs; URL j lives on domain `site{j % domains}.example`;
- each answer cites `cited` of them, drawn without replacement in random order (the rank order);
- each answer has `statements` statements; in every draw each one is reworded with probability
  `perturb`, and a reworded statement never equals any other draw's wording;
- the cited source of a statement supports it with probability `accuracy` (the snippet then repeats
  the statement's claim; otherwise it is about something else), so citation accuracy varies per
  answer around a known engine-level value.

Everything is a function of (seed, engine, query, wave, repeat), so two runs give the same answers
and a resumed collection gets the same answer for the same draw. What follows from the settings:

- URL Jaccard of two draws: E[i / (2c - i)] with i hypergeometric(pool, c, c) (`expected_url_jaccard`);
- statement overlap (Dice of exact statement sets) of two draws: (1 - perturb)^2;
- a statement's support: Bernoulli(accuracy), independent across statements, draws and engines.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator

__all__ = ["Variation", "VariedAnswer", "varied_answer", "canonical_record", "synthetic_records",
           "expected_url_jaccard", "expected_statement_overlap"]


@dataclass(frozen=True)
class Variation:
    """How much a fake engine's answers change between draws (see the module docstring)."""

    seed: int = 0
    pool: int = 10
    cited: int = 3
    statements: int = 4
    perturb: float = 0.25
    domains: int = 5
    accuracy: float = 0.8


@dataclass(frozen=True)
class VariedAnswer:
    response_id: str
    statements: tuple[str, ...]
    urls: tuple[str, ...]  # in rank order; statement k cites urls[k % len(urls)]
    snippets: tuple[str, ...]  # one per url: what the cited page says
    supported: tuple[bool, ...]  # per statement: does its cited source support it


def _rng(*parts: object) -> random.Random:
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _query_key(query: str) -> str:
    return hashlib.sha256(query.encode()).hexdigest()[:8]


def pool_urls(query: str, variation: Variation) -> list[str]:
    key = _query_key(query)
    return [f"https://site{j % variation.domains}.example/{key}/{j}" for j in range(variation.pool)]


def varied_answer(engine: str, query: str, draw: int, variation: Variation, wave: str = "") -> VariedAnswer:
    """The answer `engine` gives to `query` on its `draw`-th asking (0-based) in `wave`."""
    rng = _rng(variation.seed, engine, query, wave, draw)
    urls = rng.sample(pool_urls(query, variation), min(variation.cited, variation.pool))
    statements = []
    for k in range(variation.statements):
        claim = f"Claim {k + 1} about {query[:50].rstrip()} holds in the {engine} answer"
        if rng.random() < variation.perturb:
            # unique to this draw, so two reworded statements never match by chance
            claim = f"Put another way ({wave}/{draw}), point {k + 1} on {query[:50].rstrip()} is stated again by {engine}"
        statements.append(claim + ".")
    supported = tuple(rng.random() < variation.accuracy for _ in statements)
    snippets = []
    for j, _url in enumerate(urls):
        claims = [s for k, s in enumerate(statements) if k % len(urls) == j and supported[k]]
        snippets.append(" ".join(claims) if claims else "This page is about an unrelated topic entirely, weather and tides.")
    rid = hashlib.sha256(f"{engine}|{query}|{wave}|{draw}|{variation.seed}".encode()).hexdigest()[:12]
    return VariedAnswer(rid, tuple(statements), tuple(urls), tuple(snippets), supported)


def canonical_record(engine: str, query: str, draw: int, variation: Variation, *, wave: str = "",
                     captured_at: str = "", query_type: str = "expertise") -> dict[str, Any]:
    """One answer in the canonical format with its labels (the `recorded` judge reads them): each
    statement relevant, supported by its cited source exactly when the draw says so."""
    va = varied_answer(engine, query, draw, variation, wave)
    cite = [k % len(va.urls) + 1 for k in range(len(va.statements))]
    text = " ".join(f"{s[:-1]} [{c}]." for s, c in zip(va.statements, cite))
    labels = {"confidence": 4, "statements": [
        {"text": f"{s[:-1]} [{c}].", "relevant": True, "supported_by": [c] if ok else []}
        for s, c, ok in zip(va.statements, cite, va.supported)]}
    rid = f"{engine}-{_query_key(query)}-{wave or 'w'}-r{draw}"
    return {"answer_id": rid, "engine": engine, "query": query, "query_type": query_type, "answer": text,
            "sources": [{"index": i + 1, "url": u, "title": f"Page {i + 1}", "text": t}
                        for i, (u, t) in enumerate(zip(va.urls, va.snippets))],
            "labels": labels, "wave": wave, "repeat": draw, "captured_at": captured_at}


def synthetic_records(engines: dict[str, Variation], queries: int, repeats: int, waves: int = 1,
                      start: datetime | None = None) -> Iterator[dict[str, Any]]:
    """Canonical records: every engine answers every query `repeats` times in each of `waves`
    weekly waves (named by their date; repeats an hour apart)."""
    start = start or datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)
    for w in range(waves):
        day = start + timedelta(days=7 * w)
        wave = day.date().isoformat()
        for q in range(queries):
            query = f"Synthetic question number {q + 1} about topic {q % 37}?"
            for engine, variation in engines.items():
                for r in range(repeats):
                    at = (day + timedelta(hours=r, seconds=q)).isoformat(timespec="seconds")
                    yield canonical_record(engine, query, r, variation, wave=wave, captured_at=at)


def expected_url_jaccard(pool: int, cited: int) -> float:
    """E[|A ∩ B| / |A ∪ B|] for two independent uniform `cited`-subsets of a `pool`-set."""
    total = math.comb(pool, cited)
    value = 0.0
    for i in range(0, cited + 1):
        ways = math.comb(cited, i) * math.comb(pool - cited, cited - i)
        if ways:
            value += ways / total * (i / (2 * cited - i))
    return value


def expected_statement_overlap(perturb: float) -> float:
    """E[Dice of the two draws' statement sets]: a statement matches when neither draw rewords it."""
    return (1 - perturb) ** 2
