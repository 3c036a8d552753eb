"""`python -m pipeline ...`: score one answer, run a dataset, import a release, print a scorecard.

A user sees one clear line for bad input (exit code 2) and never a traceback (set AEE_DEBUG=1 to
get one). Results already written are never touched by a failing command: every write is atomic.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any, Callable, Sequence

from pipeline.audit.cli import add_ppi_options
from pipeline.audit.cli import register as register_audit
from pipeline.collect import register as register_collect
from pipeline.conflict.cli import register as register_probe
from pipeline.consistency.cli import register as register_over_time
from pipeline.errors import InputError
from pipeline.judges.base import JudgeError
from pipeline.judges.cli import register as register_judges
from pipeline.page_records import register as register_records
from pipeline.study.cli import register as register_study

EXIT_BAD_INPUT = 2
ALLOW_EMPTY_HELP = ("write the results even when the run has no answer (--limit 0, an empty input); without it such a "
                    "run stops with an error and the earlier results stay")


def _add_score_options(p: argparse.ArgumentParser) -> None:
    from pipeline.metrics import MODES, NECESSITY_METHODS

    p.add_argument("--mode", choices=MODES, default="strict", help="metric rules (default strict)")
    p.add_argument("--necessity", choices=NECESSITY_METHODS, default="exact",
                   help="source-necessity algorithm (default exact)")


def _add_bare_response_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--query", help="for bare engine responses: the query that was asked")
    p.add_argument("--engine", help="the engine's name in the results (default: from the envelope or format, plus the model)")
    p.add_argument("--query-type", choices=("debate", "expertise"), help="for bare responses (default expertise)")


def _add_input_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", dest="importer", help="force an input format (default auto); see `aee formats`")
    _add_bare_response_options(p)


def _import_options(args: argparse.Namespace):
    from pipeline.importers.engines import ImportOptions

    return ImportOptions(query=getattr(args, "query", None), engine=getattr(args, "engine", None),
                         query_type=getattr(args, "query_type", None))


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(prog="aee", description="Audit answer engines: AEE metrics and judges.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("score", help="score answers: canonical JSON/JSONL, an engine's API response or a capture envelope")
    p.add_argument("path", type=Path, nargs="+", help="a file (JSON, JSON list, JSONL, or a saved stream) or a folder of them")
    p.add_argument("--conversation", action="store_true",
                   help="the files hold one conversation: an Anthropic response that stopped with pause_turn and its "
                        "continuation, scored as one answer")
    p.add_argument("--judge", help="recorded (labels in the file), offline or openai; default: recorded for "
                                   "canonical files, offline for engine responses (they carry no labels)")
    p.add_argument("--json", action="store_true", help="print JSON (metrics and both matrices)")
    fetch = p.add_mutually_exclusive_group()
    fetch.add_argument("--fetch-missing", dest="fetch", action="store_true", default=None,
                       help="fetch the page of every source with a web address and no text before a computed judge "
                            "labels it (the default unless AEE_FETCH=off; public http(s) only, bounded, cached per day); "
                            "a page the site says is gone counts as dead, one this machine cannot reach stays not checked")
    fetch.add_argument("--no-fetch", dest="fetch", action="store_false", help="never fetch: sources without text stay not checked")
    _add_input_options(p)
    _add_score_options(p)

    p = sub.add_parser("run", help="ingest -> annotate -> score -> export a whole dataset to Parquet")
    p.add_argument("--dataset", required=True, help="demo, expertqa, hagrid, aee, or any name with --path")
    p.add_argument("--path", type=Path, help="input file or folder (default: the dataset's known location)")
    p.add_argument("--format", dest="importer", help="input format for --path (default auto: recognised object by object); "
                                                    "one of canonical, aee, expertqa, hagrid or an engine format (see `aee formats`)")
    _add_bare_response_options(p)
    p.add_argument("--judge", help="judge to label with (default: the labels carried by the data)")
    p.add_argument("--limit", type=int, help="only the first N answers (sorted by id)")
    p.add_argument("--allow-empty", action="store_true", help=ALLOW_EMPTY_HELP)
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--dry-run", action="store_true", help="with an LLM judge: print calls, tokens and cost, call nothing")
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="where the judge runs: this process (default) or a Ray actor pool (pip install '.[ray]'; docs/scaling.md)")
    p.add_argument("--address", help="with --executor ray: a running cluster this machine is a node of (auto or HOST:PORT); "
                                     "default: RAY_ADDRESS when set, else a Ray instance on this machine for this run, on 127.0.0.1 only "
                                     "(--address local)")
    p.add_argument("--workers", type=int, help="with --executor ray: judge actors, one CPU each (default: the cluster's CPUs)")
    p.add_argument("--in-flight", type=int, help="with a judge behind an endpoint (openai, minicheck): requests in flight "
                                                 "at once, across all workers (default: the judge's own, 4 for openai)")
    p.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                   help="when another run is writing this dataset, wait up to this long for it (default: stop at once)")
    p.add_argument("--fetch-missing", action="store_true",
                   help="fetch the page of every listed source that has a URL but no text (public http(s) only, cached) "
                        "before labelling: a computed judge then checks statements against it; pages that cannot be "
                        "fetched count as dead sources; labels that come with the data do not change")
    p.add_argument("--strict", action="store_true",
                   help="stop at the first record that cannot be read (default: refuse it, list it, go on with the others)")

    p = sub.add_parser("import", help="import a release with its own labels and print the scorecard")
    p.add_argument("format", choices=("aee", "expertqa", "hagrid", "canonical"))
    p.add_argument("path", help="file or folder (expertqa, hagrid: also an http(s) URL: the pinned release is "
                                "downloaded once into the cache)")
    p.add_argument("--dataset", help="dataset name for the results (default: the format name)")
    p.add_argument("--allow-empty", action="store_true", help=ALLOW_EMPTY_HELP)
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--strict", action="store_true",
                   help="stop at the first record that cannot be read (default: refuse it, list it, go on with the others)")

    p = sub.add_parser("compare-gold", help="score generated answers against a dataset's gold answers (correctness, "
                                            "citation overlap) beside the citation metrics")
    p.add_argument("--gold", required=True, help="gold dataset: hagrid, or any name with --gold-path")
    p.add_argument("--gold-path", type=Path, help="gold file or folder (default: the dataset's known location)")
    p.add_argument("--gold-format", help="format of --gold-path when the name is not a known dataset (default canonical)")
    p.add_argument("--answers", required=True, type=Path, help="generated answers: file or folder")
    p.add_argument("--format", dest="answers_format", default="canonical",
                   help="format of --answers: canonical (default), aee, expertqa or hagrid")
    p.add_argument("--judge", default="offline", help="judge for the citation metrics (default offline; recorded uses "
                                                      "labels in the file)")
    p.add_argument("--dataset", help="name of the results dataset (default <answers>-vs-<gold>)")
    p.add_argument("--limit", type=int, help="only the first N answers (sorted by id)")
    p.add_argument("--allow-empty", action="store_true", help=ALLOW_EMPTY_HELP)
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.add_argument("--no-progress", action="store_true")

    p = sub.add_parser("scorecard", help="print a dataset's scorecard from its Parquet results")
    p.add_argument("--dataset", required=True)
    p.add_argument("--judge", help="judge id (default: the first with results)")
    p.add_argument("--query-type", choices=("all", "debate", "expertise"), default="all")
    p.add_argument("--aggregation", choices=("answer", "pooled"), default="answer",
                   help="answer: mean of per-answer values (AEE, default); pooled: each metric's units pooled over "
                        "the engine's answers (Liu et al., ALCE, ExpertQA)")
    p.add_argument("--json", action="store_true")
    _add_score_options(p)
    add_ppi_options(p)

    sub.add_parser("datasets", help="list datasets known by name and those with results")
    sub.add_parser("formats", help="list the input formats (canonical, releases, engine API responses)")

    p = sub.add_parser("build-default", help="build the bundled default results (used by `make run`)")
    p.add_argument("--force", action="store_true", help="rebuild even when results exist")

    p = sub.add_parser("app", help="start the dashboard (Streamlit) on the results folder")
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--address", default="localhost",
                   help="address or interface name to listen on (default localhost only); 0.0.0.0 serves a room: "
                        "the addresses to hand out and a join code are printed")
    p.add_argument("--join-code", default=None,
                   help="the room's join code, needed to write when served beyond localhost (default: $AEE_JOIN_CODE, "
                        "else a new one, printed)")

    register_study(sub)
    register_judges(sub)
    register_probe(sub)
    register_collect(sub)
    register_audit(sub, _run_dataset)
    register_over_time(sub)
    register_records(sub)
    return parser


def _run_dataset(*args: Any, **kwargs: Any) -> Any:
    """pipeline.runner.run_dataset, imported on the first call (`aee --help` stays light). Handed to the
    command lines of the packages below (`aee audit import/publish`), which never import the runner."""
    from pipeline.runner import run_dataset

    return run_dataset(*args, **kwargs)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        if not getattr(args, "pass_through", False):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.rest = extra  # a command that forwards its own options (`judges calibrate`)
    try:
        # Plug-in command modules set `func` on their sub-parsers; the core commands live in COMMANDS.
        handler = getattr(args, "func", None) or COMMANDS[args.command]
        return int(handler(args) or 0)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except JudgeError as exc:  # an unknown judge name or a judge without its configuration
        print(f"error: {str(exc)[:500]}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted; results already written are kept", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, no traceback
        if os.environ.get("AEE_DEBUG"):
            traceback.print_exc()
        print(f"error: {type(exc).__name__}: {str(exc)[:300]} (set AEE_DEBUG=1 for details)", file=sys.stderr)
        return 1


# ---- commands ---------------------------------------------------------------------------------


def _progress_lines(answer_id: str, every: float = 2.0) -> Callable[[str], None]:
    """Progress of one answer on stderr, a line at most every `every` seconds (a large answer takes
    a while; a small one prints nothing)."""
    import time

    from pipeline.errors import one_line

    started = last = time.monotonic()

    def say(what: str) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= every:
            last = now
            print(f"... {one_line(answer_id, 60)}: {what} ({now - started:.0f} s)", file=sys.stderr, flush=True)

    return say


def cmd_score(args: argparse.Namespace) -> int:
    from pipeline.annotate import annotate_answer
    from pipeline.errors import one_line
    from pipeline.importers import IMPORTERS, default_judge
    from pipeline.importers.engine_common import citation_warnings
    from pipeline.judges import get_judge
    from pipeline.metrics import ScoreConfig
    from pipeline.report.scoring import answer_report

    config = ScoreConfig(args.mode, args.necessity)
    fmt = args.importer or "auto"
    if fmt not in IMPORTERS:
        raise InputError(f"unknown format {fmt!r}; choose one of {', '.join(sorted(IMPORTERS))}", field="--format")
    for path in args.path:
        if not path.exists():
            raise InputError("cannot read file: no such file or folder", record=str(path))
    if args.conversation:
        from pipeline.importers.engines import conversation_answer

        answers = [conversation_answer(list(args.path), _import_options(args))]
    else:
        answers = [a for path in args.path for a in IMPORTERS[fmt].load(path, _import_options(args))]
        if len({a.answer.answer_id for a in answers}) < len(answers):
            raise InputError("the same answer twice in these files (duplicate answer_id)", field="answer_id")
        if not answers:
            raise InputError("nothing to score: no answer in this input", record=", ".join(str(p) for p in args.path)[:300])
    judge = get_judge(args.judge or default_judge(fmt, args.path[0]))
    formats = sorted({a.answer.meta.get("format") or fmt for a in answers})
    print(f"format: {', '.join(formats)}" + (" (detected)" if fmt == "auto" else ""), file=sys.stderr)
    from pipeline.importers.import_report import ImportReport, report_lines

    for line in report_lines(ImportReport().extend(answers, args.path[0].name).as_dict()):
        print(one_line(line, 2000), file=sys.stderr)
    for a in answers:
        for warning in citation_warnings(a):
            print(f"warning: answer {one_line(a.answer.answer_id)}: {warning}", file=sys.stderr)
    answers = _fetch_for_score(answers, judge, args.fetch)
    annotated = []
    for a in answers:
        annotated.append(annotate_answer(a, judge, _progress_lines(a.answer.answer_id)))
        _refuse_if_every_call_failed(annotated, judge.name)  # stops at the first answer if nothing came back
    reports = [answer_report(a, config, judge.name) | {"format": a.answer.meta.get("format") or fmt} for a in annotated]
    for report in reports:
        for s in report["statements"]:
            if s["dangling"]:
                print(f"warning: answer {one_line(report['answer_id'])}: statement {s['index']} cites "
                      f"{', '.join(f'[{d}]' for d in s['dangling'])} but no such source is listed (dangling)", file=sys.stderr)
    if args.json:
        print(json.dumps(reports[0] if len(reports) == 1 else reports, indent=2, ensure_ascii=False))
    else:
        for report in reports:
            print(_format_report(report))
    return 0


def _refuse_if_every_call_failed(annotated: list, judge_name: str) -> None:
    """`aee score` with a judge none of whose calls came back prints no scorecard of "not scorable"
    rows: it stops with the first reason (exit 2) as soon as the answers so far hold failed calls
    only, like a run after its first chunk, instead of asking about every other answer."""
    from pipeline.errors import one_line
    from pipeline.judges.base import call_outcomes

    asked, failed = call_outcomes(annotated, judge_name)
    if asked and len(failed) == asked:
        raise JudgeError(f"every call of judge {judge_name} failed ({len(failed)}); the first: {one_line(failed[0].raw, 300)}")


def _fetch_for_score(answers: list, judge: Any, wanted: bool | None) -> list:
    """`aee score`: fill missing source text through the safe fetcher (fill_sources), by default when a
    computed judge will read it; one line per fetched source on stderr."""
    from pipeline.errors import one_line
    from pipeline.fetching.fill_sources import fetch_by_default, fill_missing_texts
    from pipeline.judges.carried import CarriedLabels

    if wanted is False or (wanted is None and (isinstance(judge, CarriedLabels) or not fetch_by_default())):
        return answers
    out = []
    for a in answers:
        notes: list[str] = []
        out.append(fill_missing_texts(a, notes=notes))
        for note in notes:
            print(f"fetch: answer {one_line(a.answer.answer_id)}: {one_line(note, 300)}", file=sys.stderr)
    return out


def _format_report(report: dict) -> str:
    """Metrics, then the sources and each statement with the sources it cites. Answer text and
    titles are untrusted: control characters are shown escaped (no terminal escape sequences)."""
    from pipeline.errors import one_line
    from pipeline.metrics import RATING_SYMBOLS

    lines = [f"{one_line(report['answer_id'])} ({one_line(report['engine'])}, {report['query_type']}; format={report.get('format', '')}, "
             f"mode={report['mode']}, necessity={report['necessity']}, judge={report['judge']})"]
    width = max((len(m["label"]) for m in report["metrics"].values()), default=24)  # one column for every label
    for m in report["metrics"].values():
        value = "n/a" if m["display"] is None else f"{m['display']:.2f}"
        symbol = RATING_SYMBOLS.get(m["rating"] or "", " ")
        why = f"  ({m['reason']})" if m["value"] is None and m["reason"] else ""
        lines.append(f"  {symbol} {m['label']:<{width}} {value:>8}  n={m['n']}{why}")
    lines.append(f"  sources ({len(report['sources'])}):")
    for s in report["sources"]:
        state = {True: "page", False: "dead"}.get(s["fetch_ok"], s.get("text_origin") or "no text")
        lines.append(f"    [{s['index']}] {one_line(s['title'] or '(no title)', 80)}  <{one_line(s['url'], 120)}>  ({state})")
    unchecked = report.get("unchecked_support") or {}
    if unchecked.get("pairs"):
        causes = ", ".join(f"{why}: {n}" for why, n in sorted(unchecked["causes"].items(), key=lambda kv: -kv[1]))
        lines.append(f"  not checked: {unchecked['pairs']} of {unchecked['of']} (statement, source) pairs ({causes}); "
                     "they count neither as support nor as its absence")
    lines.append(f"  statements ({len(report['statements'])}):")
    for s in report["statements"]:
        cites = " ".join(f"[{i}]" for i in s["citations"]) or "-"
        dangling = f"  dangling {' '.join(f'[{d}]' for d in s['dangling'])}" if s["dangling"] else ""
        status = s.get("status_reason") or s.get("status", "")
        lines.append(f"    {s['index']:>2}. cites {cites}{dangling} [{status}]: {one_line(s['text'], 140)}")
    return "\n".join(lines)


def cmd_run(args: argparse.Namespace) -> int:
    from pipeline.runner import run_dataset

    if args.dry_run:
        return _dry_run(args)
    _terminate_as_interrupt()
    extra = {}
    transform = None
    if getattr(args, "fetch_missing", False):
        from pipeline.fetching.fill_sources import fill_missing_texts

        transform, extra = fill_missing_texts, {"fetch_missing": True}
    result = run_dataset(args.dataset, args.path, judge_name=args.judge, importer=args.importer,
                         limit=args.limit, progress=not args.no_progress, import_options=_import_options(args),
                         judge_config=_in_flight_config(args), executor=_executor(args),
                         transform=transform, config_extra=extra, wait=args.wait, allow_empty=args.allow_empty,
                         strict=args.strict)
    if result.formats:
        print("format: " + ", ".join(f"{name} ({n})" for name, n in sorted(result.formats.items())))
    from pipeline.errors import one_line
    from pipeline.importers.import_report import report_lines

    for line in report_lines(result.import_report):
        print(one_line(line, 2000))
    _print_refused(result)
    where = "" if result.executor == "local" else f" on {result.executor}"
    print(f"{result.answers} answers, judge {result.judge}{where}: {result.chunks_done} chunks annotated, "
          f"{result.chunks_skipped} reused; {result.seconds:.1f} s; results in {result.out_dir}")
    if result.records_seconds is not None:
        print(f"pages' records: {result.records_seconds:.2f} s of the {result.seconds:.1f} s")
    if result.chunks_unsaved:
        print(f"warning: {result.chunks_unsaved} chunk(s) had a failed judge call: their labels are not saved and "
              "the next run asks those calls again (the others come from the judge cache)", file=sys.stderr)
    if result.cache:
        print(f"judge cache: {result.cache.get('hits', 0)} hits, {result.cache.get('misses', 0)} misses")
    print(_scorecard_text(result.summary, "strict", "exact", "all"))
    return 0


def _print_refused(result: Any, with_lines: bool = False) -> None:
    """The summary line of the records the run refused (each one is listed in the import report's
    lines, or here with `with_lines`); nothing when none was."""
    from pipeline.errors import one_line

    if not result.refused:
        return
    if with_lines:
        for line in result.refused:
            print(one_line(line, 2000), file=sys.stderr)
    n = sum(len(row.get("refused") or ()) for row in result.import_report.values())
    more = next((line for line in result.refused if line.startswith("... and ")), "")
    print(f"refused {n} record(s){' (' + more.removeprefix('... ') + ')' if more else ''}: each is listed above with its "
          "file, line, field and why; the others were run (--strict stops at the first)", file=sys.stderr)


def _terminate_as_interrupt() -> None:
    """SIGTERM (a service manager, `kill`) stops a run like Ctrl-C: the new result set being written
    is removed, the results already there stay as they were, and the exit code is 130."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        def interrupt(signum: int, frame: object) -> None:
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, interrupt)


