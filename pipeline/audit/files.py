"""Labels from outside the app: a filled-in sample file (CSV or JSON lines), Label Studio and
Argilla exports (`aee audit import`), and the tasks and labelling configuration those tools need
for the same sample (`aee audit export`).

Import never trusts a file: every row is checked against the registered sample (the item must be
in it, and the answer, statement and source the row names must be that item's), every label against
the field's values. A bad row gives one error line and is skipped; the good rows still land. Rows
repeating an item with the same label count once; the same item with another label in the same
file is an error (the first is kept). A label equal to the annotator's current one is not written
again, and nothing is ever overwritten: the store is append-only (pipeline.audit.labels). Only ids
and labels are read: free-text columns (the statement, the source, the answer) are ignored, and a
note is kept as plain text.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from pipeline.audit import FIELD_VALUES, UNIT_FIELDS
from pipeline.audit.file_text import decode_labels, not_text
from pipeline.audit.labels import NOTE, LabelStore, check_value, clean_name
from pipeline.audit.population import item_asks
from pipeline.audit.sample import Sample, annotation_rows, asks_relevance, load_sample
from pipeline.errors import InputError, one_line

MAX_FILE_BYTES = 512 * 1024 * 1024
MAX_ROWS = 2_000_000
FORMATS = ("auto", "csv", "jsonl", "label-studio", "argilla")
EXPORT_FORMATS = ("label-studio", "argilla")


@dataclass
class ImportReport:
    """What an import did: rows read, labels written, rows that were repeats, and one line per bad row."""

    annotators: set[str] = field(default_factory=set)
    samples: set[str] = field(default_factory=set)
    rows: int = 0
    written: int = 0
    unchanged: int = 0
    repeated: int = 0
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # how the file was read, when that was not plain UTF-8

    def summary(self) -> str:
        who = ", ".join(sorted(self.annotators)) or "nobody"
        return (f"{self.rows} rows read for {who}: {self.written} labels written, {self.unchanged} already there, "
                f"{self.repeated} repeated rows, {len(self.errors)} bad rows" + "".join(f"; {n}" for n in self.notes))


@dataclass(frozen=True)
class Row:
    """One labelled item read from a file: where it was, who labelled it, and what they said."""

    where: str  # "row 12" / "task 3"
    sample_id: str | None
    item_id: str
    annotator_suffix: str  # "" or a per-person suffix from a tool export (its user id)
    values: dict[str, Any]  # field -> raw value
    ids: dict[str, Any]  # answer_id, statement_index, source_index as the file gives them
    suffix_field: str = "completed_by"  # where the export keeps the person (for an error line)


# ---- reading each format -------------------------------------------------------------------------


def _read_bytes(path: Path) -> tuple[str, str]:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise InputError(f"cannot read the file ({type(exc).__name__})", record=str(path)) from exc
    if size > MAX_FILE_BYTES:
        raise InputError(f"the file is larger than {MAX_FILE_BYTES // 2**20} MB", record=str(path))
    return decode(path.read_bytes(), str(path))


def decode(data: bytes, name: str) -> tuple[str, str]:
    """A file's bytes as text (at most MAX_FILE_BYTES), and how they were read when that was not
    plain UTF-8 ("" when it was): UTF-16, Windows-1252 and the like are read, and said
    (pipeline.audit.file_text)."""
    if len(data) > MAX_FILE_BYTES:
        raise InputError(f"the file is larger than {MAX_FILE_BYTES // 2**20} MB", record=name)
    return decode_labels(data, name)


_ID_KEYS = ("answer_id", "statement_index", "source_index")


def _flat_row(where: str, raw: dict[str, Any], suffix: str = "") -> Row:
    values = {k: raw.get(k) for k in (*FIELD_VALUES, NOTE) if k in raw}
    return Row(where, _text(raw.get("sample_id")), _text(raw.get("item_id")) or "", suffix, values,
               {k: raw.get(k) for k in _ID_KEYS if k in raw})


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


MAX_CELL_BYTES = 16 * 1024 * 1024
MAX_INT_DIGITS = 100  # longer integers stay text: they are no index, and int() of 5,000 digits raises


def _bounded_int(digits: str) -> int | str:
    return int(digits) if len(digits) <= MAX_INT_DIGITS else digits


def loads(text: str) -> Any:
    """json.loads for untrusted labels: huge integers stay strings (a bad id or label later, never a
    ValueError here); ValueError or RecursionError (deep nesting) for what cannot be read."""
    return json.loads(text, parse_int=_bounded_int)


def read_csv(text: str) -> Iterator[Row]:
    csv.field_size_limit(MAX_CELL_BYTES)
    # newline="": the csv module then ends a row at \n, \r\n or a lone \r (Excel for Mac writes those)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        names = reader.fieldnames
    except csv.Error as exc:
        raise InputError(f"cannot read the CSV header ({exc})") from None
    if not names or "item_id" not in [f.strip() for f in names]:
        raise InputError("the CSV has no item_id column (use the file `aee audit sample` wrote)")
    n = 1  # rows as a spreadsheet numbers them: the header is row 1, a cell's line breaks stay in its row
    while True:
        try:
            raw = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:  # one bad row (a cell over the limit, a stray quote): said, then the next row
            n += 1
            why = (f"a cell is larger than {MAX_CELL_BYTES // 2**20} MB" if "field limit" in str(exc)
                   else f"cannot read this CSV row ({exc})")
            yield Row(f"row {n}", None, "", "", {"_error": why}, {})
            continue
        n += 1
        yield _flat_row(f"row {n}", {str(k).strip(): v for k, v in raw.items() if k is not None})


def read_jsonl(text: str) -> Iterator[Row]:
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = loads(line)
        except json.JSONDecodeError as exc:
            yield Row(f"line {n}", None, "", "", {"_error": f"not JSON ({exc.msg})"}, {})
            continue
        except RecursionError:
            yield Row(f"line {n}", None, "", "", {"_error": "not read: nested too deeply"}, {})
            continue
        except ValueError as exc:  # what json.loads refuses beyond syntax
            yield Row(f"line {n}", None, "", "", {"_error": f"not read ({one_line(str(exc), 80)})"}, {})
            continue
        if not isinstance(raw, dict):
            yield Row(f"line {n}", None, "", "", {"_error": "not a JSON object"}, {})
            continue
        yield _flat_row(f"line {n}", raw)


def _choice(value: Any) -> Any:
    """A Label Studio result value: {"choices": [x]} / {"text": [x]} -> x."""
    if isinstance(value, dict):
        for key in ("choices", "text", "rating"):
            got = value.get(key)
            if isinstance(got, list) and got:
                return got[0]
            if got is not None and not isinstance(got, list):
                return got
    return value


def read_label_studio(data: Any) -> Iterator[Row]:
    """Label Studio's JSON export (tasks with `annotations`) or JSON-MIN (flat rows)."""
    if not isinstance(data, list):
        raise InputError("a Label Studio export is a JSON list of tasks")
    tasks = [(task, _annotations(task)) for task in data]
    # The person suffix is decided once for the whole file, so one person keeps one name on every
    # task: "Lab/ok@x.org" everywhere when the file holds two or more people, plain "Lab" otherwise.
    people = {str(_person(a)) for _, counted in tasks for a in counted}
    for n, (task, counted) in enumerate(tasks, start=1):
        where = f"task {n}"
        if not isinstance(task, dict):
            yield Row(where, None, "", "", {"_error": "not a JSON object"}, {})
            continue
        payload = task.get("data")
        if not isinstance(payload, dict):  # JSON-MIN: data fields and choices side by side
            yield _flat_row(where, {k: _choice(v) for k, v in task.items()})
            continue
        if not counted:
            continue  # an unlabelled task: nothing to import
        for a in counted:
            values: dict[str, Any] = {}
            for result in a.get("result") or []:
                if isinstance(result, dict) and isinstance(result.get("from_name"), str):
                    values[result["from_name"]] = _choice(result.get("value"))
            suffix = str(_person(a)) if len(people) > 1 else ""
            yield Row(where, _text(payload.get("sample_id")), _text(payload.get("item_id")) or "", suffix,
                      {k: v for k, v in values.items() if k in FIELD_VALUES or k == NOTE},
                      {k: payload.get(k) for k in _ID_KEYS if k in payload})


