"""Engine API responses as input: the formats, their detection, the capture envelope, and loaders.

A file holds bare responses (then `--query`, `--engine` and `--query-type` say what was asked) or
capture envelopes, the shape `aee collect` writes (one per file) and a person can write by hand:

    {"query": "...", "engine": "perplexity", "query_type"?: "debate"|"expertise", "captured_at"?: ISO time,
     "request"?: {...no secrets...}, "response": {...}, "format"?: "perplexity", "id"?: "...",
     "fetched"?: {url: {"ok", "status", "reason", "title", "text"}}}

A file is a JSON object, a JSON list or JSONL; a folder is every *.json / *.jsonl file in it (names
starting with "." or "_" are skipped). `auto` recognises each object on its own: an engine response
or envelope by its shape, anything else as the canonical format (so a broken canonical file keeps
its own error messages). The format found goes into Answer.meta["format"]; the response itself is
kept, bounded, in Answer.meta["raw_response"] (see engine_common.raw_for_audit).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from pipeline.errors import InputError
from pipeline.importers.anthropic_search import parse_anthropic
from pipeline.importers.canonical import MAX_ID_CHARS, MAX_QUERY_CHARS, check_values, parse_answer, read_objects
from pipeline.importers.engine_common import EngineParse, as_dict, build_answer, digest_id, raw_for_audit
from pipeline.importers.gemini import parse_gemini
from pipeline.importers.openai_search import parse_openai_chat, parse_openai_responses
from pipeline.importers.perplexity import parse_perplexity
from pipeline.importers.you_exa import parse_exa, parse_you
from pipeline.records import AnnotatedAnswer
from pipeline.redact import redact

DEFAULT_QUERY_TYPE = "expertise"


@dataclass(frozen=True)
class EngineFormat:
    """One provider response shape: its parser and the engine name answers get by default."""

    name: str
    parse: Callable[[dict, str], EngineParse]
    engine: str
    description: str


FORMATS: dict[str, EngineFormat] = {f.name: f for f in (
    EngineFormat("perplexity", parse_perplexity, "perplexity", "Perplexity Sonar chat completions ([n] markers, citations, search_results)."),
    EngineFormat("openai-responses", parse_openai_responses, "openai", "OpenAI Responses API with web search (url_citation spans)."),
    EngineFormat("openai-chat", parse_openai_chat, "openai", "OpenAI Chat Completions search models (url_citation spans)."),
    EngineFormat("anthropic", parse_anthropic, "anthropic", "Anthropic Messages with the web search tool (cited text blocks)."),
    EngineFormat("gemini", parse_gemini, "gemini", "Google Gemini with grounding (UTF-8 byte segments over chunks)."),
    EngineFormat("you", parse_you, "you", "You.com Answer / Research / Smart APIs ([n] markers, citations)."),
    EngineFormat("exa", parse_exa, "exa", "Exa /answer (answer-level citations)."),
)}


@dataclass(frozen=True)
class ImportOptions:
    """What a bare response does not say: the query asked, the engine's name, the query type."""

    query: str | None = None
    engine: str | None = None
    query_type: str | None = None


def is_envelope(obj: Any) -> bool:
    return isinstance(obj, dict) and "response" in obj and ("query" in obj or "engine" in obj)


def detect_response(resp: Any) -> str | None:
    """The engine format of a bare response, from its shape; None when it is none of them."""
    if not isinstance(resp, dict):
        return None
    if isinstance(resp.get("candidates"), list):
        return "gemini"
    if resp.get("type") == "message" and isinstance(resp.get("content"), list):
        return "anthropic"
    if resp.get("object") == "response" or (isinstance(resp.get("output"), list) and "choices" not in resp):
        return "openai-responses"
    if isinstance(resp.get("output"), dict) and "content" in resp["output"]:
        return "you"
    if isinstance(resp.get("choices"), list):
        if "citations" in resp or "search_results" in resp or str(resp.get("model", "")).startswith("sonar"):
            return "perplexity"
        return "openai-chat"
    if "answer" in resp and "answer_id" not in resp and "sources" not in resp:
        cites = resp.get("citations")
        first = cites[0] if isinstance(cites, list) and cites else None
        if isinstance(first, dict) and "source" in first or isinstance(resp.get("results"), dict) or "search_results" in resp:
            return "you"
        if isinstance(first, dict) or "costDollars" in resp or "requestId" in resp:
            return "exa"
        return "you" if isinstance(cites, list) else None
    return None


def detect(obj: Any) -> str:
    """"canonical" or an engine format name for one object of a file."""
    if is_envelope(obj):
        fmt = obj.get("format")
        if isinstance(fmt, str) and fmt in FORMATS:
            return fmt
        return detect_response(obj.get("response")) or "canonical"
    return detect_response(obj) or "canonical"


