"""The offline judge: no network, no key, no GPU, no torch.

Support (statement, source): `pipeline.judges.offline.support` (read its docstring). In short: the
statement is aligned with its best window of the source, compared word by word with figures read as
values, scored by a logistic model whose coefficients are held to the sign that keeps it monotone in
coverage (fitted on ExpertQA expert labels plus pairs made from the sources themselves by
`aee judges calibrate`, which writes `offline/params.json`), and a contradiction found by
`offline_align` (negation, opposite direction, a swapped name or figure) keeps a statement from
being supported at all. `score` = probability that the source fully supports the statement; the
label is `full` / `partial` / `none` by two calibrated thresholds; `evidence` = best window
(bounded); `raw` = JSON of the features, the contradictions and any rule applied. Without the
embedding model the judge falls back to a lexical-only model (also calibrated) and says so in every
`raw`. No support label reads which sources a statement cites (adding or removing a marker changes
none). In an answer with more statement x source pairs than MAX_PAIRS_JUDGED, a statement that shares
almost nothing with a source is ruled out before the full judge (label none, score 0, the reason in
`raw`), cited or not; a smaller answer has every pair judged in full.

`offline:lexical` (`LexicalOfflineJudge`) is the same judge with the lexical-only support model
forced, whether or not the embedding model is installed: a second opinion that needs nothing. Its
relevance, stance and confidence rules are the offline judge's, so only its support labels can
differ; its own name and prompt version keep its labels apart in the cache and in every table.

Relevance: rule cues for filler (greetings, "here are some", restating the question, sign-offs,
headings). Confidence: hedge / booster lexicon -> "1".."5". Stance (debate queries): cue words
relative to the polarity of the query's wording. These three are rule sets, not calibrated models;
docs/judges/offline.md lists their cues and limits.
"""

from __future__ import annotations

import json
import logging
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from pipeline.judges.base import BaseJudge, text_digest, unchecked_verdicts
from pipeline.judges.offline.cues import CUES_VERSION, confidence_level, filler_cue, stance_readings
from pipeline.judges.offline.figure_forms import FIGURE_FORMS_VERSION
from pipeline.judges.offline.meaning import MEANING_VERSION
from pipeline.judges.offline.source_stance import RULES_VERSION as SOURCE_STANCE_RULES
from pipeline.judges.offline.source_stance import offline_source_stance
from pipeline.judges.offline.support import (
    DEFAULT_PARAMS,
    MAX_EVIDENCE_CHARS,
    FeatureBuilder,
    PairFeatures,
    PairInput,
    SupportModel,
    apply_rules,
    load_params,
    reads_sentence_vectors,
)
from pipeline.judges.offline.synonyms import TABLE_VERSION as SYNONYMS_VERSION
from pipeline.judges.offline.text import strip_markers
from pipeline.judges.source_sets import WindowedSetSupport
from pipeline.records import AnnotatedAnswer, Answer, Source, Statement, Verdict, unreadable_code
from pipeline.text.text import statements_for

log = logging.getLogger(__name__)

JUDGE_NAME = "offline"
# v2: support judged by pipeline/judges/offline/support.py (aligned windows, figures as values,
# contradiction rules, a sign-constrained model, a first pass for uncited pairs)
# v2.1: term swaps and short statements read whole (offline_align)
# v2.2: a pair's label no longer reads the statement's citations (its union features, the first pass
# and the cap were for uncited pairs only; issue 30)
# v3: meaning signals (closest sentence and sentence pair by MiniLM cosine, words stated by a
# synonym, another part of speech or a more specific word from WordNet, specific words left
# unstated; `offline_meaning`), fitted on ExpertQA and WiCE dev (issue 40)
PROMPT_VERSION = "offline-v3"
LEXICAL_JUDGE_NAME = "offline:lexical"
# Follows PROMPT_VERSION (the two share every rule) and never equals it, so their labels never mix.
LEXICAL_PROMPT_VERSION = f"{PROMPT_VERSION}-lexical"
RULED_OUT_SCORE = 0.0  # the score of a pair the first pass rules out (label none)
# Pairs of one answer judged in full, at most. An answer with at most this many statement x source
# pairs (sources with text) is judged in full, every pair. A larger one (a deep-research answer: 200
# sources x 140 statements) goes through the first pass, every pair alike whatever the statement
# cites; when more than this many pass it, those whose best window holds the largest share of the
# statement's words go on and the rest are ruled out with the reason: an answer where every page
# repeats every statement would otherwise cost one embedding per pair. Until offline-v2.2 only
# uncited pairs were screened, and a pair's label moved when a marker was added or removed.
MAX_PAIRS_JUDGED = 1_000
HELD_BACK = ("ruled out before the full judge: {n:,} pairs of this answer passed the first pass and "
             "only the {cap:,} whose best window holds the most of their words are judged in full")