def _executor(args: argparse.Namespace) -> Any:
    """The annotate stage's executor chosen on the command line (None: the local default)."""
    if args.executor == "local":
        if args.address or args.workers:
            raise InputError("--address and --workers go with --executor ray")
        return None
    if args.workers is not None and args.workers < 1:
        raise InputError(f"--workers must be at least 1 (got {args.workers})")
    from pipeline.cluster import build_ray_executor

    return build_ray_executor(address=args.address, workers=args.workers)


def _in_flight_config(args: argparse.Namespace) -> dict[str, Any] | None:
    """`--in-flight N` as the judge's `concurrency` (judges behind an endpoint only)."""
    if args.in_flight is None:
        return None
    from pipeline.judges import registry_entry

    info = registry_entry(args.judge or "")
    if info is None or not info.needs_network:
        raise InputError(f"--in-flight applies to judges behind an endpoint (openai, minicheck), not {args.judge or 'the default judge'!r}")
    if args.in_flight < 1:
        raise InputError(f"--in-flight must be at least 1 (got {args.in_flight})")
    return {"concurrency": args.in_flight}


def _dry_run(args: argparse.Namespace) -> int:
    from pipeline.importers import IMPORTERS, resolve_dataset
    from pipeline.judges.backends.cost import estimate_run

    info = resolve_dataset(args.dataset, args.path, args.importer)
    answers = IMPORTERS[info.importer].load(info.path, _import_options(args))  # type: ignore[arg-type]
    if args.limit:
        answers = sorted(answers, key=lambda a: a.answer.answer_id)[: args.limit]
    print(json.dumps(estimate_run(answers, {}), indent=2))
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from pipeline.importers import IMPORTERS
    from pipeline.runner import run_dataset

    path: str | Path = args.path
    if args.format == "expertqa" and str(path).startswith(("http://", "https://")):
        from pipeline.importers.expertqa import download_expertqa
        from pipeline.storage.paths import cache_dir

        path = download_expertqa(cache_dir() / "expertqa")
    elif args.format == "hagrid" and str(path).startswith(("http://", "https://")):
        from pipeline.importers.hagrid import HAGRID_REPO, HAGRID_REVISION, download_hagrid
        from pipeline.storage.paths import cache_dir

        print(f"using the pinned HAGRID release ({HAGRID_REPO} at {HAGRID_REVISION[:12]}), cached in "
              f"{cache_dir() / 'hagrid'}", file=sys.stderr)
        path = download_hagrid(cache_dir() / "hagrid")
    elif not Path(path).exists():
        raise InputError("no such file or folder", record=str(path))
    name = args.dataset or args.format
    result = run_dataset(name, path, importer=args.format, judge_name=IMPORTERS[args.format].carried_judge,
                         progress=not args.no_progress, allow_empty=args.allow_empty, strict=args.strict)
    _print_refused(result, with_lines=True)
    mode = "parity" if args.format == "aee" else "strict"
    from pipeline.metrics import effective_necessity

    necessity = effective_necessity(mode, "exact")
    print(f"imported {result.answers} answers into {result.out_dir} ({result.seconds:.1f} s)")
    print(_scorecard_text(result.summary, mode, necessity, "all"))
    return 0


