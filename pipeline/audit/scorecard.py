"""The prediction-powered scorecard of a dataset x judge from its registered samples and their
human labels: the rows `aee scorecard --ppi` prints and the Scorecard page shows (computed here,
displayed there).

For each metric of `ppi.PPI_METRICS`, the sample of the unit it needs (pairs for support, statements
for relevance and stance) drawn under the same judge with the most labelled units is used; the human
labels are the chosen annotators' (their majority when several), or on ExpertQA the experts'
labels carried by the `human` judge (`human="experts"`), which is how the benchmark stands them in
for an annotator.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from pipeline.audit.humans import EXPERTS, expert_labels, item_labels
from pipeline.audit.labels import LabelStore, labels_path
from pipeline.audit.ppi import PPI_METRICS, unit_values
from pipeline.audit.ppi_cells import ESTIMAND_NOTES, ESTIMANDS, MIN_LABELLED_UNITS, PPIRow, cell_rule, ppi_rows, sample_kind
from pipeline.audit.ppi_population import StoredPopulation, answers_for, designs_for
from pipeline.audit.ppi_relevance import relevance_view
from pipeline.audit.sample import Sample, list_samples, load_sample
from pipeline.errors import InputError
from pipeline.metrics import METRICS
from pipeline.records import AnnotatedAnswer
from pipeline.storage.store import list_judges, read_table, table_path, write_json_atomic
from pipeline.storage.tables import load_annotated

ALL_ENGINES = "all engines"
EXPERTS_NEVER_LABELLED = ("one_sided", "overconfident")  # ExpertQA's experts gave no stance nor confidence
CARRIED_JUDGE = "human"  # the judge whose results are the labels the data carries (ExpertQA's experts)
EXPERTS_SCORECARD = ("`aee scorecard --judge human`: their relevance and their support labels on every source they "
                     "saw, text here or not; not what the corrected values estimate")
# with a pair sample asking relevance the corrected support values estimate the experts' own scorecard,
# up to the sources without text here
EXPERTS_SCORECARD_WITH_RELEVANCE = ("`aee scorecard --judge human`: their relevance and their support labels on every "
                                    "source they saw, text here or not; the corrected values estimate it, except where a "
                                    "source has no text here (nobody can check those pairs)")
NO_JUDGE_NOTE = "computed from the citation markers alone: no judge label enters it, so it needs no human check"


def judge_values(dataset: str, judge: str, root: Path | None = None,
                 metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Per-answer metric values under the strict rules (exact necessity): what the scorecard averages,
    with the unit counts its unjudged-share rule reads (where the results keep them); only the
    `metrics` named, when named."""
    path = table_path(dataset, "metrics", judge, root)
    if not path.exists():
        table = read_table(path)
        part = table[(table["mode"] == "strict") & (table["necessity"] == "exact")]
        counts = [c for c in ("units", "unknown", "unknown_why") if c in part.columns]
        if metrics is not None:
            part = part[part["metric"].isin(list(metrics))]
        return part[["answer_id", "engine", "query_type", "metric", "value", *counts]]
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    # only these rows and columns, the strings read as dictionaries and filtered on their codes: at
    # 140k answers the table has 22 million rows (a filtered dataset read took 10 s, this 5 s)
    names = set(pq.read_schema(path).names)
    counts = [c for c in ("units", "unknown", "unknown_why") if c in names]
    columns = ["answer_id", "engine", "query_type", "metric", "value", *counts]
    strings = [c for c in (*columns, "mode", "necessity") if c not in ("value", "units", "unknown")]
    wanted = pa.array(list(metrics), pa.string()) if metrics is not None else None
    pieces = []  # batch by batch: the whole table at once took 2 GB at 140k answers
    for batch in pq.ParquetFile(path, read_dictionary=strings).iter_batches(batch_size=1 << 17,
                                                                           columns=[*columns, "mode", "necessity"]):
        keep = pc.and_(pc.equal(batch["mode"], "strict"), pc.equal(batch["necessity"], "exact"))
        if wanted is not None:
            keep = pc.and_(keep, pc.is_in(batch["metric"], value_set=wanted))
        pieces.append(pa.Table.from_batches([batch.filter(pc.fill_null(keep, False))]).select(columns))
    part = pa.concat_tables(pieces, promote_options="permissive") if pieces else \
        pq.read_schema(path).empty_table().select(columns)
    # back to plain strings: the same frame as reading without dictionaries
    part = pa.table({c: (pc.cast(part[c], pa.string()) if pa.types.is_dictionary(part[c].type) else part[c])
                     for c in columns})
    return part.to_pandas()


