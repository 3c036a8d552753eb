"""The offline judge: no network, no key, no GPU, no torch.

Support (statement, source): the source text is cut into sentences; the 2- and 3-sentence window
that shares the most content words with the statement is the evidence. The statement, the passage
(the whole source when short, else that window grown to PASSAGE_CHARS) and the question are
embedded with all-MiniLM-L6-v2 (numpy forward pass, `pipeline.judges.embedding`). Features -
statement/passage/question cosines, content-word recall in the whole source and in the best
window, verbatim n-gram overlap, number and name coverage, negation mismatch, length -
go into a small logistic regression fitted on ExpertQA expert labels (`pipeline/judges/calibration.py` (`aee judges calibrate`)
writes `offline_params.json`; parameters only). `score` = probability that the source fully
supports the statement; the label is `full` / `partial` / `none` by two calibrated thresholds;
`evidence` = best window (bounded); `raw` = JSON of the features. Without the embedding model the
judge falls back to a lexical-only model (also calibrated) and says so in every `raw`.

Relevance, confidence and stance are rule sets, not calibrated models, in
`pipeline.judges.offline_cues` (filler that never eats a fact; hedges vs boosters) and
`pipeline.judges.offline_stance` (the question's proposition, then each statement's side, or
`unknown` when the rules cannot tell); docs/judges/offline.md lists their cues and limits.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from pipeline.judges.base import BaseJudge
from pipeline.judges.offline_cues import CUES_VERSION, confidence_level, filler_cue, stance_readings
from pipeline.judges.offline_text import (
    MAX_SOURCE_CHARS,
    WORD_RE,
    apply_rules,
    content_tokens,
    is_negated,
    names_in,
    number_conflicts,
    numbers_in,
    split_sentences,
    strip_markers,
)
from pipeline.judges.source_sets import WindowedSetSupport
from pipeline.judges.source_stance import RULES_VERSION as SOURCE_STANCE_RULES
from pipeline.judges.source_stance import offline_source_stance
from pipeline.records import AnnotatedAnswer, Answer, Source, Statement, Verdict
from pipeline.text import statements_for

log = logging.getLogger(__name__)

PARAMS_PATH = Path(__file__).with_name("offline_params.json")
JUDGE_NAME = "offline"
PROMPT_VERSION = "offline-v1"
MAX_EVIDENCE_CHARS = 600
TOP_K = 3  # sentences per statement ranked by the lexical retrieval step

# --------------------------------------------------------------------------------------------
# support features
# --------------------------------------------------------------------------------------------

FEATURES_LEXICAL = (
    "recall_all",  # share of the statement's content words found anywhere in the source
    "recall_idf",  # same, weighted by a within-source rarity weight
    "recall_win",  # best share inside one window of up to 3 consecutive sentences
    "recall_sent",  # best share inside one sentence
    "bigram_recall",  # share of the statement's content-word bigrams found in the source
    "missing_words",  # log1p(number of statement content words absent from the source)
    "num_cov",  # share of the statement's numbers found in the source (1 when it has none)
    "num_missing",  # 1 when the statement has a number that the source lacks
    "name_cov",  # share of capitalised names found in the source (1 when none)
    "neg_mismatch",  # negation in statement xor in best window
    "log_len",  # log number of statement content words
    "multi_cite",  # statement cites more than one source
    "trigram_raw",  # share of the statement's word trigrams (stopwords kept) found verbatim
    "longest_run",  # longest verbatim run of statement words in the source / statement length
    "bigram_raw",  # share of word bigrams (stopwords kept) found verbatim
    "src_len",  # log number of words in the source
    "union_recall",  # content-word recall against all cited sources together (what experts judged)
    "union_bigram",  # raw-bigram recall against all cited sources together
)
FEATURES_EMBED = (
    "cos_pass",  # cosine of statement vs the passage's first PASSAGE_TOKENS (whole source when short, else best window on)
    "q_stmt",  # cosine of the question vs the statement (a statement that only echoes the question)
    "q_pass",  # cosine of the question vs the passage (a source on the question's topic)
)
PASSAGE_CHARS = 1500  # a source up to this long is the passage; a longer one gives a window this long
# The passage embedding reads the passage's first PASSAGE_TOKENS word pieces: the length MiniLM was
# trained on. Against the 256 the encoder allows, grouped cross-validation on ExpertQA moved by less
# than its fold noise (AUC 0.647 vs 0.642) while the judge embeds a quarter fewer tokens.
PASSAGE_TOKENS = 128


class _SourceIndex:
    """Sentences, their tokens and rarity weights for one source text."""

    def __init__(self, text: str) -> None:
        self.sentences = split_sentences(text)
        self.tokens = [set(content_tokens(s)) for s in self.sentences]
        self.all_tokens: set[str] = set().union(*self.tokens) if self.tokens else set()
        n = max(len(self.sentences), 1)
        df: dict[str, int] = {}
        for toks in self.tokens:
            for t in toks:
                df[t] = df.get(t, 0) + 1
        self.idf = {t: math.log(1.0 + n / c) for t, c in df.items()}
        self.numbers = numbers_in(text)
        self.lower = text[:MAX_SOURCE_CHARS].lower()
        seq = content_tokens(text[:MAX_SOURCE_CHARS])
        self.bigrams = set(zip(seq, seq[1:]))
        words = WORD_RE.findall(self.lower)
        self.n_words = len(words)
        self.raw_bigrams = set(zip(words, words[1:]))
        self.raw_trigrams = set(zip(words, words[1:], words[2:]))
        self.windows: list[tuple[int, int, set[str]]] = []  # (start, end exclusive, tokens)
        for i in range(len(self.sentences)):
            for w in (2, 3):
                if i + w <= len(self.sentences):
                    self.windows.append((i, i + w, set().union(*self.tokens[i : i + w])))


def _lexical(statement: str, idx: _SourceIndex) -> tuple[dict[str, float], list[int], tuple[int, int]]:
    """Lexical features (all but multi_cite and the union ones), the top-k sentence ids, and the
    best window span."""
    toks = list(dict.fromkeys(content_tokens(statement)))
    n = len(toks)
    f: dict[str, float] = {}
    if n == 0 or not idx.sentences:
        f.update(recall_all=0.0, recall_idf=0.0, recall_win=0.0, recall_sent=0.0, bigram_recall=0.0,
                 missing_words=math.log1p(n), num_cov=1.0, num_missing=0.0, name_cov=1.0, neg_mismatch=0.0,
                 log_len=math.log1p(n), trigram_raw=0.0, longest_run=0.0,
                 bigram_raw=0.0, src_len=math.log1p(idx.n_words))
        return f, [], (0, 0)
    present = [t in idx.all_tokens for t in toks]
    f["recall_all"] = sum(present) / n
    default_idf = math.log(1.0 + max(len(idx.sentences), 1))
    w = [idx.idf.get(t, default_idf) for t in toks]
    f["recall_idf"] = sum(wi for wi, p in zip(w, present) if p) / sum(w)
    tokset = set(toks)
    # summed in statement order, not set order: set order follows the per-process string hash seed,
    # and float sums in another order can break ties between sentences differently in another run
    sent_scores = [sum(idx.idf[t] for t in toks if t in s) for s in idx.tokens]
    f["recall_sent"] = max(len(tokset & s) for s in idx.tokens) / n
    best_win, best_win_r = (0, 1), -1.0
    for a, b, toks_w in idx.windows or [(0, 1, idx.tokens[0])]:
        r = len(tokset & toks_w)
        if r > best_win_r:
            best_win, best_win_r = (a, b), r
    f["recall_win"] = max(best_win_r, 0) / n
    seq = content_tokens(statement)
    bigrams = set(zip(seq, seq[1:]))
    f["bigram_recall"] = len(bigrams & idx.bigrams) / len(bigrams) if bigrams else f["recall_all"]
    f["missing_words"] = math.log1p(n - sum(present))
    nums = numbers_in(statement)
    if nums:
        cov = sum(1 for x in nums if x in idx.numbers) / len(nums)
        f["num_cov"], f["num_missing"] = cov, float(cov < 1.0)
    else:
        f["num_cov"], f["num_missing"] = 1.0, 0.0
    names = names_in(statement)
    f["name_cov"] = sum(1 for x in names if x in idx.lower) / len(names) if names else 1.0
    window_text = " ".join(idx.sentences[best_win[0] : best_win[1]])
    f["num_conflict"] = float(len(number_conflicts(statement, idx.numbers, window_text)))
    win_words = WORD_RE.findall(window_text.lower())
    f["neg_mismatch"] = float(is_negated(WORD_RE.findall(statement.lower())) != is_negated(win_words))
    f["log_len"] = math.log1p(n)
    f.update(_raw_overlap(statement, idx))
    top = sorted(range(len(sent_scores)), key=lambda i: (-sent_scores[i], i))[:TOP_K]
    return f, top, best_win


def _union_overlap(statement: str, idxs: Sequence[_SourceIndex]) -> tuple[float, float]:
    """Content-word recall and raw-bigram recall against several sources together (what the experts
    judged a multi-citation statement against)."""
    toks = set(content_tokens(statement))
    if not toks or not any(i.sentences for i in idxs):
        return 0.0, 0.0
    w = WORD_RE.findall(statement.lower())
    bi = list(zip(w, w[1:]))
    recall = sum(any(t in i.all_tokens for i in idxs) for t in toks) / len(toks)
    bigram = sum(any(b in i.raw_bigrams for i in idxs) for b in bi) / len(bi) if bi else 0.0
    return recall, bigram


def _raw_overlap(statement: str, idx: _SourceIndex) -> dict[str, float]:
    """Verbatim overlap with stopwords kept: copied wording is a strong sign of support."""
    w = WORD_RE.findall(statement.lower())
    tri = list(zip(w, w[1:], w[2:]))
    bi = list(zip(w, w[1:]))
    best = run = 0
    for t in tri:
        run = run + 1 if t in idx.raw_trigrams else 0
        best = max(best, run)
    return {
        "trigram_raw": sum(t in idx.raw_trigrams for t in tri) / len(tri) if tri else 0.0,
        "longest_run": (best + 2 if best else 0) / max(len(w), 1),
        "bigram_raw": sum(t in idx.raw_bigrams for t in bi) / len(bi) if bi else 0.0,
        "src_len": math.log1p(idx.n_words),
    }


def is_whole_passage(text: str) -> bool:
    """A source this short is its own passage, whatever the statement."""
    return len(text) <= PASSAGE_CHARS


def passage_for(idx: "_SourceIndex", text: str, window: tuple[int, int]) -> str:
    """The text embedded for the passage features: the whole source when it is short (ExpertQA's
    evidence passages are), else the best lexical window grown by the sentences after it, then the
    ones before it, up to PASSAGE_CHARS characters. Growing forward first keeps the window at the
    start of the passage, so the embedding, which reads only the first PASSAGE_TOKENS word pieces,
    always sees the evidence the window was chosen for."""
    if is_whole_passage(text) or not idx.sentences:
        return text[:PASSAGE_CHARS]
    a, b = window
    size = sum(len(x) + 1 for x in idx.sentences[a:b])
    while b < len(idx.sentences) and size + len(idx.sentences[b]) + 1 <= PASSAGE_CHARS:
        size += len(idx.sentences[b]) + 1
        b += 1
    while a > 0 and size + len(idx.sentences[a - 1]) + 1 <= PASSAGE_CHARS:
        a -= 1
        size += len(idx.sentences[a]) + 1
    return " ".join(idx.sentences[a:b])[:PASSAGE_CHARS]


def _sigmoid(z: np.ndarray | float) -> Any:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))


class SupportModel:
    """Standardise -> logistic regression -> thresholds, from offline_params.json."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.features: list[str] = list(spec["features"])
        self.mean = np.asarray(spec["mean"], dtype=np.float64)
        self.std = np.asarray(spec["std"], dtype=np.float64)
        self.coef = np.asarray(spec["coef"], dtype=np.float64)
        self.intercept = float(spec["intercept"])
        self.t_full = float(spec["threshold_full"])
        self.t_partial = float(spec["threshold_partial"])

    def score(self, feats: Sequence[dict[str, float]]) -> np.ndarray:
        if not feats:
            return np.zeros(0)
        x = np.array([[f.get(k, 0.0) for k in self.features] for f in feats], dtype=np.float64)
        return _sigmoid(((x - self.mean) / self.std) @ self.coef + self.intercept)

    def label(self, p: float) -> str:
        return "full" if p >= self.t_full else "partial" if p >= self.t_partial else "none"


