"""Draw, register and write out an audit sample (`aee audit sample`).

Design (docs/audit.md): a stratified random sample of clusters without replacement. Strata are
engine x what the judge said (`pipeline.audit.population`). Each stratum gets at least
MIN_PER_STRATUM clusters (or all of them), so rare labels are present and each stratum has a
variance; the remaining clusters go to strata in proportion to their size (largest remainder).
Within a stratum every cluster has the same chance n_h / N_h of being drawn, so its sampling weight
is N_h / n_h, recorded on every item: weighted by it, the sample stands for the whole population.
The draw is a pure function of the frame, the number of clusters and the seed.

A registered sample lives in `<results>/_audit/samples/<sample_id>/`: `items.parquet` (every drawn
item with its display fields, judge labels at draw time, stratum and weight), `frame.parquet` (every
cluster of the population with its stratum: the N_h of the weights, and what the estimates
extrapolate to) and `sample.json` (how it was drawn), written last, each file atomically, so a
sample is either complete or absent.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa

from pipeline.audit import SCOPES, UNITS, audit_dir
from pipeline.audit.population import Frame, build_frame, item_asks
from pipeline.errors import InputError
from pipeline.judges.carried import AUDIT_JUDGE
from pipeline.records import AnnotatedAnswer
from pipeline.storage.store import judge_dirname, list_judges, write_atomic, write_json_atomic
from pipeline.storage.tables import load_annotated

MIN_PER_STRATUM = 2
MAX_ITEMS = 20_000
SAMPLE_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
SAMPLE_FORMAT = 1


@dataclass(frozen=True)
class Sample:
    """A drawn sample: how it was drawn, the drawn items (in labelling order) and the frame."""

    meta: dict[str, Any]
    items: pd.DataFrame
    frame: pd.DataFrame

    @property
    def sample_id(self) -> str:
        return str(self.meta["sample_id"])

    @property
    def unit(self) -> str:
        return str(self.meta["unit"])


def allocate(sizes: Mapping[str, int], clusters: int, minimum: int = MIN_PER_STRATUM) -> dict[str, int]:
    """Clusters to draw per stratum: at least `minimum` (or the whole stratum when smaller), the
    rest in proportion to size by largest remainder, never more than a stratum holds. Every cluster
    when `clusters` reaches the population. InputError when `clusters` cannot give each stratum
    its minimum."""
    sizes = {h: int(n) for h, n in sizes.items() if n > 0}
    total = sum(sizes.values())
    if clusters >= total:
        return dict(sizes)
    floor = {h: min(n, minimum) for h, n in sizes.items()}
    if clusters < sum(floor.values()):
        raise InputError(f"a sample of {clusters} clusters cannot hold {minimum} of each of the {len(sizes)} strata "
                         f"(needs {sum(floor.values())})", field="--n")
    alloc = dict(floor)
    # largest remainder on the proportional targets, over the capacity each stratum has left
    targets = {h: clusters * n / total for h, n in sizes.items()}
    left = clusters - sum(alloc.values())
    while left > 0:
        open_strata = [h for h in sizes if alloc[h] < sizes[h]]
        gaps = {h: targets[h] - alloc[h] for h in open_strata}
        whole = {h: max(0, math.floor(g)) for h, g in gaps.items()}
        if sum(whole.values()) == 0:
            # hand out one by one, the largest gap (then the larger stratum, then the name) first
            for h in sorted(open_strata, key=lambda k: (-gaps[k], -sizes[k], k))[:left]:
                alloc[h] += 1
                left -= 1
            continue
        for h in sorted(open_strata, key=lambda k: (-gaps[k], k)):  # the furthest below its share first
            give = min(whole[h], sizes[h] - alloc[h], left)
            alloc[h] += give
            left -= give
    return alloc


def draw(frame: Frame, n_items: int, seed: int, *, dataset: str, judge: str, sample_id: str | None = None,
         minimum: int = MIN_PER_STRATUM, items_of: Callable[[list[str]], pd.DataFrame] | None = None) -> Sample:
    """Draw a stratified cluster sample of about `n_items` items (see the module doc). `items_of`:
    the items of the chosen clusters (their answer ids given), for a frame of clusters only
    (`draw_from_clusters`); by default the frame's own items."""
    if n_items < 1:
        raise InputError("must be at least 1", field="--n")
    if n_items > MAX_ITEMS:
        raise InputError(f"at most {MAX_ITEMS} items per sample", field="--n")
    clusters = frame.clusters
    if clusters.empty:
        raise InputError(f"dataset {dataset!r} under judge {judge!r} has nothing to audit as {frame.unit}s"
                         + (" (no relevant statement cites a listed source)" if frame.unit == "pair" else ""))
    mean_size = float(clusters["n_items"].mean())
    wanted = max(1, round(n_items / mean_size))
    sizes = clusters.groupby("stratum")["cluster_id"].count().to_dict()
    needed = sum(min(int(n), minimum) for n in sizes.values())
    if wanted < needed and wanted < len(clusters):
        kind = "statements" if frame.unit == "pair" and not frame.relevance else "answers"
        raise InputError(f"{n_items} items make about {wanted} {kind} (of {mean_size:.1f} items each on average), too few "
                         f"to hold {minimum} {kind} from each of the {len(sizes)} strata; ask for at least "
                         f"{math.ceil(needed * mean_size)} items", field="--n")
    alloc = allocate(sizes, wanted, minimum)
    rng = np.random.default_rng(seed)
    chosen: list[str] = []
    for stratum in sorted(alloc):
        ids = sorted(clusters.loc[clusters["stratum"] == stratum, "cluster_id"])
        picks = rng.choice(len(ids), size=alloc[stratum], replace=False)
        chosen.extend(ids[i] for i in sorted(picks))
    order = [chosen[i] for i in rng.permutation(len(chosen))]
    rank = {cid: i for i, cid in enumerate(order)}
    design = clusters[["cluster_id", "stratum"]].copy()
    design["stratum_size"] = design["stratum"].map(sizes).astype(int)
    design["stratum_drawn"] = design["stratum"].map(alloc).astype(int)
    pool = frame.items if items_of is None else items_of(sorted(set(clusters.loc[clusters["cluster_id"].isin(rank), "answer_id"])))
    items = pool[pool["cluster_id"].isin(rank)].merge(design, on="cluster_id", how="left")
    items["weight"] = items["stratum_size"] / items["stratum_drawn"]
    items["cluster_order"] = items["cluster_id"].map(rank)
    items = items.sort_values(["cluster_order", "position"], kind="mergesort").reset_index(drop=True)
    items.insert(0, "order", np.arange(len(items), dtype=np.int64))
    name = sample_id or default_sample_id(dataset, judge, frame.unit, frame.scope, n_items, seed, frame.relevance)
    check_sample_id(name)
    items.insert(0, "sample_id", name)
    strata = [{"stratum": h, "clusters": int(sizes[h]), "drawn": int(alloc.get(h, 0)),
               "items": int(clusters.loc[clusters["stratum"] == h, "n_items"].sum()),
               "items_drawn": int((items["stratum"] == h).sum())} for h in sorted(sizes)]
    meta = {
        "format": SAMPLE_FORMAT, "sample_id": name, "dataset": dataset, "judge": judge, "unit": frame.unit,
        "scope": frame.scope, "relevance": bool(frame.relevance), "seed": int(seed), "n_requested": int(n_items), "n_items": int(len(items)),
        "n_clusters": int(len(order)), "population_clusters": int(len(clusters)),
        "population_items": int(clusters["n_items"].sum()), "min_per_stratum": int(minimum),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"), "strata": strata,
    }
    return Sample(meta, items, clusters.reset_index(drop=True))


