"""The project's canonical answer format (JSON object, JSON list, or JSONL; one answer per object).

    {"answer_id", "engine", "query", "query_type": "debate"|"expertise", "answer": "markdown",
     "sources": [{"index": 1, "url", "title", "text", "fetch_ok"?, "text_origin"?: "page"|"snippet"}],
     "labels": {"confidence": 1..5, "judged"?: "all"|"cited",
                "statements": [{"text", "relevant", "stance",
                "supported_by": [..], "partially_supported_by": [..], "not_supported_by"?: [..],
                "judged"?: "all"|"cited", "union_supported"?: bool}],
                "sources"?: [{"index": 1, "stance": "agree"|"disagree"|"neutral"|"unknown"}]}}
                                                                            (labels optional)

Which pairs a statement's support labels cover (`judged`, per statement or for all of them under
`labels`): "all" (the default) - every listed source was judged, so a source in neither list does not
support it (`none`); "cited" - only the sources the statement cites were judged (ExpertQA, HAGRID,
Liu et al.'s annotators), so an uncited pair is `unknown`, never `none`. `not_supported_by` lists the
sources judged not to support it: then exactly the three lists were judged and every other pair is
`unknown`. When every statement's labels cover only cited pairs, the answer's `support_scope` is
"cited_only", as for ExpertQA (metrics that need uncited pairs say so instead of guessing).

`labels.sources[].stance` is a listed source's own stance on a debate question (relative to the
side the question's wording takes); it becomes a `source_stance` verdict.

Statements listed in `labels.statements` are located in the answer text (spans kept) and their
citations are parsed from the markers inside their own text; without labels the answer is split.
Carried labels become verdicts of the `recorded` judge.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any, Iterable, Iterator

from pipeline.errors import InputError
from pipeline.importers.input_files import bounded_lines, open_input, read_document
from pipeline.importers.refusals import Refusals, refuse_or_raise
from pipeline.records import (
    SOURCE_STANCE_LABELS,
    STANCE_LABELS,
    SUPPORT_UNKNOWN,
    TEXT_ORIGINS,
    AnnotatedAnswer,
    Answer,
    Source,
    Statement,
    Verdict,
    unchecked_text,
)
from pipeline.text.citation_scope import META_SCOPE, SCOPES, SENTENCE, scope_for_engine, with_scope
from pipeline.text.text import find_citation_markers, split_statements, statements_for

RECORDED = "recorded"
CANONICAL_PROMPT = "canonical-labels-v1"

MAX_ANSWER_CHARS = 200_000  # a longer "answer" is a wrong file or a book (a deep-research report: ~50,000)
MAX_SOURCE_CHARS = 2_000_000
MAX_SOURCES = 500
MAX_STATEMENTS = 1_000  # given in the labels, or found by the splitter (each one is embedded and judged)
# One answer's size as the stages see it: statements x sources (one support label each) and the
# characters of all its sources together (read by the judge, the injection scan, the duplicate
# search). Below these limits an answer's cost grows linearly with its size (bench/run.py, row n);
# the single-field limits alone allowed 500 sources x 5,000 statements and a billion characters.
MAX_PAIRS_PER_ANSWER = 100_000
MAX_ANSWER_SOURCE_CHARS = 10_000_000
MAX_ID_CHARS = 1_000  # answer_id and engine appear in every row of every table and in messages
MAX_QUERY_CHARS = 100_000

_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def bad_value(obj: Any) -> tuple[str, str] | None:
    """(field path, problem) for the first value in obj that cannot be stored, else None.

    Two kinds, both legal to spell in a JSON file but failing later, while results are written:
    a string (key or value) holding a lone UTF-16 surrogate ("\\ud800" decodes to a str that cannot
    be encoded as UTF-8), and a non-finite number (NaN, Infinity, -Infinity, or 1e999, which
    overflows to Infinity). Iterative, so safe on any nesting depth.
    """
    stack: list[tuple[str, Any]] = [("", obj)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if _SURROGATE_RE.search(value):
                return path or "(value)", "text holds a lone UTF-16 surrogate (an escape such as \\ud800); not valid Unicode"
        elif isinstance(value, float):
            if not math.isfinite(value):
                name = "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"
                return path or "(value)", f"{name} is not a valid JSON number (numbers must be finite)"
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and _SURROGATE_RE.search(key):
                    return (f"{path}.(key)" if path else "(key)"), "a key holds a lone UTF-16 surrogate; not valid Unicode"
                stack.append((f"{path}.{key}" if path else str(key), item))
        elif isinstance(value, (list, tuple)):
            stack.extend((f"{path}[{k}]", item) for k, item in enumerate(value))
    return None


def check_values(obj: Any, where: str) -> None:
    """Raise a clear InputError naming the field when obj holds a value `bad_value` refuses."""
    found = bad_value(obj)
    if found is not None:
        raise InputError(found[1], record=where, field=found[0])


def read_objects(path: Path, refusals: Refusals | None = None) -> Iterator[tuple[str, Any]]:
    """Yield (location, object) from a JSON object, a JSON list or a JSONL file.

    JSONL is read line by line, so a large file is never held in memory whole; a JSON document
    (an object or a list) has to be parsed whole. A file is JSONL when its first non-blank line is
    a complete JSON value and more follows it. With `refusals`, a line (or list item) that cannot be
    read is refused and the next one read; without, the first one raises."""
    first, more = _first_line(path)
    stripped = first.lstrip("\ufeff").lstrip()
    if not stripped and not more:
        raise InputError("file is empty", record=str(path))
    if stripped[:1] not in ("[", "{") or (more and _is_whole_value(stripped)):
        yield from _read_jsonl(path, refusals)
        return
    try:
        text = read_document(path).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", record=str(path)) from exc
    try:
        data = json.loads(text)  # NaN/Infinity parse; check_values names the field
    except json.JSONDecodeError as exc:
        if more and stripped[0] == "{":  # JSONL whose first line is broken: name the line that fails
            yield from _read_jsonl(path, refusals)
            return
        raise InputError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", record=str(path)) from exc
    except (ValueError, RecursionError) as exc:  # json recurses per nesting level; a hostile file can exhaust it
        message = "JSON is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise InputError(message, record=str(path)) from exc
    if isinstance(data, list):
        for k, obj in enumerate(data):
            try:
                check_values(obj, f"{path.name}[{k}]")
            except InputError as exc:
                refuse_or_raise(refusals, exc, path.name)
                continue
            yield f"{path.name}[{k}]", obj
    else:
        check_values(data, path.name)
        yield path.name, data


def _open_text(path: Path):
    # newline="\n" splits on "\n" only: U+2028, U+2029 and U+0085 may stand raw inside a JSON
    # string (json.dumps(..., ensure_ascii=False) writes them so) and must not end a line
    return open_input(path, newline="\n")


def _first_line(path: Path) -> tuple[str, bool]:
    """The first non-blank line of a file, and whether anything non-blank follows it."""
    with _open_text(path) as handle:
        try:
            first = ""
            for _, line in bounded_lines(handle, path):
                if not first:
                    first = line if line.strip() else ""
                elif line.strip():
                    return first, True
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text (byte {exc.start})", record=str(path)) from exc
    return first, False


def _is_whole_value(line: str) -> bool:
    """True when a line is a JSON value on its own (so the file is JSONL, not a pretty-printed
    document), even if that value is too deep or holds a too-long number."""
    try:
        json.loads(line)
    except json.JSONDecodeError:
        return False
    except (ValueError, RecursionError):
        return True
    return True


def _read_jsonl(path: Path, refusals: Refusals | None = None) -> Iterator[tuple[str, Any]]:
    with _open_text(path) as handle:
        line_no = 0
        try:
            for line_no, line in bounded_lines(handle, path):
                if not line.strip():
                    continue
                where = f"{path.name}:{line_no}"
                try:
                    obj = _json_line(line, where)
                    check_values(obj, where)
                except InputError as exc:
                    refuse_or_raise(refusals, exc, path.name)
                    continue
                yield where, obj
        except InputError as exc:  # a line too long (bounded_lines): where the next one starts is unknown
            refuse_or_raise(refusals, exc, path.name)
        except UnicodeDecodeError as exc:
            # the text stream cannot go past the bad byte: the lines before it stay read
            refuse_or_raise(refusals, InputError(f"not UTF-8 text (byte {exc.start} after line {line_no}); the rest of "
                                                 "the file is not read", record=f"{path.name}:{line_no + 1}"), path.name)


def _json_line(line: str, where: str) -> Any:
    """One JSONL line parsed; InputError naming the line when it is not JSON (or too deep, or a
    number Python refuses to convert)."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON at column {exc.colno}: {exc.msg}", record=where) from exc
    except ValueError as exc:
        raise InputError(str(exc)[:200], record=where) from exc
    except RecursionError as exc:
        raise InputError("JSON is nested too deeply", record=where) from exc


