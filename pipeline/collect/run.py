"""The collect loop: ask each query once, write one capture envelope per answer, resume where a run
stopped.

- One file per answer, `<out>/<engine>-<hash of engine, model, query>.json`, written through a
  temporary file and a rename, so a killed run leaves whole envelopes only. A query whose file
  exists is never asked again; a rerun asks only what is missing.
- At most `concurrency` requests are in flight. Ctrl-C (or SIGTERM) stops sending new ones and lets
  those in flight finish (within --timeout; no retry is started) and be written, so an interrupted
  run loses no paid answer. A process killed outright (SIGKILL) may lose the answers in flight:
  those queries are asked again on the next run, which also removes the temporary files such a kill
  can leave behind (never an envelope: those appear only whole, by rename).
- 429, 5xx and timeouts are retried with backoff (client.py); 401/403 stop the run (the key is
  wrong); other errors are recorded in `<out>/_collect.json` and retried by the next run.
- A response the importer cannot read (no answer text, a refusal shape, NaN, an integer too long to
  read, nesting too deep) is kept in `<out>/_rejected/` for audit and not asked again: the provider
  would send the same. A reply that starts with a UTF-8 byte-order mark is read as the JSON after it.
- `--sources fetch` then fetches every listed source through the safe fetcher (cached per day) and
  stores the pages in the envelope's `fetched`; envelopes collected earlier without pages get them on
  a rerun, with no new API call.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import math
import os
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pipeline.collect.client import Backoff, RateGate, post_json
from pipeline.collect.providers import PRICES_NOTE, PROVIDERS, Endpoint, resolve
from pipeline.collect.queries import Query, load_queries, load_query_set
from pipeline.errors import InputError
from pipeline.fetching.redact import redact
from pipeline.importers.canonical import MAX_SOURCE_CHARS
from pipeline.importers.engine_common import digest_id
from pipeline.importers.engines import FORMATS

SUMMARY_FILE = "_collect.json"
REJECTED_DIR = "_rejected"


@dataclass
class CollectConfig:
    engine: str
    queries: str
    out: Path
    model: str | None = None
    limit: int | None = None
    query_type: str | None = None
    sources: str = "snippet"  # "snippet": keep the provider's text; "fetch": fetch the pages
    concurrency: int = 4
    requests_per_minute: float | None = None  # the provider's limit for this key (None: only --concurrency and 429s)
    timeout: float = 120.0
    backoff: Backoff = field(default_factory=Backoff)
    progress: bool = True
    price_per_call: float | None = None
    fetch_allow_hosts: tuple[str, ...] = ()  # hosts the fetcher may reach although not public (tests, mirrors)
    secrets_path: Path | None = None
    repeat: int = 1  # ask each query this many times (pipeline/consistency: how much answers change)
    spacing: float = 0.0  # seconds between the starts of two rounds of repeats
    wave: str = ""  # the audit wave these captures belong to ("" : derived from the capture dates)


@dataclass
class CollectReport:
    engine: str
    model: str
    queries: int = 0
    already: int = 0
    asked: int = 0
    captured: int = 0
    rejected: int = 0
    failed: int = 0
    unfinished: int = 0  # interrupted while waiting to retry: asked again by the next run
    requests: int = 0  # HTTP requests sent, retries included
    retries: dict[str, int] = field(default_factory=dict)
    rate_pauses: int = 0  # times a 429 paused every worker
    pages_fetched: int = 0
    pages_dead: int = 0
    seconds: float = 0.0
    interrupted: bool = False
    stopped: str = ""  # why the run stopped early (a refused key)
    failures: list[dict[str, str]] = field(default_factory=list)

    def line(self) -> str:
        retries = sum(self.retries.values())
        why = ", ".join(f"{k} x{v}" for k, v in sorted(self.retries.items()))
        return (f"collect {self.engine} ({self.model or 'default model'}): {self.queries} queries, {self.already} already collected, "
                f"{self.asked} asked: {self.captured} captured, {self.rejected} rejected, {self.failed} failed"
                + (f", {self.unfinished} left for the next run" if self.unfinished else "") + "; "
                f"{self.requests} HTTP requests ({retries} retries{': ' + why if why else ''}); "
                + (f"{self.pages_fetched} pages fetched, {self.pages_dead} dead; " if self.pages_fetched or self.pages_dead else "")
                + (f"{self.rate_pauses} rate-limit pause(s) shared by all workers; " if self.rate_pauses else "")
                + f"{self.seconds:.1f} s" + ("; interrupted" if self.interrupted else ""))


def answer_file_id(engine: str, model: str, query: str, repeat: int = 0, wave: str = "") -> str:
    """The envelope's id and file name: one per (engine, model, query), and per repeat and wave when
    a query is asked more than once (the first asking of a run without a wave keeps the old name, so
    folders collected before repeats existed resume as they are)."""
    base = f"{engine}-{digest_id(engine, model, query)}"
    if wave:
        return f"{base}-{digest_id(wave)[:8]}-r{repeat}"
    return f"{base}-r{repeat}" if repeat else base


def _todo(config: CollectConfig, model: str, queries: list[Query], done: set[str]) -> list[tuple[Query, int]]:
    """(query, repeat) pairs still to ask, round by round: every query's repeat 0, then repeat 1..."""
    return [(q, r) for r in range(max(1, config.repeat)) for q in queries
            if answer_file_id(config.engine, model, q.query, r, config.wave) not in done]