def _scorecard_text(summary, mode: str, necessity: str, query_type: str, aggregation: str = "answer") -> str:
    from pipeline.aggregate import scorecard_table, with_aggregation
    from pipeline.metrics import METRICS

    part = with_aggregation(summary[(summary["mode"] == mode) & (summary["necessity"] == necessity)], aggregation)
    table = scorecard_table(part, query_type)
    if table.empty:
        return "(no results)"
    how = dict(zip(part["metric"], part["aggregated_as"]))
    table.index = [METRICS[m].label for m in table.index]
    shown = ("pooled over each metric's units (Liu et al., ALCE, ExpertQA); a metric of the whole answer is its "
             "mean over answers" if aggregation == "pooled" else "mean over answers (AEE)")
    text = (f"scorecard ({mode}, necessity={necessity}, {query_type} queries; {shown}; percent metrics x100; "
            f"n/a = not defined by these labels):\n{table.to_string(na_rep='n/a')}")
    if aggregation == "pooled":
        pooled = [f"  {METRICS[m].label}: {how[m]}" for m in METRICS if how.get(m, "mean over answers") != "mean over answers"]
        if pooled:
            text += "\nhow each pooled value is formed:\n" + "\n".join(pooled)
    cells = part[part["query_type"] == query_type]
    if "reason" in cells.columns:  # results built before judged shares were kept have no such column
        judged = cells[cells["reason"].fillna("") != ""]
        if len(judged):
            text += ("\nn/a because too few of their units were judged (a cell needs at least half; "
                     "docs/metrics/unknown.md):")
            for r in judged.to_dict("records"):
                text += f"\n  {METRICS[r['metric']].label} · {r['engine']}: {r['reason']}"
    return text