def _field(obj: dict, name: str, kind: type | tuple[type, ...], where: str, *, required: bool = True, default: Any = None) -> Any:
    if name not in obj or obj[name] is None:
        if required:
            raise InputError("missing required field", record=where, field=name)
        return default
    value = obj[name]
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise InputError(f"expected {_kind_name(kind)}, got a boolean", record=where, field=name)
    if not isinstance(value, kind):
        raise InputError(f"expected {_kind_name(kind)}, got {type(value).__name__}", record=where, field=name)
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError("number must be finite", record=where, field=name)
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "a string", int: "an integer", float: "a number", list: "a list", dict: "an object", bool: "true/false"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def parse_answer(obj: Any, where: str, dataset: str = "") -> AnnotatedAnswer:
    """Validate one canonical object and turn it into an AnnotatedAnswer (recorded verdicts)."""
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, got {type(obj).__name__}", record=where)
    check_values(obj, where)  # pasted fields (the re-score page) come here without read_objects
    answer_id = str(_field(obj, "answer_id", (str, int), where))
    if not answer_id.strip():
        raise InputError("must not be empty", record=where, field="answer_id")
    if len(answer_id) > MAX_ID_CHARS:
        raise InputError(f"{len(answer_id):,} characters; the limit is {MAX_ID_CHARS:,}", record=where, field="answer_id")
    where = f"{where} ({answer_id})" if answer_id not in where else where
    engine = _field(obj, "engine", str, where)
    if len(engine) > MAX_ID_CHARS:
        raise InputError(f"{len(engine):,} characters; the limit is {MAX_ID_CHARS:,}", record=where, field="engine")
    query = _field(obj, "query", str, where)
    if len(query) > MAX_QUERY_CHARS:
        raise InputError(f"{len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}", record=where, field="query")
    query_type = _field(obj, "query_type", str, where)
    if query_type not in ("debate", "expertise"):
        raise InputError(f"must be 'debate' or 'expertise', not {query_type[:40]!r}", record=where, field="query_type")
    text = _field(obj, "answer", str, where)
    if not text.strip():
        raise InputError("answer text is empty", record=where, field="answer")
    if len(text) > MAX_ANSWER_CHARS:
        raise InputError(f"answer text is {len(text):,} characters; the limit is {MAX_ANSWER_CHARS:,}", record=where, field="answer")
    # an engine may answer without sources: such an answer is scored (its statements are uncited,
    # the source metrics are n/a with the reason "no listed sources")
    raw_sources = _field(obj, "sources", list, where, required=False, default=[])
    if len(raw_sources) > MAX_SOURCES:
        raise InputError(f"{len(raw_sources)} sources; the limit is {MAX_SOURCES}", record=where, field="sources")
    sources = _parse_sources(raw_sources, where)
    answer = Answer(
        answer_id=answer_id,
        engine=engine,
        query=query,
        query_type=query_type,
        text=text,
        sources=sources,
        dataset=dataset or str(obj.get("dataset") or ""),
        field=str(obj.get("field") or ""),
        meta={**{k: str(obj[k])[:500] for k in ("note",) if isinstance(obj.get(k), str)}, **_when(obj, where),
              **_scope(obj, where)},
    )
    labels = _field(obj, "labels", dict, where, required=False, default={})
    return _apply_labels(answer, labels, where)


