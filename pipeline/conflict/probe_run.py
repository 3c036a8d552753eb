"""Running the convincingness probe: plan every call, ask what the cache lacks, write the results.

For each question, every (yes paragraph, no paragraph) pair is asked in both orders: once for the
unperturbed paragraphs ("original") and once per perturbation, which edits the paragraphs of one
stance (`perturb_stance`, "yes" by default as in the seed study) and leaves their opponents as they
are. Answers are cached as they arrive, so an interrupted run resumes where it stopped.

Results go to `<results>/_probes/conflict/<name>/` (a folder no dataset name can take):
`calls.parquet` (one row per question asked), `paragraphs.parquet` (win-rate per paragraph and
variant), `effects.parquet` (win-rate change per perturbation) and `summary.json` (settings,
order bias, provenance). Each file is written atomically; `summary.json` last.
"""

from __future__ import annotations

import json
import math
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import pandas as pd
import pyarrow as pa

from pipeline.conflict import probe_ask, probe_stats
from pipeline.conflict.perturb import ORIGINAL, PERTURBATIONS
from pipeline.conflict.probe_data import ProbeData, Question
from pipeline.errors import InputError
from pipeline.storage.paths import cache_dir, results_dir
from pipeline.storage.store import git_sha, write_atomic, write_json_atomic

OUTPUT_TOKENS_PER_CALL = 2  # "Yes" / "No" and an end token
MAX_CALLS = 1_000_000  # a plan larger than this is refused (pairs grow with the square of paragraphs)

CALL_COLUMNS = ["question_id", "variant", "yes_id", "no_id", "order", "first_stance", "answer", "p_yes", "method", "raw",
                "error", "cached"]


def probes_root(root: Path | None = None) -> Path:
    """Where probe runs are written (`_probes/conflict` under the results folder)."""
    return (root or results_dir()) / "_probes" / "conflict"


def default_cache_path() -> Path:
    return cache_dir() / "conflict_probe.sqlite"


