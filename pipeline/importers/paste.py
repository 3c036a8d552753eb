"""Paste anything: what a person copied from an engine's page, or a saved response, made into an
answer text and a numbered source list for the Re-score form to show before scoring.

Plain text is an answer with its markers, followed by (or holding) a source list in whatever shape
it came in:

    [1] Title - https://...        [1]: https://... "Title"     [^1]: https://...
    1. https://...                 1) Title https://...         - [Title](https://...)
    https://...  (a bare list)     a "Sources:" / "References" / "**Sources**" line above any of these

A list is found under such a heading, or as the run of source-like lines at the end of the text;
footnote and reference definitions are taken from anywhere. Under a heading, an entry may carry a
title, its URL on the next line and a snippet below it, and "(1) Title. https://..." (the
Copilot copy layout) is read too. Without any list, the answer's own markdown links become the
sources.

What was asked is taken from the top when the paste starts with it: a question line ("Do street
trees cool cities?"), or a labelled turn ("You said:" ... "ChatGPT said:", "Question:", "Q:").
It fills the Query, and the query type is guessed from its wording (`guess_query_type`): only a
question that asks for a side on a contested issue is a debate query; a factual one is expertise.

A JSON text or file (a capture envelope, a bare engine response, a canonical answer) goes through
the importers instead; citations that an engine gives as spans are written into the text as [n]
markers, since that is what the form can hold. JSON that is cut off says so, and JSON of an
unknown shape says which shapes are read, rather than becoming answer text.

Pure functions over strings; never raises for odd text (only InputError for unreadable JSON input).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from pipeline.errors import InputError
from pipeline.importers.canonical import MAX_ANSWER_CHARS, parse_answer
from pipeline.importers.engines import ImportOptions, detect, engine_answer, one_stream
from pipeline.importers.streams import stream_format
from pipeline.records import AnnotatedAnswer
from pipeline.text.text import find_citation_markers

MAX_PASTE_CHARS = MAX_ANSWER_CHARS
MAX_PASTED_SOURCES = 200
PLACEHOLDER_QUERY = "\u2063query not given\u2063"  # only while importing a bare response; never shown

_URL = r"(?:https?://|www\.)[^\s<>\"'`\]\[)(]{1,2000}(?:\([^\s<>\"'()]{0,300}\)[^\s<>\"'`\]\[)(]{0,500})?"
_URL_RE = re.compile(_URL, re.IGNORECASE)
_MDLINK_RE = re.compile(r"\[([^\[\]\n]{0,500})\]\(\s*<?(" + _URL + r")>?(?:\s+\"([^\"\n]{0,300})\")?\s*\)", re.IGNORECASE)
_HEADING_RE = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*)?(?:\*\*|__)?[ \t]*(sources?|references?|citations?|links|bibliography|footnotes|works cited|"
    r"learn more|read more|sources and related content)[ \t]*:?[ \t]*(?:\*\*|__)?[ \t]*:?[ \t]*$", re.IGNORECASE)
_INDEXED_RE = re.compile(r"^[ \t]*(?:[-*\u2022][ \t]+)?(?:\[\^?([0-9]{1,3})\^?\][ \t]*[:.)\-\u2013\u2014]?|\^?([0-9]{1,3})[.):][ \t]|"
                         r"\u3010([0-9]{1,3})\u3011|\(([0-9]{1,3})\)[ \t])[ \t]*(.*)$")
_BULLET_RE = re.compile(r"^[ \t]*[-*\u2022\u25aa\u25e6][ \t]+(.*)$")
_INLINE_CITE_RE = re.compile(r"\(\s*\[[^\[\]\n]{0,500}\]\(")
_EMPTY_WRAP_RE = re.compile(r"(?<![\w)])(?:\(\s*\)|<\s*>)")
_DEFINITION_RE = re.compile(r"^[ \t]{0,3}\[(\^?)([0-9]{1,3})\]:[ \t]*(.*)$")
_SEPARATORS = " \t-\u2013\u2014|:,;\u00b7"
_SUPERSCRIPTS = str.maketrans("\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079", "0123456789")
_SUPER_RUN_RE = re.compile(r"(?<=[\w.,;:!?)\]\"'\u201d])([\u2070\u00b9\u00b2\u00b3\u2074-\u2079]{1,3})")


@dataclass
class PastedSource:
    index: int
    url: str = ""
    title: str = ""
    text: str = ""


@dataclass
class Pasted:
    """What a paste held: the answer text, its sources and, from a file, what was asked."""

    answer: str
    sources: list[PastedSource] = field(default_factory=list)
    query: str = ""
    engine: str = ""
    query_type: str = ""
    found: str = ""  # one plain sentence on what was recognised
    notes: list[str] = field(default_factory=list)
    query_from: str = ""  # where the query came from ("the first line", "the line after 'You said:'"), "" if none
    query_type_why: str = ""  # why the query type was chosen, in words


def parse_paste(text: str) -> Pasted:
    """An answer and its source list from pasted text (JSON goes through the importers)."""
    text = (text or "").replace("\r\n", "\n").replace("\r", "\n")
    if len(text) > MAX_PASTE_CHARS:
        raise InputError(f"{len(text):,} characters; the limit is {MAX_PASTE_CHARS:,}", record="pasted text")
    stripped = text.strip().lstrip("\ufeff")
    if _JSON_START_RE.match(stripped):
        # it opens like a JSON object or a list of objects: it is JSON, read as JSON or refused with the
        # reason; never taken as an answer that happens to be made of braces
        return parse_json_value(_load_json(stripped, "pasted JSON"), "pasted JSON")
    if stripped[:1] == "[" and stripped[-1:] == "]":
        try:
            data = json.loads(stripped)
        except (ValueError, RecursionError):
            data = None
        if isinstance(data, list) and data and not all(isinstance(x, (int, str)) for x in data):
            return parse_json_value(data, "pasted JSON")
    return _parse_text(text)


_JSON_START_RE = re.compile(r'^(?:\{\s*["}]|\[\s*[\[{])')
_TRUNCATED_MESSAGES = ("Unterminated string", "Expecting value", "Expecting ',' delimiter", "Expecting ':' delimiter",
                       "Expecting property name enclosed in double quotes")


def _load_json(text: str, where: str) -> object:
    """JSON text as a value; InputError that says the text is cut off when it ends mid-value."""
    try:
        return json.loads(text)
    except RecursionError as exc:
        raise InputError("JSON is nested too deeply", record=where) from exc
    except json.JSONDecodeError as exc:
        tail = text[exc.pos:].strip()
        cut_word = bool(tail) and any(word.startswith(tail) for word in ("true", "false", "null"))
        if exc.msg.startswith("Unterminated string") or cut_word or (exc.pos >= len(text.rstrip()) - 1
                                                                     and exc.msg.startswith(_TRUNCATED_MESSAGES)):
            raise InputError(f"the JSON is cut off: it stops after {len(text):,} characters with "
                             f"{_open_brackets(text)} still open (copy the whole response, or save it to a file "
                             "and upload that)", record=where) from exc
        raise InputError(f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}", record=where) from exc


def _open_brackets(text: str) -> str:
    """How many objects and lists a cut-off JSON text leaves open ("2 objects and 1 list")."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            escaped = not escaped and ch == "\\"
            if ch == '"' and not escaped:
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append(ch)
        elif ch in "}]" and stack:
            stack.pop()
    objects, lists = stack.count("{"), stack.count("[")
    parts = [f"{n} {word}{'s' if n != 1 else ''}" for n, word in ((objects, "object"), (lists, "list")) if n]
    return " and ".join(parts) or "a string"


