"""The label-free half of the corrected scorecard, kept beside the result set (issue 43).

A corrected value needs, for every answer of the audited population, the judge's prediction of each
of its clusters and the constants the metric adds (`pipeline.audit.ppi`); only the drawn answers
need people's labels. The first half does not depend on any label nor on which clusters were drawn,
so it is computed once per result set and sample design (a metric, pair or answer clusters, the
sources in scope) by the same per-answer functions the estimate uses (`ppi.pair_piece`,
`ppi.answer_piece`, `ppi_relevance.relevance_piece`, given no drawn part and no people), streaming
the answers through the pages' records (bounded memory), and written as Parquet into the cache
folder (`AEE_CACHE_DIR`), under the digest of the set's list of files: a result set itself holds
exactly what its run wrote (`result_sets.set_problem`), and a derived file must never make it look
tampered with. Every later corrected value, after each new label, reads those files and
rebuilds only the drawn answers from their rows: at 140k answers that is a few hundred answers
instead of all of them.

A set written before the pages' records has no row locators: `open_population` returns None and the
scorecard reads every answer as before. A new `aee run` writes a new set with a new list of files,
so a population is never read for results it was not computed from; `VERSION` is in the file names, so a change
to what a piece holds is never read from an older file.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.audit.population import pair_cluster_ids
from pipeline.audit.ppi_units import Design, UnitValues, _finish
from pipeline.audit.sample import Sample
from pipeline.records import AnnotatedAnswer
from pipeline.storage.store import judge_dirname, write_atomic, write_json_atomic

VERSION = "v1"
FOLDER = "ppi_population"
PARTS = ("rows", "consts", "judged")
CONST_COLUMNS = ["answer_id", "engine", "query_type", "judge_const", "human_const"]
JUDGED_COLUMNS = ["answer_id", "engine", "query_type", "metric", "value", "units", "unknown", "unknown_why"]


def design_of(metric: str, sample: Sample) -> Design:
    """The design a sample's units of this metric are computed under."""
    if sample.unit != "pair":
        return ("answer", metric, "")
    return ("relevance" if sample.meta.get("relevance") else "pair", metric, str(sample.meta.get("scope", "cited")))


def designs_for(samples: Iterable[Sample]) -> list[Design]:
    """Every design the corrected scorecard may compute from these samples (one pass builds them all)."""
    from pipeline.audit.ppi import PPI_METRICS

    out: list[Design] = []
    for s in samples:
        out += [design_of(m, s) for m, unit in PPI_METRICS.items() if unit == s.unit]
        if s.unit == "pair" and s.meta.get("relevance"):  # relevant statements from its relevance items
            out.append(("answer", "relevant_statements", ""))
    return list(dict.fromkeys(out))


def _file(folder: Path, design: Design, part: str) -> Path:
    kind, metric, scope = design
    return folder / f"{VERSION}.{kind}.{metric}.{scope or 'answers'}.{part}.parquet"


def pieces_of(design: Design, a: AnnotatedAnswer) -> tuple[list[dict], list[dict], list[dict]] | None:
    """One answer's label-free part under a design (None: the answer has no cluster of it), each row
    tagged with its answer."""
    from pipeline.audit.ppi import answer_piece, pair_piece
    from pipeline.audit.ppi_relevance import relevance_piece

    kind, metric, scope = design
    aid = a.answer.answer_id
    if kind == "pair":
        cids = sorted(pair_cluster_ids({aid: a}, scope), key=lambda c: int(c.rsplit("#s", 1)[1]))
        piece = pair_piece(metric, a, cids, scope, {}, (), soft=True)
        if isinstance(piece, str):  # cannot happen for clusters read off the answer itself
            raise ValueError(piece)
    elif kind == "relevance":
        if aid not in pair_cluster_ids({aid: a}, scope, relevance=True):
            return None
        piece = relevance_piece(metric, a, aid, None, (), scope)
    else:
        if not a.statements:  # the statement frame's clusters are the answers with a statement
            return None
        piece = answer_piece(metric, a, aid, None, ())
    return [r | {"answer_id": aid} for r in piece.rows], piece.consts, piece.judged


