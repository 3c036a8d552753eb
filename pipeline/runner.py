"""`run --dataset NAME`: ingest -> annotate -> score -> export, resumable, idempotent and chunked.

The corpus streams through in chunks of CHUNK_SIZE answers: each chunk is read from the importer,
annotated, scored and appended to every table, so memory stays flat whatever the corpus size.
Annotation is the slow, costly stage, so a computed judge's labels are also saved per chunk
(`<judge>/parts/labels-<hash>.parquet`, written atomically); a rerun or a run restarted after a
crash skips every chunk already on disk, and the judge cache skips every call already answered.
The tables go into a new result set (a generation folder, `pipeline.storage.result_sets`) that readers
see only when the run succeeded: its files are listed with their checksums and the dataset's
pointer is switched in one rename, so a crash at any moment leaves the old set or the new one, never
a mix, and bad input never damages results already written. One run at a time writes a dataset
(a lock; a second run stops with the holder's pid, or waits with `wait`); what killed runs left
behind is swept first. The chunks are annotated by an
executor (`pipeline/executor.py`): in this process by default, or by judges in a Ray actor pool
(`pipeline/cluster/`, `--executor ray`); saved parts, metrics and tables stay here either way.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import pandas as pd
import pyarrow.compute as pc

from pipeline.aggregate import SummaryAccumulator, summary_keys
from pipeline.annotate import prompt_versions
from pipeline.errors import InputError, one_line
from pipeline.executor import ChunkTask, Executor, JudgeSpec, LocalExecutor
from pipeline.gold.similarity import SIMILARITY_JUDGE, SIMILARITY_VERSION
from pipeline.importers import IMPORTERS, resolve_dataset
from pipeline.importers.import_report import ImportReport
from pipeline.importers.refusals import Refusals
from pipeline.judges import Judge, get_judge, with_cache
from pipeline.judges.base import JudgeError, call_outcomes
from pipeline.page_records import JUDGE_RECORDS, ChunkRecords, record_path
from pipeline.page_records import finish as finish_records
from pipeline.records import AnnotatedAnswer, Verdict
from pipeline.storage.result_sets import DatasetLock, NewGeneration, sweep_leftovers
from pipeline.storage.store import (
    JUDGE_TABLES,
    SCHEMAS,
    TableWriter,
    dataset_dir,
    iter_table_batches,
    judge_dirname,
    manifest,
    read_table,
    results_dir,
    table_path,
    write_json_atomic,
    write_table,
)
from pipeline.storage.tables import SCORE_CONFIGS, answer_rows, label_rows, metric_rows, pair_rows, row_verdict, source_rows, statement_rows
from pipeline.text.text import statements_for

CHUNK_SIZE = int(os.environ.get("AEE_CHUNK_SIZE", "25"))  # answers per chunk (and per saved annotation part)


@dataclass
class RunResult:
    """What a run did, for the CLI to print."""

    dataset: str
    judge: str
    answers: int = 0
    chunks_done: int = 0
    chunks_skipped: int = 0
    chunks_unsaved: int = 0  # annotated with a failed call: not saved, asked again by the next run
    seconds: float = 0.0
    out_dir: Path | None = None
    summary: pd.DataFrame = field(default_factory=pd.DataFrame)
    cache: dict[str, int] = field(default_factory=dict)  # judge-cache hits/misses of this run
    formats: dict[str, int] = field(default_factory=dict)  # answers per input format found
    import_report: dict[str, dict] = field(default_factory=dict)  # per input file (pipeline.importers.import_report)
    refused: list[str] = field(default_factory=list)  # one line per record the importer refused (file, line, field, why)
    executor: str = "local"  # where the annotate stage ran (pipeline.executor)
    records_seconds: float | None = None  # spent writing the pages' records (pipeline/page_records); None: not written


def _chunk_key(judge: Judge, chunk: Sequence[AnnotatedAnswer]) -> str:
    """Names a saved labels part: the judge, its prompt version, and every input a verdict depends
    on (ids alone would let an edited input file resume from labels of the old text), gold answers
    included with the similarity method (the part holds the similarity with them; answers without
    any keep their old key)."""
    digest = hashlib.sha256(json.dumps([judge.name, judge.prompt_version]).encode())
    for a in chunk:
        ans = a.answer
        gold = [[SIMILARITY_JUDGE, SIMILARITY_VERSION, [g.text for g in ans.gold]]] if ans.gold else []
        digest.update(json.dumps([ans.answer_id, ans.query, ans.query_type, ans.text,
                                  [(s.index, s.text, s.fetch_ok) for s in ans.sources],
                                  [(s.index, s.text, s.citations) for s in a.statements], *gold]).encode())
    return digest.hexdigest()[:16]


def _chunks(answers: Iterable[AnnotatedAnswer], size: int) -> Iterator[list[AnnotatedAnswer]]:
    it = iter(answers)
    while chunk := list(islice(it, size)):
        yield chunk


def _saved_labels(chunk: Sequence[AnnotatedAnswer], part: Path, judge_name: str) -> list[AnnotatedAnswer] | None:
    """A chunk's labels read back from its saved part, or None when the part is not on disk or
    holds a failed call (written before failed calls kept a chunk unsaved): a call that failed is
    asked again, and the cache answers the others."""
    if not part.exists():
        return None
    by_answer: dict[str, list[Verdict]] = {}
    for row in read_table(part, "labels").to_dict("records"):
        by_answer.setdefault(row["answer_id"], []).append(row_verdict(row))
    saved = [AnnotatedAnswer(a.answer, statements_for(a), tuple(by_answer.get(a.answer.answer_id, ()))) for a in chunk]
    return None if call_outcomes(saved, judge_name)[1] else saved


def _tasks(chunks: Iterable[list[AnnotatedAnswer]], judge: Judge, parts_dir: Path, result: RunResult) -> Iterator[ChunkTask]:
    """Each chunk as a task for the executor: labels carried by the data, read back from a saved
    part (a restarted run never asks again), or to be asked of the judge and saved as a part."""
    for seq, chunk in enumerate(chunks):
        if judge.carries_labels:
            yield ChunkTask(seq, chunk)
            continue
        part = parts_dir / f"labels-{_chunk_key(judge, chunk)}.parquet"
        saved = _saved_labels(chunk, part, judge.name)
        if saved is not None:
            result.chunks_skipped += 1
        yield ChunkTask(seq, chunk, saved, part)


def _annotated_chunks(chunks: Iterable[list[AnnotatedAnswer]], judge: Judge, parts_dir: Path, dataset: str,
                      result: RunResult, executor: Executor, spec: JudgeSpec | None) -> Iterator[list[AnnotatedAnswer]]:
    """Every chunk annotated by the executor, in order; a computed judge's fresh labels are saved
    as the chunk's part as soon as the chunk is complete (the executor hands over whole chunks only),
    unless one of its calls failed: the chunk is then asked again by the next run (the cache
    answers every call that did not fail). A judge all of whose calls failed so far stops the run
    (JudgeError) before it replaces the results with a set of "not scorable"."""
    answered = False  # has any fresh call of this run come back?
    for task, annotated in executor.annotate(_tasks(chunks, judge, parts_dir, result), judge, spec, dataset):
        if task.saved is None and task.part is not None:
            asked, failed = call_outcomes(annotated, judge.name)
            answered = answered or len(failed) < asked
            if asked and not answered:
                raise JudgeError(f"every call of judge {judge.name} failed ({len(failed)} in the first chunk), so the run "
                                 f"stopped; the first: {one_line(failed[0].raw, 300)}; the results of {dataset!r} are unchanged")
            if failed:
                result.chunks_unsaved += 1
            else:
                write_table("labels", label_rows(dataset, annotated), task.part)
            result.chunks_done += 1
        yield annotated


def run_dataset(name: str, path: str | Path | None = None, *, judge_name: str | None = None,
                judge_config: dict | None = None, importer: str | None = None, limit: int | None = None,
                progress: bool = True, root: Path | None = None, use_cache: bool = True,
                judge: Judge | None = None, transform: Callable[[AnnotatedAnswer], AnnotatedAnswer] | None = None,
                config_extra: dict | None = None, import_options: Any = None, executor: Executor | None = None,
                wait: float = 0.0, allow_empty: bool = False, strict: bool = False) -> RunResult:
    """Run the whole pipeline for one dataset and write its Parquet tables.

    `judge` passes a ready judge object (tests, notebooks) instead of a registry name. Before a
    computed judge is asked anything, the whole input is read once and validated (so bad input
    costs no judge calls); `limit` keeps the first N answers by id. `transform` changes each answer
    as it is read (`compare-gold` attaches the gold answers of its query); `config_extra` is added
    to the manifest's config (where such additions came from). `import_options` tells engine
    formats what a bare response does not say (pipeline.importers.engines.ImportOptions).
    `executor` runs the annotate stage (default `LocalExecutor`, this process; `pipeline.cluster`'s
    `RayExecutor` builds the judge by name on Ray workers, so it needs `judge_name`, not `judge`).
    `wait`: seconds to wait for another run writing the same dataset (0: stop at once, `DatasetBusy`).
    A record the importer cannot read is refused (listed in `refused` and the import report) and the
    others are run; `strict` stops at the first one instead (InputError). A run none of whose records
    can be read is an InputError too, and the results already there stay.
    A run that ends with no answer at all (`limit=0`, a file holding `[]`, a folder with nothing
    readable) raises InputError and leaves the dataset's results as they were, unless `allow_empty`:
    an empty set would otherwise replace real results, and the next run would sweep the old ones away.
    """
    started = time.perf_counter()
    out_dir = dataset_dir(name, root)  # checks the name first
    if limit is not None and limit < 0:  # ids[:-1] would quietly drop the last answer instead
        raise InputError(f"--limit must be 0 or more (got {limit})", field="--limit")
    if not (math.isfinite(wait) and wait >= 0):  # a lock wait of -5 s or nan has no meaning
        raise InputError(f"must be a number of seconds, 0 or more (got {wait:g})", field="--wait")
    with DatasetLock(root or results_dir(), name, wait):
        return _run_locked(name, out_dir, started, path, judge_name=judge_name, judge_config=judge_config,
                           importer=importer, limit=limit, progress=progress, root=root, use_cache=use_cache,
                           judge=judge, transform=transform, config_extra=config_extra, import_options=import_options,
                           executor=executor, allow_empty=allow_empty, strict=strict)


def _run_locked(name: str, out_dir: Path, started: float, path: str | Path | None, *, judge_name: str | None,
                judge_config: dict | None, importer: str | None, limit: int | None, progress: bool, root: Path | None,
                use_cache: bool, judge: Judge | None, transform: Callable[[AnnotatedAnswer], AnnotatedAnswer] | None,
                config_extra: dict | None, import_options: Any, executor: Executor | None,
                allow_empty: bool = False, strict: bool = False) -> RunResult:
    """`run_dataset` once this process holds the dataset's lock."""
    sweep_leftovers(out_dir)
    info = resolve_dataset(name, path, importer)
    data_path = info.path
    assert data_path is not None  # resolve_dataset raises InputError for data not on this machine
    reader = IMPORTERS[info.importer]
    spec: JudgeSpec | None = None
    if judge is None:
        spec = JudgeSpec(judge_name or info.default_judge, dict(judge_config or {}), use_cache)
        judge = get_judge(spec.name, cache=use_cache, **spec.config)
    elif use_cache:
        judge = with_cache(judge)
    selected: set[str] | None = None
    total: int | None = None
    refusals = Refusals(strict)
    if limit is not None or not judge.carries_labels:
        ids = sorted(a.answer.answer_id for a in reader.iter(data_path, import_options, refusals))  # validates every record
        selected = set(ids[:limit]) if limit is not None else None
        total = len(selected) if selected is not None else len(ids)
    stream = (a for a in reader.iter(data_path, import_options, refusals) if selected is None or a.answer.answer_id in selected)
    if transform is not None:
        stream = (transform(a) for a in stream)

    judge_id = judge.name
    bar = _progress_bar(total, f"{name}:{judge_id}", progress)
    executor = executor or LocalExecutor(progress=bar.note if progress else None)
    result = RunResult(dataset=name, judge=judge_id, executor=executor.name)
    parts = out_dir / judge_dirname(judge_id) / "parts"
    created = [d for d in (out_dir, out_dir / judge_dirname(judge_id)) if not d.exists()]
    generation = NewGeneration(out_dir)  # the new result set, invisible to readers until published
    shared = {t: TableWriter(t, table_path(name, t, base=generation.path)) for t in ("answers", "sources")}
    writers = {t: TableWriter(t, table_path(name, t, judge_id, base=generation.path)) for t in JUDGE_TABLES if t != "summary"}
    # the pages' records (pipeline/page_records); AEE_PAGE_RECORDS=off leaves them out (a set as written before them)
    records = ChunkRecords(generation.path, judge_id) if os.environ.get("AEE_PAGE_RECORDS", "on") != "off" else None
    ids_done: set[str] = set()
    summary_values = SummaryAccumulator(summary_keys(SCHEMAS["metrics"].names))
    versions: set[str] = set()
    source_modes: dict[str, int] = {}
    imported = ImportReport()
    try:
        for annotated in _annotated_chunks(_chunks(stream, CHUNK_SIZE), judge, parts, name, result, executor, spec):
            sources = source_rows(name, annotated)
            flagged = {(r["answer_id"], r["source_index"]): bool(r["injection_flags"]) for r in sources}
            shared["answers"].append(answer_rows(name, annotated))
            shared["sources"].append(sources)
            writers["statements"].append(statement_rows(name, judge_id, annotated))
            writers["labels"].append(label_rows(name, annotated))
            writers["pairs"].append(pair_rows(name, judge_id, annotated, flagged))
            metrics = metric_rows(name, judge_id, annotated)
            writers["metrics"].append(metrics)
            summary_values.add_rows(metrics)
            records = _add_records(records, annotated, metrics)
            ids_done.update(a.answer.answer_id for a in annotated)
            versions |= prompt_versions(annotated)
            for a in annotated:
                imported.add(a, default_file=data_path.name)
                fmt = a.answer.meta.get("format") or info.importer
                result.formats[fmt] = result.formats.get(fmt, 0) + 1
                mode = a.answer.meta.get("sources")
                if mode:
                    source_modes[mode] = source_modes.get(mode, 0) + 1
            bar(len(annotated))
        if not ids_done and refusals.count:
            raise InputError(f"no answer could be read: {refusals.count:,} record(s) refused; the first: "
                             f"{refusals.items[0].text()}", record=str(data_path))
        if not ids_done and not allow_empty:
            raise _nothing_to_write(name, limit, data_path, generation.previous is not None)
        if total is not None and len(ids_done) < total and not allow_empty:  # answers lost on the way
            raise InputError(f"the run read {total} answers but only {len(ids_done)} came through the annotate stage; "
                             f"the results of {name!r} are unchanged (pass --allow-empty to write the smaller set)",
                             record=str(data_path))
    except BaseException:
        for w in (*shared.values(), *writers.values()):
            w.abort()
        if records is not None:
            records.abort()
        generation.discard()
        for folder in reversed(created):  # bad input leaves no trace, not even an empty folder
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        raise
    finally:
        bar(0, close=True)
    result.answers = len(ids_done)
    result.import_report = imported.as_dict(refusals)
    result.refused = refusals.lines()
    result.cache = executor.cache_stats(judge)

    try:
        summary = _finish(name, judge_id, generation, shared, writers, ids_done, summary_values)
        result.records_seconds = _finish_records(generation.path, name, judge_id, records)
        config = {"dataset": name, "importer": info.importer, "path": str(info.path), "limit": limit,
                  "illustrative": info.illustrative, "score_configs": [vars(c) for c in SCORE_CONFIGS],
                  # input formats found, and where engine answers' source text came from (collect --sources):
                  # "snippet" = the provider's excerpts, "fetch" = pages fetched by the toolkit
                  "formats": dict(sorted(result.formats.items())), "sources": dict(sorted(source_modes.items())),
                  "import_report": result.import_report,
                  "judge_config": {k: v for k, v in (judge_config or {}).items() if "key" not in k.lower()},
                  "executor": executor.name,
                  **(config_extra or {})}
        write_json_atomic(table_path(name, "summary", judge_id, base=generation.path).with_name("manifest.json"),
                          manifest(config, judge_id, versions))
        generation.carry_over({judge_dirname(judge_id)})  # the other judges' tables, unchanged
        generation.publish()  # readers switch to the new set here, all of it at once
    except BaseException:
        for w in (*shared.values(), *writers.values()):
            w.abort()
        if records is not None:
            records.abort()
        generation.discard()
        raise
    sweep_leftovers(out_dir)  # the set before the previous one, and results from before generations
    result.seconds = time.perf_counter() - started
    result.out_dir = out_dir
    result.summary = summary
    return result


