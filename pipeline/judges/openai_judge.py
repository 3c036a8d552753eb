"""LLM judge over any OpenAI-compatible chat endpoint (OpenAI, Azure, Ollama, vLLM, llama.cpp).

Design in short:
- Plain `chat.completions.create`; `response_format={"type": "json_object"}` only when the
  `json_mode` flag says the server supports it (default: on for api.openai.com, off elsewhere).
  Replies are always parsed leniently (code fences, trailing commas, single quotes, prose around
  the JSON, truncated endings) and validated; one corrective follow-up is sent when a reply is
  still unusable, after which a parse failure becomes a verdict with label None.
- Support is batched: all statements of an answer against one source in one call. Long sources
  are cut into passages and only the passages that best match the statements (BM25) are sent, so
  the input stays under `max_passage_chars` characters of document text per call.
- Calls retry with exponential backoff and jitter on 429, 5xx, timeouts and connection errors,
  honouring Retry-After; a semaphore bounds concurrent requests across threads.
- Documents (and the answer for confidence) are fenced as untrusted data.
- The API key never reaches a verdict, a log line, an exception message or a returned dict.

Verdict conventions: `judge` = "openai:<model>", `prompt_version` = the prompt id that produced it
("support_v1"). A failed call gives label None and raw "judge_error: <reason>"; an unparsable reply
gives label None and raw "parse_error: <reason>" followed by the model's text.
"""

from __future__ import annotations

import ast
import email.utils
import hashlib
import json
import logging
import math
import os
import random
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from pipeline.judges.base import JudgeError
from pipeline.judges.cache import ERROR_RAW_PREFIX
from pipeline.prompts import load_prompt, render_prompt, split_prompt
from pipeline.records import CONFIDENCE_LEVELS, Answer, Source, Statement, Verdict

__all__ = [
    "OpenAIJudge",
    "PairwiseReferenceJudge",
    "estimate_run",
    "parse_json_loose",
    "select_passages",
    "split_passages",
    "fence",
    "fence_markers",
    "locate_quote",
    "redact",
    "DEFAULT_MODEL",
    "DEFAULT_PRICES_PER_1M",
    "PARSE_ERROR_PREFIX",
]

log = logging.getLogger(__name__)

DEFAULT_MODEL = "gpt-4o-mini"
PARSE_ERROR_PREFIX = "parse_error: "
# USD per 1M tokens (input, output). List prices at the time of writing; they change: pass your own
# table to `estimate_run(..., {"prices": {...}})`. Unknown models fall back to gpt-4o-mini prices.
DEFAULT_PRICES_PER_1M: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
}

PROMPT_NAMES = ("relevance", "stance", "confidence", "support")  # the label kinds an LLM judge gives
PROMPT_FILES = (*PROMPT_NAMES, "support_pack")  # support_pack: several short sources in one call
_OPENAI_DEFAULT_HOST = "api.openai.com"

# ----------------------------------------------------------------------------------------------
# configuration
# ----------------------------------------------------------------------------------------------


def _read_secrets(path: Path | None) -> dict[str, Any]:
    """The `[openai]` table of a Streamlit secrets file, or {} (missing file, bad TOML)."""
    candidates: list[Path] = []
    if path is not None:
        candidates.append(Path(path))
    else:
        from pipeline.paths import REPO_ROOT

        candidates += [Path.cwd() / ".streamlit" / "secrets.toml", REPO_ROOT / ".streamlit" / "secrets.toml"]
    for candidate in candidates:
        if candidate.is_file():
            try:
                import tomllib

                with candidate.open("rb") as fh:
                    table = tomllib.load(fh).get("openai", {})
                return dict(table) if isinstance(table, Mapping) else {}
            except (OSError, ValueError) as exc:
                log.warning("could not read %s: %s", candidate, type(exc).__name__)
                return {}
    return {}


def _first(*values: Any) -> Any:
    for value in values:
        if value is not None and value != "":
            return value
    return None


def _as_bool(value: Any) -> bool | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in {"1", "true", "yes", "on"}


# ----------------------------------------------------------------------------------------------
# redaction and fencing
# ----------------------------------------------------------------------------------------------