def parse_upload(data: bytes, name: str) -> Pasted:
    """An uploaded file: JSON (one object, a list, or JSONL: the first answer) or plain text."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", record=name) from exc
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            value = json.loads(stripped)
        except RecursionError as exc:
            raise InputError("JSON is nested too deeply", record=name) from exc
        except ValueError:
            lines = [ln for ln in stripped.splitlines() if ln.strip()]
            try:
                json.loads(lines[0])
            except (ValueError, RecursionError):
                _load_json(stripped, name)  # one document: says whether it is cut off or where it breaks
            value = []
            for number, line in enumerate(lines, start=1):  # JSONL: one object per line
                try:
                    value.append(json.loads(line))
                except (ValueError, RecursionError) as exc:
                    raise InputError(f"not valid JSON or JSONL: line {number} is not a JSON object", record=name) from exc
        return parse_json_value(value, name)
    return parse_paste(text)


def parse_json_value(value: object, where: str) -> Pasted:
    """The first answer of a JSON value, in any format the importers know."""
    items = value if isinstance(value, list) else [value]
    if isinstance(value, list) and len(value) > 1 and stream_format(value) is not None and one_stream(value):
        items = [value]  # a saved stream (events, chunks) is one response
    if not items:
        raise InputError("the file holds no answer", record=where)
    obj = items[0]
    fmt = detect(obj)
    if fmt == "canonical" and not (isinstance(obj, dict) and isinstance(obj.get("answer"), str)):
        raise InputError(f"not a shape this form reads ({_shape(obj)}); expected an answer in the canonical format "
                         '{"query", "answer", "sources": [{"index", "url", "title", "text"}]}, a capture envelope '
                         '{"query", "engine", "response"}, or a response of Perplexity, OpenAI, Anthropic, Gemini, '
                         "You.com or Exa (`aee formats` lists them)", record=where)
    if fmt == "canonical":
        annotated = parse_answer(obj, where)
        found = "an answer in the project's canonical format"
        bare = False
    else:
        bare = not (isinstance(obj, dict) and isinstance(obj.get("query"), str) and obj["query"].strip())
        annotated = engine_answer(obj, where, fmt, ImportOptions(query=PLACEHOLDER_QUERY if bare else None))
        found = f"a response in the {fmt} format" + ("" if bare else " (capture envelope)")
    pasted = from_annotated(annotated, found)
    pasted.query_from = "the file's query field"
    pasted.query_type_why = f"{pasted.query_type}: as the file says"
    if bare:
        pasted.query, pasted.query_from = "", ""
        pasted.query_type, pasted.query_type_why = guess_query_type("")
        pasted.notes.append("The response does not say what was asked: write the query.")
    if len(items) > 1:
        pasted.notes.append(f"The file holds {len(items)} answers; the first is shown (score the file with `aee run` for all).")
    return pasted


def _shape(value: object) -> str:
    """A few words on what a JSON value holds ("an object with keys id, model, usage")."""
    if isinstance(value, dict):
        keys = [str(k)[:30] for k in list(value)[:8]]
        return "an object with keys " + ", ".join(keys) + (", ..." if len(value) > 8 else "") if keys else "an empty object"
    if isinstance(value, list):
        return f"a list of {len(value)} item(s)"
    return f"a {type(value).__name__}"


def from_annotated(annotated: AnnotatedAnswer, found: str) -> Pasted:
    """An imported answer as form fields. Citations that no marker in the text expresses (span-based
    formats) are written in as [n] markers before each statement's closing punctuation."""
    a = annotated.answer
    urls = {s.url: s.index for s in a.sources if s.url}
    text, inserted = a.text, 0
    for st in sorted(annotated.statements, key=lambda s: s.start, reverse=True):
        if st.start < 0:
            continue
        marked = {i for m in find_citation_markers(st.text, urls) for i in m.indexes}
        missing = [i for i in (*st.citations, *st.dangling) if i not in marked]
        if not missing:
            continue
        at = st.end
        while at > st.start and text[at - 1] in ".!?\u3002":
            at -= 1
        text = text[:at] + " " + "".join(f"[{i}]" for i in missing) + text[at:]
        inserted += 1
    pasted = Pasted(text, [PastedSource(s.index, s.url, s.title, s.text) for s in a.sources], a.query, a.engine, a.query_type,
                    f"Read {found} with {len(a.sources)} source(s).")
    if inserted:
        pasted.notes.append(f"The engine gave its citations as text spans; they were written into the answer as [n] markers "
                            f"in {inserted} statement(s) so the form can hold them.")
    if any(s.text for s in a.sources):
        pasted.notes.append("Source texts are the engine's own snippets, not the pages; clear them and tick fetch to judge the pages.")
    return pasted