def domains(engines: Sequence[str], query_type: str = "all") -> dict[str, Callable[[pd.DataFrame], pd.Series]]:
    """Masks for all engines and each engine (within one query type, or all of them)."""
    def keep(frame: pd.DataFrame, engine: str | None) -> pd.Series:
        mask = pd.Series(True, index=frame.index) if engine is None else frame["engine"] == engine
        return mask if query_type == "all" else mask & (frame["query_type"] == query_type)

    def mask(engine: str | None) -> Callable[[pd.DataFrame], pd.Series]:
        return lambda frame: keep(frame, engine)

    out = {ALL_ENGINES: mask(None)}
    for engine in engines:
        out[engine] = mask(engine)
    return out


Cell = tuple  # (value in display units or None, judged share or None, why it is None, answers averaged)
CELLS_FILE = "judge_cells.v1.json"  # beside the stored population: the plain scorecard's cells it shows


def _cells_of(values: pd.DataFrame, engines: Sequence[str], query_type: str) -> dict[str, dict[str, Cell]]:
    """metric -> domain -> the plain scorecard's cell (`cell_rule`) of every corrected metric."""
    masks = domains(engines, query_type)
    out: dict[str, dict[str, Cell]] = {}
    for metric in (m for m in METRICS if m in PPI_METRICS):
        per_metric = values[values["metric"] == metric]
        out[metric] = {}
        for name, mask in masks.items():
            value, share, why, n = cell_rule(per_metric[mask(per_metric)], metric)
            out[metric][name] = (None if value is None else float(value), None if share is None else float(share),
                                 str(why), int(n))
    return out


def judge_cells(dataset: str, judge: str, root: Path | None, query_type: str = "all",
                population: StoredPopulation | None = None) -> tuple[list[str], dict[str, dict[str, Cell]]]:
    """The engines and the judge-only cells the corrected scorecard shows beside its values. With a
    stored population they are computed once for every query type of the set and kept beside it
    (reading the metrics table took 5 s at 140k answers, the cells 2 s more per query type); they
    depend on no label."""
    if population is None:
        values = judge_values(dataset, judge, root, metrics=tuple(PPI_METRICS))
        engines = sorted(values["engine"].dropna().unique())
        return engines, _cells_of(values, engines, query_type)
    path = population.folder / CELLS_FILE
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        kept = None
    # the metrics and their rule versions the cells were computed under: a code change that adds a
    # corrected metric or changes a rule computes them again, as a new run of the set does
    rules = [f"{m}:{METRICS[m].version}" for m in METRICS if m in PPI_METRICS]
    if not isinstance(kept, dict) or kept.get("digest") != population.digest or kept.get("rules") != rules:
        values = judge_values(dataset, judge, root, metrics=tuple(PPI_METRICS))
        engines = sorted(values["engine"].dropna().unique())
        kept = {"digest": population.digest, "rules": rules, "engines": engines,
                "cells": {qt: _cells_of(values, engines, qt) for qt in ("all", *sorted(population.query_types))}}
        try:
            write_json_atomic(path, kept)
        except OSError:  # a cache folder that cannot be written: computed again next time
            pass
    engines = list(kept["engines"])
    stored = kept["cells"].get(query_type)
    if stored is None:  # a query type the set has no answer of: every cell is empty
        stored = {m: {name: (None, None, "", 0) for name in domains(engines, query_type)} for m in METRICS if m in PPI_METRICS}
    return engines, {m: {name: tuple(cell) for name, cell in by.items()} for m, by in stored.items()}