def _nothing_to_write(name: str, limit: int | None, data_path: Path, had_results: bool) -> InputError:
    """The refusal of a run that read no answer: why, and that nothing was replaced."""
    why = (f"--limit {limit} keeps no answer" if limit is not None and limit <= 0
           else f"{data_path} holds no answer this run could read")
    kept = f"the results of {name!r} are unchanged" if had_results else f"no results were written for {name!r}"
    return InputError(f"nothing to score: {why}; {kept} (pass --allow-empty to write an empty result set on purpose)",
                      record=str(data_path))


def _finish(name: str, judge_id: str, generation: NewGeneration, shared: dict[str, TableWriter],
            writers: dict[str, TableWriter], ids_done: set[str], summary_values: SummaryAccumulator) -> pd.DataFrame:
    """Complete the new set's tables: the shared answers and sources (with the previous set's rows
    of answers this run did not touch), this judge's tables, its summary."""
    # answers/sources are shared by every judge of the dataset: keep the rows of answers this run
    # did not touch, so a --limit run of one judge never hides answers another judge's tables refer to.
    done = _string_array(ids_done)
    for table, writer in shared.items():
        if generation.previous is not None:
            for batch in iter_table_batches(table_path(name, table, base=generation.previous)):
                writer.append(batch.filter(pc.invert(pc.is_in(batch["answer_id"], value_set=done))))
        writer.commit()
    for w in writers.values():
        w.commit()
    summary = summary_values.summary()
    write_table("summary", summary, table_path(name, "summary", judge_id, base=generation.path))
    _write_over_time(generation.path, judge_id)
    return summary