def run_name(model: str, data_path: Path) -> str:
    """A folder name from the model and the data file ("gpt-4o-mini-illustrative")."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", f"{model}-{data_path.stem}").strip("._-")[:100] or "probe"


@dataclass(frozen=True)
class PlannedCall:
    question_id: str
    variant: str
    yes_id: str
    no_id: str
    order: str  # "yes_first" | "no_first"
    messages: list[dict[str, str]] = field(hash=False)
    key: str = ""

    @property
    def first_stance(self) -> str:
        return "yes" if self.order == "yes_first" else "no"


def _texts(question: Question, variant: str, stance: str) -> dict[str, str]:
    """Paragraph id -> the text shown in this variant (edited only on the perturbed stance)."""
    edit = PERTURBATIONS[variant].apply if variant != ORIGINAL else None
    return {p.id: edit(p.text, question.question) if edit and p.stance == stance else p.text for p in question.paragraphs}


def plan_calls(data: ProbeData, perturbations: list[str], model: str, base_url: str | None,
               perturb_stance: str = "yes") -> list[PlannedCall]:
    """Every call of a run, in a stable order (question, variant, yes paragraph, no paragraph, order)."""
    n = sum(len(q.side("yes")) * len(q.side("no")) * 2 for q in data.questions) * (1 + len(perturbations))
    if n > MAX_CALLS:
        raise ValueError(f"the plan has {n:,} calls; the limit is {MAX_CALLS:,} (use fewer paragraphs or perturbations)")
    calls = []
    for q in data.questions:
        for variant in [ORIGINAL, *perturbations]:
            texts = _texts(q, variant, perturb_stance)
            for y in q.side("yes"):
                for no in q.side("no"):
                    for order, first, second in (("yes_first", y.id, no.id), ("no_first", no.id, y.id)):
                        msgs = probe_ask.messages(q.question, texts[first], texts[second])
                        calls.append(PlannedCall(q.id, variant, y.id, no.id, order, msgs,
                                                 probe_ask.request_key(base_url, model, msgs)))
    return calls


def estimate(calls: list[PlannedCall], cache: probe_ask.ProbeCache, prices_per_1m: tuple[float, float]) -> dict[str, Any]:
    """Calls, how many the cache already answers, tokens (characters / 4) and cost of the rest."""
    def tokens(chosen: list[PlannedCall]) -> tuple[int, int, float]:
        tokens_in = sum(math.ceil(sum(len(m["content"]) for m in c.messages) / 4) + 8 for c in chosen)
        tokens_out = OUTPUT_TOKENS_PER_CALL * len(chosen)
        return tokens_in, tokens_out, tokens_in / 1e6 * prices_per_1m[0] + tokens_out / 1e6 * prices_per_1m[1]

    missing = [c for c in calls if cache.get(c.key) is None]
    tokens_in, tokens_out, cost = tokens(missing)
    by_variant: dict[str, int] = {}
    for c in calls:
        by_variant[c.variant] = by_variant.get(c.variant, 0) + 1
    return {"estimate": True, "calls": len(calls), "calls_by_variant": by_variant, "cached": len(calls) - len(missing),
            "to_send": len(missing), "input_tokens": tokens_in, "output_tokens": tokens_out,
            "prices_per_1m_usd": {"input": prices_per_1m[0], "output": prices_per_1m[1]}, "cost_usd": round(cost, 6),
            "cost_usd_without_cache": round(tokens(calls)[2], 6),
            "note": "estimate: input tokens as characters / 4 plus a small overhead per message; "
                    "log-probabilities and retries are not priced"}


@dataclass
class ProbeResult:
    out_dir: Path
    calls: pd.DataFrame
    paragraphs: pd.DataFrame
    effects: pd.DataFrame
    summary: dict[str, Any]


def ask_all(calls: list[PlannedCall], asker: probe_ask.Asker, cache: probe_ask.ProbeCache, *, concurrency: int = 4,
            progress: bool = True) -> list[tuple[probe_ask.ProbeReply, bool]]:
    """(reply, from cache?) per planned call, in plan order; new answers are cached as they arrive
    (failures are not, so a rerun retries them)."""
    out: list[tuple[probe_ask.ProbeReply, bool] | None] = [None] * len(calls)
    todo = []
    for k, call in enumerate(calls):
        hit = cache.get(call.key)
        if hit is not None:
            out[k] = (hit, True)
        else:
            todo.append(k)
    bar = None
    if progress and todo:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), desc="asking", unit="call", leave=True)

    def one(k: int) -> None:
        reply = asker.ask(calls[k].messages)
        if reply.method != "error":
            cache.put(calls[k].key, reply)
        out[k] = (reply, False)
        if bar is not None:
            bar.update(1)

    try:
        if concurrency <= 1 or len(todo) <= 1:
            for k in todo:
                one(k)
        else:
            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                list(pool.map(one, todo))
    finally:
        if bar is not None:
            bar.close()
    return [item for item in out if item is not None]


def failure_reasons(frame: pd.DataFrame, limit: int = 5) -> list[dict[str, Any]]:
    """The distinct errors of the failed calls with how many calls had each, commonest first."""
    errors = frame.loc[frame["method"] == "error", "error"].fillna("").astype(str)
    counts = errors.value_counts()
    ordered = sorted(counts.items(), key=lambda item: (-int(item[1]), item[0]))
    out: list[dict[str, Any]] = [{"error": str(e)[:300] or "(no reason given)", "calls": int(n)} for e, n in ordered[:limit]]
    if len(ordered) > limit:
        out.append({"error": f"{len(ordered) - limit} other reason(s)", "calls": int(sum(n for _, n in ordered[limit:]))})
    return out


def _paragraph_frame(data: ProbeData, perturbations: list[str], perturb_stance: str) -> pd.DataFrame:
    return pd.DataFrame([
        {"question_id": q.id, "question": q.question, "paragraph_id": p.id, "stance": p.stance, "url": p.url, "text": p.text,
         "perturbed_in": [v for v in perturbations if p.stance == perturb_stance]}
        for q in data.questions for p in q.paragraphs
    ])


def run_probe(data: ProbeData, asker: probe_ask.Asker, cache: probe_ask.ProbeCache, *, perturbations: list[str],
              out_dir: Path, perturb_stance: str = "yes", concurrency: int = 4, progress: bool = True,
              echo: Callable[[str], None] | None = None) -> ProbeResult:
    """Plan, ask, compute and write one probe run."""
    calls = plan_calls(data, perturbations, asker.model, asker.base_url, perturb_stance)
    replies = ask_all(calls, asker, cache, concurrency=concurrency, progress=progress)
    if asker.refused is not None:  # a configuration error, not a failed call: the last run's files stay
        raise InputError(f"the probe stopped at its first refused call and sent no more: {asker.refused}; "
                         f"nothing was written to {out_dir} (answers already cached are kept)", field="--base-url")
    frame = pd.DataFrame([
        {"question_id": c.question_id, "variant": c.variant, "yes_id": c.yes_id, "no_id": c.no_id, "order": c.order,
         "first_stance": c.first_stance, "answer": r.answer, "p_yes": r.p_yes, "method": r.method, "raw": r.raw,
         "error": r.error, "cached": cached}
        for c, (r, cached) in zip(calls, replies)
    ], columns=CALL_COLUMNS)
    meta = _paragraph_frame(data, perturbations, perturb_stance)
    paragraphs = probe_stats.paragraph_table(frame, meta)
    paragraphs = paragraphs.merge(meta[["question_id", "paragraph_id", "question", "text"]], on=["question_id", "paragraph_id"], how="left")
    effects = probe_stats.effects(paragraphs, perturbations, perturb_stance)
    methods = frame["method"].value_counts().to_dict()
    readable = int(frame["answer"].isin(["yes", "no"]).sum())
    summary = {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"), "git_sha": git_sha(),
        "model": asker.model, "base_url": asker.endpoint(),
        "prompt": probe_ask.prompt()[2], "data": {"path": str(data.path), "sha256": data.sha256, "illustrative": data.illustrative,
                                                  "questions": len(data.questions), "skipped_questions": list(data.skipped)},
        "perturbations": {p: PERTURBATIONS[p].description for p in perturbations}, "perturb_stance": perturb_stance,
        "calls": len(frame), "from_cache": int(frame["cached"].sum()), "readable": readable,
        "failed": int(methods.get("error", 0)), "unreadable": int(methods.get("unparsed", 0)),
        "read_from_logprobs": int(methods.get("logprobs", 0)), "read_from_word": int(methods.get("word", 0)),
        "order_bias": probe_stats.order_bias(frame),
        "failure_reasons": failure_reasons(frame),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / "calls.parquet", pa.Table.from_pandas(frame, preserve_index=False))
    write_atomic(out_dir / "paragraphs.parquet", pa.Table.from_pandas(paragraphs, preserve_index=False))
    write_atomic(out_dir / "effects.parquet", pa.Table.from_pandas(effects, preserve_index=False))
    write_json_atomic(out_dir / "summary.json", summary)
    return ProbeResult(out_dir, frame, paragraphs, effects, summary)


def list_runs(root: Path | None = None) -> list[Path]:
    """Probe run folders that hold a summary, newest first."""
    base = probes_root(root)
    if not base.is_dir():
        return []
    runs = [p for p in base.iterdir() if p.is_dir() and (p / "summary.json").is_file()]
    return sorted(runs, key=lambda p: (p / "summary.json").stat().st_mtime, reverse=True)


def load_run(folder: Path) -> dict[str, Any]:
    """A run's tables and summary (missing tables come back empty)."""
    def table(name: str) -> pd.DataFrame:
        path = folder / f"{name}.parquet"
        return pd.read_parquet(path) if path.is_file() else pd.DataFrame()

    return {"summary": json.loads((folder / "summary.json").read_text(encoding="utf-8")), "calls": table("calls"),
            "paragraphs": table("paragraphs"), "effects": table("effects")}
