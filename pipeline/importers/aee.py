"""Importer for the AEE release (`ans_eng_eval_0.1.json` + `*_support_results.jsonl`).

The release carries GPT-4o labels from the paper's own run; they become verdicts of the `recorded`
judge so that paper-parity aggregation reproduces the published scorecard. A source counts as
fetched when its content starts with "Title:" (the release's marker of a successful fetch).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pipeline.errors import InputError
from pipeline.importers.canonical import read_objects
from pipeline.importers.refusals import Refusals, refuse_or_raise
from pipeline.records import CONFIDENCE_LEVELS, AnnotatedAnswer, Answer, Source, Statement, Verdict

JUDGE = "recorded"
PROMPT = "aee-release-0.1"
MAX_SOURCES = 10
MAX_CITATION = 10_000  # a citation index beyond this is a broken file (and would not fit the tables)
_STATEMENT_ID_RE = re.compile(r"-?[0-9]{1,9}")
_CONFIDENCE_BY_NAME = {name.lower(): level for level, name in CONFIDENCE_LEVELS.items()}


def _paths(path: Path) -> tuple[Path, Path | None]:
    """The answers file and its support-results companion (if any) for a file or folder path."""
    if path.is_dir():
        candidates = sorted(p for p in path.glob("*.json") if not p.name.endswith("_support_results.json"))
        if not candidates:
            raise InputError("no *.json answers file in folder", record=str(path))
        path = candidates[0]
    companion = path.with_name(path.stem + "_support_results.jsonl")
    return path, companion if companion.exists() else None


def _support_table(path: Path | None, refusals: Refusals | None = None) -> dict[tuple[str, int, int], str]:
    """(sample id, statement id, source index) -> support label from the companion file; with
    `refusals`, a bad row is refused (its pair then has no label) and the rest read."""
    table: dict[tuple[str, int, int], str] = {}
    if path is None:
        return table
    for where, row in read_objects(path, refusals):
        try:
            key, label = _support_row(row, where)
        except InputError as exc:
            refuse_or_raise(refusals, exc, path.name)
            continue
        table[key] = label
    return table


def _support_row(row: Any, where: str) -> tuple[tuple[str, int, int], str]:
    """One row of the support results: its (sample, statement, source) key and its label."""
    if not isinstance(row, dict):
        raise InputError("expected a JSON object", record=where)
    try:
        key = (str(row["sample_id"]), int(row["core_statement_id"]), int(row["source_idx"]))
        label = str(row["support"]).strip().lower()
    except (KeyError, TypeError, ValueError, OverflowError) as exc:  # OverflowError: int(1e999)
        raise InputError(f"bad support row ({exc})", record=where, field="sample_id/core_statement_id/source_idx/support") from exc
    if label not in ("full", "partial", "none"):
        raise InputError(f"unknown support label {label[:20]!r}", record=where, field="support")
    return key, label


def load_aee(path: str | Path, refusals: Refusals | None = None) -> list[AnnotatedAnswer]:
    """Read the AEE release with its recorded labels; with `refusals`, a bad record (of the answers
    or of the support results) is refused and the rest read."""
    answers_path, support_path = _paths(Path(path))
    support = _support_table(support_path, refusals)
    out: list[AnnotatedAnswer] = []
    seen: set[str] = set()
    for where, obj in read_objects(answers_path, refusals):
        try:
            annotated = _parse(obj, where, support, support_path is not None)
            if annotated.answer.answer_id in seen:
                raise InputError("duplicate id", record=where, field="id")
        except InputError as exc:
            refuse_or_raise(refusals, exc, answers_path.name)
            continue
        seen.add(annotated.answer.answer_id)
        out.append(annotated)
    return out


def _get(obj: dict, name: str, where: str, kind: type | tuple[type, ...]) -> Any:
    if name not in obj:
        raise InputError("missing required field", record=where, field=name)
    value = obj[name]
    if not isinstance(value, kind):
        raise InputError(f"unexpected type {type(value).__name__}", record=where, field=name)
    return value


def _indexes(st: dict, name: str, where: str, field: str) -> list[int]:
    """A statement's list of source indexes (integers, or integer-like strings/floats as before)."""
    value = st.get(name) or []
    if not isinstance(value, list):
        raise InputError(f"expected a list of source indexes, got {type(value).__name__}", record=where, field=f"{field}.{name}")
    try:
        out = [int(c) for c in value]
    except (TypeError, ValueError, OverflowError) as exc:  # OverflowError: int(1e999)
        raise InputError("citations must be integers", record=where, field=f"{field}.{name}") from exc
    if any(abs(c) > MAX_CITATION for c in out):
        raise InputError(f"source index out of range (limit {MAX_CITATION})", record=where, field=f"{field}.{name}")
    return out


