"""Parquet store: one declared schema per table, atomic writes, a run manifest, loaders.

Layout of one result set (a generation folder under `data/results/<dataset>/`, named by the
dataset's pointer; `pipeline.storage.result_sets` writes, switches and checks them):
    answers.parquet, sources.parquet            what was ingested (shared by all judges)
    <judge>/statements.parquet, labels.parquet, pairs.parquet, metrics.parquet, summary.parquet
    <judge>/manifest.json                       git SHA, config, judge and prompt ids, versions
    SET.json                                    every file of the set with its size and sha256
`table_path` resolves the pointer, so every reader reads the current set. Every write goes to a
temporary file in the same folder and is renamed into place, so a killed run leaves either the old
file or the new one, never half of one; a whole set changes at once through its pointer.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.errors import InputError
from pipeline.storage.faults import point
from pipeline.storage.paths import REPO_ROOT, results_dir
from pipeline.storage.result_sets import ResultSetError, current_set, is_legacy, set_problem

_int_list = pa.list_(pa.int32())

SCHEMAS: dict[str, pa.Schema] = {
    "answers": pa.schema([
        ("dataset", pa.string()), ("answer_id", pa.string()), ("engine", pa.string()),
        ("query", pa.string()), ("query_type", pa.string()), ("field", pa.string()),
        ("text", pa.string()), ("n_sources", pa.int32()), ("meta", pa.string()),
        ("gold", pa.string()),  # JSON list of the reference answers (records.GoldAnswer); "" when none
    ]),
    "sources": pa.schema([
        ("dataset", pa.string()), ("answer_id", pa.string()), ("source_index", pa.int32()),
        ("url", pa.string()), ("title", pa.string()), ("text", pa.string()), ("fetch_ok", pa.bool_()),
        ("source_type", pa.string()), ("injection_flags", pa.string()), ("duplicate_of", pa.int32()),
        ("text_origin", pa.string()),
    ]),
    "statements": pa.schema([
        ("dataset", pa.string()), ("judge", pa.string()), ("answer_id", pa.string()),
        ("statement_index", pa.int32()), ("text", pa.string()), ("start", pa.int32()), ("end", pa.int32()),
        ("citations", _int_list), ("dangling", _int_list), ("relevant", pa.bool_()), ("stance", pa.string()),
    ]),
    "labels": pa.schema([
        ("dataset", pa.string()), ("answer_id", pa.string()), ("kind", pa.string()),
        ("statement_index", pa.int32()), ("source_index", pa.int32()), ("label", pa.string()),
        ("score", pa.float64()), ("judge", pa.string()), ("prompt_version", pa.string()),
        ("raw", pa.string()), ("evidence", pa.string()), ("error", pa.string()),
        ("source_set", _int_list),  # sources judged together (set support); null on a single-source verdict
    ]),
    "pairs": pa.schema([
        ("dataset", pa.string()), ("judge", pa.string()), ("answer_id", pa.string()),
        ("statement_index", pa.int32()), ("source_index", pa.int32()), ("cited", pa.bool_()),
        ("support", pa.string()), ("score", pa.float64()), ("injection_flagged", pa.bool_()),
        ("support_reason", pa.string()),  # why support is "unknown" ("not checked: no text"); "" otherwise
    ]),
    "metrics": pa.schema([
        ("dataset", pa.string()), ("judge", pa.string()), ("mode", pa.string()), ("necessity", pa.string()),
        ("answer_id", pa.string()), ("engine", pa.string()), ("query_type", pa.string()), ("field", pa.string()),
        ("metric", pa.string()), ("metric_version", pa.int32()), ("value", pa.float64()), ("n", pa.int32()),
        ("reason", pa.string()),
        # units the metric needed, how many no label decided, and the commonest cause (MetricResult)
        ("units", pa.int32()), ("unknown", pa.int32()), ("unknown_why", pa.string()),
    ]),
    "summary": pa.schema([
        ("dataset", pa.string()), ("judge", pa.string()), ("mode", pa.string()), ("necessity", pa.string()),
        ("engine", pa.string()), ("query_type", pa.string()), ("metric", pa.string()), ("value", pa.float64()),
        ("ci_low", pa.float64()), ("ci_high", pa.float64()), ("n_answers", pa.int32()),
        ("rating", pa.string()), ("symbol", pa.string()),
        # share of the units the metric needed that a label decided, over the cell's answers (null
        # when the metric tracks none), and why the cell is null when too few were ("" otherwise)
        ("judged_share", pa.float64()), ("reason", pa.string()),
        # the same cell pooled over the metric's units (sum of numerators / sum of denominators, the
        # interval resampling answers) and how many units that pooled (`aggregate.with_aggregation`)
        ("pooled_value", pa.float64()), ("pooled_ci_low", pa.float64()), ("pooled_ci_high", pa.float64()),
        ("pooled_units", pa.int64()),
    ]),
}

JUDGE_TABLES = ("statements", "labels", "pairs", "metrics", "summary")


def judge_dirname(judge: str) -> str:
    """A folder name for a judge id ("openai:gpt-4o" -> "openai_gpt-4o")."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", judge).strip("._") or "judge"