def build(designs: Sequence[Design], batches: Iterable[Sequence[AnnotatedAnswer]]) -> dict[Design, dict[str, pd.DataFrame]]:
    """Every answer's label-free part of each design, in one pass over the answers."""
    got: dict[Design, dict[str, list[dict]]] = {d: {p: [] for p in PARTS} for d in designs}
    for batch in batches:
        for a in batch:
            for d in designs:
                found = pieces_of(d, a)
                if found is not None:
                    for part, rows in zip(PARTS, found):
                        got[d][part] += rows
    out: dict[Design, dict[str, pd.DataFrame]] = {}
    for d, parts in got.items():
        out[d] = {"rows": pd.DataFrame(parts["rows"]), "consts": pd.DataFrame(parts["consts"], columns=CONST_COLUMNS),
                  "judged": pd.DataFrame(parts["judged"], columns=JUDGED_COLUMNS)}
    return out


@dataclass
class StoredPopulation:
    """The label-free parts of one result set x judge, read (or built) design by design."""

    base: Path
    dataset: str
    judge: str
    digest: str  # of the set's list of files (SET.json): which results the parts belong to
    ids: frozenset[str]
    cited_only: bool
    query_types: frozenset[str]
    parts: dict[Design, dict[str, pd.DataFrame]] = field(default_factory=dict)
    built: list[Design] = field(default_factory=list)  # the designs this process had to compute

    @property
    def folder(self) -> Path:
        from pipeline.storage.paths import cache_dir

        return cache_dir() / FOLDER / f"{judge_dirname(self.dataset)}-{self.digest}" / judge_dirname(self.judge)

    def prepare(self, designs: Iterable[Design]) -> None:
        """Read each design's parts, computing (and writing) those not written yet in one pass."""
        todo = []
        for d in dict.fromkeys(designs):
            if d in self.parts:
                continue
            found = _read(self.folder, d)
            if found is None:
                todo.append(d)
            else:
                self.parts[d] = found
        if not todo:
            return
        from pipeline.storage.record_reads import iter_answers

        fresh = build(todo, iter_answers(self.base, self.dataset, self.judge))
        for d, parts in fresh.items():
            _write(self.folder, d, parts)
            self.parts[d] = parts
        self.built += todo

    def part(self, design: Design) -> dict[str, pd.DataFrame]:
        self.prepare([design])
        return self.parts[design]

    def clusters(self, design: Design) -> set[str]:
        rows = self.part(design)["rows"]
        return set(rows["cluster_id"]) if not rows.empty else set()

    def out_of_date(self, design: Design, frame: pd.DataFrame, what: str) -> str:
        """`ppi_units.out_of_date` of a sample's frame against this population, the same reasons in
        the same words. A frame holds every cited statement of the set (561,600 at 140k answers):
        compared as Arrow arrays with hash lookups (0.8 s), where Python sets took 1.3 s and pandas'
        `isin` on Arrow strings eight; the verdict is then kept under the digest of the frame's ids
        (read in 0.05 s): it changes only with the frame or the population."""
        key = f"{'.'.join(design)}.{_frame_digest(frame)}"
        with _LOCK:
            if (str(self.folder), key) in _CHECKED:
                return _CHECKED[(str(self.folder), key)]
        kept = self.folder / CHECKED / f"{VERSION}.{key}.json"
        try:  # the same frame against the same population: the verdict is kept beside it
            said = str(json.loads(kept.read_text(encoding="utf-8"))["verdict"])
        except (OSError, ValueError, KeyError, TypeError):
            said = self._compare(design, frame, what)
            try:
                write_json_atomic(kept, {"verdict": said})
            except OSError:  # a cache folder that cannot be written: compared again next time
                pass
        with _LOCK:
            _CHECKED[(str(self.folder), key)] = said
        return said

    def _compare(self, design: Design, frame: pd.DataFrame, what: str) -> str:
        import pyarrow.compute as pc

        from pipeline.audit.ppi_units import answers_gone, clusters_changed

        ids = pa.array(list(self.ids), pa.string())
        answers = _strings(frame["answer_id"])
        if len(answers) and not pc.all(pc.is_in(answers, value_set=ids)).as_py():
            answers = pc.unique(answers)
            return answers_gone(sorted(answers.filter(pc.invert(pc.is_in(answers, value_set=ids))).to_pylist()))
        rows = self.part(design)["rows"]
        have = _strings(rows["cluster_id"]) if not rows.empty else pa.array([], pa.string())
        mine = _strings(frame["cluster_id"])
        # the usual case in one lookup: as many clusters, none twice, each of them in the population
        if len(mine) == len(have) and (not len(mine) or (pc.count_distinct(mine).as_py() == len(mine)
                                                         and pc.all(pc.is_in(mine, value_set=have)).as_py())):
            return ""
        mine, have = pc.unique(mine), pc.unique(have)
        changed = (len(mine) - pc.sum(pc.is_in(mine, value_set=have)).as_py() if len(mine) else 0) + \
                  (len(have) - pc.sum(pc.is_in(have, value_set=mine)).as_py() if len(have) else 0)
        return clusters_changed(changed, what) if changed else ""

    def has_debate(self, query_type: str = "all") -> bool:
        return query_type in ("all", "debate") and "debate" in self.query_types

    def merged(self, design: Design, sample: Sample, answers: Mapping[str, AnnotatedAnswer], rows: list[dict],
               consts: list[dict], judged: list[dict]) -> UnitValues:
        """The unit values of a sample: every answer's stored part, except the answers given, whose
        parts (`rows`, `consts`, `judged`, computed with the people's labels) replace theirs."""
        from dataclasses import replace

        from pipeline.audit.ppi_relevance import finish_relevance

        kind = design[0]
        stored = self.part(design)
        fresh = set(answers)
        frame_ids = None if kind == "pair" else set(sample.frame["answer_id"])

        def keep(frame: pd.DataFrame) -> pd.DataFrame:
            if frame.empty:
                return frame
            mask = ~frame["answer_id"].isin(fresh)
            if frame_ids is not None:
                mask &= frame["answer_id"].isin(frame_ids)
            return frame[mask]

        all_rows = pd.concat([keep(stored["rows"]), pd.DataFrame(rows)], ignore_index=True)
        all_consts = pd.concat([keep(stored["consts"]), pd.DataFrame(consts, columns=CONST_COLUMNS)], ignore_index=True)
        all_judged = pd.concat([keep(stored["judged"]), pd.DataFrame(judged, columns=JUDGED_COLUMNS)], ignore_index=True)
        if kind == "relevance":
            return finish_relevance(sample, all_rows, all_consts, all_judged)
        out = _finish(sample, all_rows, all_consts)
        return replace(out, judged=all_judged) if kind == "pair" else out