# Used when offline_params.json is missing: hand-set weights of the same form (uncalibrated).
_DEFAULT_PARAMS = {
    "embed": {
        "features": ["cos_pass", "recall_win", "recall_all", "num_missing", "neg_mismatch"],
        "mean": [0.55, 0.6, 0.75, 0.1, 0.1], "std": [0.15, 0.2, 0.2, 0.3, 0.3],
        "coef": [1.0, 0.8, 0.6, -0.5, -0.4], "intercept": 0.0,
        "threshold_full": 0.5, "threshold_partial": 0.3,
    },
    "lexical": {
        "features": ["recall_win", "recall_all", "bigram_recall", "num_missing", "neg_mismatch"],
        "mean": [0.6, 0.75, 0.4, 0.1, 0.1], "std": [0.2, 0.2, 0.25, 0.3, 0.3],
        "coef": [1.0, 0.6, 0.6, -0.5, -0.4], "intercept": 0.0,
        "threshold_full": 0.5, "threshold_partial": 0.3,
    },
}


def load_params(path: Path | None = None) -> dict[str, Any]:
    path = path or PARAMS_PATH
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        log.warning("offline judge: %s missing or unreadable; using uncalibrated default weights", path)
        return {"version": "default", **_DEFAULT_PARAMS}


# --------------------------------------------------------------------------------------------
# the judge
# --------------------------------------------------------------------------------------------