# ---- plain text ----------------------------------------------------------------------------------


def _parse_text(text: str) -> Pasted:
    notes: list[str] = []
    text, bing_markers = _BING_MARKER_RE.subn(r"[\1]", text)  # Copilot's copy writes [^1^]
    lines = text.split("\n")
    question, engine, lines, query_from = _take_question(lines)
    lines, related = _drop_related(lines)
    definitions: list[tuple[int, PastedSource]] = []
    keep: list[str] = []
    for line in lines:  # footnote / reference definitions, wherever they are
        m = _DEFINITION_RE.match(line)
        source = _source_from(m.group(3), int(m.group(2))) if m else None
        if source is not None:
            definitions.append((len(keep), source))
        else:
            keep.append(line)
    lines = keep
    block: list[PastedSource] = []
    how = ""
    label = next((k for k, ln in enumerate(lines) if _ANSWER_LABEL_RE.match(ln)), -1)
    early = max((k for k, ln in enumerate(lines[:label]) if _is_heading(ln)), default=-1) if label > 0 else -1
    if early >= 0:  # a page copied whole: the source cards above the answer ("Sources" ... "Answer" ...)
        block = _parse_block(lines[early + 1:label], titles_alone=True)
        if block:
            how = f'a "{_heading_name(lines[early])}" list above the answer'
            engine = engine or _engine_hint(lines[label])
            lines = lines[label + 1:]
    elif label >= 0 and not "\n".join(lines[:label]).strip():
        engine = engine or _engine_hint(lines[label])
        lines = lines[label + 1:]
    heading = max((k for k, ln in enumerate(lines) if _is_heading(ln)), default=-1)
    if heading >= 0 and not block:
        block = _parse_block(lines[heading + 1:], titles_alone=True)
        if block:
            how = f'a "{_heading_name(lines[heading])}" list'
            engine = engine or _engine_hint(lines[heading])
            lines = lines[:heading]
        elif definitions and not any(ln.strip() for ln in lines[heading + 1:]):
            lines = lines[:heading]  # the heading stood over footnote definitions, taken out above
    if not block:
        start = _trailing_block_start(lines)
        if start is not None:
            block = _parse_block(lines[start:], titles_alone=False)
            if block:
                lines, how = lines[:start], "a source list at the end"
    answer = "\n".join(lines).strip()
    sources = _number(block + [s for _, s in definitions], notes)
    if definitions:
        how = (how + " and " if how else "") + f"{len(definitions)} footnote/reference definition(s)"
    if not sources:
        links = _answer_links(answer)
        if links:
            sources, how = links, "the answer's own links (no source list was found)"
    answer = _superscripts(answer, len(sources), notes)
    if bing_markers:
        notes.append(f"{bing_markers} marker(s) written [^n^] were read as [n].")
    if related:
        notes.append(f"The {related} suggested follow-up question(s) at the end were left out of the answer.")
    _source_notes(sources, notes)
    n_markers = len(find_citation_markers(answer, {s.url: s.index for s in sources if s.url}))
    asked = f"the question from {query_from}, " if question else ""
    found = (f"Found {asked}an answer with {n_markers} citation marker(s) and {len(sources)} source(s) from {how}."
             if sources else f"Found {asked}an answer with {n_markers} citation marker(s) and no source list; "
                             "add the sources below.")
    if not question:
        notes.append("No question was found at the top of the paste: write the query the answer responds to.")
    query_type, why = guess_query_type(question)
    return Pasted(answer, sources, query=question, engine=engine, query_type=query_type, found=found, notes=notes,
                  query_from=query_from, query_type_why=why)


