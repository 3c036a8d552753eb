"""What the dashboard's pages open, written by `aee run` into the result set beside the tables.

A page that shows one answer, one engine or one summary reads only that, never every answer of the
set (HELM's rule: the front end reads precomputed summaries, it never re-runs the pipeline). So each
run writes, into the new generation before it is published (listed in SET.json with checksums,
switched with the set, carried over with a judge's folder like its other tables):

    answer_index.parquet           one row per answer: id, engine, query, query type, field, the
                                   support scope its labels cover, its wave, repeat and capture time
                                   (`pipeline.consistency.captures`), and where its rows are in
                                   answers.parquet and sources.parquet
    <judge>/answer_rows.parquet    where each answer's rows are in the judge's statements and labels
    <judge>/sides.parquet          the Conflicting evidence page's rows (`pipeline.conflict.sides`)
    <judge>/audit_clusters.parquet the clusters of every audit frame (`pipeline.audit.population`),
                                   from which the Audit page drafts a sample's size
    <judge>/values.parquet         the metric values `aee compare` compares (`pipeline.consistency.
                                   summary.load_values`), grouped by wave and engine: the Engine vs
                                   engine page reads two engines of one wave from their row groups

`read_answers` rebuilds the annotated answers of a few ids from the row groups that hold them (a
row group is about 5,000 rows), with the same `answers_from_tables` as `load_annotated`, so a page
gets the very record it got before. Sets written before these records still open: `missing`
says which are absent, and `aee records --dataset D` (`write_records`) adds them to the current
set as a new generation without running the pipeline again.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.audit.population import CLASS_METRICS, cluster_rows
from pipeline.conflict import sides
from pipeline.records import AnnotatedAnswer
from pipeline.storage.record_reads import (  # noqa: F401 (re-exported: callers import them from here)
    ANSWER_RECORDS,
    JUDGE_RECORDS,
    RECORD_FILES,
    SET_RECORDS,
    iter_answers,
    missing,
    read_answers,
    read_rows,
    record_path,
)
from pipeline.storage.store import SCHEMAS, TableWriter, judge_dirname, table_path, to_table, write_atomic, write_table

VALUES_ROW_GROUP = 10_000  # rows per row group of values.parquet (two engines of a wave: a few groups)
_i64 = pa.int64()

SCHEMAS.update({
    "answer_index": pa.schema([
        ("answer_id", pa.string()), ("engine", pa.string()), ("query", pa.string()), ("query_type", pa.string()),
        ("field", pa.string()), ("support_scope", pa.string()), ("wave", pa.string()), ("repeat", pa.int32()),
        ("captured_at", pa.timestamp("us", tz="UTC")), ("marked", pa.bool_()),
        ("answers_row", _i64), ("sources_first", _i64), ("sources_last", _i64),
    ]),
    "answer_rows": pa.schema([
        ("answer_id", pa.string()), ("statements_first", _i64), ("statements_last", _i64),
        ("labels_first", _i64), ("labels_last", _i64),
    ]),
    "sides": pa.schema([
        ("answer_id", pa.string()), ("engine", pa.string()), ("query", pa.string()), ("source_index", pa.int32()),
        ("url", pa.string()), ("domain", pa.string()), ("source_type", pa.string()), ("stance", pa.string()),
        ("answer_side", pa.string()), ("on_answer_side", pa.bool_()), ("follows", pa.bool_()), ("cited", pa.bool_()),
    ]),
    "audit_clusters": pa.schema([
        ("variant", pa.string()), ("cluster_id", pa.string()), ("answer_id", pa.string()), ("engine", pa.string()),
        ("query_type", pa.string()), ("judge_class", pa.string()), ("stratum", pa.string()), ("n_items", _i64),
    ]),
    # small counts the Scorecard and Confidence pages read instead of the metrics table (`write_facts`)
    "facts": pa.schema([
        ("kind", pa.string()), ("mode", pa.string()), ("necessity", pa.string()), ("query_type", pa.string()),
        ("field", pa.string()), ("engine", pa.string()), ("metric", pa.string()), ("reason", pa.string()),
        ("level", _i64), ("count", _i64),
    ]),
    "values": pa.schema([
        ("answer_id", pa.string()), ("metric", pa.string()), ("value", pa.float64()), ("engine", pa.string()),
        ("wave", pa.string()), ("query", pa.string()), ("repeat", _i64),
    ]),
})



# ---- written chunk by chunk during `aee run` ----------------------------------------------------


class ChunkRecords:
    """The records computed from each annotated chunk (sides, audit clusters), streamed to files of
    the new generation; `commit` puts them in place, `abort` drops them."""

    def __init__(self, base: Path, judge: str) -> None:
        self.writers = {name: TableWriter(name, record_path(base, name, judge)) for name in ("sides", "audit_clusters")}
        self.seconds = 0.0

    def add(self, chunk: Sequence[AnnotatedAnswer], metrics: Iterable[Mapping] = ()) -> None:
        """One chunk's records; `metrics`: its metric rows when the run scored them already (the
        audit strata read two metrics under strict rules, exact necessity)."""
        started = time.perf_counter()
        values: dict[str, dict[str, float | None]] = {}
        for r in metrics:
            if r["metric"] in CLASS_METRICS and r["mode"] == "strict" and r["necessity"] == "exact":
                values.setdefault(r["answer_id"], {})[r["metric"]] = r["value"]
        # Arrow straight from the rows: a pandas frame per chunk would cost more than computing them
        self.writers["sides"].append(pa.Table.from_pylist(sides.side_records(chunk), schema=SCHEMAS["sides"]))
        rows = cluster_rows({a.answer.answer_id: a for a in chunk}, values or None)
        self.writers["audit_clusters"].append(pa.Table.from_pylist(rows, schema=SCHEMAS["audit_clusters"]))
        self.seconds += time.perf_counter() - started

    def commit(self) -> None:
        for w in self.writers.values():
            w.commit()

    def abort(self) -> None:
        for w in self.writers.values():
            w.abort()


def _row_ranges(path: Path, key: str = "answer_id") -> pd.DataFrame:
    """First and last row of each answer in a table (answer_id, first, last), read from one column."""
    if not path.is_file():
        return pd.DataFrame({"answer_id": pd.Series(dtype=object), "first": pd.Series(dtype="int64"),
                             "last": pd.Series(dtype="int64")})
    ids = pq.read_table(path, columns=[key]).column(key).to_pandas()
    frame = pd.DataFrame({"answer_id": ids, "row": np.arange(len(ids), dtype=np.int64)})
    out = frame.groupby("answer_id", sort=False)["row"].agg(["min", "max"]).reset_index()
    return out.rename(columns={"min": "first", "max": "last"})


def _support_scope(meta: pd.Series) -> pd.Series:
    def one(text: object) -> str:
        try:
            value = json.loads(text or "{}").get("support_scope") if isinstance(text, str) else None
        except (ValueError, AttributeError):
            value = None
        return str(value) if value else ""

    return meta.map(one)


def write_index(base: Path, dataset: str) -> Path:
    """answer_index.parquet of a result set, from its answers and sources tables as written."""
    from pipeline.consistency.captures import capture_frame

    answers_path = table_path(dataset, "answers", base=base)
    columns = ["answer_id", "engine", "query", "query_type", "field", "meta"]
    answers = pq.read_table(answers_path, columns=columns).to_pandas() if answers_path.is_file() else \
        pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
    answers["answers_row"] = np.arange(len(answers), dtype=np.int64)
    answers["support_scope"] = _support_scope(answers["meta"])
    captures = capture_frame(answers[["answer_id", "engine", "query", "meta"]])
    captures = captures[["answer_id", "wave", "repeat", "captured_at", "marked"]] if len(captures) else \
        pd.DataFrame(columns=["answer_id", "wave", "repeat", "captured_at", "marked"])
    frame = answers.drop(columns=["meta"]).merge(captures, on="answer_id", how="left")
    ranges = _row_ranges(table_path(dataset, "sources", base=base)).rename(
        columns={"first": "sources_first", "last": "sources_last"})
    frame = frame.merge(ranges, on="answer_id", how="left")
    for col in ("sources_first", "sources_last"):
        frame[col] = frame[col].fillna(-1).astype("int64")
    frame["repeat"] = frame["repeat"].fillna(-1).astype("int32")
    frame["marked"] = frame["marked"].fillna(False).astype(bool)
    frame["captured_at"] = pd.to_datetime(frame["captured_at"], utc=True)
    frame = frame.sort_values("answers_row", kind="stable")
    return write_table("answer_index", frame, record_path(base, "answer_index"))


def write_rows(base: Path, dataset: str, judge: str) -> Path:
    """<judge>/answer_rows.parquet: where each answer's rows are in the judge's statements and labels."""
    statements = _row_ranges(table_path(dataset, "statements", judge, base=base)).rename(
        columns={"first": "statements_first", "last": "statements_last"})
    labels = _row_ranges(table_path(dataset, "labels", judge, base=base)).rename(
        columns={"first": "labels_first", "last": "labels_last"})
    frame = statements.merge(labels, on="answer_id", how="outer")
    for col in ("statements_first", "statements_last", "labels_first", "labels_last"):
        frame[col] = frame[col].fillna(-1).astype("int64")
    return write_table("answer_rows", frame.sort_values("answer_id"), record_path(base, "answer_rows", judge))


def write_values(base: Path, judge: str) -> Path:
    """<judge>/values.parquet: `load_values`' rows (default scoring configuration, display scale,
    finite values; answer_id, metric, value, engine, wave, query, repeat) in its order within each
    wave and engine, the waves and engines one after the other, so a reader filtering on them reads
    only their row groups. The captures come from the set's answer index when it is written."""
    from pipeline.consistency.summary import load_values

    index = record_path(base, "answer_index")
    captures = pq.read_table(index, columns=["answer_id", "engine", "wave", "query", "repeat"]).to_pandas() \
        if index.is_file() else None
    path = record_path(base, "values", judge)
    if not (base / judge_dirname(judge) / "metrics.parquet").is_file():
        return write_table("values", SCHEMAS["values"].empty_table().to_pandas(), path)
    _, values = load_values(base, judge, captures)
    frame = values.sort_values(["wave", "engine"], kind="stable")
    frame = frame.astype({c: object for c in ("engine", "wave", "query", "metric")})
    frame = frame.astype({"repeat": "int64"})
    return write_atomic(path, to_table("values", frame), row_group_size=VALUES_ROW_GROUP)