def _annotations(task: Any) -> list[dict]:
    """A Label Studio task's annotations that count (not cancelled); [] for anything else."""
    if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
        return []
    found = task.get("annotations")
    return [a for a in found if isinstance(a, dict) and not a.get("was_cancelled")] if isinstance(found, list) else []


def _person(annotation: dict) -> Any:
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        return who.get("email") or who.get("id") or "?"
    return who if who is not None else "?"


def read_argilla(data: Any) -> Iterator[Row]:
    """Argilla records as `Dataset.records.to_json` / `to_list` write them, nested (fields,
    metadata, responses: {question: [{value, user_id}]}) or flattened (`support.responses` and
    `support.responses.users`)."""
    records = data.get("records") if isinstance(data, dict) else data
    if not isinstance(records, list):
        raise InputError("an Argilla export is a JSON list of records")
    read: list[tuple[str, str | None, str, dict[str, Any], dict[str, list[dict[str, Any]]] | None]] = []
    for n, rec in enumerate(records, start=1):
        where = f"record {n}"
        if not isinstance(rec, dict):
            read.append((where, None, "", {}, None))  # None: not a JSON object
            continue
        meta: dict[str, Any] = rec["metadata"] if isinstance(rec.get("metadata"), dict) else rec
        sample_id = _text(meta.get("sample_id"))
        item = _text(meta.get("item_id")) or _text(rec.get("id")) or ""
        ids = {k: meta.get(k) for k in _ID_KEYS if k in meta}
        by_user: dict[str, list[dict[str, Any]]] = {}
        add = partial(_add_answer, by_user)
        responses = rec.get("responses")
        if isinstance(responses, dict):
            for question, answers in responses.items():
                for answer in answers if isinstance(answers, list) else []:
                    if isinstance(answer, dict):
                        add(str(answer.get("user_id") or "?"), question, answer.get("value"))
        else:
            for key, values in rec.items():
                if isinstance(key, str) and key.endswith(".responses") and isinstance(values, list):
                    question = key[: -len(".responses")]
                    found = rec.get(f"{key}.users")
                    users: list[Any] = found if isinstance(found, list) else []
                    for i, value in enumerate(values):
                        add(str(users[i]) if i < len(users) else "?", question, value)
        read.append((where, sample_id, item, ids, by_user))
    # As for Label Studio: one person has one name across the whole file.
    several = len({user for *_, users_of in read for user in users_of or {}}) > 1
    for where, sample_id, item, ids, users_of in read:
        if users_of is None:
            yield Row(where, None, "", "", {"_error": "not a JSON object"}, {})
            continue
        for user, answered in users_of.items():
            for values in answered:
                yield Row(where, sample_id, item, user if several else "",
                          {k: v for k, v in values.items() if k in FIELD_VALUES or k == NOTE}, ids, "user_id")


