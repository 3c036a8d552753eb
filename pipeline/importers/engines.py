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
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from pipeline.errors import InputError
from pipeline.fetching.redact import redact
from pipeline.importers.anthropic_search import join_conversation, parse_anthropic
from pipeline.importers.canonical import MAX_ID_CHARS, MAX_QUERY_CHARS, check_values, parse_answer, read_objects
from pipeline.importers.engine_common import EngineParse, as_dict, build_answer, digest_id, raw_for_audit
from pipeline.importers.gemini import litellm_grounding, parse_gemini
from pipeline.importers.input_files import not_regular, open_input, read_document
from pipeline.importers.openai_search import parse_openai_chat, parse_openai_responses
from pipeline.importers.perplexity import parse_perplexity
from pipeline.importers.refusals import Refusals, refuse_or_raise
from pipeline.importers.streams import assemble, event_kind, looks_like_sse, parse_sse, stream_format
from pipeline.importers.you_exa import parse_exa, parse_you
from pipeline.records import AnnotatedAnswer
from pipeline.text.citation_scope import ANSWER, PARAGRAPH, SENTENCE, SPAN, with_scope

log = logging.getLogger(__name__)
_WARNED: set[tuple[str, tuple[str, ...]]] = set()

DEFAULT_QUERY_TYPE = "expertise"


@dataclass(frozen=True)
class EngineFormat:
    """One provider response shape: its parser, the engine name answers get by default, and how far
    its citations reach (`pipeline.text.citation_scope`: sentence, paragraph, span or answer)."""

    name: str
    parse: Callable[[dict, str], EngineParse]
    engine: str
    description: str
    scope: str = SENTENCE


FORMATS: dict[str, EngineFormat] = {f.name: f for f in (
    EngineFormat("perplexity", parse_perplexity, "perplexity", "Perplexity Sonar chat completions ([n] markers, citations, "
                 "search_results).", SENTENCE),
    EngineFormat("openai-responses", parse_openai_responses, "openai", "OpenAI Responses API with web search (url_citation spans).", PARAGRAPH),
    EngineFormat("openai-chat", parse_openai_chat, "openai", "OpenAI Chat Completions search models (url_citation spans).", PARAGRAPH),
    EngineFormat("anthropic", parse_anthropic, "anthropic", "Anthropic Messages with the web search tool (cited text blocks).", SPAN),
    EngineFormat("gemini", parse_gemini, "gemini", "Google Gemini / Vertex AI with grounding (UTF-8 byte segments over chunks; "
                 "LiteLLM's copies too).", SPAN),
    EngineFormat("you", parse_you, "you", "You.com Agents / Answer / Research / Smart APIs ([n] markers, citations).", SENTENCE),
    EngineFormat("exa", parse_exa, "exa", "Exa /answer (answer-level citations).", ANSWER),
)}


@dataclass(frozen=True)
class ImportOptions:
    """What a bare response does not say: the query asked, the engine's name, the query type."""

    query: str | None = None
    engine: str | None = None
    query_type: str | None = None


def is_envelope(obj: Any) -> bool:
    return isinstance(obj, dict) and ("response" in obj or "responses" in obj) and ("query" in obj or "engine" in obj)


def unwrap(response: Any, where: str, field: str = "response") -> Any:
    """A response as one object: a saved stream (list of events or chunks) joined, a conversation of
    Anthropic responses continued after pause_turn joined; anything else as it is."""
    if not isinstance(response, list):
        return response
    if len(response) == 1 and isinstance(response[0], dict) and event_kind(response[0]) is None:
        return response[0]  # a list of one response (a one-chunk Gemini stream, a one-message conversation)
    kind = stream_format(response)
    if kind is not None:
        return assemble(kind, response, where)
    if response and all(isinstance(r, dict) and r.get("type") == "message" for r in response):
        return join_conversation(response, where)
    raise InputError("a list that is neither a saved stream of one response nor a conversation of Anthropic responses",
                     record=where, field=field)