def human_labels(sample: Sample, human: str | Sequence[str] = "all", *, store: LabelStore | None = None,
                 answers: Mapping[str, AnnotatedAnswer] | None = None, root: Path | None = None) -> list[dict]:
    """One `item id -> field -> label` map per person: every annotator (`"all"`), the ones named,
    or `"experts"` (ExpertQA's carried expert labels: support on pairs, relevance on statements). `ppi.unit_values` averages
    each unit's value over the people who labelled all of it."""
    if human == "experts":
        carried = load_annotated(sample.meta["dataset"], "human", root) if "human" in list_judges(sample.meta["dataset"], root) else {}
        if not carried:
            raise InputError(f"dataset {sample.meta['dataset']!r} has no `human` judge results to take expert labels from",
                             field="--human")
        return [expert_labels(sample.items, [v for a in carried.values() for v in a.verdicts])]
    store = store or LabelStore(labels_path(root))
    labels = store.labels(sample.sample_id)
    names = list(labels["annotator"].unique()) if human == "all" and not labels.empty else ([] if human == "all" else list(human))
    return [item_labels(labels, [name]) for name in names]


def pick_samples(dataset: str, judge: str, store: LabelStore | None = None, root: Path | None = None) -> dict[str, str]:
    """unit -> the id of the registered sample of that unit under this judge with the most labelled
    items (the newest on a tie); and under "relevance" a pair sample asking relevance when it holds
    more relevance labels than the chosen statement sample (relevant statements is then corrected
    from its relevance items: an unlabelled statement sample must not hide a labelled one)."""
    store = store or LabelStore(labels_path(root))
    best: dict[str, tuple[int, str]] = {}
    relevance: dict[str, tuple[int, str]] = {}  # kind -> (relevance labels, sample id)
    for meta in list_samples(dataset, root):
        if meta.get("judge") != judge:
            continue
        labels = store.labels(str(meta["sample_id"]))
        count = int(labels["item_id"].nunique()) if not labels.empty else 0
        unit = str(meta.get("unit"))
        if unit not in best or count > best[unit][0]:
            best[unit] = (count, str(meta["sample_id"]))
        if unit == "statement" or meta.get("relevance"):
            said = (int(labels.loc[labels["relevant"].notna(), "item_id"].nunique())
                    if not labels.empty and "relevant" in labels.columns else 0)
            kind = "statement" if unit == "statement" else "pair"
            if kind not in relevance or said > relevance[kind][0]:
                relevance[kind] = (said, str(meta["sample_id"]))
    chosen = {unit: sid for unit, (_, sid) in best.items()}
    if "pair" in relevance and relevance["pair"][0] > relevance.get("statement", (0, ""))[0]:
        chosen["relevance"] = relevance["pair"][1]
    return chosen


def answers_have_debate(answers: Mapping[str, AnnotatedAnswer], query_type: str = "all") -> bool:
    """Whether any answer here is to a debate question (and the scorecard's query filter keeps it)."""
    return query_type in ("all", "debate") and any(a.answer.query_type == "debate" for a in answers.values())