def _add_answer(by_user: dict[str, list[dict[str, Any]]], user: str, question: str, value: Any) -> None:
    """One person may answer a question of a record twice: each answer goes in the first of that
    person's rows without one, so two answers become two rows of the record, and the import names
    a conflict (or counts a repeat) as it does for two rows of a CSV."""
    rows = by_user.setdefault(user, [])
    free = next((r for r in rows if question not in r), None)
    if free is None:
        rows.append(free := {})
    free[question] = value


def read_rows(path: Path, fmt: str = "auto") -> Iterator[Row]:
    """The labelled rows of a file in any supported format (`auto`: by extension and shape)."""
    if fmt not in FORMATS:
        raise InputError(f"unknown format; use one of {', '.join(FORMATS)}", field="--format")
    return rows_from_text(_read_bytes(path)[0], path.name, fmt)


def rows_from_text(text: str, name: str, fmt: str = "auto") -> Iterator[Row]:
    """The labelled rows of a file's text; `name` (its file name) tells the format under `auto`."""
    if fmt not in FORMATS:
        raise InputError(f"unknown format; use one of {', '.join(FORMATS)}", field="--format")
    path = Path(name)
    suffix = path.suffix.lower()
    if fmt == "csv" or (fmt == "auto" and suffix in (".csv", ".tsv")):
        return read_csv(text)
    if fmt == "jsonl" or (fmt == "auto" and suffix == ".jsonl"):
        return read_jsonl(text)
    try:
        data = loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON ({exc.msg}, line {exc.lineno})", record=str(path)) from exc
    except RecursionError:
        raise InputError("not read: the JSON is nested too deeply", record=str(path)) from None
    except ValueError as exc:
        raise InputError(f"not read ({one_line(str(exc), 80)})", record=str(path)) from None
    if fmt == "label-studio":
        return read_label_studio(data)
    if fmt == "argilla":
        return read_argilla(data)
    first = (data.get("records") or [None])[0] if isinstance(data, dict) else (data[0] if isinstance(data, list) and data else None)
    if isinstance(first, dict) and ("responses" in first or "fields" in first
                                     or any(str(k).endswith(".responses") for k in first)):
        return read_argilla(data)
    return read_label_studio(data)