def collect(config: CollectConfig) -> CollectReport:
    """Run (or plan, see dry_run) a collection; returns what happened."""
    if config.engine not in PROVIDERS:
        raise InputError(f"unknown engine {config.engine!r}; choose one of {', '.join(PROVIDERS)}", field="--engine")
    if config.sources not in ("snippet", "fetch"):
        raise InputError("must be 'snippet' or 'fetch'", field="--sources")
    endpoint = resolve(config.engine, config.secrets_path)
    model = config.model or endpoint.provider.default_model
    queries = load_queries(config.queries, config.query_type)
    if config.limit is not None:
        queries = queries[: max(config.limit, 0)]
    report = CollectReport(config.engine, model, queries=len(queries) * max(1, config.repeat))
    done = _done_ids(config.out)
    todo = _todo(config, model, queries, done)
    report.already = report.queries - len(todo)
    if todo and not endpoint.key:
        names = " or ".join(endpoint.provider.key_env)
        raise InputError(f"no API key for {config.engine}: set {names}, or api_key in the [{config.engine}] table of "
                         ".streamlit/secrets.toml", field="--engine")
    config.out.mkdir(parents=True, exist_ok=True)
    for stale in config.out.glob(f".{config.engine}-*.json.*.tmp"):  # half-written by a run killed outright
        stale.unlink(missing_ok=True)
    started = time.monotonic()
    stop = threading.Event()
    lock = threading.Lock()
    gate = RateGate(config.requests_per_minute, cap=config.backoff.cap)
    bar = _bar(len(todo), config)

    def finish(outcome: dict[str, Any]) -> None:
        with lock:
            report.requests += outcome.get("attempts", 0)
            for cause, n in outcome.get("retries", {}).items():
                report.retries[cause] = report.retries.get(cause, 0) + n
            kind = outcome["kind"]
            report.captured += kind == "captured"
            report.rejected += kind == "rejected"
            report.failed += kind == "failed"
            report.unfinished += kind == "unfinished"
            report.pages_fetched += outcome.get("pages", 0)
            report.pages_dead += outcome.get("dead", 0)
            if kind in ("failed", "rejected"):
                report.failures.append({"kind": kind, "query": outcome["query"][:300], "id": outcome["id"],
                                        "error": outcome["error"][:500]})
            if outcome.get("fatal") and not report.stopped:
                report.stopped = outcome["error"]
                stop.set()
            bar(1)

    with cf.ThreadPoolExecutor(max_workers=max(1, min(config.concurrency, 32)), thread_name_prefix="collect") as pool:
        pending: set[cf.Future] = set()
        queue = iter(todo)
        waiting: tuple[Query, int] | None = None
        try:
            while True:
                while not stop.is_set() and len(pending) < max(1, config.concurrency):
                    item = waiting or next(queue, None)
                    if item is None:
                        break
                    if time.monotonic() < started + item[1] * config.spacing:  # its round has not begun
                        waiting = item
                        break
                    waiting = None
                    report.asked += 1
                    pending.add(pool.submit(_safe_ask, item[0], config, endpoint, model, stop, gate, item[1]))
                if not pending and (waiting is None or stop.is_set()):
                    break
                if not pending:
                    time.sleep(min(0.2, max(0.0, started + waiting[1] * config.spacing - time.monotonic())))  # type: ignore[index]
                    continue
                finished, pending = cf.wait(pending, timeout=0.2, return_when=cf.FIRST_COMPLETED)
                for fut in finished:
                    finish(fut.result())
        except KeyboardInterrupt:
            stop.set()
            report.interrupted = True
            print(f"\ninterrupted: waiting for {len(pending)} request(s) in flight to finish and be saved "
                  f"(at most {config.timeout:g} s; no retries)", file=sys.stderr)
            for fut in cf.as_completed(pending):
                finish(fut.result())
            pending = set()
        finally:
            bar(0, close=True)
    report.rate_pauses = gate.pauses
    if config.sources == "fetch" and not stop.is_set():
        _fetch_missing_pages(config, report)
    report.seconds = time.monotonic() - started
    summary_path = config.out / SUMMARY_FILE
    _write_json_atomic(summary_path, {"finished": _now(), "engine": config.engine, "model": model,
                                      "queries": config.queries, "sources": config.sources,
                                      "repeat": max(1, config.repeat), "spacing": config.spacing,
                                      "wave": config.wave,
                                      "report": asdict(report),
                                      "rejected_dir": str(config.out / REJECTED_DIR),
                                      "rejected": _all_rejected(summary_path, report)})
    return report


