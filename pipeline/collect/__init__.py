"""`aee collect`: ask an answer engine every query of a set and keep each answer as a capture
envelope (see run.py for the guarantees: atomic files, resume, bounded concurrency, retries).

    aee collect --engine perplexity --queries liu:debate --out data/captures/pplx --limit 50 --dry-run
    aee collect --engine perplexity --queries liu:debate --out data/captures/pplx --limit 50
    aee run --dataset pplx-debate --path data/captures/pplx

Exit codes: 0 every query asked has its envelope (a rejected reply, kept in `_rejected/`, counts);
1 some or all queries failed, or none of those asked was captured (a rerun retries the failed ones);
2 bad input, or the run stopped (the key refused, a redirect refused); 130 interrupted.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any

from pipeline.collect.client import Backoff
from pipeline.collect.providers import PROVIDERS
from pipeline.errors import InputError


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser("collect", help="ask an answer engine every query of a set and save each answer (capture envelopes)",
                              epilog="exit codes: 0 all asked queries saved (rejected replies kept in _rejected/ count); "
                                     "1 some or all queries failed, or none was captured (rerun to retry); "
                                     "2 bad input or the run stopped (key or redirect refused); 130 interrupted")
    p.add_argument("--engine", required=True, choices=sorted(PROVIDERS))
    p.add_argument("--queries", required=True, help="a .jsonl or .csv file with a 'query' column, or liu:debate / liu:allsouls")
    p.add_argument("--out", required=True, type=Path, help="folder for the envelopes (one .json per answer); rerun to resume")
    p.add_argument("--model", help="the engine's model (default: see `aee collect --dry-run`)")
    p.add_argument("--limit", type=int, help="only the first N queries of the set")
    p.add_argument("--dry-run", action="store_true", help="print the calls and an estimated cost; send nothing")
    p.add_argument("--sources", choices=("snippet", "fetch"), default="snippet",
                   help="snippet: the provider's excerpts are the source text; fetch: fetch the cited pages (safe fetcher)")
    p.add_argument("--query-type", choices=("debate", "expertise"), help="for queries whose set gives none")
    p.add_argument("--concurrency", type=int, default=4, help="requests in flight at once, across answers (default 4)")
    p.add_argument("--rpm", type=float, help="at most this many requests a minute (your key's limit; default: no limit "
                                             "beyond --concurrency and the provider's 429 + Retry-After, which pauses every worker)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds for one request and its whole reply before it "
                                                            "counts as timed out (a slow trickle is cut too)")
    p.add_argument("--retries", type=int, default=5, help="retries per query after 429/5xx/timeouts (default 5)")
    p.add_argument("--backoff", type=float, default=2.0, help="first retry delay in seconds, doubled each time (default 2)")
    p.add_argument("--price-per-call", type=float, help="USD per answer for the --dry-run estimate")
    p.add_argument("--fetch-allow-host", action="append", default=[], metavar="HOST:PORT",
                   help="a non-public host and port the page fetcher may reach (a local mirror: 127.0.0.1:8080); "
                        "a host without a port opens its web ports 80 and 443 only; repeatable")
    p.add_argument("--repeat", type=int, default=1, metavar="K",
                   help="ask each query K times (default 1): how much the engine's answers change (`aee compare`)")
    p.add_argument("--spacing", type=float, default=0.0, metavar="SECONDS",
                   help="with --repeat: start each round of repeats at least this long after the previous one")
    p.add_argument("--wave", default="", help="name of this audit wave (the same queries asked again on another date); "
                                              "default: waves are told apart by the capture dates")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_collect)
    return p


def cmd_collect(args: argparse.Namespace) -> int:
    from pipeline.collect.run import REJECTED_DIR, CollectConfig, collect, exit_code, plan, problem_lines

    if args.limit is not None and args.limit < 0:
        raise InputError("must be 0 or more", field="--limit")
    if not 1 <= args.concurrency <= 32:
        raise InputError("must be from 1 to 32", field="--concurrency")
    from pipeline.fetching.fetch import parse_allow_entry

    for entry in args.fetch_allow_host:
        try:
            parse_allow_entry(entry)
        except ValueError as exc:
            raise InputError(f"{exc}; write HOST:PORT (127.0.0.1:8080, [::1]:8080) or a host alone for ports 80 and 443",
                             field="--fetch-allow-host") from None
    if args.rpm is not None and not 0 < args.rpm <= 100_000:
        raise InputError("must be more than 0 and at most 100,000", field="--rpm")
    if not 0 <= args.retries <= 20 or not 0 <= args.backoff <= 600 or not 0 < args.timeout <= 3600:
        raise InputError("--retries 0..20, --backoff 0..600 s and --timeout up to 3600 s", field="--retries/--backoff/--timeout")
    if not 1 <= args.repeat <= 100 or not 0 <= args.spacing <= 7 * 86_400:
        raise InputError("--repeat 1..100 and --spacing 0..604800 s", field="--repeat/--spacing")
    if len(args.wave) > 64 or any(c in args.wave for c in "\n\r\t/\\"):
        raise InputError("at most 64 characters, no slashes or line breaks", field="--wave")
    config = CollectConfig(engine=args.engine, queries=args.queries, out=args.out, model=args.model, limit=args.limit,
                           query_type=args.query_type, sources=args.sources, concurrency=args.concurrency,
                           requests_per_minute=args.rpm, timeout=args.timeout,
                           backoff=Backoff(base=args.backoff, cap=max(60.0, args.backoff), attempts=args.retries + 1),
                           progress=not args.no_progress, price_per_call=args.price_per_call,
                           fetch_allow_hosts=tuple(args.fetch_allow_host), repeat=args.repeat, spacing=args.spacing,
                           wave=args.wave.strip())
    if args.dry_run:
        for line in plan(config):
            print(line)
        return 0
    previous = _terminate_as_interrupt()
    try:
        report = collect(config)
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(report.line())
    print(f"envelopes in {args.out}; score them with `aee run --dataset NAME --path {args.out}`")
    for line in problem_lines(report):  # why each query was rejected or failed, one line each
        print(line, file=sys.stderr)
    if report.rejected:
        replies = "reply" if report.rejected == 1 else "replies"
        print(f"{report.rejected} {replies} rejected: kept in {args.out / REJECTED_DIR} and not asked again", file=sys.stderr)
    if report.failed:
        print(f"{report.failed} queries failed (see {args.out / '_collect.json'}); rerun the same command to retry them",
              file=sys.stderr)
    if report.stopped:
        if report.stopped.startswith("redirect refused"):
            raise InputError(f"the run stopped: {report.stopped}", field=f"AEE_COLLECT_{args.engine.upper()}_BASE_URL")
        raise InputError(f"{args.engine} refused the request, so the run stopped: {report.stopped}", field="--engine")
    return exit_code(report)


def _terminate_as_interrupt() -> Any:
    """SIGTERM ends a run like Ctrl-C: answers in flight are finished and saved."""
    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, handler)