_KEYLIKE_RE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{8,}|Bearer\s+[A-Za-z0-9_\-\.=]{8,})")


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Replace the given secrets and anything shaped like an API key / bearer token by '***'."""
    if not text:
        return text
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return _KEYLIKE_RE.sub("***", text)


FENCE_OPEN = "<<<UNTRUSTED DATA BEGIN>>>"
FENCE_CLOSE = "<<<UNTRUSTED DATA END>>>"
_FENCE_TOKEN_RE = re.compile(r"<<<\s*UNTRUSTED\s+DATA\s+(?:BEGIN|END)\s*>>>", re.IGNORECASE)


def _local_fence(text: str) -> str:
    """Wrap text between fence lines after removing any copy of the fence lines from it."""
    clean = _FENCE_TOKEN_RE.sub("[fence removed]", text)
    return f"{FENCE_OPEN}\n{clean}\n{FENCE_CLOSE}"


def _fence_impl() -> tuple[Callable[[str], str], str, str, str]:
    """(fence function, its label, opening marker, closing marker) currently in use."""
    try:  # written by another module of the project; preferred when present
        from pipeline import injection

        return (injection.fence_document, "pipeline.injection.fence_document",
                str(getattr(injection, "FENCE_OPEN", "")), str(getattr(injection, "FENCE_CLOSE", "")))
    except Exception:  # noqa: BLE001 - missing module or broken import: fall back
        return _local_fence, "local_fence_v1", FENCE_OPEN, FENCE_CLOSE


def fence_markers() -> tuple[str, str]:
    """The opening and closing fence lines that `fence` currently produces."""
    _, _, open_, close = _fence_impl()
    return open_, close


def fence(text: str) -> str:
    """Fence untrusted text: `pipeline.injection.fence_document` when available, else a local fence."""
    impl = _fence_impl()[0]
    if impl is not _local_fence:
        try:
            fenced = impl(text)
            if isinstance(fenced, str):
                return fenced
        except Exception:  # noqa: BLE001
            log.warning("fence_document failed; using the local fence")
    return _local_fence(text)


# ----------------------------------------------------------------------------------------------
# passages and BM25
# ----------------------------------------------------------------------------------------------

_WORD_RE = re.compile(r"\w+", re.UNICODE)
_STOPWORDS = frozenset(
    "a an and are as at be been but by can could did do does for from had has have he her his how i "
    "if in into is it its may might more most no not of on or our she so such than that the their "
    "them then there these they this those to was we were what when where which while who why will "
    "with would you your".split()
)


def _tokens(text: str) -> list[str]:
    return [w for w in _WORD_RE.findall(text.lower()) if w not in _STOPWORDS and len(w) > 1]


@dataclass(frozen=True, slots=True)
class Passage:
    """A slice of a source text; `text == source[start:end]`."""

    pid: str  # "P1", "P2", ... in document order
    start: int
    end: int
    text: str


def split_passages(text: str, size: int = 1000) -> list[Passage]:
    """Cut text into passages of at most `size` characters, preferring paragraph, line, sentence
    and word boundaries. Every passage is an exact substring of `text`."""
    size = max(50, int(size))
    spans: list[tuple[int, int]] = []
    start, n = 0, len(text)
    while start < n:
        while start < n and text[start].isspace():
            start += 1
        if start >= n:
            break
        end = min(start + size, n)
        if end < n:
            window = text[start + size // 2 : end]
            cut = -1
            for pattern in ("\n\n", "\n", ". ", "? ", "! ", "; ", " "):
                pos = window.rfind(pattern)
                if pos >= 0:
                    cut = start + size // 2 + pos + len(pattern)
                    break
            if cut > start:
                end = cut
        stripped_end = end
        while stripped_end > start and text[stripped_end - 1].isspace():
            stripped_end -= 1
        if stripped_end > start:
            spans.append((start, stripped_end))
        start = end
    return [Passage(f"P{i + 1}", s, e, text[s:e]) for i, (s, e) in enumerate(spans)]


def _bm25_matrix(queries: Sequence[list[str]], docs: Sequence[list[str]], k1: float = 1.5, b: float = 0.75) -> list[list[float]]:
    n_docs = len(docs)
    if n_docs == 0:
        return [[] for _ in queries]
    avg_len = sum(len(d) for d in docs) / n_docs or 1.0
    df: dict[str, int] = {}
    for doc in docs:
        for term in set(doc):
            df[term] = df.get(term, 0) + 1
    tfs = []
    for doc in docs:
        tf: dict[str, int] = {}
        for term in doc:
            tf[term] = tf.get(term, 0) + 1
        tfs.append(tf)
    scores = []
    for query in queries:
        terms = set(query)
        row = []
        for doc, tf in zip(docs, tfs):
            s = 0.0
            for term in terms:
                f = tf.get(term)
                if not f:
                    continue
                idf = math.log(1 + (n_docs - df[term] + 0.5) / (df[term] + 0.5))
                s += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(doc) / avg_len))
            row.append(s)
        scores.append(row)
    return scores


def select_passages(
    text: str, statements: Sequence[str], budget: int = 6000, size: int = 1000
) -> tuple[list[Passage], int]:
    """Pick passages of `text` most relevant to the statements within `budget` characters.

    Each statement first gets its best passages in turn (round robin, so no statement is left
    without evidence), then the remaining budget goes to the best-scoring passages overall; the
    result is in document order. Returns (passages, total passages in the document).
    """
    passages = split_passages(text, size)
    total = len(passages)
    if sum(len(p.text) for p in passages) <= budget:
        return passages, total
    scores = _bm25_matrix([_tokens(s) for s in statements], [_tokens(p.text) for p in passages])
    ranked = [
        [j for j in sorted(range(total), key=lambda j: (-row[j], j)) if row[j] > 0] for row in scores
    ]
    chosen: set[int] = set()
    used = 0

    def take(j: int) -> bool:
        nonlocal used
        if j in chosen:
            return True
        if used + len(passages[j].text) > budget:
            return False
        chosen.add(j)
        used += len(passages[j].text)
        return True

    depth = max((len(r) for r in ranked), default=0)
    for rank in range(depth):
        for r in ranked:
            if rank < len(r):
                take(r[rank])
    best = [max((row[j] for row in scores), default=0.0) for j in range(total)]
    for j in sorted(range(total), key=lambda j: (-best[j], j)):
        take(j)
    if not chosen and passages:  # budget smaller than one passage: send a clipped first passage
        p = passages[0]
        return [Passage(p.pid, p.start, p.start + budget, text[p.start : p.start + budget])], total
    return [passages[j] for j in sorted(chosen)], total


# ----------------------------------------------------------------------------------------------
# lenient JSON
# ----------------------------------------------------------------------------------------------

_THINK_RE = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE_RE = re.compile(r"```[ \t]*(?:json|JSON|javascript|js)?[ \t]*\n?(.*?)(?:```|$)", re.DOTALL)


def _balanced(text: str) -> tuple[str, bool]:
    """The first {...} or [...] region, tracking strings; (region, closed?). Unclosed regions are
    returned up to the end, with the missing closers appended."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return "", False
    start = min(starts)
    stack: list[str] = []
    quote: str | None = None
    escape = False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'" and (ch == '"' or _looks_like_quote_open(text, i)):
            quote = ch
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if stack and stack[-1] == ch:
                stack.pop()
            if not stack:
                return text[start : i + 1], True
    tail = text[start:]
    if quote:
        tail += quote
    tail = re.sub(r"[,:\s]+$", "", tail)
    return tail + "".join(reversed(stack)), False


def _looks_like_quote_open(text: str, i: int) -> bool:
    # A single quote opens a string only after a structural character (not inside words: "don't").
    j = i - 1
    while j >= 0 and text[j].isspace():
        j -= 1
    return j < 0 or text[j] in "{[,:"


def _python_literal(candidate: str) -> Any:
    py = re.sub(r"\btrue\b", "True", candidate)
    py = re.sub(r"\bfalse\b", "False", py)
    py = re.sub(r"\bnull\b", "None", py)
    return ast.literal_eval(py)