# ---- what was asked --------------------------------------------------------------------------------

_INTERROGATIVES = frozenset("how what why when where who whom whose which is are was were do does did can could should "
                            "would will shall may might has have had must".split())
_TURN_LABEL_RE = re.compile(r"^[ \t]*(?:\*\*|__)?(you said|you asked|you|question|q|prompt|query|user|me)(?:\*\*|__)?"
                            r"[ \t]*:[ \t]*(?:\*\*|__)?[ \t]*(.*)$", re.IGNORECASE)
_ANSWER_LABEL_RE = re.compile(r"^[ \t]*(?:#{1,6}[ \t]*)?(?:\*\*|__)?(?:(chatgpt said|copilot said|gemini said|perplexity said|"
                              r"chatgpt|copilot|gemini|perplexity|answer|response|assistant)(?:\*\*|__)?[ \t]*:?|"
                              r"(a)(?:\*\*|__)?[ \t]*:)[ \t]*(?:\*\*|__)?[ \t]*$", re.IGNORECASE)
_RELATED_RE = re.compile(r"^[ \t]*(?:#{1,6}[ \t]*)?(?:\*\*)?(related|related questions|people also ask|follow-?up questions|"
                         r"suggested follow-?ups?)(?:\*\*)?[ \t]*:?[ \t]*$", re.IGNORECASE)
