"""The over-time corpora of the benchmark (rows t, bench/over_time.py; rows t4, bench/pages_scale.py):
fake engines with their own controlled randomness (pipeline/testing/fake_variation.py) answering Q
queries twice in W weekly waves, written as canonical records that carry their labels, and the
environment a run on them gets (its own results and cache folders). Both row modules read this
one; neither imports the other for it."""

from __future__ import annotations

import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHAPES = {"tiny": (3, 2), "1k": (28, 2), "20k": (139, 8), "140k": (300, 26)}  # queries, waves (9 engines x 2 repeats)
ENGINES = 9
REPEATS = 2


def engines():
    from pipeline.testing.fake_variation import Variation

    return {f"Engine {k + 1}": Variation(seed=k, pool=6 + k, cited=3, statements=4, perturb=0.1 + 0.05 * k,
                                         accuracy=0.55 + 0.04 * k) for k in range(ENGINES)}


def make_corpus(label: str, folder: Path) -> tuple[Path, int]:
    from pipeline.testing.fake_variation import synthetic_records

    queries, waves = SHAPES[label]
    path = folder / f"over-time-{label}.jsonl"
    n = 0
    with path.open("w", encoding="utf-8") as out:
        for record in synthetic_records(engines(), queries=queries, repeats=REPEATS, waves=waves):
            out.write(json.dumps(record) + "\n")
            n += 1
    return path, n


def corpus_env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "AEE_RESULTS_DIR": str(tmp / "results"), "AEE_CACHE_DIR": str(tmp / "cache"),
            "AEE_OVER_TIME_MEANING": "lexical", "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