def default_sample_id(dataset: str, judge: str, unit: str, scope: str, n_items: int, seed: int,
                      relevance: bool = False) -> str:
    """A readable id naming how the sample was drawn ("demo-offline-pair-n40-s7"; "-rel" when it asks
    relevance too)."""
    scope_part = ("-all" if unit == "pair" and scope == "all" else "") + ("-rel" if unit == "pair" and relevance else "")
    return f"{dataset}-{judge_dirname(judge)}-{unit}{scope_part}-n{n_items}-s{seed}"[:100]


def check_sample_id(sample_id: str) -> str:
    if not SAMPLE_ID_RE.fullmatch(sample_id or ""):
        raise InputError("a sample id is letters, digits, '.', '_' or '-' (at most 100, starting with a letter or digit)",
                         record=sample_id, field="--id")
    return sample_id


def draw_sample(dataset: str, judge: str, n_items: int, seed: int = 0, unit: str = "pair", scope: str = "cited",
                sample_id: str | None = None, root: Path | None = None, relevance: bool = False,
                clusters: pd.DataFrame | None = None,
                answers_of: Callable[[list[str]], Mapping[str, AnnotatedAnswer]] | None = None,
                from_records: bool = True) -> Sample:
    """Read a dataset's results under a judge and draw a sample from them: given the frame's
    recorded `clusters` and `answers_of`, or where the set has the pages' records (unless
    `from_records` is False), from the chosen answers only (`draw_from_clusters`: the same sample);
    otherwise from every annotated answer (at 140k answers that took gigabytes)."""
    if unit not in UNITS:
        raise InputError(f"must be one of {', '.join(UNITS)}", field="--unit")
    if scope not in SCOPES:
        raise InputError(f"must be one of {', '.join(SCOPES)}", field="--scope")
    if judge == AUDIT_JUDGE:
        raise InputError(f"{AUDIT_JUDGE} holds the audit's own labels (aee audit publish): draw the sample under the "
                         "judge you want checked", field="--judge")
    judges = list_judges(dataset, root)
    if judge not in judges:
        raise InputError(f"no results for judge {judge!r} on dataset {dataset!r}; have {', '.join(judges) or 'none'} "
                         f"(run `aee run --dataset {dataset} --judge {judge}` first)", field="--judge")
    if (clusters is None or answers_of is None) and from_records:
        found = recorded_frame(dataset, judge, unit, scope, relevance, root)
        if found is not None:
            clusters, answers_of = found
    if clusters is not None and answers_of is not None:
        return draw_from_clusters(dataset, judge, clusters, answers_of, n_items, seed, unit, scope, relevance, sample_id)
    answers = load_annotated(dataset, judge, root)
    frame = build_frame(dataset, answers, unit, scope, relevance and unit == "pair")
    return draw(frame, n_items, seed, dataset=dataset, judge=judge, sample_id=sample_id)