def _add_records(records: ChunkRecords | None, chunk: Sequence[AnnotatedAnswer], metrics: list[dict]) -> ChunkRecords | None:
    """The pages' records of one chunk; a failure costs the pages' fast first view (they build what
    they need from the tables instead, and say so), never the run's results."""
    if records is None:
        return None
    try:
        records.add(chunk, metrics)
        return records
    except Exception as exc:  # noqa: BLE001 - the scores are unaffected
        records.abort()
        _warn_records(exc)
        return None


def _finish_records(base: Path, name: str, judge_id: str, records: ChunkRecords | None) -> float | None:
    """The set's answer index and the judge's row locators, with the chunk records (best effort, as
    above); the seconds all of the records took, None when they were not written."""
    if records is None:
        return None
    try:
        return records.seconds + finish_records(base, name, [judge_id], {judge_id: records})
    except Exception as exc:  # noqa: BLE001 - a half-written record is removed; the pages fall back
        records.abort()
        for path in (record_path(base, "answer_index"), *(record_path(base, n, judge_id) for n in JUDGE_RECORDS)):
            path.unlink(missing_ok=True)
        _warn_records(exc)
        return None


def _warn_records(exc: Exception) -> None:
    import sys

    print(f"warning: the pages' records were not written ({type(exc).__name__}: {str(exc)[:200]}); the pages build "
          "what they need on first use (slower); `aee records --dataset NAME` writes them later", file=sys.stderr)


