"""Records <-> table rows: the one place that knows how a record becomes a row of a Parquet table
(`pipeline.storage.store.SCHEMAS` declares the columns) and how rows become records again.

The runner writes through the `*_rows` builders; the app and `judges evaluate` read results back
with `answers_from_tables` / `load_annotated`, so nothing that reads results imports the runner.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from pipeline.gold.gold import gold_from_json, gold_to_json
from pipeline.injection.injection import injection_flags
from pipeline.matrices import is_relevant, label_view, unknown_pairs
from pipeline.metrics import METRICS, ScoreConfig, score_answer
from pipeline.records import SUPPORT_UNKNOWN, AnnotatedAnswer, Answer, Source, Statement, Verdict, unchecked_text
from pipeline.sources import duplicate_pairs, source_type
from pipeline.storage.store import read_table, result_set, table_path

# The scorecard's toggles: strict with each necessity variant, and the notebook's parity rules.
SCORE_CONFIGS: tuple[ScoreConfig, ...] = (
    ScoreConfig("strict", "exact"),
    ScoreConfig("strict", "greedy"),
    ScoreConfig("strict", "bipartite"),
    ScoreConfig("parity", "greedy"),
)


def _injection_flags(text: str) -> list[dict]:
    return [{"kind": f.kind, "start": f.start, "end": f.end, "excerpt": f.excerpt} for f in injection_flags(text)]


# ---- records -> rows ---------------------------------------------------------------------------


def answer_rows(dataset: str, answers: Sequence[AnnotatedAnswer]) -> list[dict]:
    """Rows of the answers table."""
    return [
        {"dataset": dataset, "answer_id": a.answer.answer_id, "engine": a.answer.engine, "query": a.answer.query,
         "query_type": a.answer.query_type, "field": a.answer.field, "text": a.answer.text,
         "n_sources": len(a.answer.sources), "meta": json.dumps(dict(a.answer.meta), ensure_ascii=False),
         "gold": gold_to_json(a.answer.gold)}
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
                         "injection_flags": json.dumps(flags) if flags else "", "duplicate_of": duplicate_of.get(s.index),
                         "text_origin": s.text_origin})
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
            "prompt_version": v.prompt_version, "raw": v.raw, "evidence": v.evidence, "error": v.error,
            "source_set": list(v.source_set) if v.source_set else None}


def row_verdict(row: dict) -> Verdict:
    """A labels-table row back to a Verdict."""
    def opt_int(value: Any) -> int | None:
        return None if value is None or value != value else int(value)

    score = row.get("score")
    members = row.get("source_set")
    return Verdict(answer_id=row["answer_id"], kind=row["kind"], label=row["label"], judge=row["judge"],
                   prompt_version=row["prompt_version"], raw=row.get("raw") or "",
                   statement_index=opt_int(row.get("statement_index")), source_index=opt_int(row.get("source_index")),
                   score=None if score is None or score != score else float(score), evidence=row.get("evidence") or "",
                   error=row.get("error") or "",
                   source_set=tuple(int(i) for i in members) if members is not None and len(members) else ())


def pair_rows(dataset: str, judge: str, answers: Sequence[AnnotatedAnswer], flagged: dict[tuple[str, int], bool]) -> list[dict]:
    """Rows of the pairs table: every relevant statement x listed source with citation and support
    (full / partial / none, "unknown" with `support_reason` saying why for a pair that must be
    decided and is not, null for an uncited pair outside a cited-only labels' scope)."""
    rows = []
    for a in answers:
        view = label_view(a)
        unknown = unknown_pairs(a, view)
        for s in a.statements:
            if not is_relevant(view, s):
                continue
            for src in a.answer.sources:
                key = (s.index, src.index)
                support = view.support.get(key) or (SUPPORT_UNKNOWN if key in unknown else None)
                rows.append({"dataset": dataset, "judge": judge, "answer_id": a.answer.answer_id,
                             "statement_index": s.index, "source_index": src.index, "cited": src.index in s.citations,
                             "support": support, "score": view.support_score.get(key),
                             "support_reason": unchecked_text(unknown[key]) if key in unknown else "",
                             "injection_flagged": flagged.get((a.answer.answer_id, src.index), False)})
    return rows


def metric_rows(dataset: str, judge: str, answers: Sequence[AnnotatedAnswer],
                configs: Sequence[ScoreConfig] = SCORE_CONFIGS) -> list[dict]:
    """Long per-answer metric rows for every scoring configuration."""
    rows: list[dict] = []
    for config in configs:
        for a in answers:
            base = {"dataset": dataset, "judge": judge, "mode": config.mode, "necessity": config.necessity,
                    "answer_id": a.answer.answer_id, "engine": a.answer.engine, "query_type": a.answer.query_type,
                    "field": a.answer.field}
            for name, result in score_answer(a, config).items():
                rows.append(base | {"metric": name, "metric_version": METRICS[name].version, "value": result.value,
                                    "n": result.n, "reason": result.reason, "units": result.units,
                                    "unknown": result.unknown, "unknown_why": result.unknown_why})
    return rows


# ---- rows -> records ---------------------------------------------------------------------------


def _opt_bool(value) -> bool | None:
    return None if value is None or value != value else bool(value)


def answers_from_tables(answers: pd.DataFrame, sources: pd.DataFrame, statements: pd.DataFrame,
                        labels: pd.DataFrame) -> dict[str, AnnotatedAnswer]:
    """Rebuild AnnotatedAnswer records from the four exported tables."""
    by_answer_sources: dict[str, list[Source]] = {}
    for r in sources.to_dict("records"):
        by_answer_sources.setdefault(r["answer_id"], []).append(
            Source(index=int(r["source_index"]), url=r["url"] or "", title=r["title"] or "", text=r["text"] or "",
                   fetch_ok=_opt_bool(r["fetch_ok"]), text_origin=r.get("text_origin") or ""))
    by_answer_statements: dict[str, list[Statement]] = {}
    for r in statements.to_dict("records"):
        by_answer_statements.setdefault(r["answer_id"], []).append(
            Statement(r["answer_id"], int(r["statement_index"]), r["text"], int(r["start"]), int(r["end"]),
                      tuple(int(c) for c in r["citations"]), tuple(int(d) for d in r["dangling"])))
    by_answer_labels: dict[str, list] = {}
    for r in labels.to_dict("records"):
        by_answer_labels.setdefault(r["answer_id"], []).append(row_verdict(r))
    out = {}
    for r in answers.to_dict("records"):
        aid = r["answer_id"]
        try:
            meta = json.loads(r["meta"] or "{}")
        except ValueError:
            meta = {}
        answer = Answer(aid, r["engine"], r["query"], r["query_type"], r["text"],
                        tuple(sorted(by_answer_sources.get(aid, []), key=lambda s: s.index)),
                        dataset=r["dataset"], field=r["field"] or "", meta=meta, gold=gold_from_json(r.get("gold")))
        out[aid] = AnnotatedAnswer(answer, tuple(sorted(by_answer_statements.get(aid, []), key=lambda s: s.index)),
                                   tuple(by_answer_labels.get(aid, [])))
    return out


def load_annotated(dataset: str, judge: str, root: Path | None = None) -> dict[str, AnnotatedAnswer]:
    """Every annotated answer of a dataset under one judge, keyed by answer id (all four tables from
    one result set, resolved once)."""
    base = result_set(dataset, root)
    return answers_from_tables(
        read_table(table_path(dataset, "answers", base=base)),
        read_table(table_path(dataset, "sources", base=base)),
        read_table(table_path(dataset, "statements", judge, base=base)),
        read_table(table_path(dataset, "labels", judge, base=base)),
    )
