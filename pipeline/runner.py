"""`run --dataset NAME`: ingest -> annotate -> score -> export, resumable and idempotent.

Annotation is the slow, costly stage, so its output is saved per chunk of answers
(`<judge>/parts/labels-<hash>.parquet`, written atomically); a rerun or a run restarted after a
crash skips every chunk already on disk, and the judge cache skips every call already answered.
Scoring and export are cheap and always redone from the parts.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from pipeline.aggregate import summarize
from pipeline.annotate import annotate_answer, carried, prompt_versions, statements_for
from pipeline.importers import IMPORTERS, resolve_dataset
from pipeline.judges import CARRIED_JUDGES, Judge, get_judge
from pipeline.matrices import is_relevant, label_view
from pipeline.metrics import METRICS, ScoreConfig, score_answer
from pipeline.records import AnnotatedAnswer, Verdict
from pipeline.sources import duplicate_pairs, source_type
from pipeline.store import (
    dataset_dir,
    judge_dirname,
    manifest,
    read_table,
    table_path,
    write_json_atomic,
    write_table,
)

# The scorecard's toggles: strict with each necessity variant, and the notebook's parity rules.
SCORE_CONFIGS: tuple[ScoreConfig, ...] = (
    ScoreConfig("strict", "exact"),
    ScoreConfig("strict", "greedy"),
    ScoreConfig("strict", "bipartite"),
    ScoreConfig("parity", "greedy"),
)
CHUNK_SIZE = int(os.environ.get("AEE_CHUNK_SIZE", "25"))  # answers per saved annotation chunk


@dataclass
class RunResult:
    """What a run did, for the CLI to print."""

    dataset: str
    judge: str
    answers: int = 0
    chunks_done: int = 0
    chunks_skipped: int = 0
    seconds: float = 0.0
    out_dir: Path | None = None
    summary: pd.DataFrame = field(default_factory=pd.DataFrame)
    cache: dict[str, int] = field(default_factory=dict)  # judge-cache hits/misses of this run


def _injection_flags(text: str) -> list[dict]:
    try:
        from pipeline.injection import injection_flags
    except ImportError:  # the hardening module is optional for scoring
        return []
    return [{"kind": f.kind, "start": f.start, "end": f.end, "excerpt": f.excerpt} for f in injection_flags(text)]


# ---- rows for each table ----------------------------------------------------------------------


def answer_rows(dataset: str, answers: Sequence[AnnotatedAnswer]) -> list[dict]:
    """Rows of the answers table."""
    return [
        {"dataset": dataset, "answer_id": a.answer.answer_id, "engine": a.answer.engine, "query": a.answer.query,
         "query_type": a.answer.query_type, "field": a.answer.field, "text": a.answer.text,
         "n_sources": len(a.answer.sources), "meta": json.dumps(dict(a.answer.meta), ensure_ascii=False)}
        for a in answers
    ]


def source_rows(dataset: str, answers: Sequence[AnnotatedAnswer]) -> list[dict]:
    """Rows of the sources table, with type, duplicate and injection analysis."""
    rows = []
    for a in answers:
        duplicate_of = {b: first for first, b, _ in duplicate_pairs(a.answer.sources)}
        for s in a.answer.sources:
            flags = _injection_flags(s.text) if s.text else []
            rows.append({"dataset": dataset, "answer_id": a.answer.answer_id, "source_index": s.index, "url": s.url,
                         "title": s.title, "text": s.text, "fetch_ok": s.fetch_ok, "source_type": source_type(s.url),
                         "injection_flags": json.dumps(flags) if flags else "", "duplicate_of": duplicate_of.get(s.index)})
    return rows


def statement_rows(dataset: str, judge: str, answers: Sequence[AnnotatedAnswer]) -> list[dict]:
    """Rows of the statements table (with the judge's relevance and stance)."""
    rows = []
    for a in answers:
        view = label_view(a)
        for s in a.statements:
            rows.append({"dataset": dataset, "judge": judge, "answer_id": s.answer_id, "statement_index": s.index,
                         "text": s.text, "start": s.start, "end": s.end, "citations": list(s.citations),
                         "dangling": list(s.dangling), "relevant": is_relevant(view, s) if s.index in view.relevant else None,
                         "stance": view.stance.get(s.index)})
    return rows


def label_rows(dataset: str, answers: Sequence[AnnotatedAnswer]) -> list[dict]:
    """Rows of the labels table: every verdict with its judge, prompt version and raw output."""
    return [verdict_row(dataset, v) for a in answers for v in a.verdicts]


def verdict_row(dataset: str, v: Verdict) -> dict:
    """One verdict as a labels-table row."""
    score = v.score if v.score is None or v.score == v.score else None  # NaN never reaches Parquet
    return {"dataset": dataset, "answer_id": v.answer_id, "kind": v.kind, "statement_index": v.statement_index,
            "source_index": v.source_index, "label": v.label, "score": score, "judge": v.judge,
            "prompt_version": v.prompt_version, "raw": v.raw, "evidence": v.evidence}


def row_verdict(row: dict) -> Verdict:
    """A labels-table row back to a Verdict."""
    def opt_int(value: Any) -> int | None:
        return None if value is None or value != value else int(value)

    score = row.get("score")
    return Verdict(answer_id=row["answer_id"], kind=row["kind"], label=row["label"], judge=row["judge"],
                   prompt_version=row["prompt_version"], raw=row.get("raw") or "",
                   statement_index=opt_int(row.get("statement_index")), source_index=opt_int(row.get("source_index")),
                   score=None if score is None or score != score else float(score), evidence=row.get("evidence") or "")


def pair_rows(dataset: str, judge: str, answers: Sequence[AnnotatedAnswer], flagged: dict[tuple[str, int], bool]) -> list[dict]:
    """Rows of the pairs table: every relevant statement x listed source with citation and support."""
    rows = []
    for a in answers:
        view = label_view(a)
        for s in a.statements:
            if not is_relevant(view, s):
                continue
            for src in a.answer.sources:
                key = (s.index, src.index)
                rows.append({"dataset": dataset, "judge": judge, "answer_id": a.answer.answer_id,
                             "statement_index": s.index, "source_index": src.index, "cited": src.index in s.citations,
                             "support": view.support.get(key), "score": view.support_score.get(key),
                             "injection_flagged": flagged.get((a.answer.answer_id, src.index), False)})
    return rows


def metric_rows(dataset: str, judge: str, answers: Sequence[AnnotatedAnswer],
                configs: Sequence[ScoreConfig] = SCORE_CONFIGS) -> list[dict]:
    """Long per-answer metric rows for every scoring configuration."""
    rows = []
    for config in configs:
        for a in answers:
            base = {"dataset": dataset, "judge": judge, "mode": config.mode, "necessity": config.necessity,
                    "answer_id": a.answer.answer_id, "engine": a.answer.engine, "query_type": a.answer.query_type,
                    "field": a.answer.field}
            for name, result in score_answer(a, config).items():
                rows.append(base | {"metric": name, "metric_version": METRICS[name].version, "value": result.value,
                                    "n": result.n, "reason": result.reason})
    return rows


# ---- the run ----------------------------------------------------------------------------------


def _chunk_key(judge: Judge, chunk: Sequence[AnnotatedAnswer]) -> str:
    payload = json.dumps([judge.name, judge.prompt_version, *[a.answer.answer_id for a in chunk]])
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def annotate_resumable(answers: Sequence[AnnotatedAnswer], judge: Judge, parts_dir: Path,
                       dataset: str, tick: Callable[[int], None], result: RunResult) -> list[AnnotatedAnswer]:
    """Annotate in chunks, skipping chunks whose labels are already saved."""
    out: list[AnnotatedAnswer] = []
    for start in range(0, len(answers), CHUNK_SIZE):
        chunk = answers[start : start + CHUNK_SIZE]
        part = parts_dir / f"labels-{_chunk_key(judge, chunk)}.parquet"
        if part.exists():
            saved = read_table(part, "labels")
            by_answer: dict[str, list[Verdict]] = {}
            for row in saved.to_dict("records"):
                by_answer.setdefault(row["answer_id"], []).append(row_verdict(row))
            done = [AnnotatedAnswer(a.answer, statements_for(a), tuple(by_answer.get(a.answer.answer_id, ())))
                    for a in chunk]
            result.chunks_skipped += 1
        else:
            # Judges that batch work across answers (the offline judge embeds every sentence of a
            # chunk in one pass) get the chunk first; the cache wrapper exposes its inner judge.
            prefetch = getattr(getattr(judge, "inner", judge), "prefetch", None)
            if prefetch is not None:
                prefetch(chunk)
            done = [annotate_answer(a, judge) for a in chunk]
            write_table("labels", label_rows(dataset, done), part)
            result.chunks_done += 1
        out.extend(done)
        tick(len(chunk))
    return out


def run_dataset(name: str, path: str | Path | None = None, *, judge_name: str | None = None,
                judge_config: dict | None = None, importer: str | None = None, limit: int | None = None,
                progress: bool = True, root: Path | None = None, use_cache: bool = True,
                judge: Judge | None = None) -> RunResult:
    """Run the whole pipeline for one dataset and write its Parquet tables.

    Everything is imported and validated before anything is written, so bad input never touches
    earlier results. `judge` passes a ready judge object (tests, notebooks) instead of a name.
    """
    started = time.perf_counter()
    info = resolve_dataset(name, path, importer)
    answers = IMPORTERS[info.importer].load(info.path)  # type: ignore[arg-type]
    answers = sorted(answers, key=lambda a: a.answer.answer_id)
    if limit is not None:
        answers = answers[:limit]
    judge_name = judge.name if judge is not None else (judge_name or info.default_judge)
    result = RunResult(dataset=name, judge=judge_name, answers=len(answers))
    out_dir = dataset_dir(name, root)
    out_dir.mkdir(parents=True, exist_ok=True)

    bar = _progress_bar(len(answers), f"{name}:{judge_name}", progress)
    if judge_name in CARRIED_JUDGES:
        annotated = [carried(a, judge_name) for a in answers]
        bar(len(answers))
        judge_id = judge_name
    else:
        if judge is None:
            judge = get_judge(judge_name, **(judge_config or {}))
        if use_cache:
            judge = _cached(judge)
        judge_id = judge.name
        parts = out_dir / judge_dirname(judge_id) / "parts"
        annotated = annotate_resumable(answers, judge, parts, name, bar, result)
        result.cache = dict(getattr(judge, "stats", {}) or {}) if hasattr(judge, "hits") else {}
    bar(0, close=True)

    # answers/sources are shared by every judge of the dataset: merge, so a --limit run of one
    # judge never hides answers another judge's tables refer to.
    ids = {a.answer.answer_id for a in answers}
    sources = source_rows(name, answers)
    for table, rows in (("answers", answer_rows(name, answers)), ("sources", sources)):
        path = table_path(name, table, root=root)
        kept = read_table(path, table)
        kept = kept[~kept["answer_id"].isin(ids)]
        merged = pd.concat([kept, pd.DataFrame(rows)], ignore_index=True) if len(kept) else pd.DataFrame(rows)
        write_table(table, merged, path)
    flagged = {(r["answer_id"], r["source_index"]): bool(r["injection_flags"]) for r in sources}
    write_table("statements", statement_rows(name, judge_id, annotated), table_path(name, "statements", judge_id, root))
    write_table("labels", label_rows(name, annotated), table_path(name, "labels", judge_id, root))
    write_table("pairs", pair_rows(name, judge_id, annotated, flagged), table_path(name, "pairs", judge_id, root))
    metrics = pd.DataFrame(metric_rows(name, judge_id, annotated))
    write_table("metrics", metrics, table_path(name, "metrics", judge_id, root))
    summary = summarize(metrics)
    write_table("summary", summary, table_path(name, "summary", judge_id, root))
    config = {"dataset": name, "importer": info.importer, "path": str(info.path), "limit": limit,
              "illustrative": info.illustrative, "score_configs": [vars(c) for c in SCORE_CONFIGS],
              "judge_config": {k: v for k, v in (judge_config or {}).items() if "key" not in k.lower()}}
    write_json_atomic(table_path(name, "summary", judge_id, root).with_name("manifest.json"),
                      manifest(config, judge_id, prompt_versions(annotated)))
    result.seconds = time.perf_counter() - started
    result.out_dir = out_dir
    result.summary = summary
    return result


def _cached(judge: Judge) -> Judge:
    try:
        from pipeline.judges.cache import CachingJudge
    except ImportError:
        return judge
    return CachingJudge(judge)


def _progress_bar(total: int, label: str, enabled: bool) -> Callable[..., None]:
    if not enabled:
        return lambda n, close=False: None
    from tqdm import tqdm

    bar = tqdm(total=total, desc=label, unit="answer", leave=True)

    def tick(n: int, close: bool = False) -> None:
        bar.update(n)
        if close:
            bar.close()

    return tick