def _flag(value: Any) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes")


def _parse(obj: Any, where: str, support: dict, has_support_file: bool) -> AnnotatedAnswer:
    if not isinstance(obj, dict):
        raise InputError("expected a JSON object", record=where)
    sample_id = str(_get(obj, "id", where, (str, int)))
    where = f"{where} (id {sample_id})"
    engine = _get(obj, "answer_engine", where, str)
    answer_id = f"{sample_id}:{engine}" if not sample_id.endswith(engine) else sample_id
    sources = []
    for k in range(1, MAX_SOURCES + 1):
        url = obj.get(f"S{k}") or ""
        if not isinstance(url, str) or not url.strip():
            continue
        content = obj.get(f"S{k}_content") or ""
        if not isinstance(content, str):
            content = ""
        title = content.split("\n", 1)[0].removeprefix("Title:").strip() if content.startswith("Title:") else ""
        sources.append(Source(index=k, url=url.strip(), title=title[:300], text=content, fetch_ok=content.startswith("Title:")))
    answer = Answer(
        answer_id=answer_id,
        engine=engine,
        query=_get(obj, "Question", where, str),
        query_type="debate" if _flag(obj.get("is_charged")) else "expertise",
        text=_get(obj, "Output", where, str),
        sources=tuple(sources),
        dataset="aee",
        meta={"sample_id": sample_id, "is_expertise": str(_flag(obj.get("is_expertise")))},
    )
    listed = {s.index for s in sources}
    verdicts: list[Verdict] = []

    def add(kind: str, label: str | None, raw: Any, **kw: Any) -> None:
        verdicts.append(Verdict(answer_id, kind, label, JUDGE, PROMPT, raw=str(raw)[:500], **kw))  # type: ignore[arg-type]

    conf_raw = obj.get("confidence_score")
    if conf_raw is not None:
        level = _CONFIDENCE_BY_NAME.get(str(conf_raw).strip().lower())
        add("confidence", str(level) if level else None, conf_raw)

    raw_statements = obj.get("core_statements") or []
    if not isinstance(raw_statements, list):
        raise InputError("expected a list", record=where, field="core_statements")
    statements = []
    for k, st in enumerate(raw_statements):
        field = f"core_statements[{k}]"
        if not isinstance(st, dict) or not isinstance(st.get("sentence"), str):
            raise InputError("expected an object with a sentence", record=where, field=field)
        cited = _indexes(st, "citations", where, field)
        supporting = set(_indexes(st, "supporting_sources", where, field))
        raw_id = st.get("id", k)
        raw_id = raw_id if isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool) else k
        # a bounded run of ASCII digits only: "²".isdigit() is true but int("²") fails, and a
        # 5,000-digit id exceeds Python's int-from-string limit
        statement_id = int(raw_id) if _STATEMENT_ID_RE.fullmatch(str(raw_id).strip()) else k
        ordered = list(dict.fromkeys(cited))
        start = answer.text.find(st["sentence"])
        statements.append(Statement(answer_id, k, st["sentence"], start, start + len(st["sentence"]) if start >= 0 else -1,
                                    tuple(c for c in ordered if c in listed), tuple(c for c in ordered if c not in listed)))
        add("relevance", "relevant" if str(st.get("core")).strip() == "1" else "filler", st.get("core"), statement_index=k)
        balance = st.get("opinion_balance")
        if answer.query_type == "debate" and balance in ("agree", "disagree", "neutral"):
            add("stance", balance, balance, statement_index=k)
        for s in sources:
            if not s.fetch_ok:
                continue
            if has_support_file:
                label = support.get((sample_id, statement_id, s.index))
                if label is None:
                    continue
            else:
                label = "full" if s.index in supporting else "none"
            add("support", label, label, statement_index=k, source_index=s.index)
    return AnnotatedAnswer(answer, tuple(statements), tuple(verdicts))