# ---- applying rows -------------------------------------------------------------------------------


def _id_problem(name: str, given: Any, expected: Any) -> str | None:
    """Why an id the row gives contradicts the sample's (None when it agrees or is not given). A
    number that is no whole number (inf, NaN, 1e400, 5,000 digits, 2.5) is said as such, by field."""
    if given is None or (isinstance(given, str) and not given.strip()):
        return None  # not given: nothing to contradict
    shown = one_line(str(given) if not isinstance(given, (dict, list)) else json.dumps(given)[:60], 40)
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        try:
            number = float(str(given).strip()) if not isinstance(given, (int, float)) else float(given)
            whole = int(number)
        except (ValueError, OverflowError, TypeError):
            return f"field {name!r}: {shown!r} is not a whole number"
        if whole != number or isinstance(given, bool):
            return f"field {name!r}: {shown!r} is not a whole number"
        return None if whole == int(expected) else f"field {name!r}: the sample has {expected!r}, the row says {shown!r}"
    return None if str(given).strip() == str(expected) else f"field {name!r}: the sample has {expected!r}, the row says {shown!r}"


MIXED_FIELDS = ("support", "relevant")  # the two questions a pair sample asking relevance too holds, one per item


def item_fields(sample: Sample, item: dict[str, Any]) -> tuple[str, ...]:
    """The label fields one item of a sample asks: its unit's, or in a pair sample asking relevance
    too, the one question of its kind (relevance for a statement item, support for a pair)."""
    if asks_relevance(sample):
        return (item_asks(item),)
    return UNIT_FIELDS[sample.unit]


def _wrong_column(given: str, item: dict[str, Any]) -> str:
    """Why a label in the other question's column is refused (one clause of the row's error line)."""
    if item_asks(item) == "relevant":
        return (f"field {given!r}: this row asks whether the statement is relevant (it has no source); put the "
                "answer in 'relevant' and leave 'support' empty or n/a")
    return (f"field {given!r}: this row asks whether source {int(item['source_index'])} supports the statement; "
            "put the answer in 'support' and leave 'relevant' empty or n/a (the statement's own row asks relevance)")