def write_facts(base: Path, judge: str) -> Path:
    """<judge>/facts.parquet: what two pages read of the metrics table, counted (a few hundred rows
    at any size; at 140k answers the table has 22 million rows and reading these columns took 10-13 s
    and 1.4 GB per page). kind "blank": per scoring configuration, query type, field, engine and
    metric, how many answers have no value for each non-empty reason (the Scorecard's "why n/a");
    kind "confidence": per engine and query type, how many answers have each confidence level (null
    level: no label), under the table's first configuration (confidence does not depend on it).
    Counted on the strings' dictionary codes with numpy, never as millions of Python objects."""
    path = record_path(base, "facts", judge)
    metrics = base / judge_dirname(judge) / "metrics.parquet"
    if not metrics.is_file():
        return write_table("facts", SCHEMAS["facts"].empty_table().to_pandas(), path)
    # metric first: the confidence rows' configuration is the first confidence row's
    keys = ["metric", "mode", "necessity", "query_type", "field", "engine", "reason"]
    file = pq.ParquetFile(metrics, read_dictionary=keys)
    value = file.read(columns=["value"]).column("value")
    blank = pc.is_null(value).to_numpy(zero_copy_only=False)
    combined = np.zeros(int(blank.sum()), dtype=np.int64)
    names: dict[str, list] = {}
    kept: dict[str, np.ndarray] = {}  # engine and query type codes, for the confidence rows below
    first: dict[str, object] = {}
    rows = np.zeros(file.metadata.num_rows, dtype=bool)  # the confidence rows of one configuration
    at = -1  # the first confidence row
    for k in keys:
        codes, names[k] = _codes(file, k)
        combined = combined * len(names[k]) + codes[blank]
        if k == "metric" and "confidence" in names[k]:
            rows = codes == names[k].index("confidence")
            at = int(np.argmax(rows)) if rows.any() else -1
        elif k in ("mode", "necessity") and at >= 0:
            first[k] = names[k][int(codes[at])]
            rows &= codes == codes[at]
        elif k in ("engine", "query_type"):
            kept[k] = codes
        del codes
    counted = _decode(combined, keys, names)
    counted = counted[counted["reason"].fillna("") != ""]
    counted["kind"] = "blank"
    parts = [counted]
    if at >= 0:
        # one row per answer (one configuration): a few hundred thousand at most, counted in pandas
        level = pc.round(value).to_numpy(zero_copy_only=False)[rows]
        found = pd.DataFrame({"engine": np.asarray(names["engine"], dtype=object)[kept["engine"][rows]],
                              "query_type": np.asarray(names["query_type"], dtype=object)[kept["query_type"][rows]],
                              "level": pd.array(np.where(np.isfinite(level), level, np.nan)).astype("Int64")})
        found = found.groupby(["engine", "query_type", "level"], dropna=False).size().rename("count").reset_index()
        found["kind"], found["mode"], found["necessity"] = "confidence", first["mode"], first["necessity"]
        parts.append(found)
    frame = pd.concat(parts, ignore_index=True)
    for column in SCHEMAS["facts"].names:
        if column not in frame.columns:
            frame[column] = None
    frame = frame.astype({c: object for c in ("kind", "mode", "necessity", "query_type", "field", "engine", "metric",
                                              "reason")})
    frame["level"] = frame["level"].astype("Int64")
    frame["count"] = frame["count"].astype("int64")
    return write_table("facts", frame[SCHEMAS["facts"].names], path)