_ENGINES = (("chatgpt", "ChatGPT"), ("copilot", "Copilot"), ("bing", "Copilot"), ("gemini", "Gemini"),
            ("perplexity", "Perplexity"))
_BING_MARKER_RE = re.compile(r"\[\^([0-9]{1,3})\^\]")
_BING_HEADING_RE = re.compile(r"^[ \t]*source:[ \t]*conversation with (?:bing|copilot)\b.*$", re.IGNORECASE)
MAX_QUERY_LINE = 400


def _engine_hint(line: str) -> str:
    low = line.lower()
    return next((name for cue, name in _ENGINES if cue in low), "")


def _plain_line(line: str) -> str:
    return line.strip().lstrip("#").strip().strip("*_").strip()


def _looks_like_question(line: str) -> bool:
    """A line that asks something: ends with "?", or opens with a question word and has no closing
    punctuation (a typed query: "how do vaccines work"); short, with no URL and no citation marker."""
    text = _plain_line(line)
    words = text.split()
    if not words or len(text) > MAX_QUERY_LINE or len(words) > 60 or _URL_RE.search(text):
        return False
    if find_citation_markers(text, {}) or _INDEXED_RE.match(text) or _HEADING_RE.match(line):
        return False
    if text.endswith("?"):
        return True
    return words[0].lower().strip("\"'\u201c") in _INTERROGATIVES and len(words) <= 25 and text[-1:].isalnum()


def _take_question(lines: list[str]) -> tuple[str, str, list[str], str]:
    """(question, engine hint, the lines after it, where it came from) when the paste opens with
    what was asked; else ("", "", lines, "")."""
    first = next((k for k, ln in enumerate(lines) if ln.strip()), None)
    if first is None:
        return "", "", lines, ""
    turn = _TURN_LABEL_RE.match(lines[first])
    if turn:  # "You said:" / "Question:" and the question on the same or the next lines
        asked = [turn.group(2).strip()] if turn.group(2).strip() else []
        k = first + 1
        while k < len(lines) and not _ANSWER_LABEL_RE.match(lines[k]) and (lines[k].strip() or not asked):
            if lines[k].strip():
                asked.append(lines[k].strip())
            k += 1
        question = " ".join(" ".join(asked).split())[:MAX_QUERY_LINE]
        engine = ""
        if k < len(lines) and _ANSWER_LABEL_RE.match(lines[k]):
            engine = _engine_hint(lines[k])
            k += 1
        if question and any(ln.strip() for ln in lines[k:]):
            return question, engine, lines[k:], f'the line after "{turn.group(1)}:"'
        return "", "", lines, ""
    if _looks_like_question(lines[first]) and any(ln.strip() for ln in lines[first + 1:]):
        rest = lines[first + 1:]
        nxt = next((k for k, ln in enumerate(rest) if ln.strip()), None)
        engine = ""
        if nxt is not None and _ANSWER_LABEL_RE.match(rest[nxt]) and any(ln.strip() for ln in rest[nxt + 1:]):
            engine, rest = _engine_hint(rest[nxt]), rest[nxt + 1:]
        return " ".join(_plain_line(lines[first]).split()), engine, rest, "the first line"
    return "", "", lines, ""


