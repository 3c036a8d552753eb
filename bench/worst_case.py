"""The largest answer the input limits allow, and the same answer with fewer of its sources.

Issue 27 measured an answer of 990,000 characters with 500 sources of 108,000 characters (56 MB): it
ran for minutes. The limits now bound one answer's work (pipeline/importers/canonical.py): at most
MAX_ANSWER_SOURCE_CHARS characters of source text and MAX_PAIRS_PER_ANSWER statement x source pairs.
`worst_case(1)` is the largest answer of the issue's shape they allow: sources of SOURCE_CHARS
characters, as many as the text limit holds (92), and as many statements (~200 characters, citing
one or two sources each) as the statement and pair limits allow against them (1,000). `worst_case(f)` keeps the
statements and lists the first f of the sources, so the input's size, its source text and its pairs
all grow in proportion to f: the benchmark's time and memory per unit of size show whether the cost
is linear.

Text is drawn from a few topics' words and common filler, so every statement shares words with every
page (the first pass cannot rule out many pairs cheaply: the case the cap on pairs judged in full,
offline.judge.MAX_PAIRS_JUDGED, exists for). The file goes to a temporary folder; nothing
is written to the repository.

    .venv/bin/python bench/run.py --only n
"""

from __future__ import annotations

import json
import random
from pathlib import Path

SENTENCE_CHARS = 200
SOURCE_CHARS = 108_000

_TOPICS = [
    "reservoir levels rose after the wet spring and engineers measured the snowmelt in the catchment",
    "street trees lower summer surface temperatures in dense neighbourhoods with little shade",
    "the council approved a budget for new bus routes and longer library opening hours",
    "vaccines train the immune system by showing it a harmless part of the virus",
    "reactor projects in europe took between ten and nineteen years from planning to operation",
    "coastal wetlands store carbon in their soils and protect villages from storm surges",
    "the bakery near the station sells bread every morning and closes early on sundays",
    "researchers found that sleep deprivation lowers attention and slows reaction times",
]
_FILLER = ("the report notes that officials said in a statement this year that local residents and experts "
           "agreed during the meeting about several issues with a plan for the region").split()


def _sentence(rng: random.Random, topic: str, length: int) -> str:
    words = topic.split()
    out: list[str] = []
    while sum(len(w) + 1 for w in out) < length:
        out.append(rng.choice(words) if rng.random() < 0.6 else rng.choice(_FILLER))
    return " ".join(out).capitalize()


def full_shape() -> tuple[int, int]:
    """(sources, statements) of the largest answer of this shape the limits allow."""
    from pipeline.importers.canonical import (
        MAX_ANSWER_CHARS,
        MAX_ANSWER_SOURCE_CHARS,
        MAX_PAIRS_PER_ANSWER,
        MAX_SOURCES,
        MAX_STATEMENTS,
    )

    n_sources = min(MAX_SOURCES, MAX_ANSWER_SOURCE_CHARS // SOURCE_CHARS)
    return n_sources, min(MAX_PAIRS_PER_ANSWER // n_sources, MAX_STATEMENTS, MAX_ANSWER_CHARS // (SENTENCE_CHARS + 12))


def worst_case(fraction: float, folder: Path, seed: int = 27, statements: int | None = None) -> tuple[Path, dict[str, int]]:
    """A canonical JSONL file holding the worst-case answer with `fraction` of its sources, and its
    shape; `statements` keeps only that many of its statements (the benchmark's quick mode)."""
    rng, rng_statements = random.Random(seed), random.Random(seed + 1)  # sources: a prefix of the same list
    all_sources, n_statements = full_shape()
    n_statements = min(n_statements, statements or n_statements)
    n_sources = max(1, round(all_sources * fraction))
    sources = []
    for k in range(1, n_sources + 1):
        topic = _TOPICS[k % len(_TOPICS)]
        text = []
        while sum(len(t) + 2 for t in text) < SOURCE_CHARS:
            text.append(_sentence(rng, topic if rng.random() < 0.7 else rng.choice(_TOPICS), 160) + ".")
        sources.append({"index": k, "url": f"https://example.org/page/{k}", "title": f"Page {k}",
                        "text": " ".join(text)[:SOURCE_CHARS]})
    sentences = []
    for i in range(n_statements):
        cited = sorted({rng_statements.randint(1, all_sources) for _ in range(rng_statements.randint(1, 2))})
        topic = _TOPICS[cited[0] % len(_TOPICS)]
        text = _sentence(rng_statements, topic, SENTENCE_CHARS)  # the same statements at every size
        cited = [n for n in cited if n <= n_sources] or [1 + i % n_sources]
        sentences.append(text + "".join(f" [{n}]" for n in cited) + ".")
    answer = {"answer_id": f"worst-{fraction:g}", "engine": "synthetic", "query": "What changed in the region this year?",
              "query_type": "expertise", "answer": " ".join(sentences), "sources": sources}
    path = folder / f"worst-{fraction:g}.jsonl"
    path.write_text(json.dumps(answer) + "\n", encoding="utf-8")
    shape = {"answer_chars": len(answer["answer"]), "sources": n_sources, "statements": n_statements,
             "source_chars": sum(len(s["text"]) for s in sources), "pairs": n_sources * n_statements,
             "bytes": path.stat().st_size}
    return path, shape
