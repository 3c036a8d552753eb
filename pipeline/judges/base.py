"""The judge seam: the only place where labels are produced.

A judge labels one answer at a time. The annotate stage decides which methods to call (stance only
for debate queries, support only for sources with text); caching, retries and rate limits wrap a
judge (`pipeline.judges.cache.CachingJudge`); every judge is built by `pipeline.judges.get_judge`.

`Judge` is the protocol callers program against. Besides the four label methods it declares the
optional abilities with their meaning, and `BaseJudge` gives every backend the plain default for
each, so no caller ever has to probe a judge with `getattr`.

Key material: the cache (`pipeline.judges.cache`) stores a judge's verdicts under a hash of what the
judge says its verdicts depend on (`cache_material`). `BaseJudge` gives the widest answer (every
input of the call except the answer's id and provenance), so a judge that says nothing is cached
safely, only less often; a judge narrows it by declaring its own material, which its tests check
against cold calls (tests/pipeline/judges/test_cache_material.py).
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable, Protocol, Sequence, runtime_checkable

from pipeline.judges.source_sets import as_set_verdicts, joined_source
from pipeline.records import SUPPORT_UNKNOWN, Answer, Source, Statement, Verdict, unchecked_code, unchecked_text


@runtime_checkable
class Judge(Protocol):
    """What every judge provides. Label methods never raise on bad model output: an unparseable
    answer becomes a verdict with label None, `error="parse"` and the raw text."""

    name: str  # stable id used in cache keys and Parquet, e.g. "offline", "openai:gpt-4o-mini"
    prompt_version: str  # version of the prompts / rules, e.g. "v1"
    # True for judges whose labels come with the data (`recorded`, `human`): the annotate stage
    # keeps the verdicts the importer found instead of calling the label methods.
    carries_labels: bool

    def relevance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        """One `relevance` verdict per statement: label "relevant" or "filler"."""
        ...

    def stance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        """One `stance` verdict per given statement: "agree", "disagree" or "neutral" with respect
        to the side the query's wording takes, or "unknown" when the judge cannot tell (never a
        guessed "neutral"). Only called for debate queries."""
        ...

    def confidence(self, answer: Answer) -> Verdict:
        """One `confidence` verdict for the whole answer: label "1".."5"."""
        ...

    def support(self, answer: Answer, statements: Sequence[Statement], source: Source) -> list[Verdict]:
        """One `support` verdict per statement against this source: "full", "partial" or "none",
        with `score` in [0, 1] where the judge has a continuous score and `evidence` the passage
        it used; "unknown" with the reason in raw (`unchecked_verdicts`) for a source without text,
        which no judge can read (never "none")."""
        ...

    def support_many(self, answer: Answer, statements: Sequence[Statement], sources: Sequence[Source]) -> list[Verdict]:
        """`support` for several sources of one answer; a judge may group them into fewer calls
        (the LLM judge packs short sources into one request)."""
        ...

    def support_set(self, answer: Answer, statements: Sequence[Statement], sources: Sequence[Source]) -> list[Verdict]:
        """One `support` verdict per statement against these sources TAKEN TOGETHER (a statement
        may need two of them at once): `source_index` None and `source_set` the sources' indexes,
        sorted. Asked only where a metric needs it (NLI citation recall and precision: statements
        with two or more citations); the single-source `support` is unchanged."""
        ...

    def prefetch(self, answers: Sequence[Any]) -> None:
        """A hint before a chunk of annotated answers is labelled, for judges that batch work
        across answers (the offline judge embeds every sentence of a chunk in one pass)."""
        ...

    def source_stance(self, answer: Answer, sources: Sequence[Source]) -> list[Verdict]:
        """One `source_stance` verdict per given source (`source_index` set): "agree", "disagree"
        or "neutral" towards the side the query's wording takes, or "unknown" when the judge cannot
        tell. Only called for debate queries, with sources that have text. A judge without this
        ability returns no verdicts (the source-stance metrics then say so)."""
        ...

    def cache_material(self, method: str, answer: Answer, statements: Sequence[Statement],
                       sources: Sequence[Source]) -> list[Any]:
        """Everything the verdicts of one call depend on, as JSON-ready values, and nothing else:
        the cache keys each entry by it (with the judge's name, prompt version, model and
        `cache_fingerprint`, which hold its settings). `method` is "relevance", "stance",
        "confidence", "support" (also for `support_many`), "support_set" or "source_stance";
        `sources` are the sources the call is made with (empty for the statement-level methods).
        Returns one material per cache entry: for "support" and "source_stance" one per source,
        in order (the verdicts of that source in a call with all of `sources`); for the others a
        single one. Ids are not material: a hit gets the ids of the call that asked (statements by
        position, sources by position)."""
        ...


class BaseJudge:
    """Defaults for the optional abilities; every backend derives from it."""

    name: str = "judge"
    prompt_version: str = "v1"
    carries_labels: bool = False

    def support_many(self, answer: Answer, statements: Sequence[Statement], sources: Sequence[Source]) -> list[Verdict]:
        return [v for source in sources for v in self.support(answer, statements, source)]  # type: ignore[attr-defined]

    def support_set(self, answer: Answer, statements: Sequence[Statement], sources: Sequence[Source]) -> list[Verdict]:
        # Plain default: the statement against one document that joins the sources' texts, each
        # under its own heading, judged by the backend's ordinary single-source `support`.
        verdicts = self.support(answer, statements, joined_source(sources))  # type: ignore[attr-defined]
        return as_set_verdicts(verdicts, sources)

    def prefetch(self, answers: Sequence[Any]) -> None:
        return None

    def source_stance(self, answer: Answer, sources: Sequence[Source]) -> list[Verdict]:
        return []  # not labelled: distinct from "unknown", which is a judge's answer

    def cache_material(self, method: str, answer: Answer, statements: Sequence[Statement],
                       sources: Sequence[Source]) -> list[Any]:
        return full_view_material(method, answer, statements, sources)


PER_SOURCE_METHODS = frozenset({"support", "source_stance"})  # one cache entry per source


def text_digest(text: str | None) -> str:
    """A short stand-in for a long text inside key material (sha256, hex)."""
    return hashlib.sha256((text or "").encode("utf-8", "surrogatepass")).hexdigest()


def source_view(source: Source) -> list[Any]:
    """Every field of a source, its text as a digest."""
    return [source.index, source.url, source.title, text_digest(source.text), source.fetch_ok, source.text_origin]


def full_view_material(method: str, answer: Answer, statements: Sequence[Statement],
                       sources: Sequence[Source]) -> list[Any]:
    """The widest key material: every field of the call's inputs that a judge could read (the
    answer's query, query type, text, subject field, gold answers and every listed source; each
    statement whole; the sources of the call), leaving out only the answer's id, engine, dataset
    and provenance notes, which describe where the answer came from, not what it says. For a judge
    that declares nothing: it may miss where a narrower key would hit, but never serves a verdict
    computed from other inputs."""
    answer_view = text_digest(repr([
        answer.query, answer.query_type, text_digest(answer.text), answer.field,
        [repr(g) for g in answer.gold], [source_view(s) for s in answer.sources],
    ]))
    statement_view = [[s.index, s.text, s.start, s.end, list(s.citations), list(s.dangling)] for s in statements]
    call = [source_view(s) for s in sources]
    if method in PER_SOURCE_METHODS:
        return [{"answer": answer_view, "statements": statement_view, "call": call, "target": k}
                for k in range(len(sources))]
    return [{"answer": answer_view, "statements": statement_view, "call": call}]


def unchecked_verdicts(judge: Any, answer: Answer, statements: Sequence[Statement], source: Source) -> list[Verdict]:
    """What every judge answers for a source without text: `unknown` per statement, with the reason
    in raw, no score. Nothing was read, so nothing is claimed about support."""
    return [Verdict(answer.answer_id, "support", SUPPORT_UNKNOWN, judge.name, judge.prompt_version,
                    raw=unchecked_text("no_text"), statement_index=st.index, source_index=source.index)
            for st in statements]


def call_outcomes(annotated: Iterable[Any], judge_name: str) -> tuple[int, list[Verdict]]:
    """(how many of these answers' verdicts came from asking judge `judge_name`, those whose call
    failed). Verdicts given without asking (a source without text) and verdicts of other judges
    (the similarity to gold answers) do not count: nothing was asked for them."""
    asked, failed = 0, []
    for a in annotated:
        for v in a.verdicts:
            if v.judge != judge_name or (v.error != "call" and unchecked_code(v.raw) is not None):
                continue
            asked += 1
            if v.error == "call":
                failed.append(v)
    return asked, failed


class JudgeError(Exception):
    """A judge could not be built or reached (bad configuration, missing model, no network)."""