def recorded_frame(dataset: str, judge: str, unit: str, scope: str, relevance: bool, root: Path | None = None
                   ) -> tuple[pd.DataFrame, Callable[[list[str]], Mapping[str, AnnotatedAnswer]]] | None:
    """(the frame's clusters as `aee run` recorded them, a reader of the chosen answers' rows), or
    None for a set without those records."""
    import pyarrow.parquet as pq

    from pipeline.audit.population import variant_name
    from pipeline.storage import record_reads as page_records
    from pipeline.storage.store import result_set

    base = result_set(dataset, root)
    if page_records.missing(base, judge, ("answer_index", "answer_rows", "audit_clusters")):
        return None
    variant = variant_name(unit, scope, relevance and unit == "pair")
    clusters = pq.read_table(page_records.record_path(base, "audit_clusters", judge),
                             filters=[("variant", "=", variant)]).drop(["variant"]).to_pandas()
    index = pq.read_table(page_records.record_path(base, "answer_index")).to_pandas()
    rows = pq.read_table(page_records.record_path(base, "answer_rows", judge)).to_pandas()
    return clusters, lambda ids: page_records.read_answers(base, dataset, judge, index, rows, ids)


def draw_from_clusters(dataset: str, judge: str, clusters: pd.DataFrame,
                       answers_of: Callable[[list[str]], Mapping[str, AnnotatedAnswer]], n_items: int, seed: int,
                       unit: str, scope: str, relevance: bool, sample_id: str | None = None) -> Sample:
    """`draw_sample` from the frame's clusters as `aee run` recorded them (`pipeline.page_records`,
    the population's `CLUSTER_COLUMNS`) and the annotated answers of the chosen clusters only
    (`answers_of(ids)`): the same sample as drawing from every answer, since a cluster's items are
    built from its own answer."""
    from pipeline.audit.population import CLUSTER_COLUMNS

    relevance = relevance and unit == "pair"
    # in build_frame's order (answer by answer, sorted; within an answer as recorded), and built as
    # it builds them (from rows: the same column types whatever pandas makes of a Parquet read)
    ordered = clusters.sort_values("answer_id", kind="stable")[list(CLUSTER_COLUMNS)]
    rows = pd.DataFrame({c: ordered[c].tolist() for c in CLUSTER_COLUMNS})
    light = Frame(unit, scope if unit == "pair" else "all", rows, pd.DataFrame(columns=["cluster_id"]), relevance)

    def items_of(ids: list[str]) -> pd.DataFrame:
        return build_frame(dataset, answers_of(ids), unit, scope, relevance).items

    return draw(light, n_items, seed, dataset=dataset, judge=judge, sample_id=sample_id, items_of=items_of)