def import_labels(path: Path, dataset: str, annotator: str, *, store: LabelStore, fmt: str = "auto",
                  sample_id: str | None = None, root: Path | None = None) -> ImportReport:
    """Read a labelled file and append its good rows to the store (see the module doc)."""
    if fmt not in FORMATS:
        raise InputError(f"unknown format; use one of {', '.join(FORMATS)}", field="--format")
    text, note = _read_bytes(path)
    return _with_note(note, lambda: import_rows(rows_from_text(text, path.name, fmt), path.name, dataset, annotator,
                                                store=store, sample_id=sample_id, root=root, note=note))


def import_upload(data: bytes, file_name: str, dataset: str, annotator: str, *, store: LabelStore, fmt: str = "auto",
                  sample_id: str | None = None, root: Path | None = None) -> ImportReport:
    """The same import for a file's bytes (an upload on the Audit the judge page): the same checks,
    one error line per bad row, the good rows landing."""
    name = Path(str(file_name or "upload")).name[:120] or "upload"
    text, note = decode(data, name)
    return _with_note(note, lambda: import_rows(rows_from_text(text, name, fmt), name, dataset, annotator, store=store,
                                                sample_id=sample_id, root=root, note=note))


def _with_note(note: str, run: Callable[[], ImportReport]) -> ImportReport:
    """`run()`; a file refused whole after it was read in another encoding says which (binary bytes
    read as Windows-1252 have no item_id column: the reader should know the bytes were not text)."""
    try:
        return run()
    except InputError as exc:
        if not note:
            raise
        raise InputError(f"{exc} ({note})") from None


def _cell_not_text(row: Row) -> str | None:
    """The first cell of a row that cannot be stored as text, said with its field, or None."""
    cells = [("sample_id", row.sample_id), ("item_id", row.item_id), (row.suffix_field, row.annotator_suffix),
             *row.ids.items(), *row.values.items()]
    return next((f"field {name!r}: {why}; fix the cell or remove it and import the file again"
                 for name, value in cells for why in [not_text(value)] if why), None)


