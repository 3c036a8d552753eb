"""Reading what a chat model replied: lenient JSON, label synonyms, and checks per prompt.

Replies are always parsed leniently (`parse_json_loose`: `<think>` blocks, code fences, trailing
commas, single quotes, prose around the JSON, truncated endings), because many OpenAI-compatible
servers cannot be held to a JSON mode. The parsed object is then checked against what was asked
(`check_labels`, `check_confidence`, `check_pack_labels`): ids are matched, labels are mapped from
the synonyms models use ("supported", "fully_supported", "yes" -> "full") to the allowed labels,
and anything missing or unknown is listed in `Checked.problems`, which the judge turns into one
corrective follow-up and, failing that, a verdict with label None.

Pure functions: no model, no I/O.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from pipeline.records import CONFIDENCE_LEVELS

__all__ = [
    "Checked",
    "parse_json_loose",
    "parse_and_check",
    "check_labels",
    "check_confidence",
    "check_pack_labels",
    "pack_key",
]


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


def _digits(text: str) -> int | str:
    """An integer of the reply; one longer than Python reads (5,000 digits) stays its digits, so the
    rest of the reply is still read (the labels do not need it) instead of the whole reply failing."""
    limit = sys.get_int_max_str_digits()
    return text if limit and len(text.lstrip("-")) > limit else int(text)


def _loads(text: str) -> Any:
    try:
        return json.loads(text, parse_int=_digits)
    except RecursionError:
        raise ValueError("reply is nested too deeply") from None


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
        return _loads(t)
    except ValueError:
        pass
    candidate, _closed = _balanced(t)
    if not candidate:
        # A bare scalar (e.g. "4" or "full") is still an answer for some prompts.
        bare = t.strip().strip("\"'.").strip()
        if re.fullmatch(r"-?\d+(\.\d+)?", bare):
            return _loads(bare)
        raise ValueError("no JSON object in reply")
    attempts = [candidate]
    no_trailing = re.sub(r",\s*([}\]])", r"\1", candidate)
    attempts.append(no_trailing)
    quoted_keys = re.sub(r'([{,]\s*)([A-Za-z_][\w\-]*)\s*:', r'\1"\2":', no_trailing)
    attempts.append(quoted_keys)
    for attempt in attempts:
        try:
            return _loads(attempt)
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
    "unknown": "unknown", "unclear": "unknown", "cannot tell": "unknown", "can't tell": "unknown",
    "undecidable": "unknown", "not sure": "unknown",
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
        # no id has more than 18 digits; 5,000 of them would not even convert (int() raises)
        return int(m.group()) if m and len(m.group()) <= 18 else None
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
class Checked:
    """Validated items of one reply: position -> item dict (with a normalised "label")."""

    items: dict[int, dict[str, Any]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def check_labels(kind: str, obj: Any, ids: Sequence[int]) -> Checked:
    out = Checked()
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


def check_confidence(obj: Any) -> Checked:
    out = Checked()
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


def pack_key(statement_id: int, source_number: int) -> int:
    """One integer per (statement id, S-number) of a packed call; statement ids stay below 10,000."""
    return source_number * 10_000 + statement_id


def check_pack_labels(obj: Any, ids: Sequence[int], n_sources: int) -> Checked:
    """Validate a packed reply: one support label per (statement id, source S1..Sn)."""
    out = Checked()
    wanted = {pack_key(i, k) for i in ids for k in range(1, n_sources + 1)}
    for item in _items_of(obj):
        if not isinstance(item, dict):
            continue
        sid = next((_parse_id(item[k]) for k in _ID_KEYS if k in item), None)
        src = next((_parse_id(item[k]) for k in ("source", "source_id", "src", "document", "doc") if k in item), None)
        if sid is None or src is None or pack_key(sid, src) not in wanted:
            if sid is not None:
                out.problems.append(f"unknown pair id {sid} / source S{src}")
            continue
        label_value = next((item[k] for k in _LABEL_KEYS if k in item and k != "support"), item.get("support"))
        label = _norm_label("support", label_value)
        if label is None:
            out.problems.append(f"id {sid} / S{src}: label {label_value!r} is not one of full, partial, none")
            continue
        out.items[pack_key(sid, src)] = {**item, "label": label}
    missing = sorted(wanted - set(out.items))
    if not missing:
        out.problems = []
    else:
        shown = ", ".join(f"{k % 10_000}/S{k // 10_000}" for k in missing[:20])
        out.problems.append(f"missing (statement id / source) pairs {shown}" + (" ..." if len(missing) > 20 else ""))
    return out


def parse_and_check(text: str, check: Callable[[Any], Checked]) -> Checked:
    """Parse a reply leniently and run `check` on it; an unparsable reply is one problem."""
    try:
        obj = parse_json_loose(text)
    except ValueError as exc:
        return Checked(problems=[str(exc)])
    return check(obj)