def _drop_related(lines: list[str]) -> tuple[list[str], int]:
    """The lines without a "Related" block of suggested questions (up to the next heading or the
    end), and how many questions it held."""
    for k in range(len(lines) - 1, -1, -1):
        if not _RELATED_RE.match(lines[k]):
            continue
        stop = next((j for j in range(k + 1, len(lines)) if _is_heading(lines[j])), len(lines))
        after = [ln.strip() for ln in lines[k + 1:stop] if ln.strip()]
        if after and all(len(a.split()) <= 30 and not _URL_RE.search(a) for a in after) \
                and sum(a.rstrip().endswith("?") for a in after) * 2 >= len(after):
            return lines[:k] + lines[stop:], len(after)
        break
    return lines, 0


_DEBATE_CUES = (
    (re.compile(r"^(?:should|ought|must)\b|\bshould (?:we|i|you|they|people|governments?|schools?|parents?|it|\w+s)\b"),
     "it asks whether something should be done"),
    (re.compile(r"\b(?:better|worse) than\b|\b(?:pros and cons|for or against|arguments? (?:for|against))\b"),
     "it asks to weigh one side against another"),
    (re.compile(r"\b(?:do you think|your opinion|is it (?:ok|okay|right|wrong|fair|ethical|moral))\b"),
     "it asks for an opinion"),
    (re.compile(r"^(?:why |how )?(?:is|are|was|were|isn't|aren't|do|does|would|will|can)\b.*\b(?:good|bad|better|worse|best|"
                r"worst|ethical|unethical|moral|immoral|justified|unjustified|fair|unfair|wrong|overrated|underrated|"
                r"worth it|a good idea|a bad idea|a mistake|a scam|evil)\b"),
     "it asks for a judgement (good or bad, right or wrong)"),
    (re.compile(r"\b(?:ban(?:ned)?|abolish(?:ed)?|legali[sz]e[sd]?|outlaw(?:ed)?|prohibit(?:ed)?)\b"),
     "it asks about banning, abolishing or legalising something"),
)


def guess_query_type(question: str) -> tuple[str, str]:
    """("debate" | "expertise", why in words) for a question, from its wording alone. Debate only
    when it asks to take a side (should, better than, good or bad, ban or legalise); anything else
    is expertise, so a factual question never gets the stance metrics of a debate."""
    q = " ".join((question or "").lower().replace("\u2019", "'").split())
    if not q:
        return "expertise", "expertise: no question was given; choose debate if the answer takes sides on a contested issue"
    for pattern, why in _DEBATE_CUES:
        if pattern.search(q):
            return "debate", f"debate: {why}"
    return "expertise", ("expertise: a question of fact (no 'should', no 'better than', no good-or-bad "
                         "judgement); choose debate if it asks to take a side")


def _is_heading(line: str) -> bool:
    return bool(_HEADING_RE.match(line) or _BING_HEADING_RE.match(line))


def _heading_name(line: str) -> str:
    return _plain_line(line).rstrip(":").strip() or "Sources"


def _source_notes(sources: list[PastedSource], notes: list[str]) -> None:
    """Say what the list lacks, so nobody reads "no verdict" as the engine's fault."""
    no_url = [s.index for s in sources if not s.url]
    snippets = [s.index for s in sources if s.text]
    if no_url:
        notes.append(f"{len(no_url)} source(s) have no address ({_numbers(no_url)}): paste their URL to fetch them, "
                     "or their text to judge them; without either they cannot be checked.")
    if snippets:
        notes.append(f"{len(snippets)} source(s) came with a snippet ({_numbers(snippets)}), used as their text: a "
                     "snippet is not the page; clear it and tick fetch to judge the whole page.")


def _numbers(indexes: list[int]) -> str:
    shown = ", ".join(f"[{i}]" for i in indexes[:8])
    return shown + (f" and {len(indexes) - 8} more" if len(indexes) > 8 else "")