def detect_response(resp: Any) -> str | None:
    """The engine format of a bare response, from its shape; None when it is none of them."""
    if isinstance(resp, list) and resp:
        kind = stream_format(resp)
        if kind == "chat":
            return detect_response(resp[-1]) or detect_response(resp[0]) or "openai-chat"
        if kind is not None:
            return {"openai-responses": "openai-responses", "anthropic": "anthropic", "gemini": "gemini", "you-agent": "you"}[kind]
        if all(isinstance(r, dict) and r.get("type") == "message" for r in resp):
            return "anthropic"
        return None
    if not isinstance(resp, dict):
        return None
    if isinstance(resp.get("candidates"), list):
        return "gemini"
    if resp.get("type") == "message" and isinstance(resp.get("content"), list):
        return "anthropic"
    if isinstance(resp.get("output"), list) and "agent" in resp and resp.get("object") != "response":
        return "you"  # You.com Agents API: output items "web_search.results" and "message.answer"
    if resp.get("object") == "response" or (isinstance(resp.get("output"), list) and "choices" not in resp):
        return "openai-responses"
    if isinstance(resp.get("output"), dict) and "content" in resp["output"]:
        return "you"
    if isinstance(resp.get("choices"), list):
        if litellm_grounding(resp):
            return "gemini"  # LiteLLM's copy of a grounded Gemini answer
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
        return detect_response(obj.get("response", obj.get("responses"))) or "canonical"
    return detect_response(obj) or release_format(obj) or "canonical"


def release_format(obj: Any) -> str | None:
    """"expertqa", "hagrid" or "aee" for one record of those releases, else None."""
    if not isinstance(obj, dict) or "answer_id" in obj:
        return None
    answers = obj.get("answers")
    if isinstance(obj.get("question"), str) and isinstance(answers, dict) and any(
            isinstance(a, dict) and "answer_string" in a for a in answers.values()):
        return "expertqa"
    if "query_id" in obj and isinstance(obj.get("quotes"), list) and isinstance(answers, list):
        return "hagrid"
    if "answer_engine" in obj and "Output" in obj and "Question" in obj:
        return "aee"
    return None


# What each format needs at the top of a record, to say how far an unrecognised record got.
_SIGNATURES: dict[str, tuple[str, ...]] = {
    "expertqa": ("question", "answers", "answers.<system>.answer_string"),
    "hagrid": ("query_id", "query", "quotes", "answers"),
    "aee": ("id", "Question", "Output", "answer_engine"),
    "perplexity / openai-chat": ("choices", "choices[0].message"),
    "openai-responses": ("output",),
    "anthropic": ("type: message", "content"),
    "gemini": ("candidates",),
    "you / exa": ("answer",),
    "capture envelope": ("response", "query"),
}


def _has(obj: dict, need: str) -> bool:
    if need == "answers.<system>.answer_string":
        answers = obj.get("answers")
        return isinstance(answers, dict) and any(isinstance(a, dict) and "answer_string" in a for a in answers.values())
    if need == "choices[0].message":
        choices = obj.get("choices")
        return isinstance(choices, list) and bool(choices) and isinstance(choices[0], dict) and "message" in choices[0]
    if need == "type: message":
        return obj.get("type") == "message"
    return need in obj