def _all_rejected(summary_path: Path, report: CollectReport) -> list[dict[str, str]]:
    """Every reply rejected so far in this folder, earlier runs' included: a rerun never asks a
    rejected query again, so its report alone would lose the record (each reply is in `_rejected/`)."""
    kept: dict[str, dict[str, str]] = {}
    try:
        earlier = json.loads(summary_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        earlier = {}
    previous = earlier.get("rejected") if isinstance(earlier, dict) else None
    if not isinstance(previous, list):  # a summary from before the cumulative list: its own run's rejections
        old_report = earlier.get("report") if isinstance(earlier, dict) else None
        previous = old_report.get("failures", []) if isinstance(old_report, dict) else []
        previous = [f for f in previous if isinstance(f, dict) and
                    (f.get("kind") == "rejected" or str(f.get("error", "")).startswith("record "))]
    for entry in previous or []:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            kept[entry["id"]] = {k: str(entry.get(k, ""))[:500] for k in ("id", "query", "error")}
    for failure in report.failures:
        if failure.get("kind") == "rejected":
            kept[failure["id"]] = {k: failure[k] for k in ("id", "query", "error")}
    return [kept[k] for k in sorted(kept)]


def exit_code(report: CollectReport) -> int:
    """0: every query asked has its envelope (a rejected reply kept in `_rejected/` counts: it is
    not asked again); 1: some or all queries failed (a rerun retries them), or queries were asked
    and none was captured; 130: interrupted. A stopped run (refused key or redirect) is exit 2,
    raised by the command as bad input."""
    if report.interrupted:
        return 130
    if report.failed or report.unfinished or (report.asked and not report.captured):
        return 1
    return 0


def problem_lines(report: CollectReport, limit: int = 10) -> list[str]:
    """One line per rejected or failed query of this run (at most `limit`, then how many more)."""
    from pipeline.errors import one_line

    shown = [f for f in report.failures if not report.stopped or f.get("error") != report.stopped]  # said once, below
    ordered = sorted(shown, key=lambda f: (f.get("kind") != "rejected", f.get("id", "")))
    def why(f: dict[str, str]) -> str:
        error = f.get("error", "")
        prefix = f"record {f.get('id', '')}: "  # the importer's error names the record: said once already
        return one_line(error[len(prefix):] if error.startswith(prefix) else error, 300)

    lines = [f"{f.get('kind', 'failed')} {f.get('id', '')} ({one_line(f.get('query', ''), 60)}): {why(f)}"
             for f in ordered[:limit]]
    if len(ordered) > limit:
        lines.append(f"and {len(ordered) - limit} more")
    return lines


def plan(config: CollectConfig) -> list[str]:
    """What a run would do, without any network: calls, cost estimate, key found or not."""
    if config.engine not in PROVIDERS:
        raise InputError(f"unknown engine {config.engine!r}; choose one of {', '.join(PROVIDERS)}", field="--engine")
    endpoint = resolve(config.engine, config.secrets_path)
    provider = endpoint.provider
    model = config.model or provider.default_model
    queries, repeats = load_query_set(config.queries, config.query_type)
    if config.limit is not None:
        queries = queries[: max(config.limit, 0)]
    done = _done_ids(config.out)
    pairs = _todo(config, model, queries, done)
    todo = [q for q, _ in pairs]
    asked = len(queries) * max(1, config.repeat)
    price = provider.price_per_call if config.price_per_call is None else config.price_per_call
    basis = "--price-per-call" if config.price_per_call is not None else f"{provider.price_basis}; {PRICES_NOTE}"
    key = "found" if endpoint.key else f"NOT found (set {' or '.join(provider.key_env)})"
    types = {t: sum(q.query_type == t for q in todo) for t in ("debate", "expertise")}
    path, _, _ = provider.request("…", model)
    lines = [f"dry run: {config.engine} ({model or 'default model'}) at {endpoint.url(path)}; nothing is sent",
             f"{len(queries)} queries" + (f" ({repeats} repeated question(s) in the set asked once)" if repeats else "")
             + (f", each asked {config.repeat} times" + (f" (rounds {config.spacing:g} s apart)" if config.spacing else "")
                if config.repeat > 1 else "")
             + (f", wave {config.wave!r}" if config.wave else "")
             + f" to consider, {asked - len(todo)} already collected in {config.out}, "
             f"{len(todo)} to ask ({types['debate']} debate, {types['expertise']} expertise)",
             f"calls: {len(todo)} (more only if some are retried after 429/5xx/timeouts)",
             f"estimated cost: ${len(todo) * price:,.2f} ({len(todo)} x ${price:g}; {basis})",
             f"pace: at most {max(1, config.concurrency)} request(s) in flight"
             + (f", at most {config.requests_per_minute:g} a minute (at least {len(todo) / config.requests_per_minute:.1f} min)"
                if config.requests_per_minute else "") + "; a 429 pauses every worker for its Retry-After",
             f"key: {key}",
             f"sources: {config.sources} (" + ("the cited pages are fetched after each answer; the fetch costs no API call)"
                                              if config.sources == "fetch" else "the provider's snippets are the source text)")]
    return lines


# ---- one question --------------------------------------------------------------------------------


def _safe_ask(q: Query, config: CollectConfig, endpoint: Endpoint, model: str, stop: threading.Event,
              gate: RateGate | None = None, repeat: int = 0) -> dict[str, Any]:
    try:
        return _ask(q, config, endpoint, model, stop, gate, repeat)
    except Exception as exc:  # noqa: BLE001 - one odd answer (a disk error, a fetcher bug) must not end the run
        error = redact(f"{type(exc).__name__}: {exc}", [endpoint.key])
        return {"query": q.query, "id": answer_file_id(config.engine, model, q.query, repeat, config.wave), "kind": "failed",
                "error": error}


def _ask(q: Query, config: CollectConfig, endpoint: Endpoint, model: str, stop: threading.Event,
         gate: RateGate | None = None, repeat: int = 0) -> dict[str, Any]:
    provider = endpoint.provider
    answer_id = answer_file_id(config.engine, model, q.query, repeat, config.wave)
    path, headers, body = provider.request(q.query, model)
    key = endpoint.key or ""
    result = post_json(endpoint.url(path), {**headers, **provider.auth_headers(key)}, body,
                       timeout=config.timeout, backoff=config.backoff, stop=stop, secret=key, gate=gate)
    outcome: dict[str, Any] = {"query": q.query, "id": answer_id, "attempts": result.attempts, "retries": result.retries}
    if not result.ok and result.unusable:  # the provider would send the same again: kept once, not re-asked
        rejected = {"query": q.query, "query_type": q.query_type, "engine": config.engine, "model": model,
                    "captured_at": _now(), "request": body, "response_text": result.text,
                    "rejected": redact(result.error, [key]),
                    "collector": {"tool": "aee collect", "file_id": answer_id, "attempts": result.attempts}}
        _write_json_atomic(config.out / REJECTED_DIR / f"{answer_id}.json", _scrub(rejected, key))
        return outcome | {"kind": "rejected", "error": rejected["rejected"]}
    if not result.ok:
        kind = "unfinished" if result.stopped else "failed"
        return outcome | {"kind": kind, "error": redact(result.error, [key]), "fatal": result.fatal}
    # No "id": the answer id comes from the query and the response's own id, exactly as for the same
    # response exported by hand, so both import to the same records. The file name keeps the capture id.
    envelope: dict[str, Any] = {
        "query": q.query, "query_type": q.query_type, "engine": config.engine, "format": provider.response_format,
        "model": model, "captured_at": _now(), "request": body, "response": result.body,
        **({"repeat": repeat} if config.repeat > 1 or repeat else {}), **({"wave": config.wave} if config.wave else {}),
        "collector": {"tool": "aee collect", "file_id": answer_id, "attempts": result.attempts, "seconds": round(result.seconds, 3),
                      **({"query_id": q.query_id} if q.query_id else {})},
    }
    try:
        unreadable = _unreadable(result.body)
        if unreadable:  # saved as captured, it would refuse `aee run --path` the whole folder
            envelope["response"] = _printable(result.body)
            raise InputError(f"the response cannot be saved and read back: {unreadable}", record=answer_id)
        parsed = FORMATS[provider.response_format].parse(result.body, answer_id) if isinstance(result.body, dict) else None
        if parsed is None or not parsed.text.strip():
            raise InputError("the response holds no answer text", record=answer_id)
    except InputError as exc:
        envelope["rejected"] = redact(str(exc), [key])
        _write_json_atomic(config.out / REJECTED_DIR / f"{answer_id}.json", envelope)
        return outcome | {"kind": "rejected", "error": envelope["rejected"]}
    pages = dead = 0
    if config.sources == "fetch":
        envelope["fetched"], pages, dead = _fetch_pages([s.url for s in parsed.sources.items], config)
    _write_json_atomic(config.out / f"{answer_id}.json", _scrub(envelope, key))
    return outcome | {"kind": "captured", "pages": pages, "dead": dead}


def _unreadable(body: Any) -> str | None:
    """Why a parsed reply could not be written as JSON and read back as it was (None when it can):
    NaN or Infinity (not JSON; the importer refuses them) or a lone surrogate (not UTF-8)."""
    try:
        json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except ValueError as exc:
        if isinstance(exc, UnicodeEncodeError):
            return "it holds a lone surrogate (\\u" + f"{ord(exc.object[exc.start]):04x}), which is not text"
        return "it holds NaN or Infinity, which JSON has no value for"
    except RecursionError:
        return "it is nested too deeply"
    return None


def _printable(value: Any, depth: int = 0) -> Any:
    """The reply as it can be written for the audit trail: non-finite numbers as their names, lone
    surrogates escaped, nesting cut at 200 levels."""
    if depth > 200:
        return "(nested deeper than 200 levels)"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_printable(k, depth + 1): _printable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_printable(v, depth + 1) for v in value]
    return value