# ---- the registry of samples ---------------------------------------------------------------------


def samples_dir(root: Path | None = None) -> Path:
    return audit_dir(root) / "samples"


def register(sample: Sample, root: Path | None = None) -> tuple[Path, bool]:
    """Save a sample under the results folder; (folder, True when newly written). Registering the
    same draw again is a no-op; another draw under an existing id is refused (labels already given
    to it would lose their meaning)."""
    folder = samples_dir(root) / check_sample_id(sample.sample_id)
    if (folder / "sample.json").is_file():
        existing = load_sample(sample.sample_id, root)
        if list(existing.items["item_id"]) == list(sample.items["item_id"]):
            return folder, False
        raise InputError("a sample with this id exists and holds other items (the results changed since it was "
                         "drawn?); choose another --id or --seed", record=sample.sample_id)
    write_atomic(folder / "items.parquet", pa.Table.from_pandas(sample.items, preserve_index=False))
    write_atomic(folder / "frame.parquet", pa.Table.from_pandas(sample.frame, preserve_index=False))
    write_json_atomic(folder / "sample.json", sample.meta)
    return folder, True


def load_sample(sample_id: str, root: Path | None = None) -> Sample:
    """A registered sample; InputError when there is none with this id."""
    folder = samples_dir(root) / check_sample_id(sample_id)
    try:
        meta = json.loads((folder / "sample.json").read_text(encoding="utf-8"))
        items = pd.read_parquet(folder / "items.parquet")
        frame = pd.read_parquet(folder / "frame.parquet")
    except (OSError, ValueError) as exc:
        raise InputError(f"no registered sample with this id ({type(exc).__name__})", record=sample_id) from exc
    return Sample(meta, items, frame)


def list_samples(dataset: str | None = None, root: Path | None = None) -> list[dict[str, Any]]:
    """How each registered sample was drawn (its sample.json), newest first; unreadable ones skipped."""
    base = samples_dir(root)
    out = []
    for path in sorted(base.glob("*/sample.json")) if base.is_dir() else []:
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(meta, dict) and (dataset is None or meta.get("dataset") == dataset):
            out.append(meta)
    return sorted(out, key=lambda m: (str(m.get("created", "")), str(m.get("sample_id", ""))), reverse=True)


# ---- the annotation file -------------------------------------------------------------------------

ID_COLUMNS = ("sample_id", "item_id", "answer_id", "engine", "statement_index")
PAIR_FILE_COLUMNS = (*ID_COLUMNS, "source_index", "query", "statement", "source_title", "source_url", "passage",
                     "source_text", "support", "note")
# a pair sample that asks relevance too: a relevance row (the statement in its answer, no source)
# before each statement's support rows; the column a row does not ask holds "n/a"
RELEVANCE_PAIR_FILE_COLUMNS = (*ID_COLUMNS, "source_index", "query", "answer", "statement", "source_title", "source_url",
                               "passage", "source_text", "relevant", "support", "note")
NOT_ASKED = "n/a"
STATEMENT_FILE_COLUMNS = (*ID_COLUMNS, "query", "query_type", "answer", "statement", "relevant", "stance",
                          "confidence", "note")