# ---- files -------------------------------------------------------------------------------------

_LOCK = threading.Lock()
_READ: dict[tuple[str, str, int], dict[str, pd.DataFrame]] = {}  # (folder, design, mtime) -> parts
CHECKED = "checked"  # a sample frame's verdict against the population (`StoredPopulation.out_of_date`)
_CHECKED: dict[tuple[str, str], str] = {}


def _frame_digest(frame: pd.DataFrame) -> str:
    """A digest of a frame's answer and cluster ids, from their Arrow buffers (a few hundredths of a
    second for 561,600 clusters; hashing the strings one by one took 0.7 s). Two frames with the same
    digest hold the same ids in the same order; the same ids stored otherwise only miss the cache."""
    out = hashlib.sha256()
    for column in ("answer_id", "cluster_id"):
        array = _strings(frame[column])
        for chunk in (array.chunks if isinstance(array, pa.ChunkedArray) else [array]):
            out.update(f"{column}:{chunk.offset}:{len(chunk)}:{chunk.null_count};".encode())
            for buf in chunk.buffers():
                out.update(b"-" if buf is None else memoryview(buf))
    return out.hexdigest()[:24]


def _strings(column: pd.Series):
    """A column of strings as Arrow (the column's own buffers when it is Arrow-backed: wrapping them
    again, or converting them one by one, took seconds at 561,600 rows)."""
    array = pa.array(column, pa.string()) if len(column) else pa.array([], pa.string())
    return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array