# Folders of the results root that hold something else than a dataset (pipeline.judges.measure:
# agreement tables and the behavioural check results): a dataset of that name would share the folder
# and be listed among the datasets. Compared without case (a macOS disk does not tell them apart).
RESERVED_NAMES = frozenset({"agreement", "judge_checks"})


def dataset_dir(dataset: str, root: Path | None = None) -> Path:
    """Folder of one dataset's results; the name is checked so it cannot escape the root nor take
    a folder the toolkit keeps for itself."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", dataset):
        raise InputError(f"dataset name {dataset!r} must be letters, digits, '.', '_' or '-' (max 64)")
    if dataset.lower() in RESERVED_NAMES:
        raise InputError(f"dataset name {dataset!r} is the name of a folder the toolkit keeps its "
                         f"{'judge agreement tables' if dataset.lower() == 'agreement' else 'judge check results'} in; "
                         "choose another name")
    return (root or results_dir()) / dataset


def result_set(dataset: str, root: Path | None = None) -> Path:
    """The folder of the dataset's current result set (resolve it once to read several tables of
    one set: a run that finishes in between switches the pointer, not the folder)."""
    return current_set(dataset_dir(dataset, root))


def table_path(dataset: str, table: str, judge: str | None = None, root: Path | None = None, *,
               base: Path | None = None) -> Path:
    """Where a table of a dataset (and judge, for judge tables) lives: in the dataset's current
    result set, or in `base` (a set resolved before, or a generation being written)."""
    if base is None:
        base = result_set(dataset, root)
    if table in JUDGE_TABLES:
        if judge is None:
            raise ValueError(f"table {table!r} belongs to a judge")
        base = base / judge_dirname(judge)
    return base / f"{table}.parquet"


def to_table(table: str, rows: pd.DataFrame | Iterable[dict]) -> pa.Table:
    """Conform rows to the declared schema (missing columns become null, extra ones are an error)."""
    schema = SCHEMAS[table]
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    extra = set(frame.columns) - set(schema.names)
    if extra:
        raise ValueError(f"columns not in the {table} schema: {sorted(extra)}")
    for name in schema.names:
        if name not in frame.columns:
            frame[name] = None
    frame = frame[schema.names]
    return pa.Table.from_pandas(frame, schema=schema, preserve_index=False)


def _replace_atomically(path: Path, write: Callable[[int, str], None]) -> Path:
    """Have `write(fd, temporary path)` fill a temporary file beside `path`, then rename it over
    `path` (readers see the old file or the new one); the temporary never outlives a failure. The
    named fault points are where the crash tests kill a run."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        write(fd, tmp)
        point(f"write:{path.name}:temporary")
        os.replace(tmp, path)
        point(f"write:{path.name}:renamed")
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def write_atomic(path: Path, table: pa.Table, row_group_size: int | None = None) -> Path:
    """Write a Parquet file via a temporary file and a rename in the same folder (`row_group_size`:
    rows per row group, for files read a few row groups at a time; default pyarrow's)."""
    def write(fd: int, tmp: str) -> None:
        os.close(fd)
        pq.write_table(table, tmp, compression="zstd", row_group_size=row_group_size)

    return _replace_atomically(path, write)