def import_rows(rows: Iterable[Row], origin_name: str, dataset: str, annotator: str, *, store: LabelStore,
                sample_id: str | None = None, root: Path | None = None, note: str = "") -> ImportReport:
    """Check rows read from a file against the registered samples and append the good ones.
    `note`: how the file's bytes were read, when that was not plain UTF-8 (said in the summary)."""
    name = clean_name(annotator)
    report = ImportReport(notes=[note] if note else [])
    samples: dict[str, Sample | None] = {}
    index: dict[str, dict[str, dict[str, Any]]] = {}
    seen: dict[tuple[str, str, str, str], tuple[str, str]] = {}  # (sample, item, person, field) -> (value, where)
    pending: list[tuple[str, str, str, str, str]] = []
    current_cache: dict[tuple[str, str], dict[tuple[str, str], str]] = {}
    for row in rows:
        report.rows += 1
        if report.rows > MAX_ROWS:
            report.errors.append(f"{row.where}: more than {MAX_ROWS} rows; the rest of the file was not read")
            break
        try:
            if "_error" in row.values:
                report.errors.append(f"{row.where}: {row.values['_error']}")
                continue
            bad_cell = _cell_not_text(row)  # a lone surrogate would stop the store's write of every row
            if bad_cell:
                report.errors.append(f"{row.where}: {bad_cell}")
                continue
            sid = row.sample_id or sample_id
            if not sid:
                report.errors.append(f"{row.where}: no sample_id (give --sample when the file has no sample_id column)")
                continue
            if sid not in samples:
                try:
                    samples[sid] = load_sample(sid, root)
                except InputError:
                    samples[sid] = None
                sample = samples[sid]
                if sample is not None:
                    index[sid] = {r["item_id"]: r for r in sample.items.to_dict("records")}
            sample = samples[sid]
            if sample is None:
                report.errors.append(f"{row.where}: no registered sample {one_line(sid, 80)!r}")
                continue
            if sample.meta.get("dataset") != dataset:
                report.errors.append(f"{row.where}: sample {one_line(sid, 80)!r} belongs to dataset "
                                     f"{sample.meta.get('dataset')!r}, not {dataset!r}")
                continue
            item = index[sid].get(row.item_id)
            if item is None:
                report.errors.append(f"{row.where}: item {one_line(row.item_id, 40)!r} is not in sample {sid!r}")
                continue
            wrong = [why for k in _ID_KEYS if k in row.ids and k in item
                     for why in [_id_problem(k, row.ids[k], item[k])] if why]
            if wrong:
                report.errors.append(f"{row.where}: item {row.item_id}: " + "; ".join(wrong))
                continue
            try:
                person = clean_name(f"{name}/{row.annotator_suffix}"[:60]) if row.annotator_suffix else name
            except InputError as exc:  # the tool's record of who labelled: this row's fault, not --annotator's
                why = str(exc).split(": ", 1)[-1].replace("the annotator name", "the person's name")
                report.errors.append(f"{row.where}: field {row.suffix_field!r}: {why}")
                continue
            asked = item_fields(sample, item)
            allowed = (*asked, NOTE)
            checked: dict[str, str] = {}
            problems = []
            for fld, raw in row.values.items():
                if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("", "n/a")):
                    continue
                if fld in MIXED_FIELDS and fld not in asked and asks_relevance(sample):
                    problems.append(_wrong_column(fld, item))
                    continue
                if fld not in allowed:
                    continue
                if fld in ("stance", "confidence") and item.get("query_type") != "debate":
                    problems.append(f"{fld} is asked on debate questions only")
                    continue
                size = len(raw) if isinstance(raw, str) else 0  # a huge integer reaches here as its digits
                if fld != NOTE and size > 200:
                    problems.append(f"field {fld!r}: a value of {size:,} characters is not a {fld} label")
                    continue
                try:
                    checked[fld] = check_value(fld, raw)
                except InputError as exc:
                    problems.append(str(exc).split(": ", 1)[-1])
            if problems:
                report.errors.append(f"{row.where}: item {row.item_id}: " + "; ".join(problems))
                continue
            if not checked:
                continue  # nothing filled in yet: not an error
            report.samples.add(sid)
            report.annotators.add(person)
            key_cache = (sid, person)
            if key_cache not in current_cache:
                cur = store.current(sid, person)
                current_cache[key_cache] = {(r.item_id, r.field): r.value for r in cur.itertuples(index=False)}
            repeated = True
            conflict = None
            for fld, value in checked.items():
                key = (sid, row.item_id, person, fld)
                if key in seen:
                    if seen[key][0] != value:
                        conflict = f"{row.where}: item {row.item_id} {fld} is {value!r} here but {seen[key][0]!r} in {seen[key][1]}; kept the first"
                    continue
                repeated = False
                seen[key] = (value, row.where)
                if current_cache[key_cache].get((row.item_id, fld)) == value:
                    report.unchanged += 1
                    continue
                pending.append((sid, row.item_id, person, fld, value))
            if conflict:
                report.errors.append(conflict)
            elif repeated:
                report.repeated += 1
        except (ValueError, OverflowError, RecursionError, TypeError) as exc:  # a last net: one row, one line
            if isinstance(exc, InputError):
                raise
            report.errors.append(f"{row.where}: not read ({type(exc).__name__})")
    origin = f"import:{origin_name}"[:200]
    report.written = store.record_many(pending, origin)
    return report


# ---- exporting tasks for other tools -------------------------------------------------------------