def cmd_compare_gold(args: argparse.Namespace) -> int:
    from pipeline.gold.compare_gold import comparison_table, default_name, is_hagrid, plan_gold, published_reference, report_json
    from pipeline.runner import run_dataset

    plan = plan_gold(args.gold, args.answers, answers_format=args.answers_format, gold_path=args.gold_path,
                     gold_format=args.gold_format)
    result = run_dataset(args.dataset or default_name(args.answers, args.gold), args.answers, importer=args.answers_format,
                         judge_name=args.judge, limit=args.limit, progress=not args.no_progress, transform=plan.attach,
                         config_extra=plan.config(), allow_empty=args.allow_empty)
    reference = published_reference() if is_hagrid(args.gold, args.gold_path, args.gold_format) else None
    table = comparison_table(result.summary, reference)
    if args.json:
        print(json.dumps(report_json(plan, result.dataset, result.judge, result.out_dir, table), indent=2, ensure_ascii=False))
        return 0
    print(f"compared {plan.answers} answers with the gold answers of {args.gold} ({plan.matched} ask one of its "
          f"{plan.gold_queries} queries); judge {result.judge}; results in {result.out_dir}")
    if plan.unmatched_examples:
        print("answers without a gold answer (correctness and overlap are n/a for them), e.g.: "
              + "; ".join(repr(q) for q in plan.unmatched_examples))
    print("strict rules, all queries; values x100; n/a = not scorable:")
    print(table.to_string(na_rep="n/a"))
    if reference is not None and len(reference):
        print("(paper) columns: Djeddal et al. 2024, Table 2, from other systems, a T5 NLI model and the original "
              "BERTScore model; BLEU there is corpus-level. A scale to read against, not a target.")
    return 0