def write_table(table: str, rows: pd.DataFrame | Iterable[dict], path: Path) -> Path:
    """Validate rows against a table's schema and write them atomically."""
    return write_atomic(path, to_table(table, rows))


class TableWriter:
    """Stream rows of one table into a Parquet file, chunk by chunk, and put it in place at the end.

    Rows go to a temporary file beside the target, so a run holds only a bounded buffer of rows in
    memory whatever the corpus size, and the target is only replaced by `commit()`: a run that
    fails or is killed leaves the previous file untouched. Appended rows are gathered into row
    groups of about ROW_GROUP_ROWS rows (one row group per small chunk would make the file's footer,
    which the writer keeps in memory, grow with the corpus).
    """

    ROW_GROUP_ROWS = 5_000

    def __init__(self, table: str, path: Path) -> None:
        self.table, self.path = table, path
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        self.tmp = Path(tmp)
        self.rows = 0
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._writer: pq.ParquetWriter | None = pq.ParquetWriter(self.tmp, SCHEMAS[table], compression="zstd")

    def append(self, rows: pd.DataFrame | Iterable[dict] | pa.Table) -> None:
        """Validate rows against the table's schema and buffer them (written in row groups)."""
        batch = _conform(rows, SCHEMAS[self.table]) if isinstance(rows, pa.Table) else to_table(self.table, rows)
        if batch.num_rows:
            self._pending.append(batch.cast(SCHEMAS[self.table]))
            self._pending_rows += batch.num_rows
            self.rows += batch.num_rows
            if self._pending_rows >= self.ROW_GROUP_ROWS:
                self._flush()

    def _flush(self) -> None:
        if self._pending and self._writer is not None:
            self._writer.write_table(pa.concat_tables(self._pending), row_group_size=max(self._pending_rows, 1))
            point(f"table:{self.path.name}:row-group")
        self._pending, self._pending_rows = [], 0

    def commit(self) -> Path:
        """Write what is buffered, close the file and rename it over the target."""
        self._flush()
        point(f"table:{self.path.name}:flushed")
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        point(f"table:{self.path.name}:closed")
        os.replace(self.tmp, self.path)
        point(f"table:{self.path.name}:renamed")
        return self.path

    def abort(self) -> None:
        """Drop what was written; the target keeps its previous content."""
        self._pending, self._pending_rows = [], 0
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        self.tmp.unlink(missing_ok=True)


def _conform(batch: pa.Table, schema: pa.Schema) -> pa.Table:
    """A table read from an older results file, given the columns added to the schema since
    (as nulls), so merging old rows with new ones never fails on a schema change."""
    if batch.schema.names == schema.names:
        return batch
    columns = [batch.column(f.name) if f.name in batch.schema.names else pa.nulls(batch.num_rows, f.type)
               for f in schema]
    return pa.Table.from_arrays(columns, names=schema.names).cast(schema)


def iter_table_batches(path: Path, batch_rows: int = 5_000) -> Iterator[pa.Table]:
    """A Parquet file's rows in bounded batches (nothing when the file is missing)."""
    if not path.exists():
        return
    for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_rows):
        yield pa.Table.from_batches([batch])


def write_json_atomic(path: Path, payload: Any) -> Path:
    """Write JSON via a temporary file and a rename."""
    def write(fd: int, tmp: str) -> None:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, indent=2, sort_keys=True, default=str)

    return _replace_atomically(path, write)