def _codes(file: pq.ParquetFile, column: str) -> tuple[np.ndarray, list]:
    """One string column as integer codes (its dictionaries unified across row groups) and the
    values they stand for; the last value, None, is the code of a null."""
    read = pa.table({column: file.read(columns=[column]).column(column)}).unify_dictionaries().column(column)
    if not pa.types.is_dictionary(read.type):
        read = read.dictionary_encode()
    values = read.chunk(0).dictionary.to_pylist() if read.num_chunks else []
    size = len(values) + 1
    codes = (np.concatenate([c.indices.fill_null(size - 1).to_numpy(zero_copy_only=False).astype(np.int32)
                             for c in read.chunks]) if read.num_chunks else np.zeros(0, dtype=np.int32))
    return codes, [*values, None]


def _decode(combined: np.ndarray, keys: Sequence[str], names: Mapping[str, list]) -> pd.DataFrame:
    """How many rows have each value of `combined` (codes folded key after key), as columns."""
    found, counts = np.unique(combined, return_counts=True)
    out: dict[str, list] = {}
    for k in reversed(keys):
        size = len(names[k])
        out[k] = [names[k][i] for i in found % size]
        found = found // size
    return pd.DataFrame({k: out[k] for k in keys} | {"count": counts.astype(np.int64)})