def ppi_scorecard(dataset: str, judge: str, *, samples: Mapping[str, str] | None = None,
                  human: str | Sequence[str] = "all", query_type: str = "all", root: Path | None = None,
                  stored_population: bool = True) -> dict[str, Any]:
    """Every PPI row of a dataset x judge (see the module doc), JSON-ready. Where the result set has
    the pages' records, the answers outside the drawn clusters are read from the stored population
    (`pipeline.audit.ppi_population`, built on first use) and only the drawn ones are rebuilt;
    `stored_population=False` reads every answer (the same rows, up to float rounding)."""
    judges = list_judges(dataset, root)
    if judge not in judges:
        raise InputError(f"no results for judge {judge!r} on dataset {dataset!r}; have {', '.join(judges) or 'none'}",
                         field="--judge")
    from pipeline.audit.fitted_record import audited_judge

    store = LabelStore(labels_path(root)) if human != "experts" else None
    audited = audited_judge(dataset, judge, root)  # a fitted judge is corrected from its base judge's samples
    chosen = dict(samples) if samples else pick_samples(dataset, audited, store, root)
    opened: dict[str, Sample] = {}  # each sample read once (its frame is a row per cluster: 561,600 at 140k answers)

    def sample_of(sid: str) -> Sample:
        if sid not in opened:
            opened[sid] = load_sample(sid, root)
        return opened[sid]

    population: StoredPopulation | None = None
    if stored_population:
        loaded = [sample_of(sid) for sid in dict.fromkeys(chosen.values())]
        population, answers = answers_for(dataset, judge, root, loaded, designs_for(loaded))
    else:
        answers = load_annotated(dataset, judge, root)
    engines, cells = judge_cells(dataset, judge, root, query_type, population)
    masks = domains(engines, query_type)
    rows: list[dict[str, Any]] = []
    used: dict[str, dict[str, Any]] = {}
    kinds: set[str] = set()  # the kinds of sample the rows were estimated from (`ppi_cells.sample_kind`)
    for metric in (m for m in METRICS if m in PPI_METRICS):
        unit = PPI_METRICS[metric]
        cell = cells[metric]
        if unit is None:
            for name in masks:
                judge_only, share, why, n = cell[name]
                rows.append(_no_judge_row(metric, name, judge_only, n) | {"judged_share": share, "judge_reason": why})
            continue
        has_debate = population.has_debate(query_type) if population is not None else answers_have_debate(answers, query_type)
        if METRICS[metric].debate_only and not has_debate:
            rows += [_missing_row(metric, name, cell[name], "no debate question here: the metric is for debate "
                                  "questions only, so there is nothing to correct") for name in masks]
            continue
        sample_id = chosen.get(unit)
        view_of_pairs = False
        if metric == "relevant_statements":
            # a pair sample asking relevance holds every statement's relevance of its answers: used when
            # no statement sample was chosen, or when it holds more relevance labels (pick_samples)
            candidate = chosen.get("relevance") or (chosen.get("pair") if sample_id is None else None)
            if candidate and sample_of(candidate).meta.get("relevance"):
                sample_id, view_of_pairs = candidate, True
        if sample_id is None:
            rows += [_missing_row(metric, name, cell[name], f"no {unit} sample drawn under judge {audited}: "
                                  f"`aee audit sample --dataset {dataset} --judge {audited} --unit {unit}`")
                     for name in masks]
            continue
        sample = sample_of(sample_id)
        if sample.meta.get("judge") != audited:
            raise InputError(f"sample {sample_id!r} was drawn under judge {sample.meta.get('judge')!r}, not {audited!r}")
        if human == "experts" and metric in EXPERTS_NEVER_LABELLED:
            rows += [_missing_row(metric, name, cell[name], "ExpertQA's experts labelled support and relevance, "
                                  "not stance or confidence") for name in masks]
            continue
        if sample_id not in used:
            labels = human_labels(sample, human, store=store, answers=answers, root=root)
            used[sample_id] = {"sample": sample, "labels": labels}
        sample, labels = used[sample_id]["sample"], used[sample_id]["labels"]
        if view_of_pairs:
            sample = relevance_view(sample)
            chosen.setdefault("relevance", sample_id)
        kinds.add(sample_kind(sample))
        units = unit_values(metric, sample, answers, labels, population=population)
        if isinstance(units, str):
            rows += [_missing_row(metric, name, cell[name], units) for name in masks]
            continue
        known = {("judge", metric, name): cell[name] for name in masks}  # so ppi_rows reads no judge values
        rows += [r.as_dict() | {"sample_id": sample_id}
                 for r in ppi_rows(metric, units, sample, pd.DataFrame(), masks, known_cells=known)]
    for r in rows:
        unit = PPI_METRICS.get(r["metric"])
        r["estimand"] = r.get("estimand") or ESTIMANDS.get(unit or "", "")
    if human == "experts":
        _add_experts_scorecard(rows, dataset, masks, root)
    return {
        "dataset": dataset, "judge": judge, "query_type": query_type, "mode": "strict",
        "human": human if isinstance(human, str) else list(human),
        "human_label": EXPERTS if human == "experts" else ("every annotator (each unit: the mean over the people who "
                                                           "labelled all of it)" if human == "all" else ", ".join(human)),
        "samples": {unit: sid for unit, sid in chosen.items()},
        "labelled_items": {sid: len({i for person in u["labels"] for i in person}) for sid, u in used.items()},
        "people": {sid: len(u["labels"]) for sid, u in used.items()},  # label sets (persons; the experts count as one)
        "rows": rows,
        # what the corrected values estimate, per sample unit (every row names its own in `estimand`)
        "estimands": {kind: ESTIMAND_NOTES[kind] for kind in ESTIMANDS if kind in kinds or not kinds},
        "experts_scorecard": (None if human != "experts" else EXPERTS_SCORECARD_WITH_RELEVANCE
                              if "pair+relevance" in kinds else EXPERTS_SCORECARD),
    }