def _scope(obj: dict, where: str) -> dict[str, str]:
    """`citation_scope` (optional): how the answer's markers bind, when the file says so rather than
    leaving it to the engine's name (`pipeline.text.citation_scope`)."""
    value = obj.get("citation_scope")
    if value is None or value == "":
        return {}
    if value not in SCOPES:
        raise InputError(f"must be one of {', '.join(SCOPES)}", record=where, field="citation_scope")
    return {META_SCOPE: str(value)}


def _when(obj: dict, where: str) -> dict[str, str]:
    """When the answer was captured, for audits over time (pipeline/consistency): `captured_at` (ISO
    time), `wave` (an audit's name) and `repeat` (which asking of the query), each optional."""
    out: dict[str, str] = {}
    for key in ("captured_at", "wave"):
        value = obj.get(key)
        if value is not None and value != "":
            if not isinstance(value, str):
                raise InputError("expected a string", record=where, field=key)
            out[key] = value.strip()[:100]
    repeat = obj.get("repeat")
    if repeat is not None and repeat != "":
        if isinstance(repeat, bool) or not isinstance(repeat, int) or not 0 <= repeat <= 10_000:
            raise InputError("expected an integer 0..10000", record=where, field="repeat")
        out["repeat"] = str(repeat)
    return out