def unrecognised(obj: Any, where: str, canonical_error: InputError) -> InputError:
    """One line: the record is none of the formats, with how far each got (canonical's own error, then
    per format the share of its top-level fields present; the closest one named with what it lacks)."""
    if not isinstance(obj, dict):
        return canonical_error
    why = str(canonical_error).rsplit(": ", 1)[-1][:50]
    field = f"'{canonical_error.field[:30]}': " if canonical_error.field else ""
    scores = []
    for name, needs in _SIGNATURES.items():
        have = [n for n in needs if _has(obj, n)]
        scores.append((len(have) / len(needs), name, len(have), len(needs), [n for n in needs if n not in have]))
    best = max(scores, key=lambda sc: sc[0])
    partial = [f"{name} {h}/{n}" for share, name, h, n, _ in scores if share > 0]
    none = [name for share, name, *_ in scores if share == 0]
    closest = f"; closest: {best[1]}, lacking {', '.join(repr(m) for m in best[4][:2])}" if best[0] > 0 else ""
    keys = ", ".join(str(k)[:20] for k in list(obj)[:4]) or "none"
    return InputError(f"no format recognised (keys: {keys}); tried canonical ({field}{why})"
                      + (", " + ", ".join(partial) if partial else "") + f", {len(none)} others 0{closest}; "
                      "--format NAME shows that format's error", record=where)


def engine_answer(obj: Any, where: str, fmt: str | None = None, options: ImportOptions | None = None,
                  dataset: str = "", source_file: str = "") -> AnnotatedAnswer:
    """One envelope or bare response -> the canonical answer (InputError names what is wrong)."""
    options = options or ImportOptions()
    check_values(obj, where)
    envelope = obj if is_envelope(obj) else {}
    if envelope and "responses" in envelope and "response" not in envelope:
        if not isinstance(envelope["responses"], list):
            raise InputError("expected a list of responses", record=where, field="responses")
        raw_response = unwrap(envelope["responses"], where, "responses")
    else:
        raw_response = unwrap(obj.get("response") if envelope else obj, where)
    response = as_dict(raw_response, where, "response" if envelope else "(response)")
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
    requested = _requested_model(envelope, where)
    engine = options.engine or _engine_name(_str(envelope, "engine", where) or FORMATS[name].engine, requested or parse.model)
    if len(engine) > MAX_ID_CHARS:
        raise InputError(f"{len(engine):,} characters; the limit is {MAX_ID_CHARS:,}", record=where, field="engine")
    raw_id = envelope.get("id")
    if raw_id is not None and (isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)) or not str(raw_id).strip()):
        raise InputError("expected a non-empty string", record=where, field="id")
    raw = raw_for_audit(response)
    when = _when(envelope, where)  # repeats and waves (aee collect --repeat/--wave): one answer each
    answer_id = (str(raw_id) if raw_id is not None
                 else f"{name}-{digest_id(query, parse.response_id or raw['raw_response_sha256'], *_when_parts(when))}")
    if len(answer_id) > MAX_ID_CHARS:
        raise InputError(f"{len(answer_id):,} characters; the limit is {MAX_ID_CHARS:,}", record=where, field="id")
    fetched = envelope.get("fetched")
    if fetched is not None:
        fetched = as_dict(fetched, where, "fetched")
    request = envelope.get("request")
    meta = {"format": name, "sources": "fetch" if fetched is not None else "snippet", "source_file": source_file[:300],
            "captured_at": _str(envelope, "captured_at", where)[:100], **when, "requested_model": requested,
            "request": redact(json.dumps(request, ensure_ascii=False, sort_keys=True))[:5_000] if request is not None else "",
            **raw}
    return with_scope(build_answer(parse, answer_id=answer_id, engine=engine, query=query.strip(), query_type=query_type,
                                   where=where, dataset=dataset, meta=meta, fetched=fetched), FORMATS[name].scope)


def _when(envelope: dict, where: str) -> dict[str, str]:
    """The envelope's repeat index and wave name, as Answer.meta strings (absent when not given)."""
    out: dict[str, str] = {}
    repeat = envelope.get("repeat")
    if repeat is not None:
        if isinstance(repeat, bool) or not isinstance(repeat, int) or not 0 <= repeat <= 10_000:
            raise InputError("expected an integer 0..10000", record=where, field="repeat")
        out["repeat"] = str(repeat)
    wave = _str(envelope, "wave", where).strip()
    if wave:
        out["wave"] = wave[:64]
    return out