def engine_answer(obj: Any, where: str, fmt: str | None = None, options: ImportOptions | None = None,
                  dataset: str = "", source_file: str = "") -> AnnotatedAnswer:
    """One envelope or bare response -> the canonical answer (InputError names what is wrong)."""
    options = options or ImportOptions()
    check_values(obj, where)
    envelope = obj if is_envelope(obj) else {}
    response = as_dict(obj.get("response") if envelope else obj, where, "response" if envelope else "(response)")
    name = fmt or _str(envelope, "format", where) or detect_response(response)
    if not name:
        raise InputError("not a response of a known engine; give --format (" + ", ".join(FORMATS) + ")", record=where)
    if name not in FORMATS:
        raise InputError(f"unknown format {name[:40]!r}; choose one of {', '.join(FORMATS)}", record=where, field="format")
    parse = FORMATS[name].parse(response, where)
    query = _str(envelope, "query", where) or (options.query or "")
    if not query.strip():
        raise InputError(f"a bare {name} response does not say what was asked: give --query, or use the capture envelope "
                         '{"query", "engine", "response"}', record=where, field="query")
    if len(query) > MAX_QUERY_CHARS:
        raise InputError(f"{len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}", record=where, field="query")
    query_type = _str(envelope, "query_type", where) or options.query_type or DEFAULT_QUERY_TYPE
    if query_type not in ("debate", "expertise"):
        raise InputError(f"must be 'debate' or 'expertise', not {query_type[:40]!r}", record=where, field="query_type")
    engine = options.engine or _engine_name(_str(envelope, "engine", where) or FORMATS[name].engine, parse.model)
    if len(engine) > MAX_ID_CHARS:
        raise InputError(f"{len(engine):,} characters; the limit is {MAX_ID_CHARS:,}", record=where, field="engine")
    raw_id = envelope.get("id")
    if raw_id is not None and (isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)) or not str(raw_id).strip()):
        raise InputError("expected a non-empty string", record=where, field="id")
    raw = raw_for_audit(response)
    answer_id = str(raw_id) if raw_id is not None else f"{name}-{digest_id(query, parse.response_id or raw['raw_response_sha256'])}"
    if len(answer_id) > MAX_ID_CHARS:
        raise InputError(f"{len(answer_id):,} characters; the limit is {MAX_ID_CHARS:,}", record=where, field="id")
    fetched = envelope.get("fetched")
    if fetched is not None:
        fetched = as_dict(fetched, where, "fetched")
    request = envelope.get("request")
    meta = {"format": name, "sources": "fetch" if fetched is not None else "snippet", "source_file": source_file[:300],
            "captured_at": _str(envelope, "captured_at", where)[:100],
            "request": redact(json.dumps(request, ensure_ascii=False, sort_keys=True))[:5_000] if request is not None else "",
            **raw}
    return build_answer(parse, answer_id=answer_id, engine=engine, query=query.strip(), query_type=query_type, where=where,
                        dataset=dataset, meta=meta, fetched=fetched)


def _str(obj: dict, key: str, where: str) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError("expected a string", record=where, field=key)
    return value


def _engine_name(engine: str, model: str) -> str:
    """The engine's name in results: "perplexity:sonar-pro" when the response names its model, so
    two models of one provider stay apart on the scorecard."""
    engine = engine.strip() or "engine"
    return f"{engine}:{model.strip()}" if model.strip() and ":" not in engine else engine


# ---- files and folders ---------------------------------------------------------------------------


def input_files(path: Path) -> list[Path]:
    """The file itself, or the *.json / *.jsonl files of a folder in name order."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in (".json", ".jsonl") and not p.name.startswith((".", "_")))
        if not files:
            raise InputError("the folder holds no .json or .jsonl files", record=str(path))
        return files
    if not path.exists():
        raise InputError("cannot read file: no such file or folder", record=str(path))
    return [path]


def iter_answers(path: str | Path, fmt: str | None = None, options: ImportOptions | None = None) -> Iterator[AnnotatedAnswer]:
    """Answers of a file or folder: `fmt` forces one engine format, None recognises each object."""
    path = Path(path)
    dataset = path.stem if path.is_file() else path.name
    seen: set[str] = set()
    for file in input_files(path):
        for where, obj in read_objects(file):
            found = fmt or detect(obj)
            if found == "canonical":
                annotated = parse_answer(obj, where, dataset)
                meta = {**annotated.answer.meta, "format": "canonical"}
                annotated = dataclasses.replace(annotated, answer=dataclasses.replace(annotated.answer, meta=meta))
            else:
                annotated = engine_answer(obj, where, found, options, dataset, file.name)
            if annotated.answer.answer_id in seen:
                raise InputError("duplicate answer_id (the same query and response twice?)", record=annotated.answer.answer_id, field="answer_id")
            seen.add(annotated.answer.answer_id)
            yield annotated


def iter_auto(path: str | Path, options: ImportOptions | None = None) -> Iterator[AnnotatedAnswer]:
    """Any supported format, recognised object by object."""
    return iter_answers(path, None, options)


def first_format(path: str | Path) -> str | None:
    """The format of the first object of a file or folder (None when it cannot be read)."""
    try:
        for file in input_files(Path(path)):
            for _, obj in read_objects(file):
                return detect(obj)
    except InputError:
        return None
    return None


def _loader(fmt: str) -> Callable[..., Iterator[AnnotatedAnswer]]:
    def load(path: str | Path, options: ImportOptions | None = None) -> Iterator[AnnotatedAnswer]:
        return iter_answers(path, fmt, options)

    load.__name__ = load.__qualname__ = f"iter_{fmt.replace('-', '_')}"
    load.__doc__ = f"Answers of a file or folder of {fmt} responses or capture envelopes."
    return load


iter_perplexity = _loader("perplexity")
iter_openai_responses = _loader("openai-responses")
iter_openai_chat = _loader("openai-chat")
iter_anthropic = _loader("anthropic")
iter_gemini = _loader("gemini")
iter_you = _loader("you")
iter_exa = _loader("exa")