def _is_source_line(line: str) -> bool:
    s = line.strip()
    if not s:
        return False
    if _URL_RE.fullmatch(s.strip("<>")) or _MDLINK_RE.fullmatch(s):
        return True
    m = _INDEXED_RE.match(line) or _BULLET_RE.match(line)
    if not m or not _URL_RE.search(s):
        return False
    if _INLINE_CITE_RE.search(s):
        return False  # "- a claim ([site](url))": an answer's bullet citing, not a list entry
    rest = _MDLINK_RE.sub(" ", s)
    return len(_URL_RE.sub(" ", rest).split()) <= 25


def _is_title_line(line: str) -> bool:
    m = _INDEXED_RE.match(line)
    return m is not None and not _URL_RE.search(line) and 0 < len(m.group(5).split()) <= 25


def _trailing_block_start(lines: list[str]) -> int | None:
    """Where the run of source-like lines (blank lines allowed between) at the end begins; a
    numbered title line whose URL sits on the next line counts too."""
    k, start, below = len(lines) - 1, None, ""
    while k >= 0:
        line = lines[k]
        if not line.strip():
            k -= 1
            continue
        if not (_is_source_line(line) or (_is_title_line(line) and _URL_RE.fullmatch(below.strip().strip("<>") or "-"))):
            break
        start, below = k, line
        k -= 1
    if start is not None and start == 0:
        return None  # nothing but links: that is the answer, not its sources
    return start


_DOMAIN_RE = re.compile(r"^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,24}$", re.IGNORECASE)
MAX_SNIPPET_CHARS = 4000


def _entry_number(m: re.Match | None) -> int:
    return int(m.group(1) or m.group(2) or m.group(3) or m.group(4)) if m else 0


def _parse_block(lines: list[str], titles_alone: bool) -> list[PastedSource]:
    """Sources from the lines of a list; an indexed title line followed by a URL line is one source.
    Under a heading (`titles_alone`), a line that is not an entry belongs to the entry above it: its
    URL, its site ("epa.gov", kept in the title), its title, or else a snippet of its text; a short
    line after an entry that already has a title and no address starts a new unnumbered entry (the
    "Title / site" cards a page copies as)."""
    out: list[PastedSource] = []
    for line in lines:
        s = line.strip()
        if not s or _is_heading(line):
            continue
        m = _INDEXED_RE.match(line)
        index = _entry_number(m)
        bullet = _BULLET_RE.match(line)
        body = m.group(5) if m else bullet.group(1) if bullet else s
        if not m and out and not out[-1].url and _URL_RE.fullmatch(s.strip("<>")):
            out[-1].url = _clean_url(s.strip("<>"))  # "1. Title" then the URL on its own line
            continue
        source = _source_from(body, index)
        if source is None:
            if (m or bullet) and body.strip():
                out.append(PastedSource(index, "", _clean_title(body)))
            elif titles_alone and not (m or bullet):
                _continue_entry(out, s)
            elif not titles_alone:
                break
            if len(out) >= MAX_PASTED_SOURCES:
                break
            continue
        out.append(source)
        if len(out) >= MAX_PASTED_SOURCES:
            break
    # under a "Sources" heading a title alone is a source; at the end of a text only entries with a URL are
    return out if titles_alone else [s for s in out if s.url]


def _continue_entry(out: list[PastedSource], line: str) -> None:
    """A plain line under a heading: the site, title or snippet of the entry above, or a new entry."""
    prev = out[-1] if out else None
    bare = line.strip().strip("()[]")
    if prev is not None and not prev.url and _DOMAIN_RE.fullmatch(bare):
        if bare.lower() not in prev.title.lower():
            prev.title = f"{prev.title} ({bare})" if prev.title else bare
    elif prev is not None and prev.url and not prev.title and len(line.split()) <= 25 and not line.endswith("."):
        prev.title = _clean_title(line)
    elif prev is not None and (prev.url or prev.text):
        prev.text = (prev.text + " " + line).strip()[:MAX_SNIPPET_CHARS]
    elif line.isdigit() and len(line) <= 3:  # a card's number on its own line, below its title and site
        if prev is not None and not prev.index:
            prev.index = int(line)
    elif len(line.split()) <= 25:
        out.append(PastedSource(0, "", _clean_title(line)))
    elif prev is not None:
        prev.text = (prev.text + " " + line).strip()[:MAX_SNIPPET_CHARS]


