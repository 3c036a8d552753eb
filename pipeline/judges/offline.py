"""The offline judge: no network, no key, no GPU, no torch.

Support (statement, source): `pipeline.judges.offline_support` (read its docstring). In short: the
statement is aligned with its best window of the source, compared word by word with figures read as
values, scored by a logistic model whose coefficients are held to the sign that keeps it monotone in
coverage (fitted on ExpertQA expert labels plus pairs made from the sources themselves by
`aee judges calibrate`, which writes `offline_params.json`), and a contradiction found by
`offline_align` (negation, opposite direction, a swapped name or figure) keeps a statement from
being supported at all. `score` = probability that the source fully supports the statement; the
label is `full` / `partial` / `none` by two calibrated thresholds; `evidence` = best window
(bounded); `raw` = JSON of the features, the contradictions and any rule applied. Without the
embedding model the judge falls back to a lexical-only model (also calibrated) and says so in every
`raw`. A statement against a source it does not cite that shares almost nothing with it is ruled
out before the full judge (label none, score 0, the reason in `raw`).

Relevance: rule cues for filler (greetings, "here are some", restating the question, sign-offs,
headings). Confidence: hedge / booster lexicon -> "1".."5". Stance (debate queries): cue words
relative to the polarity of the query's wording. These three are rule sets, not calibrated models;
docs/judges/offline.md lists their cues and limits.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any, Sequence

from pipeline.judges.base import BaseJudge
from pipeline.judges.offline_support import (
    DEFAULT_PARAMS,
    MAX_EVIDENCE_CHARS,
    FeatureBuilder,
    PairFeatures,
    PairInput,
    SupportModel,
    apply_rules,
    load_params,
)
from pipeline.judges.offline_text import WORD_RE, content_tokens, is_negated, strip_markers
from pipeline.judges.source_sets import WindowedSetSupport
from pipeline.judges.source_stance import RULES_VERSION as SOURCE_STANCE_RULES
from pipeline.judges.source_stance import offline_source_stance
from pipeline.records import AnnotatedAnswer, Answer, Source, Statement, Verdict
from pipeline.text import statements_for

log = logging.getLogger(__name__)

JUDGE_NAME = "offline"
# v2: support judged by pipeline/judges/offline_support.py (aligned windows, figures as values,
# contradiction rules, a sign-constrained model, a first pass for uncited pairs)
PROMPT_VERSION = "offline-v2"
RULED_OUT_SCORE = 0.0  # the score of a pair the first pass rules out (label none)

# --------------------------------------------------------------------------------------------
# relevance / confidence / stance rules
# --------------------------------------------------------------------------------------------

_FILLER_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(p, re.I))
    for name, p in (
        ("greeting", r"^\s*(hi|hello|hey|greetings|dear)\b[^.!?]{0,40}[.!?,]?\s*$"),
        ("greeting", r"^\s*(sure|certainly|of course|absolutely|great question|good question)[!.,]"),
        ("list intro", r"^\s*(here (are|is)|below (are|is)|the following (are|is))\b[^.!?]{0,120}[:.]?\s*$"),
        ("list intro", r"^\s*(some|a few|several) (of the )?(key |main |possible |common )?"
                       r"(points|reasons|ways|factors|arguments|things|options|tips|examples)\b[^.!?]{0,80}:\s*$"),
        ("sign-off", r"\b(i hope (this|that) helps|hope this helps|let me know if|feel free to|happy to help|good luck)\b"),
        ("self reference", r"^\s*(as an ai|i am an ai|i'm an ai|as a language model)\b"),
        ("meta", r"^\s*(that'?s a (complex|difficult|great|good|tricky|interesting) question|this is a (complex|difficult|great|good) question)"),
        ("meta", r"^\s*(in (summary|conclusion)|to (sum up|summarize|conclude))\s*[,:]?\s*$"),
        ("search", r"^\s*(according to (my|the) (search )?results|i (found|searched)|searching for)\b[^.!?]{0,80}[:.]?\s*$"),
    )
)
_HEADING_RE = re.compile(r"^\s*(#{1,6}\s+\S.*|\*\*[^*]{1,80}\*\*:?|[A-Z][^.!?]{0,60}:)\s*$")

HEDGES = {
    "may": 1.0, "might": 1.2, "could": 1.0, "possibly": 1.2, "perhaps": 1.2, "likely": 0.6, "unlikely": 0.8,
    "probably": 0.8, "suggests": 0.7, "suggest": 0.7, "appears": 0.8, "seems": 0.9, "uncertain": 1.5,
    "unclear": 1.5, "debated": 1.0, "debatable": 1.0, "controversial": 0.8, "some": 0.3, "potentially": 1.0,
    "arguably": 1.0, "depends": 1.0, "varies": 0.7, "not sure": 2.0, "not clear": 1.5, "difficult to say": 2.0,
    "hard to say": 2.0, "no definitive": 1.8, "no consensus": 1.5, "it is possible": 1.2, "can be": 0.4,
    "i think": 1.0, "i believe": 0.8, "generally": 0.4, "often": 0.3, "sometimes": 0.5, "tend to": 0.5,
    "complex question": 1.5, "mixed": 0.8,
}
BOOSTERS = {
    "clearly": 1.2, "certainly": 1.5, "definitely": 1.5, "undoubtedly": 1.8, "always": 1.0, "never": 0.8,
    "must": 1.0, "proven": 1.2, "proves": 1.2, "obviously": 1.5, "without doubt": 1.8, "no doubt": 1.5,
    "essential": 0.6, "crucial": 0.6, "absolutely": 1.5, "indeed": 0.8, "of course": 1.0, "will": 0.4,
    "strongly": 0.8, "it is clear": 1.5, "undeniably": 1.8, "fact": 0.6, "guaranteed": 1.5, "is": 0.0,
}
_PHRASE_RE_CACHE: dict[str, re.Pattern[str]] = {}

CONTRAST = ("however", "on the other hand", "critics argue", "critics say", "opponents", "but some",
            "although", "conversely", "in contrast", "nevertheless", "despite", "some argue", "others argue",
            "counterargument", "detractors", "skeptics")
NEGATIVE_CUES = ("harm", "harmful", "risk", "risks", "danger", "dangerous", "problem", "problems", "negative",
                 "cruel", "cruelty", "unethical", "wrong", "bad", "damage", "costly", "drawback", "drawbacks",
                 "disadvantage", "disadvantages", "concern", "concerns", "threat", "abolish", "ban", "against",
                 "oppose", "opposes", "criticism", "fail", "fails", "ineffective", "worse", "suffer")
POSITIVE_CUES = ("benefit", "benefits", "beneficial", "advantage", "advantages", "help", "helps", "improve",
                 "improves", "positive", "support", "supports", "protect", "protects", "effective", "good",
                 "valuable", "important", "essential", "should", "necessary", "better", "favor", "favour",
                 "promote", "promotes", "conservation", "educational", "safe", "safer")


def _count_phrases(text: str, lexicon: dict[str, float]) -> tuple[float, list[str]]:
    total, hits = 0.0, []
    for phrase, weight in lexicon.items():
        if weight <= 0:
            continue
        pat = _PHRASE_RE_CACHE.get(phrase)
        if pat is None:
            pat = _PHRASE_RE_CACHE[phrase] = re.compile(r"\b" + re.escape(phrase) + r"\b", re.I)
        k = len(pat.findall(text))
        if k:
            total += weight * k
            hits.append(phrase)
    return total, hits


_QUERY_NEG_RE = re.compile(
    r"\b(not|n't|never|no|against|ban|banned|abolish|abolished|eliminate|eliminated|stop|end|prohibit|prohibited|outlaw|harmful|bad|dangerous)\b",
    re.I,
)


def query_polarity(query: str) -> int:
    """+1 when the query's wording argues for something ("Why should X"), -1 when against
    ("Why should X not / be banned / be abolished"); an odd number of negating cues flips it."""
    return -1 if len(_QUERY_NEG_RE.findall(query)) % 2 else 1


# --------------------------------------------------------------------------------------------
# the judge
# --------------------------------------------------------------------------------------------


class OfflineJudge(WindowedSetSupport, BaseJudge):
    """Offline judge (see the module docstring). Config: `params_path`, `use_embeddings`
    (default True; False forces the lexical model), `max_evidence_chars`, `prefilter` (default
    True: rule out uncited pairs that share almost nothing before the full judge)."""

    name = JUDGE_NAME
    # In the cache key: the source-stance cue rules live in their own module with their own version.
    cache_fingerprint = SOURCE_STANCE_RULES

    def __init__(self, params_path: str | Path | None = None, use_embeddings: bool = True,
                 max_evidence_chars: int = MAX_EVIDENCE_CHARS, prefilter: bool = True, **_: Any) -> None:
        self.params = load_params(Path(params_path) if params_path else None)
        self.prompt_version = f"{PROMPT_VERSION}+{self.params.get('version', 'default')}"
        # Which ExpertQA questions the support model was fitted on (hashes, see
        # agreement.question_fingerprint), so an agreement report can tell held-out pairs apart.
        self.calibration_questions = frozenset(self.params.get("calibration_questions") or ())
        self.calibration = dict(self.params.get("calibration") or {})
        self.want_embeddings = bool(use_embeddings)
        self.prefilter = bool(prefilter)
        self._features = FeatureBuilder(int(max_evidence_chars))
        self._mode: str | None = None  # "embed" or "lexical", decided on first support call
        self._warning = ""
        self._models: dict[str, SupportModel] = {}
        self._prefetched: dict[PairInput, PairFeatures] = {}

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

    def model(self, mode: str | None = None) -> SupportModel:
        mode = mode or self.mode
        if mode not in self._models:
            self._models[mode] = SupportModel(self.params.get(mode) or DEFAULT_PARAMS[mode])
        return self._models[mode]

    # -- support -------------------------------------------------------------------------------
    def support_features(self, pairs: Sequence[PairInput], mode: str | None = None,
                         prefilter: bool | None = None) -> list[PairFeatures]:
        """Features, evidence and contradictions for many pairs at once (`offline_support`)."""
        pairs = [PairInput(*p) for p in pairs]
        return self._features.build(pairs, mode or self.mode, self.prefilter if prefilter is None else prefilter)

    @staticmethod
    def pair_input(answer: Answer, statement: Statement, source: Source) -> PairInput:
        cited = []
        for n in statement.citations:
            src = answer.source(n)
            if src is not None and src.text and src.fetch_ok is not False:
                cited.append(src.text)
        return PairInput(strip_markers(statement.text), source.text or "", tuple(cited), answer.query,
                         source.index in statement.citations)

    def support(self, answer: Answer, statements: Sequence[Statement], source: Source) -> list[Verdict]:
        mode = self.mode
        model = self.model(mode)
        inputs = [self.pair_input(answer, s, source) for s in statements]
        if all(p in self._prefetched for p in inputs):
            feats = [self._prefetched[p] for p in inputs]
        else:
            feats = self.support_features(inputs, mode)
        probs = model.score([pf.features for pf in feats if not pf.ruled_out])
        scored = iter(probs)
        out = []
        for s, pair, pf in zip(statements, inputs, feats):
            raw: dict[str, Any] = {"mode": mode}
            if pf.ruled_out:
                p, raw["prefilter"] = RULED_OUT_SCORE, pf.note
            else:
                p_model = float(next(scored))
                raw.update(features={k: round(v, 4) for k, v in pf.features.items()}, p_full=round(p_model, 4))
                p, rule = apply_rules(p_model, pf.conflicts, model.t_partial, pf.missing_part, model.t_full)
                if pf.conflicts:
                    raw["conflicts"] = list(pf.conflicts)
                if pf.missing_part:
                    raw["missing_part"] = pf.missing_part
                if rule:  # raw keeps the model's own probability (p_full) and says what contradicts
                    raw["rule"] = rule
                if pf.note:
                    raw["note"] = pf.note
            if self._warning:
                raw["warning"] = self._warning
            if not pair.source.strip():
                raw["note"] = "source has no text"
            out.append(Verdict(answer.answer_id, "support", model.label(p), self.name, self.prompt_version,
                               raw=json.dumps(raw, sort_keys=True), statement_index=s.index,
                               source_index=source.index, score=p, evidence=pf.evidence))
        return out

    def prefetch(self, answers: Sequence[AnnotatedAnswer]) -> None:
        """Compute the support features of every (statement, source with text) pair of these answers
        in one `support_features` call, so that all their sentences are embedded in large batches;
        the following `support` calls take the stored features. Replaces what an earlier call stored."""
        self._prefetched = {}
        if self.mode != "embed":
            return
        pairs: dict[PairInput, None] = {}
        for a in answers:
            statements = statements_for(a)
            for src in a.answer.sources:
                if (src.text or "").strip() and src.fetch_ok is not False:
                    for s in statements:
                        pairs[self.pair_input(a.answer, s, src)] = None
        self._prefetched = dict(zip(pairs, self.support_features(list(pairs), "embed")))

    # -- relevance -----------------------------------------------------------------------------
    def relevance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        q_tokens = set(content_tokens(answer.query))
        out = []
        for s in statements:
            text = strip_markers(s.text)
            cue = self._filler_cue(text, q_tokens)
            label = "filler" if cue else "relevant"
            out.append(Verdict(answer.answer_id, "relevance", label, self.name, self.prompt_version,
                               raw=json.dumps({"cue": cue}), statement_index=s.index, evidence=cue))
        return out

    @staticmethod
    def _filler_cue(text: str, q_tokens: set[str]) -> str:
        stripped = text.strip()
        if not any(c.isalnum() for c in stripped):
            return "empty"
        if _HEADING_RE.match(stripped) and len(stripped.split()) <= 10:
            return "heading"
        for name, pat in _FILLER_PATTERNS:
            m = pat.search(stripped)
            if m:
                return f"{name}: {m.group(0).strip()[:60]}"
        toks = content_tokens(stripped)
        if toks and q_tokens and len(toks) <= 20:
            new = [t for t in toks if t not in q_tokens]
            if len(new) <= 1 and len(set(toks) & q_tokens) >= max(2, int(0.6 * len(set(toks)))):
                return "restates the question"
        return ""

    # -- confidence ----------------------------------------------------------------------------
    def confidence(self, answer: Answer) -> Verdict:
        text = strip_markers(answer.text)
        n_words = max(len(WORD_RE.findall(text.lower())), 1)
        hedge, hedge_hits = _count_phrases(text, HEDGES)
        boost, boost_hits = _count_phrases(text, BOOSTERS)
        # net cue density per 100 words -> level
        net = (boost - hedge) * 100.0 / n_words
        level = 5 if net >= 1.5 else 4 if net >= -0.5 else 3 if net >= -2.5 else 2 if net >= -5.0 else 1
        raw = {"hedges": hedge_hits[:20], "boosters": boost_hits[:20], "net_per_100_words": round(net, 3)}
        cue = ", ".join((boost_hits if net >= 0 else hedge_hits)[:5])
        return Verdict(answer.answer_id, "confidence", str(level), self.name, self.prompt_version,
                       raw=json.dumps(raw), evidence=cue)

    # -- source stance (cue rules in pipeline/judges/source_stance.py) ---------------------------
    def source_stance(self, answer: Answer, sources: Sequence[Source]) -> list[Verdict]:
        return offline_source_stance(answer, sources, self.name, self.prompt_version)

    # -- stance --------------------------------------------------------------------------------
    def stance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        polarity = query_polarity(answer.query)
        out = []
        for s in statements:
            label, cue, raw = self._stance_one(strip_markers(s.text), polarity)
            out.append(Verdict(answer.answer_id, "stance", label, self.name, self.prompt_version,
                               raw=json.dumps(raw), statement_index=s.index, evidence=cue))
        return out

    @staticmethod
    def _stance_one(text: str, polarity: int) -> tuple[str, str, dict[str, Any]]:
        low = text.lower()
        words = WORD_RE.findall(low)
        wordset = set(words)
        pos = [w for w in POSITIVE_CUES if w in wordset]
        neg = [w for w in NEGATIVE_CUES if w in wordset]
        contrast = [c for c in CONTRAST if re.search(r"\b" + re.escape(c) + r"\b", low)]
        negated = is_negated(words)
        score: float = len(pos) - len(neg)  # not cast: the raw output keeps an unshifted score as an int
        if negated:
            score = -score if score else -0.5 if pos else 0.0
        if contrast:
            # a contrast marker introduces the other side: the clause after it carries the stance
            score -= 1.0
        side = 1 if score > 0 else -1 if score < 0 else 0
        raw = {"positive": pos, "negative": neg, "contrast": contrast, "negated": negated,
               "score": score, "query_polarity": polarity}
        if side == 0:
            return "neutral", "", raw
        label = "agree" if side * polarity > 0 else "disagree"
        cue = ", ".join((contrast + (pos if side > 0 else neg))[:4])
        return label, cue, raw
