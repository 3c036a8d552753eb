"""Deep-research row of the benchmark: one answer of DeepTRACE size judged offline end to end.

A deep-research report cites a couple of hundred web pages and makes a hundred and more statements;
its support matrix has tens of thousands of cells, nearly all a statement against a page it does
not cite and that says nothing about it. `make_answer` builds such an answer deterministically:

- from ExpertQA (when its files are found): claims of the passage-carrying systems (rr_*, post_hoc_*)
  in a fixed order, each with the passages it cites; every source is PASSAGES_PER_SOURCE passages
  joined into one page of realistic length (a few thousand characters), the claims' own passages
  first, then others; each statement cites the sources holding its passages;
- else from the teaching corpus (data/demo): its statements and source texts, pages made the same way.

`judge_answer` runs what the runner runs for one answer (prefetch, then `annotate_answer`: relevance,
confidence, support of every relevant statement against every source) and returns the time and the
verdict counts. The row compares the offline judge with its first pass (in an answer of more than
1,000 pairs, pairs that share almost nothing are ruled out before the encoder, cited or not)
against the same judge without it.

    .venv/bin/python bench/run.py --only i
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable

N_SOURCES = 200
N_STATEMENTS = 140
PASSAGES_PER_SOURCE = 5
TARGET_S = 10.0


def _claims_and_passages(limit: int) -> tuple[list[tuple[str, list[str]]], list[str], str]:
    """(claim text, cited passage texts) in a fixed order, every passage seen, and where they came from."""
    from pipeline.storage.paths import expertqa_dir

    folder = expertqa_dir()
    claims: list[tuple[str, list[str]]] = []
    passages: list[str] = []
    if folder is not None and any(folder.glob("*.jsonl")):
        from pipeline.importers.expertqa import load_expertqa

        answers = sorted(load_expertqa(folder), key=lambda a: a.answer.answer_id)
        origin = "ExpertQA passages"
    else:
        from pipeline.importers.canonical import load_canonical
        from pipeline.storage.paths import data_dir

        answers = load_canonical(data_dir() / "demo" / "answers.jsonl")
        origin = "teaching corpus"
    for a in answers:
        texts = {s.index: s.text for s in a.answer.sources if (s.text or "").strip()}
        passages.extend(texts.values())
        for st in a.statements:
            cited = [texts[c] for c in st.citations if c in texts]
            if cited and len(claims) < limit:
                claims.append((st.text, cited))
    return claims, list(dict.fromkeys(passages)), origin


def make_answer(n_sources: int = N_SOURCES, n_statements: int = N_STATEMENTS, seed: int = 11) -> tuple[Any, str]:
    """One synthetic deep-research answer (see the module doc) and a line saying what it is made of."""
    from pipeline.records import AnnotatedAnswer, Answer, Source, Statement
    from pipeline.text.text import find_citation_markers, strip_citation_markers

    rng = random.Random(seed)
    claims, passages, origin = _claims_and_passages(n_statements)
    own = list(dict.fromkeys(p for _, cited in claims for p in cited))
    others = [p for p in passages if p not in set(own)]
    rng.shuffle(others)
    pool = own + others
    slots = n_sources * PASSAGES_PER_SOURCE
    pool = (pool * (slots // max(len(pool), 1) + 1))[:slots] if pool else []
    rng.shuffle(pool)
    pages = [pool[k::n_sources] for k in range(n_sources)]
    sources = tuple(Source(index=k + 1, url=f"https://example.org/deep/{k + 1}", title=f"page {k + 1}",
                           text="\n\n".join(parts), fetch_ok=True) for k, parts in enumerate(pages))
    where: dict[str, list[int]] = {}
    for k, parts in enumerate(pages):
        for p in parts:
            where.setdefault(p, []).append(k + 1)
    statements = []
    pieces = []
    offset = 0
    for i, (text, cited) in enumerate(claims):
        text = strip_citation_markers(text, find_citation_markers(text)).strip()
        cites = sorted({n for p in cited for n in where.get(p, [])[:1]})
        marked = text + "".join(f" [{n}]" for n in cites)
        statements.append(Statement(answer_id="deep-research", index=i, text=marked, start=offset,
                                    end=offset + len(marked), citations=tuple(cites)))
        pieces.append(marked)
        offset += len(marked) + 1
    answer = Answer(answer_id="deep-research", engine="synthetic", query="A deep-research report",
                    query_type="expertise", text=" ".join(pieces), sources=sources)
    chars = sum(len(s.text) for s in sources) / max(len(sources), 1)
    what = (f"{len(sources)} sources (mean {chars:,.0f} characters, {PASSAGES_PER_SOURCE} {origin} each) x "
            f"{len(statements)} statements = {len(sources) * len(statements):,} pairs")
    return AnnotatedAnswer(answer, tuple(statements)), what


def judge_answer(judge: Any, annotated: Any) -> tuple[float, dict[str, int]]:
    """Seconds for prefetch + annotate_answer, and the count of support verdicts by how they were made."""
    import json

    from pipeline.annotate import annotate_answer

    t = time.perf_counter()
    judge.prefetch([annotated])
    result = annotate_answer(annotated, judge)
    seconds = time.perf_counter() - t
    support = [v for v in result.verdicts if v.kind == "support"]
    ruled_out = sum(1 for v in support if "prefilter" in json.loads(v.raw or "{}"))
    full = sum(1 for v in support if v.label == "full")
    return seconds, {"pairs": len(support), "ruled_out": ruled_out, "full": full}


def expertqa_agreement(prefilter: bool) -> dict[str, Any] | None:
    """Support agreement of the offline judge with ExpertQA's experts on rand_val (None without the files)."""
    from pipeline.importers.expertqa import load_expertqa
    from pipeline.judges.measure.agreement import evaluate_support
    from pipeline.judges.offline.judge import OfflineJudge
    from pipeline.storage.paths import expertqa_dir

    folder = expertqa_dir()
    if folder is None or not (folder / "rand_val.jsonl").is_file():
        return None
    report = evaluate_support(OfflineJudge(prefilter=prefilter), load_expertqa(folder / "rand_val.jsonl"), relevance=False)
    return dict(report["support"])


