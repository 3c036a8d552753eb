"""`aee probe conflict`: which of two conflicting paragraphs a model sides with, and what moves it.

`pipeline.cli` calls `register(subparsers)`; the subcommand sets `func(args) -> int`. Bad input
(a malformed data file, an unknown perturbation, a bad option) ends with one `error:` line and
exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pipeline.errors import InputError, one_line


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from pipeline.conflict.perturb import PERTURBATIONS

    parser = subparsers.add_parser("probe", help="probes of a model behind an OpenAI-compatible endpoint")
    sub = parser.add_subparsers(dest="probe_command", required=True)
    p = sub.add_parser(
        "conflict", help="win-rate of conflicting yes/no paragraphs, in both orders, and the effect of perturbations",
        description="For every question, ask the model each (yes, no) paragraph pair in both orders and record its "
                    "yes/no; report each paragraph's win-rate with a 95%% interval, the order bias, and how much each "
                    "perturbation changes the win-rate of the paragraphs it edits against the control.")
    p.add_argument("--data", type=Path, help="JSONL of questions with yes/no paragraphs (default: the bundled "
                                              "illustrative set, data/conflict/illustrative.jsonl)")
    p.add_argument("--model", required=True, help="model name as the endpoint knows it")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint (default: AEE_OPENAI_BASE_URL, OPENAI_BASE_URL, "
                                      "or api.openai.com); the key comes from AEE_OPENAI_API_KEY / OPENAI_API_KEY")
    p.add_argument("--perturb", default="", help=f"comma list of perturbations, or all: {', '.join(PERTURBATIONS)} "
                                                 "(the control is always added)")
    p.add_argument("--perturb-stance", choices=("yes", "no"), default="yes", help="which side's paragraphs are edited")
    p.add_argument("--name", help="run name (folder under <results>/_probes/conflict; default: model and data file)")
    p.add_argument("--out", type=Path, help="write the run here instead")
    p.add_argument("--cache", type=Path, help="SQLite cache of replies (default: <cache>/conflict_probe.sqlite)")
    p.add_argument("--no-logprobs", action="store_true", help="do not ask for log-probabilities (read the word)")
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    p.add_argument("--dry-run", action="store_true", help="print calls, what the cache already has, tokens and cost; call nothing")
    p.add_argument("--price-in", type=float, help="USD per 1M input tokens for --dry-run (default: a list price for known models)")
    p.add_argument("--price-out", type=float, help="USD per 1M output tokens for --dry-run")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_conflict)
    return parser


def cmd_conflict(args: argparse.Namespace) -> int:
    from pipeline.conflict import probe_ask, probe_run
    from pipeline.conflict.perturb import parse_perturbations
    from pipeline.conflict.probe_data import load_probe_data
    from pipeline.judges.backends.cost import DEFAULT_PRICES_PER_1M
    from pipeline.judges.backends.llm_config import DEFAULT_MODEL, resolve_endpoint

    try:
        perturbations = parse_perturbations(args.perturb)
    except ValueError as exc:
        raise InputError(str(exc), field="--perturb") from exc
    if not 1 <= args.concurrency <= 64:
        raise InputError("must be between 1 and 64", field="--concurrency")
    if not args.timeout > 0:
        raise InputError("must be positive", field="--timeout")
    data = load_probe_data(args.data)
    if not data.questions:
        raise InputError("no question has both a yes and a no paragraph", record=str(data.path))
    endpoint = resolve_endpoint(base_url=args.base_url, model=args.model)
    cache = probe_ask.ProbeCache(args.cache or probe_run.default_cache_path())
    if args.dry_run:
        try:
            calls = probe_run.plan_calls(data, perturbations, endpoint.model, endpoint.base_url, args.perturb_stance)
        except ValueError as exc:
            raise InputError(str(exc), record=str(data.path)) from exc
        known = DEFAULT_PRICES_PER_1M.get(endpoint.model, DEFAULT_PRICES_PER_1M[DEFAULT_MODEL])
        prices = (args.price_in if args.price_in is not None else known[0], args.price_out if args.price_out is not None else known[1])
        report = probe_run.estimate(calls, cache, prices)
        report.update(model=endpoint.model, questions=len(data.questions), skipped_questions=list(data.skipped),
                      illustrative=data.illustrative)
        print(json.dumps(report, indent=2))
        return 0
    if endpoint.official and not endpoint.api_key:
        raise InputError("no API key for api.openai.com: set AEE_OPENAI_API_KEY (or OPENAI_API_KEY), or pass --base-url "
                         "for a local server")
    out_dir = args.out or probe_run.probes_root() / (args.name or probe_run.run_name(endpoint.model, data.path))
    asker = probe_ask.Asker(endpoint.model, endpoint.base_url, endpoint.api_key, logprobs=not args.no_logprobs,
                            timeout=args.timeout)
    if data.illustrative:
        print("note: this data set is illustrative (written for the toolkit), not a benchmark", file=sys.stderr)
    if data.skipped:
        print(f"note: {len(data.skipped)} question(s) lack a yes or a no paragraph and are skipped", file=sys.stderr)
    try:
        result = probe_run.run_probe(data, asker, cache, perturbations=perturbations, out_dir=out_dir,
                                     perturb_stance=args.perturb_stance, concurrency=args.concurrency,
                                     progress=not args.no_progress)
    except InputError:
        raise
    except ValueError as exc:
        raise InputError(str(exc), record=str(data.path)) from exc
    print(_report(result))
    return 0 if result.summary["failed"] == 0 else 1


def _fmt(value: object) -> str:
    return "n/a" if value is None or value != value else f"{float(value):.3f}"  # type: ignore[arg-type]


def _report(result) -> str:
    s = result.summary
    bias = s["order_bias"]
    lines = [f"{s['calls']} calls ({s['from_cache']} from the cache), {s['readable']} readable answers, "
             f"{s['failed']} failed, {s['unreadable']} unreadable; {s['read_from_logprobs']} read from log-probabilities",
             f"order bias (original): first passage's side taken in {_fmt(bias['first_share'])} "
             f"[{_fmt(bias['first_ci'][0])}, {_fmt(bias['first_ci'][1])}] of answers; 'yes' in {_fmt(bias['yes_share'])} "
             f"[{_fmt(bias['yes_ci'][0])}, {_fmt(bias['yes_ci'][1])}]"]
    effects = result.effects
    for r in effects[effects["baseline"] != "original"].to_dict("records") + effects[
            (effects["baseline"] == "original") & (effects["perturbation"] == "control")].to_dict("records"):
        lines.append(f"effect of {r['perturbation']} vs {r['baseline']} on {r['stance']} paragraphs: {_fmt(r['effect'])} "
                     f"[{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}] over {r['paragraphs']} paragraphs")
    if s["failed"]:
        lines.append(f"{s['failed']} calls failed (not cached): run the same command again to retry them; why:")
        lines.extend(f"  {r['calls']} x {one_line(r['error'], 300)}" for r in s.get("failure_reasons", []))
    lines.append(f"results in {result.out_dir}")
    return "\n".join(lines)