def _when_parts(when: dict[str, str]) -> list[str]:
    """What a repeat or wave adds to the answer id; nothing for the first asking without a wave, so
    ids of envelopes collected before repeats existed do not change."""
    parts = [f"wave={when['wave']}"] if "wave" in when else []
    if when.get("repeat", "0") != "0":
        parts.append(f"repeat={when['repeat']}")
    return parts


def _str(obj: dict, key: str, where: str) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError("expected a string", record=where, field=key)
    return value


def _requested_model(envelope: dict, where: str) -> str:
    """The model that was asked for: the envelope's `model` (what `aee collect --model` sent), else
    the request body's. An engine is what was asked for, not what the reply says it is: a reply
    naming a dated version ("sonar-2026-02") or a typo'd request answered by a default model would
    otherwise move answers to another engine between waves, or merge two requested models into one."""
    model = _str(envelope, "model", where).strip()
    if not model and isinstance(envelope.get("request"), dict):
        inner = envelope["request"].get("model")
        model = inner.strip() if isinstance(inner, str) else ""
    return model[:200]


def _engine_name(engine: str, model: str) -> str:
    """The engine's name in results: "perplexity:sonar-pro" for the provider and the requested model
    (the reply's model where nothing says what was requested), so two models of one provider stay
    apart on the scorecard. The reply's own model name stays in the answer's meta (`model`)."""
    engine = engine.strip() or "engine"
    return f"{engine}:{model.strip()}" if model.strip() and ":" not in engine else engine


# ---- files and folders ---------------------------------------------------------------------------


FOLDER_DEPTH = 3  # a folder of folders (`aee collect` writes one per engine) and a level or two more


def _folder_entries(path: Path, depth: int = FOLDER_DEPTH) -> list[Path]:
    """The *.json / *.jsonl / *.sse entries of a folder and of its subfolders (down to `depth`
    levels), in name order by their path inside it. Names starting with "." or "_" are skipped at
    every level: hidden files, `aee collect`'s `_collect.json` and its `_rejected/` replies. Links to
    folders are not followed (a link back up would loop)."""
    out: list[Path] = []
    for entry in sorted(path.iterdir()):
        if entry.name.startswith((".", "_")):
            continue
        if entry.is_dir() and not entry.is_symlink():
            if depth > 1:
                out.extend(_folder_entries(entry, depth - 1))
        elif entry.suffix in (".json", ".jsonl", ".sse"):
            out.append(entry)
    return sorted(out, key=lambda p: p.relative_to(path).parts)


def input_files(path: Path) -> list[Path]:
    """The file itself, or the *.json / *.jsonl / *.sse files of a folder and its subfolders in name order."""
    if path.is_dir():
        named = _folder_entries(path)
        skipped = not_regular(named)  # a FIFO would block the reader, a link to /dev/zero never ends
        files = [p for p in named if p.is_file() and not any(s.startswith(p.name + " (") for s in skipped)]
        if not files:
            why = f" (skipped, not regular files: {', '.join(skipped)})" if skipped else ""
            raise InputError(f"the folder (and its subfolders) holds no readable .json or .jsonl file{why}", record=str(path))
        if skipped and (str(path), tuple(skipped)) not in _WARNED:  # a run reads a folder twice: say it once
            _WARNED.add((str(path), tuple(skipped)))
            log.warning("%s: skipped, not regular files: %s", path, ", ".join(skipped))
        return files
    if not path.exists():
        raise InputError("cannot read file: no such file or folder", record=str(path))
    return [path]