def bench_deep_research(quick: bool, cost_row: Callable[..., Any], skipped: Callable[..., Any]) -> list[Any]:
    """Rows: the judge with its first pass vs without it, the time against the 10 s target, and
    (full run only) ExpertQA agreement without vs with the first pass."""
    from pipeline.judges.offline import embedding
    from pipeline.judges.offline.judge import OfflineJudge

    name = "i. deep-research answer judged offline: no first pass vs first pass"
    name_t = "i. deep-research answer judged offline, against the target"
    try:
        embedding.get_encoder()
    except embedding.ModelUnavailable as exc:
        return [skipped(name, f"embedding model unavailable ({exc})")]
    n_sources, n_statements = (20, 14) if quick else (N_SOURCES, N_STATEMENTS)
    annotated, what = make_answer(n_sources, n_statements)
    encoder = embedding.get_encoder()
    cache = getattr(encoder, "_cache", None)
    if isinstance(cache, dict):
        cache.clear()
    from pipeline.judges.offline import judge as offline

    # --quick: 280 pairs are fewer than the judge screens (MAX_PAIRS_JUDGED), so the small answer
    # takes the large answer's path under a cap lowered to 100 pairs (the full run keeps the real one)
    cap = offline.MAX_PAIRS_JUDGED
    offline.MAX_PAIRS_JUDGED = 100 if quick else cap
    try:
        fast_s, fast = judge_answer(OfflineJudge(), annotated)
    finally:
        offline.MAX_PAIRS_JUDGED = cap
    if isinstance(cache, dict):
        cache.clear()  # the full judge pays for its own embeddings too
    full_s, full = judge_answer(OfflineJudge(prefilter=False), annotated)
    scope = (f"{what}{' (--quick)' if quick else ''}; prefetch + annotate_answer after model load, embedding cache "
             f"emptied before each run")
    out = [
        cost_row(name, full_s, fast_s, "s",
                 f"{scope}; first pass ruled out {fast['ruled_out']:,} of {fast['pairs']:,} pairs; full labels: "
                 f"{fast['full']} with it, {full['full']} without"),
        cost_row(name_t, TARGET_S, fast_s, "s",
                 f"baseline is the {TARGET_S:g} s target, so ratio >= 1 means within it: "
                 f"{'met' if fast_s <= TARGET_S else 'NOT met'}; {fast['pairs'] / fast_s:,.0f} pairs/s"),
    ]
    if not quick:
        without, with_ = expertqa_agreement(False), expertqa_agreement(True)
        if without is not None and with_ is not None:
            same = all(without.get(k) == with_.get(k) for k in ("n", "auc", "balanced_accuracy", "kappa"))
            out.append(cost_row("i. ExpertQA rand_val support AUC: no first pass vs first pass", without["auc"],
                                with_["auc"], "AUC",
                                f"ratio 1 = unchanged ({'identical' if same else 'DIFFERENT'}: n {without['n']} / "
                                f"{with_['n']}, balanced accuracy {without['balanced_accuracy']:.4f} / "
                                f"{with_['balanced_accuracy']:.4f}, kappa {without['kappa']:.4f} / {with_['kappa']:.4f}); "
                                f"ExpertQA's answers have fewer pairs than the first pass waits for (MAX_PAIRS_JUDGED)"))
    return out