def _add_experts_scorecard(rows: list[dict[str, Any]], dataset: str,
                           masks: Mapping[str, Callable[[pd.DataFrame], pd.Series]], root: Path | None) -> None:
    """Beside each row, the value `aee scorecard --judge human` prints for it (`experts_value`, with
    the plain scorecard's reason where it is n/a): what the experts' labels give when they decide
    everything, relevance included, so that nobody reads it as the corrected value's estimand."""
    if CARRIED_JUDGE not in list_judges(dataset, root):
        return
    values = judge_values(dataset, CARRIED_JUDGE, root)
    for r in rows:
        per_metric = values[values["metric"] == r["metric"]]
        mask = masks.get(r["domain"])
        value, _, why, _ = cell_rule(per_metric[mask(per_metric)], r["metric"]) if mask is not None else (None, None, "", 0)
        r["experts_value"], r["experts_reason"] = value, why


def _empty_row(metric: str, domain: str) -> dict[str, Any]:
    fields = PPIRow.__dataclass_fields__
    return {k: None for k in fields} | {"metric": metric, "domain": domain, "judge_answers": 0, "labelled_units": 0, "note": "", "pooled_strata": [],
                                        "labelled_items": 0, "population_units": 0, "population_answers": 0, "sample_id": None,
                                        "judge_reason": "", "min_labelled": MIN_LABELLED_UNITS}


def _missing_row(metric: str, domain: str, cell: Cell, reason: str) -> dict[str, Any]:
    judge_only, share, why, n = cell
    return _empty_row(metric, domain) | {"judge_only": judge_only, "judge_answers": n, "reason": reason,
                                         "judged_share": share, "judge_reason": why}


def _no_judge_row(metric: str, domain: str, value: float | None, n: int) -> dict[str, Any]:
    """A metric no judge enters: its value is the same under any labels, so the corrected value is the
    judge-only one; there is no people-only value."""
    # no people-only value: nobody labelled anything for it (a value nobody gave is not shown as theirs)
    return _empty_row(metric, domain) | {"judge_only": value, "judge_answers": n, "ppi": value, "human": None,
                                         "biased": False if value is not None else None, "reason": NO_JUDGE_NOTE}