def parse_json_loose(text: str | None) -> Any:
    """Parse JSON out of a model reply, repairing common breakage. Raises ValueError with a short
    reason when nothing usable is found."""
    if text is None or not str(text).strip():
        raise ValueError("empty reply")
    t = _THINK_RE.sub("", str(text)).strip()
    t = t.replace("\u201c", '"').replace("\u201d", '"').replace("\u2018", "'").replace("\u2019", "'")
    fenced = _FENCE_RE.search(t)
    if fenced and fenced.group(1).strip():
        t = fenced.group(1).strip()
    try:
        return json.loads(t)
    except ValueError:
        pass
    candidate, _closed = _balanced(t)
    if not candidate:
        # A bare scalar (e.g. "4" or "full") is still an answer for some prompts.
        bare = t.strip().strip("\"'.").strip()
        if re.fullmatch(r"-?\d+(\.\d+)?", bare):
            return json.loads(bare)
        raise ValueError("no JSON object in reply")
    attempts = [candidate]
    no_trailing = re.sub(r",\s*([}\]])", r"\1", candidate)
    attempts.append(no_trailing)
    quoted_keys = re.sub(r'([{,]\s*)([A-Za-z_][\w\-]*)\s*:', r'\1"\2":', no_trailing)
    attempts.append(quoted_keys)
    for attempt in attempts:
        try:
            return json.loads(attempt)
        except ValueError:
            continue
    for attempt in (no_trailing, quoted_keys):
        try:
            value = _python_literal(attempt)
            if isinstance(value, (dict, list)):
                return value
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    raise ValueError("reply is not valid JSON even after repair")


# ----------------------------------------------------------------------------------------------
# label normalisation and validation
# ----------------------------------------------------------------------------------------------

_SUPPORT_SYNONYMS = {
    "full": "full", "fully": "full", "fully supported": "full", "supported": "full", "yes": "full",
    "complete": "full", "entailed": "full", "fully_supported": "full",
    "partial": "partial", "partially": "partial", "partially supported": "partial",
    "partially_supported": "partial", "some": "partial",
    "none": "none", "no": "none", "not supported": "none", "unsupported": "none",
    "not_supported": "none", "no support": "none", "not": "none", "null": "none",
}
_RELEVANCE_SYNONYMS = {
    "core": "relevant", "relevant": "relevant", "core statement": "relevant", "yes": "relevant",
    "1": "relevant", "true": "relevant",
    "filler": "filler", "not core": "filler", "irrelevant": "filler", "no": "filler", "0": "filler",
    "false": "filler",
}
_STANCE_SYNONYMS = {
    "agree": "agree", "agrees": "agree", "for": "agree", "pro": "agree", "supports": "agree",
    "support": "agree",
    "disagree": "disagree", "disagrees": "disagree", "against": "disagree", "con": "disagree",
    "oppose": "disagree", "opposes": "disagree",
    "neutral": "neutral", "balanced": "neutral", "none": "neutral", "neither": "neutral",
}
_SYNONYMS = {"support": _SUPPORT_SYNONYMS, "relevance": _RELEVANCE_SYNONYMS, "stance": _STANCE_SYNONYMS}
_LABEL_KEYS = ("label", "support", "stance", "relevance", "verdict", "answer", "class", "core", "category")
_ID_KEYS = ("id", "statement_id", "sid", "statement", "index", "idx", "number")
_CONFIDENCE_NAMES = {name.lower(): level for level, name in CONFIDENCE_LEVELS.items()}


def _norm_label(kind: str, value: Any) -> str | None:
    if isinstance(value, bool):
        value = "true" if value else "false"
    if value is None:
        return None
    key = re.sub(r"[\s_\-]+", " ", str(value).strip().strip(".").lower())
    table = _SYNONYMS[kind]
    return table.get(key) or table.get(key.replace(" ", "_"))