def iter_answers(path: str | Path, fmt: str | None = None, options: ImportOptions | None = None,
                 refusals: Refusals | None = None) -> Iterator[AnnotatedAnswer]:
    """Answers of a file or folder: `fmt` forces one engine format, None recognises each object (and
    a file of ExpertQA, HAGRID or AEE release records as that release). With `refusals`, a record
    that cannot be read (or a whole file, when the file itself cannot be) is refused and the rest
    read; without, the first one raises."""
    path = Path(path)
    dataset = path.stem if path.is_file() else path.name
    seen: set[str] = set()
    files = input_files(path)
    names = {f.name for f in files}
    for file in files:
        if fmt is None and file.name.endswith("_support_results.jsonl") and file.name.replace("_support_results.jsonl", ".json") in names:
            continue  # the AEE release's labels: read with its answers file
        try:
            for annotated in _file_answers(file, fmt, options, dataset, refusals):
                if annotated.answer.answer_id in seen:
                    refuse_or_raise(refusals, InputError("duplicate answer_id (the same query and response twice?)",
                                                         record=annotated.answer.answer_id, field="answer_id"), file.name)
                    continue
                seen.add(annotated.answer.answer_id)
                yield annotated
        except InputError as exc:  # the file itself cannot be read (what came before it in the file stays)
            refuse_or_raise(refusals, exc, file.name)


def _file_objects(file: Path, refusals: Refusals | None = None) -> Iterator[tuple[str, Any]]:
    """(where, object) of a file: JSON, a JSON list, JSONL, or server-sent-event text."""
    with open_input(file, newline=None, errors="replace") as handle:  # a FIFO is refused, never waited on
        head = handle.read(2_000)
    if looks_like_sse(head):
        try:
            text = read_document(file).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text (byte {exc.start})", record=str(file)) from exc
        events = parse_sse(text, file.name)
        for k, obj in enumerate(events):
            check_values(obj, f"{file.name} event {k + 1}")
        yield file.name, events
        return
    yield from read_objects(file, refusals)


def _file_answers(file: Path, fmt: str | None, options: ImportOptions | None, dataset: str,
                  refusals: Refusals | None = None) -> Iterator[AnnotatedAnswer]:
    objects = _file_objects(file, refusals)
    first = next(objects, None)
    if first is None:
        return
    where, obj = first
    if fmt is None and (release := release_format(obj)) is not None:
        yield from _release_answers(release, file, refusals)
        return
    if isinstance(obj, list):  # server-sent events
        yield engine_answer(obj, file.name, fmt, options, dataset, file.name)
        return
    pairs: Iterator[tuple[str, Any]] = _chain(first, rest=objects)
    if event_kind(obj) is not None or (isinstance(obj, dict) and isinstance(obj.get("candidates"), list)):
        second = next(objects, None)
        head = [first] if second is None else [first, second]
        if second is not None and stream_format([o for _, o in head]) is not None and one_stream([o for _, o in head]):
            events = [o for _, o in head] + [o for _, o in objects]  # one stream: the whole file is one response
            yield engine_answer(events, file.name, fmt, options, dataset, file.name)
            return
        pairs = _chain(*head, rest=objects) if second is not None else iter(head)
    for where, obj in pairs:
        try:
            found = fmt or detect(obj)
            if found == "canonical":
                annotated = _canonical(obj, where, dataset, file.name)
            else:
                annotated = engine_answer(obj, where, found, options, dataset, file.name)
        except InputError as exc:
            refuse_or_raise(refusals, exc, file.name)
            continue
        yield annotated


def _chain(*head: tuple[str, Any], rest: Iterator[tuple[str, Any]] | None = None) -> Iterator[tuple[str, Any]]:
    yield from head
    if rest is not None:
        yield from rest


def one_stream(events: list[Any]) -> bool:
    """Objects of one file are one stream: event objects always; Gemini chunks only when they share
    a responseId, or carry none and the first has no finishReason (a whole response always says why
    it finished), so a JSONL of separate Gemini answers stays separate answers."""
    if stream_format(events) != "gemini":
        return True
    ids = {e.get("responseId") or e.get("response_id") for e in events if isinstance(e, dict)}
    if len(ids) == 1 and None not in ids:
        return True
    first = events[0] if events and isinstance(events[0], dict) else {}
    cands = first.get("candidates")
    finished = isinstance(cands, list) and bool(cands) and isinstance(cands[0], dict) and bool(cands[0].get("finishReason"))
    return ids == {None} and not finished