def _read(folder: Path, design: Design) -> dict[str, pd.DataFrame] | None:
    paths = {p: _file(folder, design, p) for p in PARTS}
    if not all(p.is_file() for p in paths.values()):
        return None
    key = (str(folder), ".".join(design), paths["rows"].stat().st_mtime_ns)
    with _LOCK:
        if key in _READ:
            return _READ[key]
    parts = {p: pq.read_table(path).to_pandas() for p, path in paths.items()}
    with _LOCK:
        if len(_READ) > 32:
            _READ.clear()
        _READ[key] = parts
    return parts


def _write(folder: Path, design: Design, parts: Mapping[str, pd.DataFrame]) -> None:
    """Each part to its own file, atomically (a temporary name, then a rename); the rows last, as
    `_read` takes their presence to mean the design is complete. A set folder that cannot be
    written (read-only results) keeps the parts in memory only."""
    try:
        for p in ("consts", "judged", "rows"):
            write_atomic(_file(folder, design, p), pa.Table.from_pandas(parts[p], preserve_index=False))
    except OSError:
        return


def open_population(dataset: str, judge: str, root: Path | None = None) -> StoredPopulation | None:
    """The population of the dataset's current result set under this judge, or None when the set
    has no row locators for it (written before the pages' records: read every answer instead)."""
    from pipeline.storage import record_reads as page_records
    from pipeline.storage.result_sets import SET_FILE
    from pipeline.storage.store import result_set

    base = result_set(dataset, root)
    listing = base / SET_FILE
    if page_records.missing(base, judge, ("answer_index", "answer_rows")) or not listing.is_file():
        return None
    index = pq.read_table(page_records.record_path(base, "answer_index"),
                          columns=["answer_id", "query_type", "support_scope"])
    digest = hashlib.sha256(listing.read_bytes()).hexdigest()[:20]
    scopes = set(index["support_scope"].to_pylist())
    return StoredPopulation(base, dataset, judge, digest, frozenset(index["answer_id"].to_pylist()),
                            bool(index.num_rows) and scopes == {"cited_only"},
                            frozenset(q for q in index["query_type"].to_pylist() if q is not None))


DRAWN = "drawn"  # the drawn answers' rows, one set of four small files per set of answers


def drawn_answers(population: StoredPopulation, samples: Iterable[Sample]) -> dict[str, AnnotatedAnswer]:
    """The answers of every drawn cluster of these samples, rebuilt from their rows only. Their rows
    are kept beside the population (under the digest of the answer ids) the first time: a few hundred
    answers spread over a 140k-answer set sit in most of its row groups (5 s to read them there, a
    tenth of a second from the copy)."""
    from pipeline.storage import record_reads as page_records

    ids: set[str] = set()
    for s in samples:
        drawn = set(s.items["cluster_id"])
        ids |= set(s.frame.loc[s.frame["cluster_id"].isin(drawn), "answer_id"])
    if not ids:
        return {}
    key = hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()[:20]
    folder = population.folder / DRAWN
    names = ("answers", "sources", "statements", "labels")
    paths = {name: folder / f"{VERSION}.{key}.{name}.parquet" for name in names}
    if all(p.is_file() for p in paths.values()):
        return page_records.answers_of_tables({name: pq.read_table(path) for name, path in paths.items()})
    base = population.base
    index = pq.read_table(page_records.record_path(base, "answer_index")).to_pandas()
    rows = pq.read_table(page_records.record_path(base, "answer_rows", population.judge)).to_pandas()
    tables = page_records.read_answer_tables(base, population.dataset, population.judge, index, rows, sorted(ids))
    try:  # each file whole or absent; all four must be there to be read
        for name in names:
            write_atomic(paths[name], tables[name])
    except OSError:  # a cache folder that cannot be written: read the set again next time
        pass
    return page_records.answers_of_tables(tables)


def answers_for(dataset: str, judge: str, root: Path | None, samples: Iterable[Sample],
                designs: Iterable[Design]) -> tuple[StoredPopulation | None, dict[str, AnnotatedAnswer]]:
    """What a corrected value reads: the stored population (its `designs` prepared) and the drawn
    answers of `samples`; or, for a set without the pages' records, no population and every answer."""
    population = open_population(dataset, judge, root)
    if population is None:
        from pipeline.storage.tables import load_annotated

        return None, load_annotated(dataset, judge, root)
    population.prepare(designs)
    return population, drawn_answers(population, samples)
