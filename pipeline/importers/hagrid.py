"""HAGRID (Kamalloo et al., 2023; Apache-2.0) -> AnnotatedAnswer records with the annotators' labels.

Input: the published JSONL, one query per line: `query_id`, `query`, `quotes` [{`idx`, `docid`,
`text`}] (MIRACL passages judged relevant to the query), `answers` [{`answer`, `answer_type`?,
`informative`, `attributable`, `sentences` [{`text`, `index`, `informative`, `attributable`}]}].
Answers were written by GPT-3.5 from the quotes, citing them as [n]; people then labelled each
answer and each of its sentences. Labels are 1, 0, or missing/null (unlabelled).

Mapping (documented in docs/data/hagrid.md):

* one AnnotatedAnswer per (query, answer); `answer_id = f"{split}:{line_no}:{k}"` (split = file
  stem, line_no 1-based, k = the answer's 0-based position); `engine` = the generator
  (`ENGINE`); `query_type` "expertise"; meta: split, query_id, answer_type, the answer-level labels
  `attributable` / `informative` ("1", "0" or "" when unlabelled), support_scope="cited_only"
  (annotators judged a sentence against the quotes it cites only).
* sources are the quotes, numbered by `idx`, which is what the answers' markers use. A line whose
  quotes count from 0 (idx 0 present, no marker [0] possible) is read with every idx + 1, and says
  so in meta (`quote_index_offset` = "1"). Title "MIRACL passage <docid>", no URL, the quote as text.
* statements are the answer's `sentences`, in `index` order, located in the answer text when they
  occur there; citations are the markers inside each sentence that point to a quote, other marker
  numbers are `dangling`. Markers that open a sentence, before its first word ("... tower. [2] The
  tower is ..."), close the sentence before it and count for that one. An answer without sentences
  is split by the toolkit's splitter.
* verdicts, judge "human:hagrid", prompt_version "hagrid-v1", raw = the original label:
  - attributable 1 / 0 on a sentence -> support "full" / "none" of the sentence by each quote it
    cites. APPROXIMATION: annotators judged the sentence against all its cited quotes at once, so a
    sentence citing two quotes labelled 1 may need both together. For such a sentence the same label
    is also kept as a union verdict (source_index None, source_set = its cited quotes): that one is
    exactly what was judged, and NLI citation recall reads it. A sentence that cites no quote gets no
    support verdict (its label is about nothing this toolkit can pair it with).
  - informative 1 / 0 -> relevance "relevant" / "filler".
  - a missing or null label gives no verdict (unlabelled stays unknown).

`download_hagrid` fetches the dev and train files of a pinned revision of the dataset's Hugging
Face repository into the cache, once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from pipeline.errors import InputError
from pipeline.importers.dataset_files import download_splits, jsonl_files, read_jsonl
from pipeline.importers.refusals import Refusals, refuse_or_raise
from pipeline.records import AnnotatedAnswer, Answer, Source, Statement, Verdict
from pipeline.storage.paths import cache_dir
from pipeline.text.text import find_citation_markers, split_statements

__all__ = ["iter_hagrid", "load_hagrid", "download_hagrid", "HUMAN_JUDGE", "PROMPT_VERSION", "ENGINE", "SPLITS",
           "HAGRID_REVISION"]

HUMAN_JUDGE = "human:hagrid"
PROMPT_VERSION = "hagrid-v1"
DATASET = "hagrid"
ENGINE = "gpt-3.5-turbo (HAGRID)"  # HAGRID's answers were written by GPT-3.5 and checked by people

# The dataset's Hugging Face repository, pinned to the revision that holds hagrid-v1.0-en/{dev,train}.jsonl
# (dev 2.65 MB, train 6.31 MB). Apache-2.0; the files are downloaded for the user, never shipped.
HAGRID_REPO = "miracl/hagrid"
HAGRID_REVISION = "3c07a64f2da0751fa67ff749e3e7da6fc7bf5a93"
SPLITS = ("dev", "train")
RAW_URL = "https://huggingface.co/datasets/{repo}/resolve/{revision}/hagrid-v1.0-en/{split}.jsonl"

MAX_ANSWERS_PER_QUERY = 100
MAX_QUOTES = 500
MAX_SENTENCES = 2_000

SUPPORT_MAP = {1: "full", 0: "none"}
RELEVANCE_MAP = {1: "relevant", 0: "filler"}


# ------------------------------------------------------------------------------------------------
# download
# ------------------------------------------------------------------------------------------------


def download_hagrid(dest: Path | None = None, *, splits: tuple[str, ...] = SPLITS, timeout: float = 60.0) -> Path:
    """Download the pinned HAGRID split files once into `dest` (default `cache_dir()/hagrid`) and
    return that folder. Files already present are kept; each download is size-bounded and written
    atomically. InputError with a clear message when offline."""
    return download_splits(
        Path(dest) if dest is not None else cache_dir() / "hagrid", splits,
        lambda split: RAW_URL.format(repo=HAGRID_REPO, revision=HAGRID_REVISION, split=split),
        lambda exc: (f"could not download HAGRID ({exc}); are you offline? Put {', '.join(f'{s}.jsonl' for s in splits)} "
                     "in a folder and pass that folder (or set HAGRID_DIR) instead"),
        timeout=timeout,
    )


# ------------------------------------------------------------------------------------------------
# loading
# ------------------------------------------------------------------------------------------------


def load_hagrid(path: str | Path) -> list[AnnotatedAnswer]:
    """Every answer of a folder of HAGRID *.jsonl files (sorted by name) or of one file."""
    return list(iter_hagrid(path))


def iter_hagrid(path: str | Path, refusals: Refusals | None = None) -> Iterator[AnnotatedAnswer]:
    """The answers of a folder of HAGRID *.jsonl files (sorted by name) or of one file, one at a
    time; with `refusals`, a line that cannot be read is refused and the rest read."""
    for f in jsonl_files(path):
        for line_no, where, obj in read_jsonl(f, newline="\n", refusals=refusals):
            try:  # all of a line's answers or none of them
                answers = list(_parse_query(obj, f.stem, line_no, where))
            except InputError as exc:
                refuse_or_raise(refusals, exc, f.name)
                continue
            yield from answers


def _req(obj: Any, name: str, kind: type, where: str) -> Any:
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, got {type(obj).__name__}", record=where)
    if name not in obj or obj[name] is None:
        raise InputError("missing required field", record=where, field=name)
    value = obj[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise InputError(f"expected {kind.__name__}, got {type(value).__name__}", record=where, field=name)
    return value


def _label(obj: dict, name: str, where: str) -> int | None:
    """A 0/1 label; None when missing or null (unlabelled). Other values are an error."""
    value = obj.get(name)
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    if isinstance(value, str) and value.strip() in ("0", "1"):
        return int(value.strip())
    raise InputError(f"expected 1, 0 or null, got {str(value)[:40]!r}", record=where, field=name)


def _quotes(obj: dict, where: str) -> tuple[tuple[Source, ...], int]:
    raw = _req(obj, "quotes", list, where)
    if len(raw) > MAX_QUOTES:
        raise InputError(f"{len(raw)} quotes; the limit is {MAX_QUOTES}", record=where, field="quotes")
    parsed = []
    for k, q in enumerate(raw):
        qwhere = f"{where} quotes[{k}]"
        idx = _req(q, "idx", int, qwhere)
        text = _req(q, "text", str, qwhere)
        docid = q.get("docid")
        if docid is not None and not isinstance(docid, (str, int)):
            raise InputError(f"expected a string, got {type(docid).__name__}", record=qwhere, field="docid")
        parsed.append((idx, "" if docid is None else str(docid), text))
    offset = 1 if any(idx == 0 for idx, _, _ in parsed) else 0
    sources: dict[int, Source] = {}
    for idx, docid, text in parsed:
        index = idx + offset
        if not 1 <= index <= 999:
            raise InputError(f"quote idx {idx} out of range", record=where, field="quotes")
        if index in sources:
            raise InputError(f"duplicate quote idx {idx}", record=where, field="quotes")
        title = f"MIRACL passage {docid}" if docid else ""
        sources[index] = Source(index=index, title=title[:300], text=text, fetch_ok=True if text.strip() else None)
    return tuple(sources[i] for i in sorted(sources)), offset


def _parse_query(obj: Any, split: str, line_no: int, where: str) -> list[AnnotatedAnswer]:
    query = _req(obj, "query", str, where)
    query_id = obj.get("query_id")
    sources, offset = _quotes(obj, where)
    answers = _req(obj, "answers", list, where)
    if len(answers) > MAX_ANSWERS_PER_QUERY:
        raise InputError(f"{len(answers)} answers; the limit is {MAX_ANSWERS_PER_QUERY}", record=where, field="answers")
    base_meta = {"split": split, "query_id": "" if query_id is None else str(query_id)[:200], "line": str(line_no),
                 "support_scope": "cited_only"}
    if offset:
        base_meta["quote_index_offset"] = str(offset)
    return [_parse_answer(ans, k, query, sources, base_meta, f"{where} answers[{k}]", f"{split}:{line_no}:{k}")
            for k, ans in enumerate(answers)]


def _split_leading_markers(sentence: str) -> tuple[list[int], list[int]]:
    """(indexes of the markers before the sentence's first word, indexes of the others)."""
    leading: list[int] = []
    rest: list[int] = []
    position = 0
    for marker in find_citation_markers(sentence):
        if not rest and not any(c.isalnum() for c in sentence[position:marker.start]):
            leading.extend(marker.indexes)
        else:
            rest.extend(marker.indexes)
        position = marker.end
    return leading, rest


def _flag(value: int | None) -> str:
    return "" if value is None else str(value)


def _parse_answer(ans: Any, k: int, query: str, sources: tuple[Source, ...], base_meta: dict[str, str], where: str,
                  answer_id: str) -> AnnotatedAnswer:
    text = _req(ans, "answer", str, where)
    if not text.strip():
        raise InputError("answer text is empty", record=where, field="answer")
    answer_type = ans.get("answer_type")
    meta = dict(base_meta, answer_index=str(k), answer_type="" if answer_type is None else str(answer_type)[:100],
                attributable=_flag(_label(ans, "attributable", where)), informative=_flag(_label(ans, "informative", where)))
    answer = Answer(answer_id=answer_id, engine=ENGINE, query=query, query_type="expertise", text=text,
                    sources=sources, dataset=DATASET, meta=meta)
    raw_sentences = ans.get("sentences") or []
    if not isinstance(raw_sentences, list):
        raise InputError(f"expected a list, got {type(raw_sentences).__name__}", record=where, field="sentences")
    if len(raw_sentences) > MAX_SENTENCES:
        raise InputError(f"more than {MAX_SENTENCES} sentences", record=where, field="sentences")
    listed = {s.index for s in sources}
    if not raw_sentences:  # nothing labelled: the toolkit's own split
        return AnnotatedAnswer(answer, tuple(split_statements(answer_id, text, listed)), ())
    ordered = []
    for j, raw in enumerate(raw_sentences):
        swhere = f"{where} sentences[{j}]"
        sentence = _req(raw, "text", str, swhere)
        position = raw.get("index", j)
        if isinstance(position, bool) or not isinstance(position, int):
            raise InputError("expected an integer", record=swhere, field="index")
        ordered.append((position, j, sentence, _label(raw, "attributable", swhere), _label(raw, "informative", swhere)))
    ordered.sort(key=lambda item: (item[0], item[1]))

    spans: list[tuple[int, int]] = []
    marked: list[list[int]] = []  # marker indexes of each sentence, in order
    cursor = 0
    for _, _, sentence, _, _ in ordered:
        start = text.find(sentence, cursor) if sentence else -1
        if start < 0 and sentence:
            start = text.find(sentence)
        spans.append((start, start + len(sentence) if start >= 0 else -1))
        if start >= 0:
            cursor = start + len(sentence)
        leading, rest = _split_leading_markers(sentence)
        if leading and marked:  # "... end. [2] Next sentence": the [2] closes the sentence before
            marked[-1].extend(leading)
        else:
            rest = leading + rest
        marked.append(rest)

    statements: list[Statement] = []
    verdicts: list[Verdict] = []
    for n, ((_, _, sentence, attributable, informative), (start, end), indexes) in enumerate(zip(ordered, spans, marked)):
        cited = tuple(dict.fromkeys(i for i in indexes if i in listed))
        dangling = tuple(dict.fromkeys(i for i in indexes if i not in listed))
        statements.append(Statement(answer_id, n, sentence, start, end, cited, dangling))
        if attributable is not None and cited:
            label = SUPPORT_MAP[attributable]
            for index in cited:
                verdicts.append(Verdict(answer_id, "support", label, HUMAN_JUDGE, PROMPT_VERSION, raw=str(attributable),
                                        statement_index=n, source_index=index))
            if len(cited) >= 2:
                verdicts.append(Verdict(answer_id, "support", label, HUMAN_JUDGE, PROMPT_VERSION, raw=str(attributable),
                                        statement_index=n, source_set=tuple(sorted(cited))))
        if informative is not None:
            verdicts.append(Verdict(answer_id, "relevance", RELEVANCE_MAP[informative], HUMAN_JUDGE, PROMPT_VERSION,
                                    raw=str(informative), statement_index=n))
    return AnnotatedAnswer(answer, tuple(statements), tuple(verdicts))