def _canonical(obj: Any, where: str, dataset: str, source_file: str) -> AnnotatedAnswer:
    try:
        annotated = parse_answer(obj, where, dataset)
    except InputError as exc:
        if isinstance(obj, dict) and "answer_id" not in obj:
            raise unrecognised(obj, where, exc) from exc
        raise
    meta = {**annotated.answer.meta, "format": "canonical", "source_file": source_file[:300]}
    return dataclasses.replace(annotated, answer=dataclasses.replace(annotated.answer, meta=meta))


def _release_answers(release: str, file: Path, refusals: Refusals | None = None) -> Iterator[AnnotatedAnswer]:
    """A whole file of release records through that release's importer (format and file in meta)."""
    from pipeline.importers.aee import load_aee
    from pipeline.importers.expertqa import iter_expertqa
    from pipeline.importers.hagrid import iter_hagrid

    loaders: dict[str, Callable[..., Iterable[AnnotatedAnswer]]] = {
        "expertqa": iter_expertqa, "hagrid": iter_hagrid, "aee": load_aee}
    for annotated in loaders[release](file, refusals):
        meta = {**annotated.answer.meta, "format": release, "source_file": file.name[:300]}
        yield dataclasses.replace(annotated, answer=dataclasses.replace(annotated.answer, meta=meta))


def conversation_answer(paths: list[Path], options: ImportOptions | None = None) -> AnnotatedAnswer:
    """`aee score a.json b.json --conversation`: every response of the files, in order, as one answer
    (an Anthropic response that stopped with pause_turn and its continuation). The first envelope
    gives the query; InputError says why the responses cannot be one answer."""
    responses: list[Any] = []
    envelope: dict[str, Any] = {}
    where = " + ".join(p.name for p in paths)[:200]
    for path in paths:
        for file in input_files(path):
            for _, obj in _file_objects(file):
                if is_envelope(obj):
                    envelope = envelope or {k: v for k, v in obj.items() if k not in ("response", "responses", "id")}
                    inner = obj.get("responses", obj.get("response"))
                    responses.extend(inner if isinstance(inner, list) and detect_response(inner) == "anthropic"
                                     and stream_format(inner) is None else [inner])
                else:
                    responses.append(obj)
    responses = [unwrap(r, where) if isinstance(r, list) else r for r in responses]
    if len(responses) < 2:
        raise InputError(f"--conversation joins two or more responses; found {len(responses)}", record=where)
    formats = {detect_response(r) for r in responses}
    if formats != {"anthropic"}:
        raise InputError("--conversation joins Anthropic responses continued after stop_reason 'pause_turn'; these are "
                         f"{', '.join(sorted(str(f or 'unrecognised') for f in formats))} responses, each a complete answer",
                         record=where)
    obj = {**envelope, "engine": envelope.get("engine", "anthropic"), "responses": responses}
    if "query" not in obj and options is not None and options.query:
        obj["query"] = options.query
    return engine_answer(obj, where, "anthropic", options, paths[0].stem, where)


def iter_auto(path: str | Path, options: ImportOptions | None = None,
              refusals: Refusals | None = None) -> Iterator[AnnotatedAnswer]:
    """Any supported format, recognised object by object."""
    return iter_answers(path, None, options, refusals)


def first_format(path: str | Path) -> str | None:
    """The format of the first object of a file or folder (None when it cannot be read)."""
    try:
        for file in input_files(Path(path)):
            for _, obj in _file_objects(file):
                if isinstance(obj, list) or event_kind(obj) is not None:
                    return detect_response(obj if isinstance(obj, list) else [obj]) or "canonical"
                return detect(obj)
    except InputError:
        return None
    return None


def _loader(fmt: str) -> Callable[..., Iterator[AnnotatedAnswer]]:
    def load(path: str | Path, options: ImportOptions | None = None,
             refusals: Refusals | None = None) -> Iterator[AnnotatedAnswer]:
        return iter_answers(path, fmt, options, refusals)

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