def cmd_scorecard(args: argparse.Namespace) -> int:
    from pipeline.storage.store import check_results, list_judges, read_table, results_unverified, table_path

    check_results(args.dataset)  # a set that does not match its list is an error, never a scorecard
    judges = list_judges(args.dataset)
    if not judges:
        raise InputError(f"no results for dataset {args.dataset!r}; run `python -m pipeline run --dataset {args.dataset}`")
    judge = args.judge or judges[0]
    if judge not in judges:
        raise InputError(f"no results for judge {judge!r}; have {', '.join(judges)}", field="--judge")
    if args.ppi:
        from pipeline.audit.cli import print_ppi

        return print_ppi(args, judge)
    summary = read_table(table_path(args.dataset, "summary", judge))
    if results_unverified(args.dataset):
        print(f"note: the results of {args.dataset!r} were written before result sets were checked; "
              f"run `aee run --dataset {args.dataset}` again to write a checked set", file=sys.stderr)
    from pipeline.metrics import effective_necessity

    necessity = effective_necessity(args.mode, args.necessity)
    if args.json:
        from pipeline.aggregate import with_aggregation

        part = summary[(summary["mode"] == args.mode) & (summary["necessity"] == necessity) & (summary["query_type"] == args.query_type)]
        print(with_aggregation(part, args.aggregation).to_json(orient="records", indent=2))
    else:
        print(_scorecard_text(summary, args.mode, necessity, args.query_type, args.aggregation))
    return 0