def _source_from(body: str, index: int) -> PastedSource | None:
    """A source from one entry's text (index 0: unnumbered); None without a URL."""
    link = _MDLINK_RE.search(body)
    if link:
        label, url, quoted = link.group(1).strip(), link.group(2), link.group(3) or ""
        rest = (body[:link.start()] + " " + body[link.end():]).strip()
        title = quoted or (label if label and not label.isdigit() and not _URL_RE.fullmatch(label) else "") or _clean_title(rest)
        return PastedSource(index, _clean_url(url), title)
    found = _URL_RE.search(body)
    if not found:
        return None
    url = found.group(0)
    rest = body[:found.start()] + " " + body[found.end():]
    quoted = re.search(r"\"([^\"\n]{1,300})\"", rest)
    title = quoted.group(1) if quoted else _clean_title(rest)
    return PastedSource(index, _clean_url(url), title)


def _clean_url(url: str) -> str:
    url = url.strip().strip("<>").rstrip(".,;:!?")
    if url.endswith(")") and url.count("(") < url.count(")"):
        url = url[:-1]
    return "https://" + url if url.lower().startswith("www.") else url


def _clean_title(rest: str) -> str:
    t = _EMPTY_WRAP_RE.sub(" ", rest).strip().strip(_SEPARATORS)  # the "(" ")" or "<" ">" a removed URL stood in
    if t.endswith(".") and not t.endswith("..") and not re.search(r"(?:\b[A-Za-z]\.){2,}$", t):  # keeps "U.S."
        t = t[:-1].rstrip(_SEPARATORS)  # "(1) Title. https://..." as Copilot copies it
    for left, right in (("(", ")"), ('"', '"'), ("'", "'"), ("**", "**"), ("__", "__"), ("*", "*"), ("_", "_"), ("\u201c", "\u201d")):
        if len(t) > len(left) + len(right) and t.startswith(left) and t.endswith(right):
            t = t[len(left):-len(right)].strip(_SEPARATORS)  # only a pair: a title may end in an apostrophe
    return " ".join(t.split())[:300]


def _number(sources: list[PastedSource], notes: list[str]) -> list[PastedSource]:
    """Give every source an index: its own number when it has one (first wins), else the next free."""
    used: set[int] = set()
    keeps = []
    for s in sources:
        keeps.append(bool(s.index) and s.index not in used)
        if keeps[-1]:
            used.add(s.index)
    for s, kept in zip(sources, keeps):
        if kept:
            continue
        if s.index:
            notes.append(f"Source number {s.index} appears twice; the second was given the next free number.")
        n = 1
        while n in used:
            n += 1
        used.add(n)
        s.index = n
    return sorted(sources, key=lambda s: s.index)[:MAX_PASTED_SOURCES]


def _answer_links(answer: str) -> list[PastedSource]:
    out: list[PastedSource] = []
    seen: set[str] = set()
    for m in _MDLINK_RE.finditer(answer):
        url = _clean_url(m.group(2))
        if url not in seen and len(out) < MAX_PASTED_SOURCES:
            seen.add(url)
            label = m.group(1).strip()
            out.append(PastedSource(len(out) + 1, url, "" if label.isdigit() else label))
    return out


def _superscripts(answer: str, n_sources: int, notes: list[str]) -> str:
    """Superscript numbers (¹ ² ³, what some pages copy as) become [n] markers when sources exist."""
    if not n_sources or not _SUPER_RUN_RE.search(answer):
        return answer

    def marker(m: re.Match) -> str:
        digits = m.group(1).translate(_SUPERSCRIPTS)
        if 1 <= int(digits) <= n_sources:
            return f"[{int(digits)}]"
        return "".join(f"[{d}]" for d in digits if d != "0")

    notes.append("Superscript numbers were read as citation markers.")
    return _SUPER_RUN_RE.sub(marker, answer)