# ---- reading one answer -------------------------------------------------------------------------


# ---- the whole step, for a run and for sets written before it -----------------------------------


def finish(base: Path, dataset: str, judges: Iterable[str], chunked: Mapping[str, ChunkRecords] | None = None) -> float:
    """Write the set's index and each judge's row locators (after the tables are committed); commit
    the chunk records of the judges that have them. Returns the seconds it took."""
    started = time.perf_counter()
    write_index(base, dataset)
    for judge in judges:
        write_rows(base, dataset, judge)
        write_values(base, judge)
        write_facts(base, judge)
    for records in (chunked or {}).values():
        records.commit()
    return time.perf_counter() - started


def write_records(dataset: str, root: Path | None = None, progress: bool = False) -> dict[str, float]:
    """Add the page records a dataset's current result set lacks: a new generation holding the same
    files (hard links, the records it has included) and the missing records of every judge,
    published like a run's (`aee records`). A set written before one record was added to the runs
    (the facts, say) gets that record alone, in seconds. Returns {what: seconds}."""
    import os
    import shutil

    from pipeline.storage.result_sets import SET_FILE, DatasetLock, NewGeneration, is_our_temporary, sweep_leftovers
    from pipeline.storage.store import check_results, dataset_dir, list_judges, results_dir

    check_results(dataset, root)
    judges = list_judges(dataset, root)
    folder = dataset_dir(dataset, root)
    with DatasetLock(root or results_dir(), dataset, 0.0):
        sweep_leftovers(folder)
        generation = NewGeneration(folder)
        previous = generation.previous
        try:
            if previous is None:
                raise ValueError(f"dataset {dataset!r} has no results")
            lacking = {judge: set(missing(previous, judge)) for judge in judges}
            for src in sorted(previous.rglob("*")):
                rel = src.relative_to(previous)
                if (not src.is_file() or src.name == SET_FILE or is_our_temporary(src.name) or src.name == "CURRENT"
                        or any(part.startswith(("gen-", ".")) or part == "parts" for part in rel.parts)):
                    continue
                dst = generation.path / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.link(src, dst)
                except OSError:
                    shutil.copy2(src, dst)
            times: dict[str, float] = {}
            if any("answer_index" in names for names in lacking.values()):
                started = time.perf_counter()
                write_index(generation.path, dataset)
                times["index"] = time.perf_counter() - started
            for judge in judges:
                started = time.perf_counter()
                redo = "answer_index" in lacking[judge]  # a new index: every locator written again
                if redo or "answer_rows" in lacking[judge]:
                    write_rows(generation.path, dataset, judge)
                if redo or "values" in lacking[judge]:
                    write_values(generation.path, judge)
                if redo or "facts" in lacking[judge]:
                    write_facts(generation.path, judge)
                if lacking[judge] & {"sides", "audit_clusters", "answer_rows", "answer_index"}:
                    records = ChunkRecords(generation.path, judge)
                    for chunk in iter_answers(generation.path, dataset, judge):
                        records.add(chunk)
                        if progress:
                            print(f"... {judge}: {records.writers['sides'].rows:,} source rows", flush=True)
                    records.commit()
                times[judge] = time.perf_counter() - started
            generation.publish()
        except BaseException:
            generation.discard()
            raise
        sweep_leftovers(folder)
    return times


# ---- `aee records` ------------------------------------------------------------------------------


def register(subparsers) -> None:
    """`aee records --dataset D`: write the pages' records into a set made before them."""
    p = subparsers.add_parser("records", help="add the dashboard pages' records (answer index, sides, audit clusters, values) "
                                              "to a dataset's results written before `aee run` wrote them")
    p.add_argument("--dataset", required=True)
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_records)


def cmd_records(args) -> int:
    started = time.perf_counter()
    times = write_records(args.dataset, progress=not args.no_progress)
    parts = ", ".join(f"{what} {seconds:.1f} s" for what, seconds in times.items())
    print(f"wrote the pages' records of {args.dataset} in {time.perf_counter() - started:.1f} s ({parts}); "
          "the dashboard reads them on its next view")
    return 0