def check_answer_size(annotated: AnnotatedAnswer) -> None:
    """InputError when one answer is larger than the stages handle in bounded time (the limits above)."""
    answer = annotated.answer
    chars = sum(len(s.text or "") for s in answer.sources)
    if chars > MAX_ANSWER_SOURCE_CHARS:
        raise InputError(f"its {len(answer.sources)} sources hold {chars:,} characters of text; the limit is "
                         f"{MAX_ANSWER_SOURCE_CHARS:,} for one answer", record=answer.answer_id, field="sources")
    n_statements = len(statements_for(annotated))
    if n_statements > MAX_STATEMENTS:
        raise InputError(f"{n_statements:,} statements; the limit is {MAX_STATEMENTS:,} for one answer "
                         "(split it into several answers)", record=answer.answer_id, field="answer")
    pairs = n_statements * len(answer.sources)
    if pairs > MAX_PAIRS_PER_ANSWER:
        raise InputError(f"{n_statements:,} statements x {len(answer.sources)} sources = {pairs:,} statement-source "
                         f"pairs; the limit is {MAX_PAIRS_PER_ANSWER:,} for one answer (split it into several answers)",
                         record=answer.answer_id, field="answer")


def _parse_sources(raw_sources: list, where: str) -> tuple[Source, ...]:
    sources: list[Source] = []
    seen: set[int] = set()
    for k, raw in enumerate(raw_sources):
        field = f"sources[{k}]"
        if not isinstance(raw, dict):
            raise InputError(f"expected an object, got {type(raw).__name__}", record=where, field=field)
        index = raw.get("index", k + 1)
        if isinstance(index, bool) or not isinstance(index, int) or not 1 <= index <= 10_000:
            raise InputError("index must be an integer from 1", record=where, field=f"{field}.index")
        if index in seen:
            raise InputError(f"duplicate source index {index}", record=where, field=f"{field}.index")
        seen.add(index)
        values = {}
        for name in ("url", "title", "text"):
            value = raw.get(name, "")
            if value is None:
                value = ""
            if not isinstance(value, str):
                raise InputError(f"expected a string, got {type(value).__name__}", record=where, field=f"{field}.{name}")
            values[name] = value
        if len(values["text"]) > MAX_SOURCE_CHARS:
            raise InputError(f"source text longer than {MAX_SOURCE_CHARS:,} characters", record=where, field=f"{field}.text")
        fetch_ok = raw.get("fetch_ok")
        if fetch_ok is not None and not isinstance(fetch_ok, bool):
            raise InputError("expected true/false", record=where, field=f"{field}.fetch_ok")
        origin = raw.get("text_origin") or ""
        if origin not in TEXT_ORIGINS:
            raise InputError("must be 'page', 'snippet' or empty", record=where, field=f"{field}.text_origin")
        sources.append(Source(index=index, fetch_ok=fetch_ok, text_origin=origin, **values))
    return tuple(sorted(sources, key=lambda s: s.index))