def _parse_id(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        m = re.search(r"\d+", value)
        return int(m.group()) if m else None
    return None


def _items_of(obj: Any) -> list[Any]:
    if isinstance(obj, dict):
        for key in ("results", "statements", "verdicts", "labels", "items", "data", "output"):
            if key in obj:
                return _items_of(obj[key])
        if any(k in obj for k in _LABEL_KEYS) and any(k in obj for k in _ID_KEYS):
            return [obj]
        if obj and all(_parse_id(k) is not None for k in obj):
            rows = []
            for k, v in obj.items():
                row = dict(v) if isinstance(v, dict) else {"label": v}
                row.setdefault("id", k)
                rows.append(row)
            return rows
        return []
    if isinstance(obj, list):
        return obj
    return []


@dataclass
class _Checked:
    """Validated items of one reply: position -> item dict (with a normalised "label")."""

    items: dict[int, dict[str, Any]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _check_labels(kind: str, obj: Any, ids: Sequence[int]) -> _Checked:
    out = _Checked()
    wanted = set(ids)
    raw_items = _items_of(obj)
    if raw_items and all(isinstance(x, str) for x in raw_items) and len(raw_items) == len(ids):
        raw_items = [{"id": i, "label": x} for i, x in zip(ids, raw_items)]  # positional list
    for item in raw_items:
        if not isinstance(item, dict):
            continue
        sid = next((_parse_id(item[k]) for k in _ID_KEYS if k in item), None)
        if sid not in wanted:
            if sid is not None:
                out.problems.append(f"unknown id {sid}")
            continue
        label_value = next((item[k] for k in _LABEL_KEYS if k in item), None)
        label = _norm_label(kind, label_value)
        if label is None:
            out.problems.append(f"id {sid}: label {label_value!r} is not one of the allowed labels")
            continue
        out.items[sid] = {**item, "label": label}
    missing = [i for i in ids if i not in out.items]
    if not missing:
        out.problems = []  # stray extra entries do not matter once every id has a label
    else:
        out.problems.append("missing ids " + ", ".join(map(str, missing)))
    return out


def _check_confidence(obj: Any) -> _Checked:
    out = _Checked()
    value: Any = obj
    cue = ""
    if isinstance(obj, dict):
        cue = str(obj.get("cue") or obj.get("evidence") or obj.get("quote") or "")
        value = next(
            (obj[k] for k in ("level", "confidence", "score", "rating", "label", "confidence_score") if k in obj),
            None,
        )
    level: int | None = None
    if isinstance(value, bool):
        level = None
    elif isinstance(value, (int, float)) and float(value).is_integer():
        level = int(value)
    elif isinstance(value, str):
        name = re.sub(r"\s+", " ", value.strip().strip(".").lower())
        if name in _CONFIDENCE_NAMES:
            level = _CONFIDENCE_NAMES[name]
        elif re.fullmatch(r"\d+(\.0+)?", name):
            level = int(float(name))
    if level is None or not 1 <= level <= 5:
        out.problems.append(f"confidence level {value!r} is not an integer from 1 to 5")
        return out
    out.items[0] = {"label": str(level), "cue": cue}
    return out


# ----------------------------------------------------------------------------------------------
# evidence
# ----------------------------------------------------------------------------------------------


def _normalise_with_map(text: str) -> tuple[str, list[int]]:
    chars: list[str] = []
    mapping: list[int] = []
    prev_space = True
    for i, ch in enumerate(text):
        if ch.isspace():
            if not prev_space:
                chars.append(" ")
                mapping.append(i)
            prev_space = True
        else:
            chars.append(ch.lower())
            mapping.append(i)
            prev_space = False
    return "".join(chars), mapping


def locate_quote(quote: str, source_text: str) -> str:
    """Return the span of `source_text` matching `quote` (exact, then whitespace- and
    case-insensitive, then the longest piece between ellipses); "" when it is not in the source."""
    q = (quote or "").strip().strip("\"'").strip()
    if len(q) < 3 or not source_text:
        return ""
    if q in source_text:
        return q
    norm, mapping = _normalise_with_map(source_text)
    pieces = [q] + sorted(
        (p.strip() for p in re.split(r"\.\.\.|\u2026", q) if len(p.strip()) >= 20), key=len, reverse=True
    )
    for piece in pieces:
        nq, _ = _normalise_with_map(piece)
        nq = nq.strip()
        if len(nq) < 3:
            continue
        pos = norm.find(nq)
        if pos >= 0:
            return source_text[mapping[pos] : mapping[pos + len(nq) - 1] + 1]
    return ""


# ----------------------------------------------------------------------------------------------
# request planning (shared by the judge and the dry-run estimate)
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Settings:
    max_passage_chars: int = 6000
    passage_chars: int = 1000
    max_statements_per_call: int = 20
    max_label_statements: int = 80
    max_answer_chars: int = 12000
    pairwise: bool = False
    # packing: sources whose selected passages together fit max_pack_chars share one call
    max_sources_per_call: int = 8
    max_pack_chars: int = 8000


@dataclass
class _Request:
    kind: str
    prompt_id: str
    messages: list[dict[str, str]]
    positions: list[int]  # statement positions (into the statements argument) covered by this call
    passages: list[Passage] = field(default_factory=list)
    # a packed support call: (source, its selected passages) for S1, S2, ... in this order
    pack: list[tuple[Source, list[Passage]]] = field(default_factory=list)
    source: Source | None = None  # the one source of a single-source support call


def _prompt_parts(kind: str) -> tuple[str, str, str]:
    text, version = load_prompt(kind)
    system, user = split_prompt(text)
    return system, user, f"{kind}_{version}"


def _statements_json(statements: Sequence[Statement], positions: Sequence[int]) -> str:
    rows = [json.dumps({"id": p + 1, "text": statements[p].text}, ensure_ascii=False) for p in positions]
    return "[\n" + ",\n".join(rows) + "\n]"


def _chunks(n: int, size: int) -> list[list[int]]:
    size = max(1, size)
    return [list(range(i, min(n, i + size))) for i in range(0, n, size)]


def _plan_labels(kind: str, settings: _Settings, answer: Answer, statements: Sequence[Statement]) -> list[_Request]:
    system, user, prompt_id = _prompt_parts(kind)
    requests = []
    for positions in _chunks(len(statements), settings.max_label_statements):
        content = render_prompt(
            user,
            query=json.dumps(answer.query, ensure_ascii=False),
            statements_json=_statements_json(statements, positions),
        )
        requests.append(_Request(kind, prompt_id, [{"role": "system", "content": system}, {"role": "user", "content": content}], positions))
    return requests


def _plan_confidence(settings: _Settings, answer: Answer) -> _Request:
    system, user, prompt_id = _prompt_parts("confidence")
    text = answer.text
    if len(text) > settings.max_answer_chars:
        text = text[: settings.max_answer_chars] + "\n[answer truncated]"
    content = render_prompt(user, query=json.dumps(answer.query, ensure_ascii=False), answer=fence(text))
    return _Request("confidence", prompt_id, [{"role": "system", "content": system}, {"role": "user", "content": content}], [])


def _document_block(passages: Sequence[Passage], total: int) -> str:
    body = "\n\n".join(f"[{p.pid}] {p.text}" for p in passages)
    note = (
        f"({len(passages)} of {total} passages of a longer document, chosen as most related to the statements)\n"
        if len(passages) < total
        else ""
    )
    return note + fence(body)


def _plan_support(settings: _Settings, answer: Answer, statements: Sequence[Statement], source: Source) -> list[_Request]:
    system, user, prompt_id = _prompt_parts("support")
    if settings.pairwise:
        groups = [[i] for i in range(len(statements))]
    else:
        groups = _chunks(len(statements), settings.max_statements_per_call)
    requests = []
    for positions in groups:
        if settings.pairwise:
            passages = split_passages(source.text, settings.passage_chars)
            total = len(passages)
        else:
            passages, total = select_passages(
                source.text, [statements[p].text for p in positions], settings.max_passage_chars, settings.passage_chars
            )
        content = render_prompt(
            user,
            query=json.dumps(answer.query, ensure_ascii=False),
            statements_json=_statements_json(statements, positions),
            document=_document_block(passages, total),
        )
        requests.append(
            _Request("support", prompt_id, [{"role": "system", "content": system}, {"role": "user", "content": content}], positions, passages,
                     source=source)
        )
    return requests


def _pack_sources(settings: _Settings, selections: Sequence[tuple[Source, list[Passage], int]]) -> list[list[int]]:
    """Group sources (in order) into packs: a pack holds at most `max_sources_per_call` sources
    whose selected passages total at most `max_pack_chars`; a source too big for that is alone."""
    packs: list[list[int]] = []
    current: list[int] = []
    used = 0
    for k, (_, passages, _) in enumerate(selections):
        size = sum(len(p.text) for p in passages)
        if current and (len(current) >= settings.max_sources_per_call or used + size > settings.max_pack_chars):
            packs.append(current)
            current, used = [], 0
        current.append(k)
        used += size
    if current:
        packs.append(current)
    return packs


def _plan_support_many(settings: _Settings, answer: Answer, statements: Sequence[Statement],
                       sources: Sequence[Source]) -> list[_Request]:
    """Support calls for all statements against several sources. Short sources share a call (the
    support_pack prompt); a source alone in its pack gets exactly the single-source call."""
    sources = [s for s in sources if (s.text or "").strip()]
    if settings.pairwise or settings.max_sources_per_call <= 1 or len(sources) <= 1:
        return [r for s in sources for r in _plan_support(settings, answer, statements, s)]
    system, user, prompt_id = _prompt_parts("support_pack")
    requests: list[_Request] = []
    for positions in _chunks(len(statements), settings.max_statements_per_call):
        texts = [statements[p].text for p in positions]
        # the per-source budget stays max_passage_chars, as in a single-source call
        selections = [(s, *select_passages(s.text, texts, settings.max_passage_chars, settings.passage_chars)) for s in sources]
        for pack in _pack_sources(settings, selections):
            if len(pack) == 1:
                source = selections[pack[0]][0]
                requests.extend(r for r in _plan_support(settings, answer, statements, source)
                                if r.positions == positions)
                continue
            blocks = []
            for k, i in enumerate(pack, start=1):
                source, passages, total = selections[i]
                blocks.append(f"Source S{k} (listed as [{source.index}] in the answer):\n{_document_block(passages, total)}")
            content = render_prompt(
                user,
                query=json.dumps(answer.query, ensure_ascii=False),
                statements_json=_statements_json(statements, positions),
                documents="\n\n".join(blocks),
                source_ids=", ".join(f"S{k}" for k in range(1, len(pack) + 1)),
            )
            requests.append(_Request("support", prompt_id, [{"role": "system", "content": system}, {"role": "user", "content": content}],
                                     list(positions), pack=[(selections[i][0], selections[i][1]) for i in pack]))
    return requests


def _pack_key(statement_id: int, source_number: int) -> int:
    """One integer per (statement id, S-number) of a packed call; statement ids stay below 10,000."""
    return source_number * 10_000 + statement_id


def _check_pack_labels(obj: Any, ids: Sequence[int], n_sources: int) -> _Checked:
    """Validate a packed reply: one support label per (statement id, source S1..Sn)."""
    out = _Checked()
    wanted = {_pack_key(i, k) for i in ids for k in range(1, n_sources + 1)}
    for item in _items_of(obj):
        if not isinstance(item, dict):
            continue
        sid = next((_parse_id(item[k]) for k in _ID_KEYS if k in item), None)
        src = next((_parse_id(item[k]) for k in ("source", "source_id", "src", "document", "doc") if k in item), None)
        if sid is None or src is None or _pack_key(sid, src) not in wanted:
            if sid is not None:
                out.problems.append(f"unknown pair id {sid} / source S{src}")
            continue
        label_value = next((item[k] for k in _LABEL_KEYS if k in item and k != "support"), item.get("support"))
        label = _norm_label("support", label_value)
        if label is None:
            out.problems.append(f"id {sid} / S{src}: label {label_value!r} is not one of full, partial, none")
            continue
        out.items[_pack_key(sid, src)] = {**item, "label": label}
    missing = sorted(wanted - set(out.items))
    if not missing:
        out.problems = []
    else:
        shown = ", ".join(f"{k % 10_000}/S{k // 10_000}" for k in missing[:20])
        out.problems.append(f"missing (statement id / source) pairs {shown}" + (" ..." if len(missing) > 20 else ""))
    return out


# ----------------------------------------------------------------------------------------------
# the judge
# ----------------------------------------------------------------------------------------------


@dataclass
class _Reply:
    text: str = ""
    error: str | None = None


@dataclass
class _Outcome:
    checked: _Checked
    raw_by_pos: dict[int, str]
    failure_raw: str  # raw for positions without a usable label


class OpenAIJudge:
    """Judge backed by an OpenAI-compatible chat completions endpoint.

    Configuration falls back, in order, to the constructor argument, `AEE_OPENAI_*`, `OPENAI_*`
    environment variables, and the `[openai]` table of `.streamlit/secrets.toml`
    (keys `base_url`, `api_key`, `model`, `json_mode`, `api_version`).
    """

    mode = "batched"

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        timeout: float = 60,
        max_retries: int = 4,
        concurrency: int = 4,
        max_passage_chars: int = 6000,
        seed: int | None = None,
        temperature: float = 0.0,
        client: Any = None,
        *,
        json_mode: bool | None = None,
        api_version: str | None = None,
        passage_chars: int = 1000,
        max_statements_per_call: int = 20,
        max_sources_per_call: int = 8,
        max_pack_chars: int = 8000,
        max_output_tokens: int | None = None,
        backoff_base: float = 1.0,
        backoff_max: float = 30.0,
        max_retry_after: float = 60.0,
        secrets_path: Path | str | None = None,
    ) -> None:
        secrets = _read_secrets(Path(secrets_path) if secrets_path else None)
        env = os.environ
        self.base_url: str | None = _first(base_url, env.get("AEE_OPENAI_BASE_URL"), env.get("OPENAI_BASE_URL"), secrets.get("base_url"))
        api_key = _first(api_key, env.get("AEE_OPENAI_API_KEY"), env.get("OPENAI_API_KEY"), secrets.get("api_key"))
        self.model: str = str(_first(model, env.get("AEE_OPENAI_MODEL"), secrets.get("model"), DEFAULT_MODEL))
        self.api_version: str | None = _first(api_version, env.get("AEE_OPENAI_API_VERSION"), secrets.get("api_version"))
        flag = _first(json_mode, _as_bool(env.get("AEE_OPENAI_JSON_MODE")), _as_bool(secrets.get("json_mode")))
        official = self.base_url is None or _OPENAI_DEFAULT_HOST in str(self.base_url)
        self.json_mode: bool = bool(flag) if flag is not None else (official and self.api_version is None)
        if client is None and not api_key and (official or self.api_version):
            raise JudgeError(
                "OpenAI judge has no API key: set AEE_OPENAI_API_KEY (or OPENAI_API_KEY), or "
                "`api_key` under [openai] in .streamlit/secrets.toml; for a local server (Ollama, "
                "vLLM, llama.cpp) set AEE_OPENAI_BASE_URL instead"
            )
        self._secret: str | None = str(api_key) if api_key else None
        if client is not None and self._secret is None:
            injected = getattr(client, "api_key", None)
            self._secret = injected if isinstance(injected, str) and injected else None
        self.timeout = float(timeout)
        self.max_retries = max(0, int(max_retries))
        self.concurrency = max(1, int(concurrency))
        self.seed = seed
        self.temperature = float(temperature)
        self.max_output_tokens = max_output_tokens
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.max_retry_after = float(max_retry_after)
        self.settings = _Settings(
            max_passage_chars=int(max_passage_chars),
            passage_chars=int(passage_chars),
            max_statements_per_call=int(max_statements_per_call),
            pairwise=self.mode == "pairwise",
            max_sources_per_call=max(1, int(max_sources_per_call)),
            max_pack_chars=int(max_pack_chars),
        )
        self._client = client
        self._client_lock = threading.Lock()
        self._semaphore = threading.BoundedSemaphore(self.concurrency)
        self._stats_lock = threading.Lock()
        self.stats: dict[str, int] = {
            "requests": 0, "retries": 0, "failed_calls": 0, "parse_failures": 0,
            "corrective_retries": 0, "input_tokens": 0, "output_tokens": 0,
        }
        versions = {kind: _prompt_parts(kind)[2] for kind in PROMPT_FILES}
        suffixes = {pid.rsplit("_", 1)[1] for pid in versions.values()}
        self.prompt_ids = versions
        self.prompt_version = suffixes.pop() if len(suffixes) == 1 else "+".join(versions[k] for k in PROMPT_FILES)
        prefix = "openai-pairwise" if self.mode == "pairwise" else "openai"
        self.name = f"{prefix}:{self.model}"
        self.cache_fingerprint = self._fingerprint()

    def __repr__(self) -> str:  # never shows the key
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, json_mode={self.json_mode})"

    def _fingerprint(self) -> str:
        parts = {
            "mode": self.mode,
            "prompts": {k: hashlib.sha256(load_prompt(k)[0].encode()).hexdigest() for k in PROMPT_FILES},
            "fence": _fence_impl()[1],
            "settings": [self.settings.max_passage_chars, self.settings.passage_chars, self.settings.max_statements_per_call,
                         self.settings.max_sources_per_call, self.settings.max_pack_chars],
            "temperature": self.temperature,
            "seed": self.seed,
            "max_output_tokens": self.max_output_tokens,
            "json_mode": self.json_mode,
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]

    # ------------------------------------------------------------------ client and calls
    def _get_client(self) -> Any:
        if self._client is not None:
            return self._client
        with self._client_lock:
            if self._client is None:
                try:
                    import openai
                except ImportError as exc:  # pragma: no cover - openai is a declared dependency
                    raise JudgeError("the `openai` package is not installed") from exc
                key = self._secret or "not-needed"
                if self.api_version:
                    self._client = openai.AzureOpenAI(
                        api_key=key, azure_endpoint=self.base_url, api_version=self.api_version,
                        timeout=self.timeout, max_retries=0,
                    )
                else:
                    self._client = openai.OpenAI(api_key=key, base_url=self.base_url, timeout=self.timeout, max_retries=0)
            return self._client

    def _redact(self, text: str) -> str:
        return redact(text, [self._secret])

    def _bump(self, **counts: int) -> None:
        with self._stats_lock:
            for k, v in counts.items():
                self.stats[k] = self.stats.get(k, 0) + v

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        base = min(self.backoff_max, self.backoff_base * (2 ** attempt))
        return base * random.uniform(0.5, 1.0)

    @staticmethod
    def _retry_after(exc: Any) -> float | None:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
        if not headers:
            return None
        try:
            ms = headers.get("retry-after-ms")
            if ms:
                return float(ms) / 1000.0
            value = headers.get("retry-after")
            if not value:
                return None
            try:
                return float(value)
            except ValueError:
                when = email.utils.parsedate_to_datetime(value)
                return max(0.0, when.timestamp() - time.time())
        except (TypeError, ValueError, OverflowError):
            return None

    def _call(self, messages: list[dict[str, str]]) -> _Reply:
        """One chat completion with retries. Never raises; failures come back as `_Reply.error`."""
        import openai

        client = self._get_client()
        last_error = "no attempt made"
        attempt = 0
        while attempt <= self.max_retries:
            kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature}
            if self.seed is not None:
                kwargs["seed"] = self.seed
            if self.max_output_tokens:
                kwargs["max_tokens"] = self.max_output_tokens
            if self.json_mode:
                kwargs["response_format"] = {"type": "json_object"}
            retry_after: float | None = None
            try:
                self._bump(requests=1)
                with self._semaphore:
                    response = client.chat.completions.create(timeout=self.timeout, **kwargs)
                choices = getattr(response, "choices", None) or []
                if not choices:
                    return _Reply(error="server returned no choices")
                text = getattr(choices[0].message, "content", None) or ""
                usage = getattr(response, "usage", None)
                if usage is not None:
                    self._bump(
                        input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                        output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                    )
                return _Reply(text=self._redact(text))
            except openai.APITimeoutError:
                last_error = f"request timed out after {self.timeout:g}s"
                retryable = True
            except openai.APIConnectionError as exc:
                last_error = f"connection error ({type(exc).__name__})"
                retryable = True
            except openai.APIStatusError as exc:
                status = int(getattr(exc, "status_code", 0) or 0)
                message = self._redact(str(getattr(exc, "message", "") or exc))[:300]
                last_error = f"HTTP {status}: {message}"
                if status == 400 and self.json_mode and "response_format" in message.lower():
                    log.warning("server rejected response_format; continuing without JSON mode")
                    self.json_mode = False
                    continue  # does not count as an attempt
                retryable = status in (408, 409, 429) or status >= 500
                retry_after = self._retry_after(exc)
            except Exception as exc:  # noqa: BLE001 - malformed responses and the like
                last_error = f"{type(exc).__name__}: {self._redact(str(exc))[:300]}"
                retryable = False
            if not retryable or attempt == self.max_retries:
                break
            delay = self._delay(attempt, retry_after)
            log.info("judge call failed (%s); retry %d/%d in %.2fs", last_error, attempt + 1, self.max_retries, delay)
            self._bump(retries=1)
            time.sleep(delay)
            attempt += 1
        self._bump(failed_calls=1)
        reason = f"{last_error} (gave up after {attempt + 1} attempt{'s' if attempt else ''})"
        log.warning("judge call failed: %s", reason)
        return _Reply(error=self._redact(reason))

    def _ask(self, request: _Request, check: Callable[[Any], _Checked], ids: Sequence[int],
             expected: int | None = None) -> _Outcome:
        """Call, parse, validate; one corrective follow-up if the reply is unusable or incomplete.
        `expected`: how many labels a complete reply holds (default: one per id)."""
        reply = self._call(request.messages)
        if reply.error is not None:
            return _Outcome(_Checked(), {}, f"{ERROR_RAW_PREFIX}{reply.error}")
        first = self._validate(reply.text, check)
        raw_by_pos = {i: reply.text for i in first.items}
        if not first.problems:
            return _Outcome(first, raw_by_pos, "")
        self._bump(corrective_retries=1)
        follow_up = request.messages + [
            {"role": "assistant", "content": reply.text[:4000]},
            {
                "role": "user",
                "content": "Your previous reply could not be used: "
                + "; ".join(first.problems)[:500]
                + ". Reply again with only the JSON object in the requested shape, covering every id "
                + ", ".join(str(i) for i in ids)
                + (f" for every source S1 to S{len(request.pack)}" if request.pack else "")
                + ", with no other text.",
            },
        ]
        second_reply = self._call(follow_up)
        merged = _Checked(dict(first.items), [])
        texts = [reply.text]
        if second_reply.error is None:
            texts.append(second_reply.text)
            second = self._validate(second_reply.text, check)
            for pos, item in second.items.items():
                merged.items[pos] = item
                raw_by_pos[pos] = second_reply.text
            merged.problems = second.problems
        else:
            merged.problems = first.problems + [f"follow-up call failed: {second_reply.error}"]
        failure = ""
        if len(merged.items) < (expected if expected is not None else len(ids)):
            self._bump(parse_failures=1)
            failure = (
                PARSE_ERROR_PREFIX + "; ".join(merged.problems)[:500] + "\n---- model output ----\n"
                + "\n---- reply to the correction ----\n".join(texts)
            )
        return _Outcome(merged, raw_by_pos, failure)

    @staticmethod
    def _validate(text: str, check: Callable[[Any], _Checked]) -> _Checked:
        try:
            obj = parse_json_loose(text)
        except ValueError as exc:
            return _Checked(problems=[str(exc)])
        return check(obj)

    def _verdict(self, answer: Answer, kind: str, prompt_id: str, label: str | None, raw: str, **extra: Any) -> Verdict:
        return Verdict(
            answer_id=answer.answer_id, kind=kind, label=label, judge=self.name,
            prompt_version=prompt_id, raw=self._redact(raw), **extra,
        )

    # ------------------------------------------------------------------ Judge protocol
    def _label_kind(self, kind: str, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        out: list[Verdict] = []
        for request in _plan_labels(kind, self.settings, answer, statements):
            ids = [p + 1 for p in request.positions]
            outcome = self._ask(request, lambda obj, ids=ids: _check_labels(kind, obj, ids), ids)
            for p in request.positions:
                item = outcome.checked.items.get(p + 1)
                st = statements[p]
                if item is None:
                    out.append(self._verdict(answer, kind, request.prompt_id, None, outcome.failure_raw, statement_index=st.index))
                else:
                    out.append(self._verdict(answer, kind, request.prompt_id, item["label"], outcome.raw_by_pos[p + 1], statement_index=st.index))
        return out

    def relevance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        """One call for all statements (core -> "relevant", filler -> "filler")."""
        return self._label_kind("relevance", answer, statements)

    def stance(self, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        """One call for all given statements: agree / disagree / neutral towards the query's side."""
        return self._label_kind("stance", answer, statements)

    def confidence(self, answer: Answer) -> Verdict:
        """One call for the answer: label "1".."5"; evidence = a cue phrase found in the answer."""
        request = _plan_confidence(self.settings, answer)
        outcome = self._ask(request, _check_confidence, [0])
        item = outcome.checked.items.get(0)
        if item is None:
            return self._verdict(answer, "confidence", request.prompt_id, None, outcome.failure_raw)
        evidence = locate_quote(str(item.get("cue", "")), answer.text)
        return self._verdict(answer, "confidence", request.prompt_id, item["label"], outcome.raw_by_pos[0], evidence=evidence)

    def support(self, answer: Answer, statements: Sequence[Statement], source: Source) -> list[Verdict]:
        """All statements against one source, in one call (more only beyond
        `max_statements_per_call`). evidence = a quote found in the source, else the passage the
        model named, else ""."""
        if not statements:
            return []
        prompt_id = _prompt_parts("support")[2]
        if not (source.text or "").strip():
            return [
                self._verdict(answer, "support", prompt_id, None, f"{ERROR_RAW_PREFIX}source {source.index} has no text",
                              statement_index=st.index, source_index=source.index)
                for st in statements
            ]
        out: list[Verdict] = []
        for request in _plan_support(self.settings, answer, statements, source):
            out.extend(self._run_support(request, answer, statements))
        return out

    def _run_support(self, request: _Request, answer: Answer, statements: Sequence[Statement]) -> list[Verdict]:
        """Ask one support call (single-source or packed) and turn its reply into verdicts."""
        ids = [p + 1 for p in request.positions]
        if request.pack:
            n = len(request.pack)
            outcome = self._ask(request, lambda obj: _check_pack_labels(obj, ids, n), ids, expected=len(ids) * n)
            targets = [(source, passages, lambda i, k=k: _pack_key(i, k)) for k, (source, passages) in enumerate(request.pack, start=1)]
        else:
            outcome = self._ask(request, lambda obj: _check_labels("support", obj, ids), ids)
            assert request.source is not None
            targets = [(request.source, request.passages, lambda i: i)]
        out: list[Verdict] = []
        for source, passages, key in targets:
            by_pid = {p.pid.lower(): p for p in passages}
            for p in request.positions:
                st = statements[p]
                item = outcome.checked.items.get(key(p + 1))
                if item is None:
                    out.append(self._verdict(answer, "support", request.prompt_id, None, outcome.failure_raw,
                                             statement_index=st.index, source_index=source.index))
                    continue
                evidence = ""
                if item["label"] != "none":
                    evidence = locate_quote(str(item.get("quote") or item.get("evidence") or ""), source.text)
                    if not evidence:
                        passage = by_pid.get(str(item.get("passage") or "").strip().strip("[]").lower())
                        evidence = passage.text if passage else ""
                out.append(self._verdict(answer, "support", request.prompt_id, item["label"], outcome.raw_by_pos[key(p + 1)],
                                         statement_index=st.index, source_index=source.index, evidence=evidence))
        return out

    def support_many(self, answer: Answer, statements: Sequence[Statement], sources: Sequence[Source]) -> list[Verdict]:
        """`support` for several sources. Short sources share a call (up to `max_sources_per_call`
        sources and `max_pack_chars` characters of passages); calls run concurrently, bounded by
        `concurrency`. Verdicts come back grouped by source, in the order of `sources`."""
        if not statements:
            return []
        out: list[Verdict] = []
        with_text = []
        prompt_id = _prompt_parts("support")[2]
        for s in sources:
            if (s.text or "").strip():
                with_text.append(s)
            else:
                out.extend(self._verdict(answer, "support", prompt_id, None, f"{ERROR_RAW_PREFIX}source {s.index} has no text",
                                         statement_index=st.index, source_index=s.index) for st in statements)
        requests = _plan_support_many(self.settings, answer, statements, with_text)

        def run(request: _Request) -> list[Verdict]:
            return self._run_support(request, answer, statements)

        if len(requests) <= 1 or self.concurrency == 1:
            parts = [run(r) for r in requests]
        else:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
                parts = list(pool.map(run, requests))
        verdicts = out + [v for part in parts for v in part]
        order = {s.index: k for k, s in enumerate(sources)}
        return sorted(verdicts, key=lambda v: order.get(v.source_index, len(order)))


class PairwiseReferenceJudge(OpenAIJudge):
    """Reference design for benchmarks only: one support call per (statement, source) pair with
    the whole document (no passage selection). Same prompts, same parsing."""

    mode = "pairwise"


# ----------------------------------------------------------------------------------------------
# dry run
# ----------------------------------------------------------------------------------------------

_OUTPUT_TOKENS = {"relevance": (10, 12), "stance": (10, 12), "confidence": (25, 0), "support": (12, 45)}
_MESSAGE_OVERHEAD_TOKENS = 4


def _token_counter(model: str) -> tuple[Callable[[str], int], str]:
    try:
        import tiktoken  # optional; not a dependency

        try:
            enc = tiktoken.encoding_for_model(model)
        except KeyError:
            enc = tiktoken.get_encoding("o200k_base")
        return (lambda s: len(enc.encode(s))), f"tiktoken:{enc.name}"
    except Exception:  # noqa: BLE001 - not installed or no encoding data offline
        return (lambda s: math.ceil(len(s) / 4)), "chars/4"


def estimate_run(answers: Sequence[Any], judge_config: Mapping[str, Any] | OpenAIJudge | None = None) -> dict[str, Any]:
    """Estimate calls, tokens and cost of annotating `answers` (AnnotatedAnswer records) without
    calling anything. The prompts are rendered exactly as the judge would render them.

    judge_config keys (all optional): model, mode ("batched" | "pairwise"), max_passage_chars,
    passage_chars, max_statements_per_call, prices ({"input": usd_per_1m, "output": usd_per_1m}),
    kinds (subset of relevance/stance/confidence/support). An OpenAIJudge can be passed instead.
    Stance is counted for debate answers only; when an answer already carries relevance verdicts,
    stance and support are counted for its relevant statements only, else for all statements.
    Support is counted for sources that have text and no failed fetch (as the annotate stage does).
    """
    if isinstance(judge_config, OpenAIJudge):
        cfg: dict[str, Any] = {
            "model": judge_config.model, "mode": judge_config.mode,
            "max_passage_chars": judge_config.settings.max_passage_chars,
            "passage_chars": judge_config.settings.passage_chars,
            "max_statements_per_call": judge_config.settings.max_statements_per_call,
            "max_sources_per_call": judge_config.settings.max_sources_per_call,
            "max_pack_chars": judge_config.settings.max_pack_chars,
        }
    else:
        cfg = dict(judge_config or {})
    model = str(cfg.get("model") or os.environ.get("AEE_OPENAI_MODEL") or DEFAULT_MODEL)
    mode = str(cfg.get("mode", "batched"))
    settings = _Settings(
        max_passage_chars=int(cfg.get("max_passage_chars", 6000)),
        passage_chars=int(cfg.get("passage_chars", 1000)),
        max_statements_per_call=int(cfg.get("max_statements_per_call", 20)),
        pairwise=mode == "pairwise",
        max_sources_per_call=max(1, int(cfg.get("max_sources_per_call", 8))),
        max_pack_chars=int(cfg.get("max_pack_chars", 8000)),
    )
    kinds = tuple(cfg.get("kinds", PROMPT_NAMES))
    price_in, price_out = DEFAULT_PRICES_PER_1M.get(model, DEFAULT_PRICES_PER_1M[DEFAULT_MODEL])
    prices = cfg.get("prices") or {}
    price_in = float(prices.get("input", price_in))
    price_out = float(prices.get("output", price_out))
    count, method = _token_counter(model)

    calls = {k: 0 for k in kinds}
    tokens_in = {k: 0 for k in kinds}
    tokens_out = {k: 0 for k in kinds}
    sources_without_text = 0

    def add(request: _Request) -> None:
        calls[request.kind] += 1
        tokens_in[request.kind] += sum(count(m["content"]) + _MESSAGE_OVERHEAD_TOKENS for m in request.messages)
        fixed, per = _OUTPUT_TOKENS[request.kind]
        tokens_out[request.kind] += fixed + per * len(request.positions) * max(1, len(request.pack))

    for item in answers:
        answer: Answer = item.answer
        statements = list(item.statements)
        relevant = statements
        labels = {v.statement_index: v.label for v in item.verdicts if v.kind == "relevance"}
        if labels:
            relevant = [s for s in statements if labels.get(s.index) != "filler"]
        if "relevance" in kinds and statements:
            for r in _plan_labels("relevance", settings, answer, statements):
                add(r)
        if "stance" in kinds and answer.query_type == "debate" and relevant:
            for r in _plan_labels("stance", settings, answer, relevant):
                add(r)
        if "confidence" in kinds:
            add(_plan_confidence(settings, answer))
        if "support" in kinds and relevant:
            judged = []
            for source in answer.sources:
                if not (source.text or "").strip() or source.fetch_ok is False:
                    sources_without_text += 1
                    continue
                judged.append(source)
            for r in _plan_support_many(settings, answer, relevant, judged):
                add(r)

    total_in, total_out = sum(tokens_in.values()), sum(tokens_out.values())
    cost = total_in / 1e6 * price_in + total_out / 1e6 * price_out
    return {
        "estimate": True,
        "judge": f"{'openai-pairwise' if mode == 'pairwise' else 'openai'}:{model}",
        "model": model,
        "mode": mode,
        "answers": len(answers),
        "calls": sum(calls.values()),
        "calls_by_kind": calls,
        "input_tokens": total_in,
        "output_tokens": total_out,
        "input_tokens_by_kind": tokens_in,
        "output_tokens_by_kind": tokens_out,
        "sources_without_text": sources_without_text,
        "prices_per_1m_usd": {"input": price_in, "output": price_out},
        "cost_usd": round(cost, 6),
        "token_method": method,
        "note": "estimate only: input tokens from the rendered prompts, output tokens from a fixed "
                "allowance per statement; corrective follow-ups and retries are not counted",
    }
