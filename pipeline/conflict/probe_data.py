"""Input of the convincingness probe: yes/no questions with paragraphs that take either side.

One JSON object per line:

    {"id"?: "coffee-memory", "question": "Does coffee improve long-term memory?",
     "paragraphs": [{"id"?: "y1", "text": "...", "stance": "yes", "url"?: "https://..."}, ...],
     "illustrative"?: true}

`stance` is "yes" or "no" (any case). A question needs at least one paragraph of each stance to be
probed; questions without both are skipped and reported. Everything is bounded (file size, lines,
paragraphs, characters) and the first bad record stops the run with one clear error naming it.
The bundled default (`data/conflict/illustrative.jsonl`) is a small illustrative set written for
this project: it shows how the probe works and is not a benchmark.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import InputError
from pipeline.importers.input_files import read_document
from pipeline.storage.paths import data_dir

MAX_FILE_BYTES = 50_000_000
MAX_QUESTIONS = 5_000
MAX_PARAGRAPHS = 60  # per question: pairs grow with the square of this
MAX_TEXT_CHARS = 20_000  # per paragraph (the seed's paragraphs are ~365 words)
MAX_QUESTION_CHARS = 1_000
_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")


def default_data_path() -> Path:
    """The bundled illustrative question set."""
    return data_dir() / "conflict" / "illustrative.jsonl"


@dataclass(frozen=True)
class Paragraph:
    id: str  # unique within its question
    text: str
    stance: str  # "yes" | "no"
    url: str = ""


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    paragraphs: tuple[Paragraph, ...]
    illustrative: bool = False

    def side(self, stance: str) -> list[Paragraph]:
        return [p for p in self.paragraphs if p.stance == stance]

    @property
    def probeable(self) -> bool:
        return bool(self.side("yes")) and bool(self.side("no"))


@dataclass(frozen=True)
class ProbeData:
    path: Path
    sha256: str
    questions: tuple[Question, ...]  # the ones with both stances
    skipped: tuple[str, ...]  # ids of questions lacking a yes or a no paragraph

    @property
    def illustrative(self) -> bool:
        return any(q.illustrative for q in self.questions)


def _text(obj: dict, name: str, where: str, limit: int, required: bool = True) -> str:
    value = obj.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise InputError("expected a non-empty string", record=where, field=name)
    if len(value) > limit:
        raise InputError(f"{len(value):,} characters; the limit is {limit:,}", record=where, field=name)
    return value


def parse_question(obj: object, where: str, line_no: int) -> Question:
    """One validated question record."""
    if not isinstance(obj, dict):
        raise InputError("expected a JSON object", record=where)
    qid = str(obj.get("id") if obj.get("id") is not None else f"q{line_no}")
    if not _ID_RE.fullmatch(qid):
        raise InputError("id must be letters, digits, '.', '_' or '-' (max 80)", record=where, field="id")
    question = _text(obj, "question", where, MAX_QUESTION_CHARS)
    raw = obj.get("paragraphs")
    if not isinstance(raw, list) or not raw:
        raise InputError("expected a non-empty list", record=where, field="paragraphs")
    if len(raw) > MAX_PARAGRAPHS:
        raise InputError(f"{len(raw)} paragraphs; the limit is {MAX_PARAGRAPHS}", record=where, field="paragraphs")
    paragraphs: list[Paragraph] = []
    seen: set[str] = set()
    for k, item in enumerate(raw):
        field = f"paragraphs[{k}]"
        if not isinstance(item, dict):
            raise InputError("expected an object", record=where, field=field)
        pid = str(item.get("id") if item.get("id") is not None else f"p{k + 1}")
        if not _ID_RE.fullmatch(pid) or pid in seen:
            raise InputError("id must be unique, letters, digits, '.', '_' or '-'", record=where, field=f"{field}.id")
        seen.add(pid)
        stance = item.get("stance")
        if not isinstance(stance, str) or stance.strip().lower() not in ("yes", "no"):
            raise InputError("stance must be 'yes' or 'no'", record=where, field=f"{field}.stance")
        text = _text(item, "text", where + f" {field}", MAX_TEXT_CHARS)
        url = _text(item, "url", where + f" {field}", 2_000, required=False)
        paragraphs.append(Paragraph(pid, text, stance.strip().lower(), url))
    illustrative = obj.get("illustrative", False)
    if not isinstance(illustrative, bool):
        raise InputError("expected true/false", record=where, field="illustrative")
    return Question(qid, question, tuple(paragraphs), illustrative)


def load_probe_data(path: Path | str | None = None) -> ProbeData:
    """Read and validate a probe file (JSONL); the bundled illustrative set when path is None."""
    path = Path(path) if path is not None else default_data_path()
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", record=str(path)) from exc
    if size > MAX_FILE_BYTES:
        raise InputError(f"file is {size:,} bytes; the limit is {MAX_FILE_BYTES:,}", record=str(path))
    blob = read_document(path, MAX_FILE_BYTES)  # a FIFO is refused, a device read up to the limit
    try:
        text = blob.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", record=str(path)) from exc
    questions: list[Question] = []
    skipped: list[str] = []
    ids: set[str] = set()
    for line_no, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{path.name}:{line_no}"
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise InputError(f"invalid JSON: {str(exc)[:120]}", record=where) from exc
        q = parse_question(obj, where, line_no)
        if q.id in ids:
            raise InputError(f"duplicate question id {q.id!r}", record=where, field="id")
        ids.add(q.id)
        if q.probeable:
            questions.append(q)
        else:
            skipped.append(q.id)
        if len(ids) > MAX_QUESTIONS:
            raise InputError(f"more than {MAX_QUESTIONS:,} questions", record=where)
    if not ids:
        raise InputError("file holds no question", record=str(path))
    return ProbeData(path, hashlib.sha256(blob).hexdigest(), tuple(questions), tuple(skipped))