def _apply_labels(answer: Answer, labels: dict, where: str) -> AnnotatedAnswer:
    listed = {s.index for s in answer.sources}
    urls = {s.url: s.index for s in answer.sources if s.url}
    raw_statements = labels.get("statements")
    verdicts: list[Verdict] = []

    def verdict(kind: str, label: str | None, raw: Any, **kw: Any) -> None:
        verdicts.append(Verdict(answer.answer_id, kind, label, RECORDED, CANONICAL_PROMPT,  # type: ignore[arg-type]
                                raw=json.dumps(raw, ensure_ascii=False)[:2000], **kw))

    conf = labels.get("confidence")
    if conf is not None:
        if isinstance(conf, bool) or not isinstance(conf, int) or not 1 <= conf <= 5:
            raise InputError("confidence must be an integer 1..5", record=where, field="labels.confidence")
        verdict("confidence", str(conf), conf)
    _source_stances(labels.get("sources"), listed, where, verdict)

    if raw_statements is None:
        split = AnnotatedAnswer(answer, tuple(split_statements(answer.answer_id, answer.text, listed, urls)), tuple(verdicts))
        scope = answer.meta.get(META_SCOPE) or scope_for_engine(answer.engine)  # how this engine's markers bind
        return with_scope(split, scope) if scope in SCOPES and scope != SENTENCE else split
    if not isinstance(raw_statements, list):
        raise InputError("expected a list", record=where, field="labels.statements")
    if len(raw_statements) > MAX_STATEMENTS:
        raise InputError(f"more than {MAX_STATEMENTS} statements", record=where, field="labels.statements")
    default_scope = _judged(labels, where, "labels", "all")
    scopes: list[str] = []  # of the statements that carry support labels
    statements: list[Statement] = []
    cursor = 0
    for k, raw in enumerate(raw_statements):
        field = f"labels.statements[{k}]"
        if not isinstance(raw, dict):
            raise InputError("expected an object", record=where, field=field)
        text = raw.get("text")
        if not isinstance(text, str) or not text.strip():
            raise InputError("missing statement text", record=where, field=f"{field}.text")
        start = answer.text.find(text, cursor)
        if start < 0:
            start = answer.text.find(text)
        end = start + len(text) if start >= 0 else -1
        if start >= 0:
            cursor = end
        cited: list[int] = []
        for marker in find_citation_markers(text, urls):
            for index in marker.indexes:
                if index not in cited:
                    cited.append(index)
        statements.append(Statement(answer.answer_id, k, text, start, end,
                                    tuple(i for i in cited if i in listed),
                                    tuple(i for i in cited if i not in listed)))
        relevant = raw.get("relevant")
        if relevant is not None:
            if not isinstance(relevant, bool):
                raise InputError("expected true/false", record=where, field=f"{field}.relevant")
            verdict("relevance", "relevant" if relevant else "filler", relevant, statement_index=k)
        stance = raw.get("stance")
        if stance is not None:
            if stance not in STANCE_LABELS:
                raise InputError(f"must be one of {', '.join(STANCE_LABELS)}", record=where, field=f"{field}.stance")
            verdict("stance", stance, stance, statement_index=k)
        full = _index_list(raw, "supported_by", where, field)
        partial = _index_list(raw, "partially_supported_by", where, field)
        explicit = "not_supported_by" in raw
        against = _index_list(raw, "not_supported_by", where, field)
        # a source in both support lists reads as full, as it always has; one that is also said not
        # to support the statement is a contradiction nobody can resolve for the file's author
        partial -= full
        if (full | partial) & against:
            raise InputError("a source is in not_supported_by and in supported_by or partially_supported_by",
                             record=where, field=field)
        if "supported_by" in raw or "partially_supported_by" in raw or explicit:
            scope = "listed" if explicit else _judged(raw, where, field, default_scope)
            scopes.append(scope)
            cites = set(statements[-1].citations)
            for index in sorted(listed):
                if index in full or index in partial:
                    label = "full" if index in full else "partial"
                    verdict("support", label, label, statement_index=k, source_index=index)
                elif scope == "all" or index in against or (scope == "cited" and index in cites):
                    verdict("support", "none", "none", statement_index=k, source_index=index)
                else:  # nobody judged this pair: unknown with the reason, never "none"
                    why = unchecked_text("uncited_not_judged" if scope == "cited" else "not_judged")
                    verdicts.append(Verdict(answer.answer_id, "support", SUPPORT_UNKNOWN, RECORDED, CANONICAL_PROMPT,
                                            raw=why, statement_index=k, source_index=index))
        union = raw.get("union_supported")
        if union is not None:
            # The statement's citations together (not any one alone) fully support it (Liu et al.).
            if not isinstance(union, bool):
                raise InputError("expected true/false", record=where, field=f"{field}.union_supported")
            verdict("support", "full" if union else "none", union, statement_index=k)
    if scopes and set(scopes) == {"cited"}:  # as ExpertQA's: the existing cited-only rules apply
        answer = dataclasses.replace(answer, meta={**answer.meta, "support_scope": "cited_only"})
    return AnnotatedAnswer(answer, tuple(statements), tuple(verdicts))