def _fetch_pages(urls: list[str], config: CollectConfig) -> tuple[dict[str, dict], int, int]:
    """The listed sources' pages through the safe fetcher (failures recorded: they become dead sources)."""
    from pipeline.fetching.fetch import fetch_many

    unique = [u for u in dict.fromkeys(urls) if u]
    web = [u for u in unique if u.lower().startswith(("http://", "https://"))]
    results = fetch_many(web, allow_hosts=config.fetch_allow_hosts, timeout=min(config.timeout, 30)) if web else []
    fetched: dict[str, dict] = {u: {"ok": False, "status": None, "reason": "not an http(s) address", "title": "", "text": ""}
                                for u in unique if u not in web}
    for r in results:
        fetched[r.url] = {"ok": r.ok, "status": r.status, "reason": r.reason, "final_url": r.final_url, "title": r.title,
                          "text": r.text[:MAX_SOURCE_CHARS], "fetched_at": r.fetched_at}
    ok = sum(1 for v in fetched.values() if v["ok"])
    return fetched, ok, len(fetched) - ok


def _fetch_missing_pages(config: CollectConfig, report: CollectReport) -> None:
    """Envelopes collected without pages (an earlier --sources snippet run) get them now."""
    for path in sorted(config.out.glob("*.json")):
        if path.name.startswith(("_", ".")):
            continue
        try:
            envelope = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(envelope, dict) or "fetched" in envelope or envelope.get("engine") != config.engine:
            continue
        fmt = envelope.get("format")
        if fmt not in FORMATS or not isinstance(envelope.get("response"), dict):
            continue
        try:
            parsed = FORMATS[fmt].parse(envelope["response"], path.name)
        except InputError:
            continue
        envelope["fetched"], pages, dead = _fetch_pages([s.url for s in parsed.sources.items], config)
        report.pages_fetched += pages
        report.pages_dead += dead
        _write_json_atomic(path, envelope)


# ---- files ---------------------------------------------------------------------------------------


def _done_ids(out: Path) -> set[str]:
    if not out.is_dir():
        return set()
    names = {p.stem for p in out.glob("*.json") if not p.name.startswith(("_", "."))}
    return names | {p.stem for p in (out / REJECTED_DIR).glob("*.json")}


def _write_json_atomic(path: Path, payload: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, ensure_ascii=False, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _scrub(envelope: dict, key: str) -> dict:
    """The envelope with the key removed wherever a provider might have echoed it back."""
    if not key or len(key) < 4:
        return envelope
    text = json.dumps(envelope, ensure_ascii=False)
    return json.loads(text.replace(key, "***")) if key in text else envelope


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _bar(total: int, config: CollectConfig):
    if not config.progress:
        return lambda n, close=False: None
    from tqdm import tqdm

    bar = tqdm(total=total, desc=f"collect {config.engine}", unit="query", file=sys.stderr, leave=True)

    def tick(n: int, close: bool = False) -> None:
        bar.update(n)
        if close:
            bar.close()

    return tick
