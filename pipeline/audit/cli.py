"""`aee audit ...`: draw a sample, import and export labels, see where a campaign stands; and the
prediction-powered rows of `aee scorecard --ppi`.

`pipeline.cli` calls `register(subparsers)`; each subcommand sets `func(args) -> int`. Bad input is an
InputError (one line, exit code 2); an import's bad rows are one line each on stderr, and the
command then exits 2 even though its good rows landed.

Publishing the labels as a judge runs the runner (`pipeline.runner.run_dataset`), which sits above
this package; the top-level command line hands it in (`register(subparsers, run_dataset)`), so
nothing here imports upward.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from pipeline.audit import SCOPES, UNITS
from pipeline.errors import InputError, one_line

if TYPE_CHECKING:
    from pipeline.audit.sample import Sample

EXIT_BAD_ROWS = 2
RunDataset = Callable[..., Any]  # pipeline.runner.run_dataset, handed in by pipeline.cli


def register(subparsers: argparse._SubParsersAction, run_dataset: RunDataset) -> argparse.ArgumentParser:
    """`aee audit ...` under `subparsers`; `run_dataset` is the runner's entry point, which `import` and
    `publish` use to write the people's labels as the judge human:audit."""
    parser = subparsers.add_parser("audit", help="audit the judge on your own answers: samples, human labels, agreement")
    sub = parser.add_subparsers(dest="audit_command", required=True)

    p = sub.add_parser("sample", help="draw a reproducible stratified sample to label, register it, write it as CSV/JSONL")
    p.add_argument("--dataset", required=True)
    p.add_argument("--judge", required=True, help="the judge whose labels are audited (and stratify the sample)")
    p.add_argument("--n", type=int, required=True, help="about how many items to draw")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--unit", choices=UNITS, default="pair",
                   help="pair: (statement, source) for support; statement: relevance, stance on debate questions")
    p.add_argument("--scope", choices=SCOPES, default="cited",
                   help="pair units: the sources each drawn statement is checked against (default: the ones it cites)")
    p.add_argument("--relevance", action="store_true",
                   help="pair units: ask each statement's relevance too, whole answers at a time, so the corrected "
                        "support metrics estimate the people's relevance and support together (`aee scorecard "
                        "--judge human` of their labels) instead of their support under the judge's relevance")
    p.add_argument("--id", dest="sample_id", help="sample id (default: from dataset, judge, unit, n and seed)")
    p.add_argument("--out", type=Path, help="also write the sample for labelling by hand: .csv or .jsonl")
    p.set_defaults(func=cmd_sample)

    p = sub.add_parser("import", help="add labels from a filled-in sample file, a Label Studio or an Argilla export")
    p.add_argument("file", type=Path)
    p.add_argument("--dataset", required=True)
    p.add_argument("--annotator", required=True, help="whose labels these are")
    p.add_argument("--format", default="auto", choices=("auto", "csv", "jsonl", "label-studio", "argilla"))
    p.add_argument("--sample", help="the sample id, when the file has no sample_id column")
    p.add_argument("--no-publish", action="store_true",
                   help="do not publish the labels as the dataset's human:audit judge afterwards (aee audit publish)")
    p.set_defaults(func=cmd_import, run_dataset=run_dataset)

    p = sub.add_parser("publish", help="write the people's labels as the dataset's judge human:audit (one label per "
                                       "item: the majority; everything not audited unknown)")
    p.add_argument("--dataset", required=True)
    p.add_argument("--annotator", action="append",
                   help="publish these people's labels only (repeat the option; default: everyone's)")
    p.set_defaults(func=cmd_publish, run_dataset=run_dataset)

    p = sub.add_parser("fit", help="fit a judge to the people's labels of a pair sample (judge `fitted`: cross-fitted, "
                                   "its corrected intervals through `aee scorecard --ppi --judge fitted`)")
    p.add_argument("--dataset", required=True)
    p.add_argument("--judge", default="offline", help="the audited judge whose signals the fit reads (default: offline)")
    p.add_argument("--sample", help="the pair sample whose labels to fit to (default: the one with the most labels)")
    p.add_argument("--human", default="all", help="whose labels: all (their majority; default), a comma list of "
                                                  "annotators, or experts (ExpertQA's carried expert labels)")
    p.add_argument("--from", dest="apply_from", metavar="DATASET",
                   help="apply the fitted judge of another dataset instead of fitting (every label then says so)")
    p.add_argument("--compare", action="store_true",
                   help="also say what the labels bought: held-out kappa and how much narrower the corrected intervals are")
    p.set_defaults(func=cmd_fit, run_dataset=run_dataset)

    p = sub.add_parser("export", help="write a sample's tasks and labelling setup for Label Studio or Argilla")
    p.add_argument("--format", required=True, choices=("label-studio", "argilla"))
    p.add_argument("--sample", help="sample id (default: the newest sample of --dataset)")
    p.add_argument("--dataset")
    p.add_argument("--out", type=Path, default=Path("."), help="folder to write into (default: here)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("status", help="the samples of a dataset and how far each annotator got")
    p.add_argument("--dataset", required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_status)
    return parser


def add_ppi_options(p: argparse.ArgumentParser) -> None:
    """Options of `aee scorecard` for the prediction-powered rows."""
    p.add_argument("--ppi", action="store_true", help="beside each judge-only value: the prediction-powered estimate and "
                                                      "the human-only one from the audit's labels, with 95%% intervals")
    p.add_argument("--sample", action="append", help="with --ppi: sample id(s) to use (default: per unit, the one with "
                                                     "the most labels)")
    p.add_argument("--human", default="all", help="with --ppi: whose labels: all (their majority; default), a comma list "
                                                  "of annotators, or experts (ExpertQA's carried expert labels)")


def cmd_sample(args: argparse.Namespace) -> int:
    from pipeline.audit.ppi_cells import short_cells
    from pipeline.audit.sample import design_path, draw_sample, register, write_annotation_file

    if args.relevance and args.unit != "pair":
        raise InputError("--relevance goes with --unit pair (a statement sample asks relevance already)", field="--relevance")
    if args.out and args.out.suffix.lower() not in (".csv", ".jsonl"):  # said before the sample is registered
        raise InputError("the output file must end in .csv or .jsonl", field="--out")
    sample = draw_sample(args.dataset, args.judge, args.n, seed=args.seed, unit=args.unit, scope=args.scope,
                         sample_id=args.sample_id, relevance=args.relevance)
    folder, new = register(sample)
    meta = sample.meta
    kind = "relevance and pair" if args.relevance else args.unit
    clusters = "statements" if args.unit == "pair" and not args.relevance else "answers"
    print(f"sample {sample.sample_id}: {meta['n_items']} {kind} items in {meta['n_clusters']} "
          f"{clusters} of {meta['population_clusters']} "
          f"({meta['population_items']} items in the population), seed {meta['seed']}")
    print(f"{'registered' if new else 'already registered (same draw)'} in {folder}")
    width = max(len(s["stratum"]) for s in meta["strata"])
    print(f"  {'stratum':<{width}}  drawn / in population   weight")
    for s in meta["strata"]:
        weight = s["clusters"] / s["drawn"] if s["drawn"] else float("nan")
        print(f"  {one_line(s['stratum']):<{width}}  {s['drawn']:>5} / {s['clusters']:<13} {weight:8.3f}")
    for line in short_cells(sample):  # said now, not after the labelling
        print(f"warning: {line}", file=sys.stderr)
    if args.out:
        write_annotation_file(sample, args.out)
        print(f"wrote {args.out} (label columns empty; no judge label in it) and {design_path(args.out)} "
              "(each item's stratum and sampling weight)")
    _prepare_population(sample)
    print(f"label it in the app (Audit the judge), or fill the file and run: aee audit import --dataset {args.dataset} "
          f"{args.out or 'FILE'} --annotator NAME")
    return 0


def _prepare_population(sample: Sample) -> None:
    """Compute the corrected scorecard's label-free part for this sample's designs now (once per
    result set: `pipeline.audit.ppi_population`), so that the first corrected view after the
    labelling reads it instead of every answer."""
    import time

    from pipeline.audit.ppi_population import designs_for, drawn_answers, open_population
    from pipeline.audit.scorecard import judge_cells

    population = open_population(sample.meta["dataset"], sample.meta["judge"])
    if population is None:
        return
    started = time.perf_counter()
    population.prepare(designs_for([sample]))
    judge_cells(sample.meta["dataset"], sample.meta["judge"], None, population=population)  # kept once per set
    drawn_answers(population, [sample])  # the drawn answers' rows, kept beside it
    if population.built:
        print(f"prepared what the corrected scorecard reads of the {len(population.ids):,} answers "
              f"({len(population.built)} design(s), {time.perf_counter() - started:.1f} s; once per result set)")


def cmd_import(args: argparse.Namespace) -> int:
    from pipeline.audit.files import import_labels
    from pipeline.audit.labels import LabelStore

    if not args.file.is_file():
        raise InputError("no such file", record=str(args.file))
    report = import_labels(args.file, args.dataset, args.annotator, store=LabelStore(), fmt=args.format,
                           sample_id=args.sample)
    for line in report.errors:
        print(f"error: {line}", file=sys.stderr)
    print(report.summary())
    if report.written and not args.no_publish:
        try:
            print(publish(args.dataset, args.run_dataset))
        except InputError as exc:  # the labels landed; only the judge view of them could not be written
            print(f"note: not published as judge human:audit ({one_line(str(exc), 300)}); "
                  f"run `aee audit publish --dataset {args.dataset}` later")
    return EXIT_BAD_ROWS if report.errors else 0


def publish(dataset: str, run_dataset: RunDataset, annotators: list[str] | None = None, root: Path | None = None,
            progress: bool = False) -> str:
    """Write the dataset's `human:audit` judge through the runner's `run_dataset` (handed in by the
    layer above; the publication itself is pipeline.audit.publish); returns what it holds in words."""
    from pipeline.audit.publish import collect, run_input
    from pipeline.judges import JudgeError
    from pipeline.judges.carried import AuditLabels

    publication = collect(dataset, annotators=annotators, root=root)
    path, importer, limit = run_input(dataset, root)
    try:
        result = run_dataset(dataset, path, importer=importer, limit=limit, judge=AuditLabels(labels_attached=True),
                             transform=publication.transform, config_extra=publication.config(), progress=progress,
                             root=root, use_cache=False)
    except JudgeError as exc:
        raise InputError(str(exc)) from exc
    return f"published {publication.summary()} ({result.answers} answers, {result.seconds:.1f} s)"


def cmd_publish(args: argparse.Namespace) -> int:
    print(publish(args.dataset, args.run_dataset, [clean for a in args.annotator or [] if (clean := a.strip())] or None))
    return 0


def write_fitted(dataset: str, run_dataset: RunDataset, base_judge: str = "offline", sample_id: str | None = None,
                 human: str | list[str] = "all", root: Path | None = None, *, apply_from: str | None = None,
                 progress: bool = False) -> dict[str, Any]:
    """Fit (`pipeline.audit.fitted_run.prepare_fit`) and write the judge `fitted` of `dataset` through
    the runner's `run_dataset` (handed in by the command line above, as for `publish`): its verdicts
    attached to each answer as it is read. Returns the manifest's record plus `answers` and `seconds`."""
    from pipeline.audit.fitted_run import prepare_fit
    from pipeline.audit.publish import run_input
    from pipeline.judges import JudgeError
    from pipeline.judges.carried import FittedLabels
    from pipeline.records import AnnotatedAnswer

    record, fitted = prepare_fit(dataset, base_judge, sample_id, human, root, apply_from=apply_from)

    def attach(annotated: AnnotatedAnswer) -> AnnotatedAnswer:
        got = fitted.get(annotated.answer.answer_id)
        if got is None:
            return annotated
        return AnnotatedAnswer(annotated.answer, got.statements, annotated.verdicts + got.verdicts)

    path, importer, limit = run_input(dataset, root)
    try:
        result = run_dataset(dataset, path, importer=importer, limit=limit, judge=FittedLabels(labels_attached=True),
                             transform=attach, config_extra={"fitted": record}, progress=progress, root=root,
                             use_cache=False)
    except JudgeError as exc:
        raise InputError(str(exc)) from exc
    return record | {"answers": result.answers, "seconds": result.seconds}


def cmd_fit(args: argparse.Namespace) -> int:
    from pipeline.audit.fitted_run import fit_summary, labels_bought

    human: str | list[str] = args.human if args.human in ("all", "experts") else [
        h.strip() for h in args.human.split(",") if h.strip()]
    record = write_fitted(args.dataset, args.run_dataset, args.judge, args.sample, human, apply_from=args.apply_from)
    print(f"wrote {fit_summary(record)} ({record['answers']} answers, {record['seconds']:.1f} s)")
    if args.compare:
        bought = labels_bought(args.dataset, human)
        print(bought["sentence"] if bought and bought["sentence"] else f"note: {bought['why'] if bought else 'no fit'}")
    print(f"corrected values through it: aee scorecard --dataset {args.dataset} --judge fitted --ppi"
          + (" --human experts" if human == "experts" else ""))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from pipeline.audit.files import export_tasks
    from pipeline.audit.sample import list_samples, load_sample

    sample_id = args.sample
    if not sample_id:
        if not args.dataset:
            raise InputError("give --sample ID or --dataset NAME", field="--sample")
        found = list_samples(args.dataset)
        if not found:
            raise InputError(f"no sample of dataset {args.dataset!r}; draw one with `aee audit sample`", field="--dataset")
        sample_id = str(found[0]["sample_id"])
    sample = load_sample(sample_id)
    for path in export_tasks(sample, args.format, args.out):
        print(f"wrote {path}")
    return 0


def campaign_status(dataset: str) -> list[dict[str, Any]]:
    """Per sample of a dataset: how it was drawn and how many items each annotator labelled, skipped
    or could not tell."""
    from pipeline.audit import UNIT_FIELDS
    from pipeline.audit.labels import LabelStore
    from pipeline.audit.sample import list_samples

    store = LabelStore()
    out = []
    for meta in list_samples(dataset):
        labels = store.labels(str(meta["sample_id"]))
        people = []
        relevance = meta.get("unit") == "pair" and bool(meta.get("relevance"))
        clusters = _clusters_of(str(meta["sample_id"])) if relevance else {}
        for name, part in labels.groupby("annotator", sort=False) if not labels.empty else []:
            main = UNIT_FIELDS[str(meta["unit"])][0]
            answer = part[main]
            if relevance and "relevant" in part.columns:  # each item's own question: relevance on statement items
                answer = answer.where(answer.notna(), part["relevant"])
            person = {"annotator": name, "labelled": int(answer.notna().sum()),
                      "cant_tell": int((answer == "cant_tell").sum()), "skipped": int(part["skipped"].sum())}
            if relevance:  # an estimate reads an answer only when every item of it is answered
                done = set(part.loc[answer.notna(), "item_id"])
                person["answers_complete"] = sum(1 for ids in clusters.values() if ids <= done)
                person["answers"] = len(clusters)
            people.append(person)
        out.append({k: meta.get(k) for k in ("sample_id", "judge", "unit", "scope", "relevance", "n_items", "seed",
                                             "created")}
                   | {"annotators": people})
    return out


def _clusters_of(sample_id: str) -> dict[str, set[str]]:
    """cluster (an answer, for a sample asking relevance) -> its item ids."""
    from pipeline.audit.sample import load_sample

    items = load_sample(sample_id).items
    return {str(c): set(part["item_id"]) for c, part in items.groupby("cluster_id", sort=False)}


def cmd_status(args: argparse.Namespace) -> int:
    status = campaign_status(args.dataset)
    if args.json:
        print(json.dumps(status, indent=2, ensure_ascii=False))
        return 0
    if not status:
        print(f"no sample of {args.dataset}; draw one: aee audit sample --dataset {args.dataset} --judge offline --n 100")
    for s in status:
        kind = "pairs and relevance" if s.get("relevance") else f"{s['unit']}s"
        print(f"{s['sample_id']} ({kind}, judge {s['judge']}, {s['n_items']} items)")
        for p in s["annotators"] or [{"annotator": "nobody yet", "labelled": 0, "cant_tell": 0, "skipped": 0}]:
            complete = (f"; {p['answers_complete']} of {p['answers']} answers complete (every item of an answer "
                        "answered: what an estimate reads)") if "answers" in p else ""
            print(f"  {one_line(p['annotator']):<30} {p['labelled']:>5} labelled ({p['cant_tell']} can't tell), "
                  f"{p['skipped']} skipped{complete}")
    return 0


def _json_clean(value: Any) -> Any:
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {str(k): _json_clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_clean(v) for v in value]
    return value


def print_ppi(args: argparse.Namespace, judge: str) -> int:
    """`aee scorecard --ppi`: the rows of `pipeline.audit.scorecard.ppi_scorecard` as JSON or a table."""
    from pipeline.audit.ppi import PPI_METRICS
    from pipeline.audit.ppi_cells import KIND_WORDS
    from pipeline.audit.sample import load_sample
    from pipeline.audit.scorecard import ppi_scorecard
    from pipeline.metrics import METRICS

    if args.mode != "strict":
        raise InputError("prediction-powered estimates are computed under the strict rules", field="--mode")
    samples = None
    if args.sample:
        samples = {}
        for sid in args.sample:
            samples[str(load_sample(sid).meta["unit"])] = sid
    human: str | list[str] = args.human if args.human in ("all", "experts") else [h.strip() for h in args.human.split(",") if h.strip()]
    out = ppi_scorecard(args.dataset, judge, samples=samples, human=human, query_type=args.query_type)
    if args.json:
        print(json.dumps(_json_clean(out), indent=2, ensure_ascii=False))
        return 0
    print(f"prediction-powered scorecard: {args.dataset}, judge {judge}, {args.query_type} queries, strict rules; "
          f"human labels: {out['human_label']}; samples: {', '.join(f'{u}={s}' for u, s in out['samples'].items()) or 'none'}")
    fmt = lambda v: "  n/a " if v is None else f"{v:6.1f}"  # noqa: E731
    for unit, note in out["estimands"].items():
        print(f"  PPI and human (from {KIND_WORDS.get(unit, unit)}) estimate {note}")
    if out.get("experts_scorecard"):
        print(f"  experts: {out['experts_scorecard']}")
    for metric in (m for m in METRICS if m in PPI_METRICS):
        estimand = next((r["estimand"] for r in out["rows"] if r["metric"] == metric and r.get("estimand")), "")
        print(f"{METRICS[metric].label}:" + (f" (PPI and human: {estimand})" if estimand else ""))
        for r in (r for r in out["rows"] if r["metric"] == metric):
            line = (f"  {one_line(r['domain'])[:28]:<28} judge {fmt(r['judge_only'])}  PPI {fmt(r['ppi'])} "
                    f"[{fmt(r['ppi_low'])}, {fmt(r['ppi_high'])}]  human {fmt(r['human'])} "
                    f"[{fmt(r['human_low'])}, {fmt(r['human_high'])}]  n={r['labelled_units']}/{r['population_units']}")
            if "experts_value" in r:
                line += f"  experts' own {fmt(r['experts_value']).strip()}"
            if r["biased"]:
                line += "  judge biased"
            if r.get("judge_reason"):
                line += f"  (judge only: {r['judge_reason']})"
            if r["reason"]:
                line += f"  ({r['reason']})"
            if r.get("note"):
                line += f"  ({r['note']})"
            print(line)
    return 0