def _judged(raw: dict, where: str, field: str, default: str) -> str:
    """Which pairs support labels cover: "all" listed sources or only the "cited" ones."""
    value = raw.get("judged", default)
    if value not in ("all", "cited"):
        raise InputError("must be 'all' or 'cited'", record=where, field=f"{field}.judged")
    return str(value)


def _source_stances(raw: Any, listed: set[int], where: str, verdict: Any) -> None:
    """Recorded source stances: `labels.sources` = [{"index", "stance"}], one per listed source."""
    if raw is None:
        return
    if not isinstance(raw, list):
        raise InputError("expected a list", record=where, field="labels.sources")
    seen: set[int] = set()
    for k, item in enumerate(raw[:MAX_SOURCES + 1]):
        field = f"labels.sources[{k}]"
        if not isinstance(item, dict):
            raise InputError("expected an object", record=where, field=field)
        index = item.get("index")
        if isinstance(index, bool) or not isinstance(index, int) or index not in listed:
            raise InputError("index must name a listed source", record=where, field=f"{field}.index")
        if index in seen:
            raise InputError(f"duplicate source index {index}", record=where, field=f"{field}.index")
        seen.add(index)
        stance = item.get("stance")
        if stance not in SOURCE_STANCE_LABELS:
            raise InputError(f"must be one of {', '.join(SOURCE_STANCE_LABELS)}", record=where, field=f"{field}.stance")
        verdict("source_stance", stance, stance, source_index=index)


def _index_list(raw: dict, name: str, where: str, field: str) -> set[int]:
    value = raw.get(name) or []
    if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int) for v in value):
        raise InputError("expected a list of source indexes", record=where, field=f"{field}.{name}")
    return set(value)


def iter_canonical(path: str | Path, dataset: str = "", refusals: Refusals | None = None) -> Iterator[AnnotatedAnswer]:
    """Answers of a canonical JSON/JSONL file, one at a time. Without `refusals` the first bad record
    raises InputError; with it, each bad record is refused (file, line, field, why) and the rest read."""
    path = Path(path)
    seen: set[str] = set()
    for where, obj in read_objects(path, refusals):
        try:
            annotated = parse_answer(obj, where, dataset or path.stem)
            if annotated.answer.answer_id in seen:
                raise InputError("duplicate answer_id", record=f"{where} ({annotated.answer.answer_id})"
                                 if annotated.answer.answer_id not in where else where, field="answer_id")
        except InputError as exc:
            refuse_or_raise(refusals, exc, path.name)
            continue
        seen.add(annotated.answer.answer_id)
        yield annotated


def load_canonical(path: str | Path, dataset: str = "") -> list[AnnotatedAnswer]:
    """Every answer of a canonical JSON/JSONL file; the first bad record raises InputError."""
    return list(iter_canonical(path, dataset))


def to_canonical(annotated: AnnotatedAnswer) -> dict:
    """The canonical object for an answer (labels from its verdicts), for saving re-scored input."""
    a = annotated.answer
    return {
        "answer_id": a.answer_id,
        "engine": a.engine,
        "query": a.query,
        "query_type": a.query_type,
        "answer": a.text,
        "sources": [
            {"index": s.index, "url": s.url, "title": s.title, "text": s.text, **({"fetch_ok": s.fetch_ok} if s.fetch_ok is not None else {}),
             **({"text_origin": s.text_origin} if s.text_origin else {})}
            for s in a.sources
        ],
        # how its markers were read (Re-score's choice): the saved answer scores the same when run again
        **({"citation_scope": a.meta[META_SCOPE]} if a.meta.get(META_SCOPE) in SCOPES else {}),
    }


def iter_jsonl(answers: Iterable[AnnotatedAnswer]) -> Iterator[str]:
    """JSON lines for a list of answers in canonical form."""
    for annotated in answers:
        yield json.dumps(to_canonical(annotated), ensure_ascii=False)