_QUESTIONS = {
    "support": ("Does the source support the statement?", [("full", "Fully supports"), ("partial", "Partially supports"),
                                                            ("none", "Does not support"), ("cant_tell", "Can't tell")]),
    "relevant": ("Is the statement answer content or filler?", [("relevant", "Relevant"), ("filler", "Filler"),
                                                               ("cant_tell", "Can't tell")]),
    "stance": ("Debate questions: which side does the statement take on the question's wording?",
               [("agree", "Agrees"), ("disagree", "Disagrees"), ("neutral", "Neutral"), ("cant_tell", "Can't tell")]),
    "confidence": ("Debate questions: how confident does the whole answer sound? (1 not at all, 5 strongly)",
                   [("1", "1"), ("2", "2"), ("3", "3"), ("4", "4"), ("5", "5"), ("cant_tell", "Can't tell")]),
}
GUIDELINES = ("Judge each item from the text shown, not from what you know. Support: 'full' when the source says "
              "everything the statement claims, 'partial' when it backs part of it, 'none' when it does not back "
              "it or contradicts it. Use 'can't tell' rather than guessing: it is not counted as a label.")


RELEVANCE_QUESTION = "Does this statement help answer the question, or is it filler?"
RELEVANCE_GUIDELINES = (" This sample asks two questions, one per item: an item with no source asks only whether the "
                        "statement is relevant (content that helps answer the question) or filler; an item with a "
                        "source asks only whether that source supports the statement. Leave the other question empty.")
# the line each task of a sample asking relevance too shows above its questions (no tool can make
# a question required on some tasks only, so both are optional and this line says which to answer)
TASK_ASKS = {"relevant": "Answer the relevance question only: " + RELEVANCE_QUESTION[0].lower() + RELEVANCE_QUESTION[1:],
             "support": "Answer the support question only: does this source support the statement?"}


def _task_fields(sample: Sample) -> list[dict[str, Any]]:
    rows = annotation_rows(sample)
    keep: tuple[str, ...]
    if asks_relevance(sample):
        keep = ("sample_id", "item_id", "answer_id", "statement_index", "source_index", "to_answer", "query", "answer",
                "statement", "source_title", "source_url", "passage", "source_text")
        asks = [item_asks(r) for r in sample.items.to_dict("records")]
        return [{k: TASK_ASKS[a] if k == "to_answer" else r.get(k, "") for k in keep} for r, a in zip(rows, asks)]
    if sample.unit == "pair":
        keep = ("sample_id", "item_id", "answer_id", "statement_index", "source_index", "query", "statement",
                "source_title", "source_url", "passage", "source_text")
    else:
        keep = ("sample_id", "item_id", "answer_id", "statement_index", "query", "query_type", "answer", "statement")
    return [{k: r.get(k, "") for k in keep} for r in rows]


def label_studio_config(unit: str, relevance: bool = False) -> str:
    """The labelling interface for a sample's tasks (Label Studio's XML; constant text only). With
    `relevance` (a pair sample asking relevance too) each task shows which of the two questions it
    asks, and neither is required: Label Studio cannot require a question on some tasks only."""
    from xml.sax.saxutils import quoteattr

    parts = ['<View>', '  <Header value="Question"/>', '  <Text name="query" value="$query"/>']
    if unit == "pair" and relevance:
        parts += ['  <Header value="$to_answer"/>',
                  '  <Header value="Answer (on relevance items: the statement is part of it)" size="6"/>',
                  '  <Text name="answer" value="$answer"/>', '  <Header value="Statement"/>',
                  '  <Text name="statement" value="$statement"/>',
                  '  <Header value="Source (support items only): $source_title ($source_url)"/>',
                  '  <Header value="Best-matching passage" size="6"/>', '  <Text name="passage" value="$passage"/>',
                  '  <Header value="Whole source" size="6"/>', '  <Text name="source_text" value="$source_text"/>']
    elif unit == "pair":
        parts += ['  <Header value="Statement"/>', '  <Text name="statement" value="$statement"/>',
                  '  <Header value="Source: $source_title ($source_url)"/>', '  <Header value="Best-matching passage" size="6"/>',
                  '  <Text name="passage" value="$passage"/>', '  <Header value="Whole source" size="6"/>',
                  '  <Text name="source_text" value="$source_text"/>']
    else:
        parts += ['  <Header value="Answer"/>', '  <Text name="answer" value="$answer"/>',
                  '  <Header value="Statement to label"/>', '  <Text name="statement" value="$statement"/>']
    for name in ("relevant", "support") if unit == "pair" and relevance else UNIT_FIELDS[unit]:
        title, choices = _QUESTIONS[name]
        title = RELEVANCE_QUESTION if name == "relevant" and relevance else title
        parts.append(f'  <Header value={quoteattr(title)}/>')
        parts.append(f'  <Choices name="{name}" toName="statement" choice="single" showInline="true">')
        parts += [f'    <Choice value="{value}" alias="{value}"/>' if value == label else
                  f'    <Choice value={quoteattr(label)} alias="{value}"/>' for value, label in choices]
        parts.append('  </Choices>')
    parts += ['  <TextArea name="note" toName="statement" placeholder="Note (optional)" maxSubmissions="1"/>', '</View>', '']
    return "\n".join(parts)