class OfflineJudge(WindowedSetSupport, BaseJudge):
    """Offline judge (see the module docstring). Config: `params_path`, `use_embeddings`
    (default True; False forces the lexical model), `top_k`, `max_evidence_chars`."""

    name = JUDGE_NAME
    # In the cache key: the source-stance cue rules live in their own module with their own version.
    cache_fingerprint = SOURCE_STANCE_RULES

    def __init__(self, params_path: str | Path | None = None, use_embeddings: bool = True,
                 top_k: int = TOP_K, max_evidence_chars: int = MAX_EVIDENCE_CHARS, **_: Any) -> None:
        self.params = load_params(Path(params_path) if params_path else None)
        # the cue rules' version is part of it: new relevance / stance / confidence rules rebuild labels
        self.prompt_version = f"{PROMPT_VERSION}+{self.params.get('version', 'default')}+{CUES_VERSION}"
        # Which ExpertQA questions the support model was fitted on (hashes, see
        # agreement.question_fingerprint), so an agreement report can tell held-out pairs apart.
        self.calibration_questions = frozenset(self.params.get("calibration_questions") or ())
        self.calibration = dict(self.params.get("calibration") or {})
        self.want_embeddings = bool(use_embeddings)
        self.top_k = int(top_k)
        self.max_evidence_chars = int(max_evidence_chars)
        self._mode: str | None = None  # "embed" or "lexical", decided on first support call
        self._warning = ""
        self._models: dict[str, SupportModel] = {}
        self._index_cache: dict[int, _SourceIndex] = {}
        self._prefetched: dict[tuple[str, str, tuple[str, ...], str], tuple[dict[str, float], str]] = {}

    # -- mode and models ----------------------------------------------------------------------
    @property
    def mode(self) -> str:
        if self._mode is None:
            if not self.want_embeddings:
                self._mode = "lexical"
            else:
                from pipeline.judges import embedding

                try:
                    embedding.get_encoder()
                    self._mode = "embed"
                except embedding.ModelUnavailable as exc:
                    self._mode = "lexical"
                    self._warning = f"embedding model unavailable ({exc}); lexical-only support model"
                    log.warning("offline judge: %s", self._warning)
        return self._mode

    def _model(self, mode: str) -> SupportModel:
        if mode not in self._models:
            self._models[mode] = SupportModel(self.params.get(mode) or _DEFAULT_PARAMS[mode])
        return self._models[mode]

    def _index(self, text: str) -> _SourceIndex:
        key = hash(text)
        idx = self._index_cache.get(key)
        if idx is None:
            if len(self._index_cache) > 5000:
                self._index_cache.clear()
            idx = self._index_cache[key] = _SourceIndex(text)
        return idx

    # -- support -------------------------------------------------------------------------------
    def support_features(self, pairs: Sequence[tuple[str, str, Sequence[str], str]], mode: str | None = None
                         ) -> list[tuple[dict[str, float], str]]:
        """Features and best-window evidence for (statement text, source text, texts of all the
        statement's cited sources with text, question) tuples; the third item may be empty.
        Statement text is used as given (strip markers first). Embeddings are computed in one batch
        for all pairs, so calling this with many pairs is much faster than one by one."""
        mode = mode or self.mode
        memo: dict[tuple[str, str], tuple[dict[str, float], list[int], tuple[int, int]]] = {}
        pending_short = pending_whole = None
        whole: list[str] = []
        if mode == "embed":  # embed on the worker threads during the lexical pass: statements and
            from pipeline.judges import embedding  # questions, and the sources short enough to be their own passage

            short = list(dict.fromkeys(t for stmt, _, _, query in pairs for t in (stmt, query) if t))
            pending_short = embedding.embed_async(short) if short else None
            whole = list(dict.fromkeys(text for _, text, _, _ in pairs if text and is_whole_passage(text)))
            pending_whole = embedding.embed_async(whole, max_tokens=PASSAGE_TOKENS) if whole else None

        def lexical(stmt: str, text: str) -> tuple[dict[str, float], list[int], tuple[int, int]]:
            # a statement meets each of its cited sources again for every source of its answer
            if (stmt, text) not in memo:
                memo[stmt, text] = _lexical(stmt, self._index(text))
            return memo[stmt, text]

        rows = []
        for stmt, text, cited, _query in pairs:
            cited = [c for c in cited if c] or [text]
            f, _top, win = lexical(stmt, text)
            f = dict(f, multi_cite=float(len(cited) > 1))
            others = [c for c in dict.fromkeys(cited) if c != text]
            if others:
                f["union_recall"], f["union_bigram"] = _union_overlap(stmt, [self._index(t) for t in (text, *others)])
            else:
                f["union_recall"], f["union_bigram"] = f["recall_all"], f["bigram_raw"]
            rows.append((f, win, self._index(text), passage_for(self._index(text), text, win)))
        if mode == "embed":
            queued = set(whole)  # long sources: their windows are known only now
            windows = list(dict.fromkeys(passage for *_, passage in rows if passage and passage not in queued))
            pending_win = embedding.embed_async(windows, max_tokens=PASSAGE_TOKENS) if windows else None
            vecs = dict(zip(short, pending_short.result())) if pending_short is not None else {}
            p_vecs = dict(zip(whole, pending_whole.result())) if pending_whole is not None else {}
            if pending_win is not None:
                p_vecs.update(zip(windows, pending_win.result()))
            for (stmt, _, _, query), (f, _, _, passage) in zip(pairs, rows):
                s_vec, p_vec, q_vec = vecs.get(stmt), p_vecs.get(passage), vecs.get(query)
                f["cos_pass"] = float(s_vec @ p_vec) if s_vec is not None and p_vec is not None else 0.0
                f["q_stmt"] = float(q_vec @ s_vec) if q_vec is not None and s_vec is not None else 0.0
                f["q_pass"] = float(q_vec @ p_vec) if q_vec is not None and p_vec is not None else 0.0
        out = []
        for f, win, idx, _ in rows:
            ev = " ".join(idx.sentences[win[0] : win[1]]) if idx.sentences else ""
            out.append((f, ev[: self.max_evidence_chars]))
        return out

    @staticmethod
    def _pair_inputs(answer: Answer, statement: Statement, source: Source) -> tuple[str, str, list[str], str]:
        cited = []
        for n in statement.citations:
            src = answer.source(n)
            if src is not None and src.text and src.fetch_ok is not False:
                cited.append(src.text)
        return strip_markers(statement.text), source.text or "", cited, answer.query

    def support(self, answer: Answer, statements: Sequence[Statement], source: Source) -> list[Verdict]:
        mode = self.mode
        model = self._model(mode)
        text = source.text or ""
        inputs = [self._pair_inputs(answer, s, source) for s in statements]
        keys = [(st, tx, tuple(ci), q) for st, tx, ci, q in inputs]
        if all(k in self._prefetched for k in keys):
            feats = [self._prefetched[k] for k in keys]
        else:
            feats = self.support_features(inputs, mode)
        probs = model.score([f for f, _ in feats])
        out = []
        for s, (stmt, *_), (f, ev), p in zip(statements, inputs, feats, probs):
            raw = {"mode": mode, "features": {k: round(v, 4) for k, v in f.items()}, "p_full": round(float(p), 4)}
            p, rule = apply_rules(float(p), f, model.t_full)
            if rule:  # raw keeps the model's own probability (p_full) and says which numbers clash
                idx = self._index(text)
                _, _, (a, b) = _lexical(stmt, idx)
                raw["rule"] = rule
                raw["number_conflicts"] = number_conflicts(stmt, idx.numbers, " ".join(idx.sentences[a:b]))
            if self._warning:
                raw["warning"] = self._warning
            if not text.strip():
                raw["note"] = "source has no text"
            out.append(Verdict(answer.answer_id, "support", model.label(float(p)), self.name, self.prompt_version,
                               raw=json.dumps(raw, sort_keys=True), statement_index=s.index,
                               source_index=source.index, score=float(p), evidence=ev))
        return out

    def prefetch(self, answers: Sequence[AnnotatedAnswer]) -> None:
        """Compute the support features of every (statement, source with text) pair of these answers
        in one `support_features` call, so that all their sentences are embedded in large batches;
        the following `support` calls take the stored features. Replaces what an earlier call stored."""
        self._prefetched = {}
        if self.mode != "embed":
            return
        pairs = {}
        for a in answers:
            statements = statements_for(a)
            for src in a.answer.sources:
                if (src.text or "").strip() and src.fetch_ok is not False:
                    for s in statements:
                        stmt, text, cited, query = self._pair_inputs(a.answer, s, src)
                        pairs[stmt, text, tuple(cited), query] = (stmt, text, cited, query)
        self._prefetched = dict(zip(pairs, self.support_features(list(pairs.values()), "embed")))

    # -- relevance, confidence, stance: rule sets in pipeline.judges.offline_cues -----------------
    def relevance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        out = []
        for s in statements:
            cue, fact = filler_cue(s.text, answer.query)
            raw = {"cue": cue, **({"fact": fact} if fact else {})}
            out.append(Verdict(answer.answer_id, "relevance", "filler" if cue else "relevant", self.name,
                               self.prompt_version, raw=json.dumps(raw), statement_index=s.index, evidence=cue))
        return out

    def confidence(self, answer: Answer) -> Verdict:
        level, raw, cue = confidence_level(answer.text)
        return Verdict(answer.answer_id, "confidence", str(level), self.name, self.prompt_version,
                       raw=json.dumps(raw), evidence=cue)

    # -- source stance (cue rules in pipeline/judges/source_stance.py) ---------------------------
    def source_stance(self, answer: Answer, sources: Sequence[Source]) -> list[Verdict]:
        return offline_source_stance(answer, sources, self.name, self.prompt_version)

    def stance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        _, readings = stance_readings(answer.query, [s.text for s in statements])
        return [Verdict(answer.answer_id, "stance", r.label, self.name, self.prompt_version,
                        raw=json.dumps(r.details, sort_keys=True), statement_index=s.index, evidence=r.cue)
                for s, r in zip(statements, readings)]