DESIGN_COLUMNS = ("sample_id", "item_id", "cluster_id", "stratum", "stratum_size", "stratum_drawn", "weight")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: object) -> object:
    """A text cell a spreadsheet will not run as a formula (answers and sources are untrusted): an
    apostrophe before a leading =, +, -, @, tab or carriage return. Import reads ids and labels only."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def annotation_rows(sample: Sample) -> list[dict[str, Any]]:
    """One row per item with empty label columns. No judge label, stratum or weight: a person
    labelling must not see what the judge said. In a sample asking relevance too, a relevance row
    shows the answer and no source and has support "n/a"; a support row has relevant "n/a"."""
    rows = []
    for r in sample.items.to_dict("records"):
        base = {"sample_id": r["sample_id"], "item_id": r["item_id"], "answer_id": r["answer_id"], "engine": r["engine"],
                "statement_index": int(r["statement_index"]), "query": r["query"], "statement": r["statement"], "note": ""}
        if sample.unit == "pair" and asks_relevance(sample) and item_asks(r) == "relevant":
            base |= {"source_index": "", "answer": r["answer_text"], "source_title": "", "source_url": "", "passage": "",
                     "source_text": "", "relevant": "", "support": NOT_ASKED}
        elif sample.unit == "pair":
            s, e = int(r["passage_start"]), int(r["passage_end"])
            base |= {"source_index": int(r["source_index"]), "source_title": r["source_title"], "source_url": r["source_url"],
                     "passage": r["source_text"][s:e] if 0 <= s < e else "", "source_text": r["source_text"], "support": ""}
            if asks_relevance(sample):
                base |= {"answer": "", "relevant": NOT_ASKED}
        else:
            base |= {"query_type": r["query_type"], "answer": r["answer_text"], "relevant": "",
                     "stance": "" if r["query_type"] == "debate" else "n/a", "confidence": "" if r["query_type"] == "debate" else "n/a"}
        rows.append(base)
    return rows


def asks_relevance(sample: Sample) -> bool:
    """True for a pair sample whose items ask each statement's relevance as well as its support."""
    return sample.unit == "pair" and bool(sample.meta.get("relevance"))


def file_columns(sample: Sample) -> tuple[str, ...]:
    """The columns of a sample's file for labelling by hand."""
    if sample.unit != "pair":
        return STATEMENT_FILE_COLUMNS
    return RELEVANCE_PAIR_FILE_COLUMNS if asks_relevance(sample) else PAIR_FILE_COLUMNS


def annotation_text(sample: Sample, kind: str = "csv") -> str:
    """The sample for labelling by hand, as CSV (formula-safe cells) or JSON lines."""
    rows = annotation_rows(sample)
    columns = file_columns(sample)
    if kind == "csv":
        return _csv_text([{k: spreadsheet_safe(r.get(k, "")) for k in columns} for r in rows], columns)
    return "".join(json.dumps({k: r.get(k, "") for k in columns}, ensure_ascii=False) + "\n" for r in rows)


def design_text(sample: Sample) -> str:
    """Each item's cluster, stratum and sampling weight, as CSV (for the researcher, not the annotator)."""
    return _csv_text(sample.items[list(DESIGN_COLUMNS)].to_dict("records"), DESIGN_COLUMNS)


def write_annotation_file(sample: Sample, path: Path) -> Path:
    """The sample as CSV (.csv) or JSON lines (.jsonl) for labelling by hand, plus its design file
    beside it (`design_path`) with each item's stratum and sampling weight."""
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".jsonl"):
        raise InputError("the output file must end in .csv or .jsonl", field="--out")
    _write_text_atomic(path, annotation_text(sample, "csv" if suffix == ".csv" else "jsonl"))
    _write_text_atomic(design_path(path), design_text(sample))
    return path


def design_path(path: Path) -> Path:
    """The design file beside an annotation file: `s.design.csv` for `s.csv`, `s.jsonl.design.csv`
    for `s.jsonl`, so a sample written both ways (or two samples under one stem) never shares one
    design file and the second never replaces the first's weights."""
    if path.suffix.lower() == ".csv":
        return path.with_name(path.stem + ".design.csv")
    return path.with_name(path.name + ".design.csv")


def _csv_text(rows: list[dict], columns: tuple[str, ...]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def _write_text_atomic(path: Path, text: str) -> None:
    import os
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