@lru_cache(maxsize=50_000)
def _stripped(text: str) -> str:
    return strip_markers(text)


# --------------------------------------------------------------------------------------------
# the judge
# --------------------------------------------------------------------------------------------


class OfflineJudge(WindowedSetSupport, BaseJudge):
    """Offline judge (see the module docstring). Config: `params_path`, `use_embeddings`
    (default True; False forces the lexical model), `max_evidence_chars`, `prefilter` (default
    True: in an answer too large to judge in full, rule out pairs that share almost nothing before
    the full judge)."""

    name = JUDGE_NAME

    @property
    def cache_fingerprint(self) -> str:
        """In the cache key: the source-stance cue rules (their own module, their own version), the
        support model in use (labels of the lexical fallback never stand in for the embedding
        model's under the same name and prompt version), the parameters file's content, whether the
        first pass runs, and how long an evidence passage may be."""
        return (f"{SOURCE_STANCE_RULES}+support-{self.mode}+params-{self._params_digest}"
                f"+prefilter-{int(self.prefilter)}+evidence-{self._features.max_evidence_chars}"
                f"+{FIGURE_FORMS_VERSION}"  # how figures are rewritten before support is compared
                f"+{MEANING_VERSION}+{SYNONYMS_VERSION}")  # the meaning signals and the synonym table they read

    def __init__(self, params_path: str | Path | None = None, use_embeddings: bool = True,
                 max_evidence_chars: int = MAX_EVIDENCE_CHARS, prefilter: bool = True, **_: Any) -> None:
        self.params = load_params(Path(params_path) if params_path else None)
        self._params_digest = text_digest(json.dumps(self.params, sort_keys=True))[:16]
        # the cue rules' version is part of it: new relevance / stance / confidence rules rebuild labels
        self.prompt_version = f"{PROMPT_VERSION}+{self.params.get('version', 'default')}+{CUES_VERSION}"
        # Which ExpertQA questions the support model was fitted on (hashes, see
        # agreement.question_fingerprint), so an agreement report can tell held-out pairs apart.
        self.calibration_questions = frozenset(self.params.get("calibration_questions") or ())
        self._calibration = dict(self.params.get("calibration") or {})
        self.want_embeddings = bool(use_embeddings)
        self.prefilter = bool(prefilter)
        self._features = FeatureBuilder(int(max_evidence_chars), sentence_vectors=reads_sentence_vectors(self.params))
        self._mode: str | None = None  # "embed" or "lexical", decided on first support call
        self._warning = ""
        self._models: dict[str, SupportModel] = {}
        self._prefetched: dict[PairInput, PairFeatures] = {}
        self._to_prefetch: Sequence[AnnotatedAnswer] = ()  # announced by `prefetch`, computed on first need
        self._held_memo: tuple[Any, tuple[bool, frozenset[tuple[int, int]]]] | None = None  # the last answer's screening
        self._held_note = ""

    # -- mode and models ----------------------------------------------------------------------
    @property
    def mode(self) -> str:
        if self._mode is None:
            if not self.want_embeddings:
                self._mode = "lexical"
            else:
                from pipeline.judges.offline import embedding

                try:
                    embedding.get_encoder()
                    self._mode = "embed"
                except embedding.ModelUnavailable as exc:
                    self._mode = "lexical"
                    self._warning = f"embedding model unavailable ({exc}); lexical-only support model"
                    log.warning("offline judge: %s", self._warning)
        return self._mode

    @property
    def calibration(self) -> dict[str, Any]:
        """What the support model in use was fitted on and its grouped cross-validation (copied into
        agreement reports). The file's summary names its main model; for the other one (the
        lexical model), the cross-validation figures are that model's own."""
        out = dict(self._calibration)
        spec = self.params.get(self.mode)
        cv = spec.get("grouped_cv") if isinstance(spec, dict) else None
        if out and out.get("model") != self.mode and isinstance(cv, dict):
            out.update(model=self.mode, cv_auc=cv.get("auc"), cv_balanced_accuracy=cv.get("balanced_accuracy"))
        return out

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
    def pair_input(answer: Answer, statement: Statement, source: Source, screened: bool = False) -> PairInput:
        """What the support model reads of a pair: the statement without its markers, the source
        text, the question, and whether the first pass may rule it out (`screening`). Never what
        the statement cites."""
        return PairInput(_stripped(statement.text), source.text or "", (), answer.query, screened)

    def screening(self, answer: Answer, statements: Sequence[Statement]) -> tuple[bool, frozenset[tuple[int, int]]]:
        """Whether this answer's pairs go through the first pass (it has more statement x source
        pairs than MAX_PAIRS_JUDGED among its sources with text), and (statement position, source
        index) of the pairs that pass it but are not among the MAX_PAIRS_JUDGED whose best window
        holds the largest share of the statement's words (ties: statement, then source, in order).
        Counted over the answer's sources with text, whichever of them a call asks about, so a call
        for some sources decides as a call for all of them; citations play no part."""
        if not self.prefilter:
            return False, frozenset()
        judged = [s for s in answer.sources if not unreadable_code(s)]  # what the annotate stage judges
        if len(statements) * len(judged) <= MAX_PAIRS_JUDGED:
            return False, frozenset()
        texts = tuple(_stripped(st.text) for st in statements)
        key = (answer, texts)
        if self._held_memo is not None and self._held_memo[0] == key:
            return self._held_memo[1]
        ranked = []
        for src in judged:
            for pos in range(len(statements)):
                reason, share = self._features.first_pass(texts[pos], src.text)
                if not reason:
                    ranked.append((-share, pos, src.index))
        ranked.sort()
        held = frozenset((pos, index) for _, pos, index in ranked[MAX_PAIRS_JUDGED:])
        self._held_note = HELD_BACK.format(n=len(ranked), cap=MAX_PAIRS_JUDGED)
        self._held_memo = (key, (True, held))
        return True, held

    def support(self, answer: Answer, statements: Sequence[Statement], source: Source) -> list[Verdict]:
        if not (source.text or "").strip():  # nothing to read: not checked, never "none"
            return unchecked_verdicts(self, answer, statements, source)
        mode = self.mode
        model = self.model(mode)
        screened, held = self.screening(answer, statements)
        inputs = [self.pair_input(answer, s, source, screened) for s in statements]
        if self._to_prefetch:
            self._prefetch_now()
        judged = [k for k in range(len(statements)) if (k, source.index) not in held]
        feats: list[PairFeatures | None] = [None] * len(statements)
        missing = []
        for k in judged:
            feats[k] = self._prefetched.get(inputs[k])
            if feats[k] is None:
                missing.append(k)
        if missing:  # computed alone or with the others: a pair's features do not depend on its companions
            for k, computed in zip(missing, self.support_features([inputs[k] for k in missing], mode)):
                feats[k] = computed
        probs = model.score([f.features for f in feats if f is not None and not f.ruled_out])
        scored = iter(probs)
        out = []
        for s, pf in zip(statements, feats):
            raw: dict[str, Any] = {"mode": mode}
            evidence = ""
            if pf is None:  # held back: more pairs passed the first pass than are judged in full
                p, raw["prefilter"] = RULED_OUT_SCORE, self._held_note
            elif pf.ruled_out:
                p, raw["prefilter"] = RULED_OUT_SCORE, pf.note
            else:
                evidence = pf.evidence
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
            out.append(Verdict(answer.answer_id, "support", model.label(p), self.name, self.prompt_version,
                               raw=json.dumps(raw, sort_keys=True), statement_index=s.index,
                               source_index=source.index, score=p, evidence=evidence))
        return out

    # -- key material (pipeline.judges.cache) --------------------------------------------------------
    def cache_material(self, method: str, answer: Answer, statements: Sequence[Statement],
                       sources: Sequence[Source]) -> list[Any]:
        """What each method's verdicts depend on. Support: the pair inputs it scores (`pair_input`:
        the statement without markers, the source text, whether the first pass may rule it out,
        the question), texts as digests; never the statement's citations. Set support
        (`WindowedSetSupport`): the same for every source of the set, in order, with each one's
        title (the joined passages carry it). Relevance and stance read the statements' texts and
        the question; confidence the answer's text; source stance the question and the source."""
        if method in ("relevance", "stance"):
            return [{"query": answer.query, "statements": [s.text for s in statements]}]
        if method == "confidence":
            return [{"text": text_digest(answer.text)}]
        if method == "source_stance":
            return [{"query": answer.query, "source": text_digest(s.text)} for s in sources]
        digests: dict[str, str] = {}  # each long text hashed once per call

        def digest(text: str) -> str:
            found = digests.get(text)
            if found is None:
                found = digests[text] = text_digest(text)
            return found

        screened, held = (self.screening(answer, statements) if method in ("support", "support_set")
                          else (False, frozenset()))

        def support(source: Source) -> dict[str, Any]:
            pairs = [self.pair_input(answer, s, source, screened) for s in statements]
            material: dict[str, Any] = {
                "query": answer.query, "source": digest(source.text or ""),
                "pairs": [[p.statement, p.screened] for p in pairs]}
            kept_out = [k for k in range(len(statements)) if (k, source.index) in held]
            if kept_out:  # ruled out by rank among the answer's pairs (`screening`): part of the verdict
                material["held_back"] = [kept_out, self._held_note]
            return material

        if method == "support":
            return [support(s) for s in sources]
        if method == "support_set":
            return [{"set": [[s.title, support(s)] for s in sources]}]
        return super().cache_material(method, answer, statements, sources)

    def prefetch(self, answers: Sequence[AnnotatedAnswer]) -> None:
        """Announce the answers about to be labelled: at the first `support` call that reaches this
        judge, the support features of every (statement, source with text) pair of these answers
        are computed in one `support_features` call, so that all their sentences are embedded in
        large batches, and the following `support` calls take the stored features. Nothing is
        computed when no call comes (every verdict found in the judge cache). Replaces what an
        earlier call stored."""
        self._prefetched = {}
        self._to_prefetch = list(answers) if self.mode == "embed" else ()

    def _prefetch_now(self) -> None:
        answers, self._to_prefetch = self._to_prefetch, ()
        pairs: dict[PairInput, None] = {}
        for a in answers:
            statements = statements_for(a)
            screened, held = self.screening(a.answer, statements)
            for src in a.answer.sources:
                if (src.text or "").strip() and src.fetch_ok is not False:
                    for k, s in enumerate(statements):
                        if (k, src.index) not in held:
                            pairs[self.pair_input(a.answer, s, src, screened)] = None
        self._prefetched = dict(zip(pairs, self.support_features(list(pairs), "embed")))

    # -- relevance, confidence, stance: rule sets in pipeline.judges.offline.cues -----------------
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

    # -- source stance (cue rules in pipeline/judges/offline/source_stance.py) ---------------------------
    def source_stance(self, answer: Answer, sources: Sequence[Source]) -> list[Verdict]:
        return offline_source_stance(answer, sources, self.name, self.prompt_version)

    def stance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        _, readings = stance_readings(answer.query, [s.text for s in statements])
        return [Verdict(answer.answer_id, "stance", r.label, self.name, self.prompt_version,
                        raw=json.dumps(r.details, sort_keys=True), statement_index=s.index, evidence=r.cue)
                for s, r in zip(statements, readings)]


class LexicalOfflineJudge(OfflineJudge):
    """The offline judge with its calibrated lexical-only support model forced (no embeddings at
    all); relevance, stance and confidence are the offline judge's rules. Config as OfflineJudge,
    except that `use_embeddings` is always False."""

    name = LEXICAL_JUDGE_NAME

    def __init__(self, params_path: str | Path | None = None, max_evidence_chars: int = MAX_EVIDENCE_CHARS,
                 prefilter: bool = True, **config: Any) -> None:
        config.pop("use_embeddings", None)
        super().__init__(params_path, use_embeddings=False, max_evidence_chars=max_evidence_chars,
                         prefilter=prefilter, **config)
        self.prompt_version = f"{LEXICAL_PROMPT_VERSION}+{self.params.get('version', 'default')}+{CUES_VERSION}"