def export_tasks(sample: Sample, fmt: str, out_dir: Path) -> list[Path]:
    """Write the sample's tasks and labelling setup for Label Studio or Argilla into `out_dir`."""
    from pipeline.audit.sample import _write_text_atomic

    if fmt not in EXPORT_FORMATS:
        raise InputError(f"use one of {', '.join(EXPORT_FORMATS)}", field="--format")
    fields = _task_fields(sample)
    stem = sample.sample_id
    if fmt == "label-studio":
        tasks = [{"data": f} for f in fields]
        paths = [out_dir / f"{stem}.label-studio.tasks.json", out_dir / f"{stem}.label-studio.config.xml"]
        _write_text_atomic(paths[0], json.dumps(tasks, ensure_ascii=False, indent=1))
        _write_text_atomic(paths[1], label_studio_config(sample.unit, asks_relevance(sample)))
        return paths
    text_fields = [k for k in fields[0] if k not in ("sample_id", "item_id", "answer_id", "statement_index", "source_index")] if fields else []
    both = asks_relevance(sample)  # two questions, one per item: neither can be required (see TASK_ASKS)
    questions = ("relevant", "support") if both else UNIT_FIELDS[sample.unit]
    settings = {
        "guidelines": GUIDELINES + (RELEVANCE_GUIDELINES if both else ""),
        "fields": [{"name": k, "title": k.replace("_", " "), "type": "text"}
                   | ({"required": k in ("to_answer", "query", "statement")} if both else {}) for k in text_fields],
        "questions": [{"name": q, "title": RELEVANCE_QUESTION if both and q == "relevant" else _QUESTIONS[q][0],
                       "type": "label_selection",
                       "labels": {value: label for value, label in _QUESTIONS[q][1]},
                       "required": q in ("support", "relevant") and not both} for q in questions]
                     + [{"name": NOTE, "title": "Note (optional)", "type": "text", "required": False}],
        "metadata": [{"name": k, "type": "terms"} for k in ("sample_id", "item_id", "answer_id")],
    }
    records = [{"id": f["item_id"], "fields": {k: f[k] for k in text_fields},
                "metadata": {k: f[k] for k in ("sample_id", "item_id", "answer_id")}} for f in fields]
    paths = [out_dir / f"{stem}.argilla.settings.json", out_dir / f"{stem}.argilla.records.json"]
    _write_text_atomic(paths[0], json.dumps(settings, ensure_ascii=False, indent=1))
    _write_text_atomic(paths[1], json.dumps(records, ensure_ascii=False, indent=1))
    return paths


__all__ = ["import_labels", "import_upload", "export_tasks", "read_rows", "ImportReport", "label_studio_config"]