def cmd_datasets(args: argparse.Namespace) -> int:
    from pipeline.importers import known_datasets
    from pipeline.storage.store import broken_datasets, list_datasets, list_judges

    for name, info in known_datasets().items():
        where = str(info.path) if info.path else f"not found ({info.how_to_get})"
        print(f"{name:<10} {info.importer:<10} {where}")
    for name in list_datasets():
        print(f"results: {name} judges={', '.join(list_judges(name)) or '-'}")
    for name, problem in broken_datasets().items():
        print(f"results: {name} NOT SHOWN: {problem}; run `aee run --dataset {name}` again")
    return 0


def cmd_formats(args: argparse.Namespace) -> int:
    from pipeline.importers import IMPORTERS

    for name, info in IMPORTERS.items():
        print(f"{name:<17} {info.description}")
    return 0


def cmd_build_default(args: argparse.Namespace) -> int:
    from pipeline.default_data import build_default

    for line in build_default(force=args.force):
        print(line)
    return 0


def cmd_app(args: argparse.Namespace) -> int:
    import subprocess

    from pipeline.storage.paths import REPO_ROOT, is_checkout

    # dashboard/serve.py: Streamlit's ASGI app running the router (the checkout's app.py, or the
    # wheel's dashboard/app.py), plus the middleware that spares a directly opened page two 404s.
    if is_checkout() and (REPO_ROOT / "dashboard" / "serve.py").is_file():
        script = REPO_ROOT / "dashboard" / "serve.py"
    else:  # located, not imported: the pipeline never imports the dashboard
        import importlib.util

        spec = importlib.util.find_spec("dashboard.serve")
        if spec is None or spec.origin is None:
            raise InputError("the dashboard is not installed with this package")
        script = Path(spec.origin)
    from pipeline import room

    address = room.resolve_bind(args.address)  # an interface name becomes its address
    room.check_bind(address, args.port)  # before the URL is printed and the server started
    env = dict(os.environ)
    code = room.normalise_code(args.join_code) or room.configured_code()
    if room.served_to_network(address):
        code = code or room.new_join_code()
        env[room.JOIN_CODE_ENV] = code
    cmd = [sys.executable, "-m", "streamlit", "run", str(script), "--server.headless", "true",
           "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
           "--server.port", str(args.port), "--server.address", address]
    for line in room.serve_lines(address, args.port, code):
        print(line, file=sys.stderr)
    return subprocess.call(cmd, env=env)


COMMANDS = {
    "score": cmd_score,
    "run": cmd_run,
    "import": cmd_import,
    "scorecard": cmd_scorecard,
    "compare-gold": cmd_compare_gold,
    "datasets": cmd_datasets,
    "formats": cmd_formats,
    "build-default": cmd_build_default,
    "app": cmd_app,
}
