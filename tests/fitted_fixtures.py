"""A corpus large enough for the fitted judge (issue 41): answers of three engines under the scripted
judge, and a person who judges differently from it in ways the covariates reveal (stricter on
figures, and on engine C's sources). Import from a test: `from fitted_fixtures import build_fitted_corpus`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

TOPICS = ("rivers", "glaciers", "volcanoes", "forests", "deserts", "coral reefs", "tides", "monsoons")


def corpus(n_answers: int = 150, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n_answers):
        engine = ("A", "B", "C")[k % 3]
        topic = TOPICS[k % len(TOPICS)]
        sentences, texts = [], []
        for s in range(4):
            figure = f" in {1900 + int(rng.integers(0, 120))}" if rng.random() < 0.4 else ""
            shared = rng.random() < 0.6  # the source repeats the statement's words: the scripted judge says full
            claim = f"The {topic} of region {k}-{s} changed shape{figure}"
            sentences.append(f"{claim} [{s % 2 + 1}].")
            texts.append(claim + "." if shared else f"Unrelated note {k}-{s} about weather.")
        out.append({
            "answer_id": f"fit-{k:03d}", "engine": engine, "query": f"What about {topic} {k}?", "query_type": "expertise",
            "answer": " ".join(sentences),
            "sources": [{"index": 1, "url": f"https://{'en.wikipedia.org' if k % 2 else 'example.com'}/{k}/1",
                         "title": "One", "text": " ".join(texts[0::2]), "fetch_ok": True},
                        {"index": 2, "url": f"https://example.gov/{k}/2", "title": "Two", "text": " ".join(texts[1::2]),
                         "fetch_ok": True}],
        })
    return out


def person(statement: str, engine: str, judge_label: str, rng: np.random.Generator) -> str:
    """The person's support label: the judge's, but stricter where a figure is claimed and on engine C."""
    p = 0.9 if judge_label == "full" else 0.1
    if re.search(r"\bin \d{4}\b", statement):
        p -= 0.55
    if engine == "C":
        p -= 0.3
    return "full" if rng.random() < max(0.02, p) else "none"


def build_fitted_corpus(tmp: Path) -> Path:
    """tmp/results holding dataset `fitcorp` under the scripted judge."""
    from pipeline.runner import run_dataset

    root = tmp / "results"
    path = tmp / "fitcorp.jsonl"
    path.write_text("\n".join(json.dumps(a) for a in corpus()) + "\n", encoding="utf-8")
    run_dataset("fitcorp", path, judge_name="scripted", progress=False, root=root, use_cache=False)
    return root


def label_sample(sample, root: Path, annotator: str = "Ana", seed: int = 1) -> int:
    """Label every support item of a sample as `person` would; returns how many labels were written."""
    from pipeline.audit.labels import LabelStore, labels_path

    rng = np.random.default_rng(seed)
    rows = [(sample.sample_id, str(r["item_id"]), annotator, "support",
             person(str(r["statement"]), str(r["engine"]), str(r["judge_support"]), rng))
            for r in sample.items.to_dict("records") if int(r["source_index"]) >= 0]
    return LabelStore(labels_path(root)).record_many(rows, "test")