def read_table(path: Path, table: str | None = None) -> pd.DataFrame:
    """Read a Parquet table (an empty frame with the declared columns when the file is missing)."""
    if not path.exists():
        schema = SCHEMAS.get(table or path.stem)
        return schema.empty_table().to_pandas() if schema is not None else pd.DataFrame()
    return pq.read_table(path).to_pandas()


def read_arrow(path: Path) -> pa.Table:
    """A whole Parquet table as Arrow (its exact values and types, for comparisons)."""
    return pq.read_table(path)


def git_sha() -> str:
    """The project's current commit, or "unknown" outside a git checkout."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def package_versions(names: Iterable[str] = ("pandas", "pyarrow", "numpy", "scipy", "networkx", "streamlit", "openai")) -> dict[str, str]:
    """Installed versions of the packages that shape results."""
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def manifest(config: dict, judge: str, prompt_versions: Iterable[str]) -> dict:
    """Provenance for one run (never holds secrets: config is built from non-secret fields only)."""
    return {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "git_sha": git_sha(),
        "config": config,
        "judge": judge,
        "prompt_versions": sorted(set(prompt_versions)),
        "packages": package_versions(),
    }


def _result_folders(root: Path | None) -> list[Path]:
    root = root or results_dir()
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
                  and p.name.lower() not in RESERVED_NAMES and ((p / "CURRENT").exists() or is_legacy(p)))


def list_datasets(root: Path | None = None) -> list[str]:
    """Datasets with results on disk that can be shown (whole sets; see `broken_datasets`)."""
    return [p.name for p in _result_folders(root) if set_problem(p) is None]


def broken_datasets(root: Path | None = None) -> dict[str, str]:
    """Datasets whose results must not be shown, with the reason (a set that does not match the
    list its run wrote)."""
    out = {}
    for folder in _result_folders(root):
        problem = set_problem(folder)
        if problem is not None:
            out[folder.name] = problem
    return out


def check_results(dataset: str, root: Path | None = None) -> None:
    """ResultSetError (one line, exit code 2) when the dataset's results are not a whole set."""
    problem = set_problem(dataset_dir(dataset, root))
    if problem is not None:
        raise ResultSetError(f"the results of dataset {dataset!r} are not shown: {problem}; "
                             f"run `aee run --dataset {dataset}` again to rebuild them")


def results_unverified(dataset: str, root: Path | None = None) -> bool:
    """True for results written before result sets were listed with checksums (cannot be checked)."""
    return is_legacy(dataset_dir(dataset, root))


def _manifests(dataset: str, root: Path | None = None) -> Iterator[tuple[Path, dict]]:
    """(judge folder, manifest) for each readable manifest of a dataset's current results."""
    base = result_set(dataset, root)
    for manifest_path in sorted(base.glob("*/manifest.json")) if base.is_dir() else []:
        try:
            yield manifest_path.parent, json.loads(manifest_path.read_text())
        except (OSError, ValueError):
            continue


def built_prompt_versions(dataset: str, judge: str, root: Path | None = None) -> set[str]:
    """Prompt versions recorded in the manifests of a dataset's results for this judge id (or ids
    that start with it, e.g. "openai:gpt-4o" for "openai")."""
    return {str(v) for _, data in _manifests(dataset, root) if str(data.get("judge", "")).startswith(judge)
            for v in data.get("prompt_versions") or ()}


def list_judges(dataset: str, root: Path | None = None) -> list[str]:
    """Judge folders with a summary for a dataset (read back from the manifests' judge ids); none
    when the dataset's results are not a whole set."""
    if set_problem(dataset_dir(dataset, root)) is not None:
        return []
    return [data["judge"] for folder, data in _manifests(dataset, root)
            if (folder / "summary.parquet").exists() and "judge" in data]