def _write_over_time(base: Path, judge_id: str) -> None:
    """Repeats and waves: the "Over time" page's summaries (pipeline/consistency). They are derived
    from the tables just written, so a failure here costs the page, never the run's results."""
    import sys

    from pipeline.consistency.summary import write as write_over_time

    try:
        write_over_time(base, judge_id)
    except Exception as exc:  # noqa: BLE001 - the scores are written; only the over-time view is missing
        print(f"warning: over-time summaries not written ({type(exc).__name__}: {str(exc)[:200]})", file=sys.stderr)


def _string_array(values: Iterable[str]):
    import pyarrow as pa

    return pa.array(sorted(values), type=pa.string())


class _Progress:
    """The run's progress bar (answers done), with a note on what the current answer is at."""

    def __init__(self, total: int | None, label: str, enabled: bool) -> None:
        self._bar: Any = None
        if enabled:
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=label, unit="answer", leave=True)

    def __call__(self, n: int, close: bool = False) -> None:
        if self._bar is not None:
            self._bar.update(n)
            if close:
                self._bar.set_postfix_str("")
                self._bar.close()

    def note(self, text: str) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(text[:80], refresh=True)


def _progress_bar(total: int | None, label: str, enabled: bool) -> _Progress:
    return _Progress(total, label, enabled)
