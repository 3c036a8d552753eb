"""ExpertQA (Malaviya et al., 2024; MIT licence) -> AnnotatedAnswer records with the experts' labels.

Input: JSONL, one question per line: `question`, `annotator_id`, `metadata{question_type, field,
specific_field}`, `answers{system: {answer_string, attribution: ["[n] url"], claims: [...]}}`. Each
claim carries `claim_string`, `evidence: ["[n] url\\n\\npassage" | "[n] url"]`, and the expert labels
`support`, `informativeness`, `worthiness`, `reliability` (plus correctness and revisions, kept out).

Mapping (documented in docs/data/expertqa.md):

* one AnnotatedAnswer per (question, system); `answer_id = f"{split}:{line_no}:{system}"` where
  split is the file stem and line_no is 1-based; `engine` = system name; `query_type` "expertise";
  `field` = metadata.field; meta: split, question_type, specific_field, annotator_id,
  support_scope="cited_only" (experts judged a claim only against the evidence it came with).
* sources from `attribution`; a source's text is every distinct passage shown for its index in any
  claim's evidence, joined with blank lines. `fetch_ok` is True when a passage exists, None when the
  data has only the URL (gpt4, bing_chat: experts opened the page themselves), and False when a
  claim labelled the source "N/A" (link broken / not viewable) and no claim got a real support label
  against it.
* statements are the claims in order. Their character spans in the answer text are found by
  `pipeline.text.locate.locate_spans` (word sequences, tolerant of the whitespace, bullets, bold markers
  and citation markers the claim splitter changed); a claim not found keeps start/end -1. Citations are the markers in the
  claim text that point to listed sources, then any index the claim has an evidence entry for but no
  marker (rare); marker indexes that match no listed source are `dangling`.
* verdicts, judge "human:expertqa", prompt_version "expertqa-v1", raw = the original label string:
  - support, per (claim, source the claim has an evidence entry for): Complete -> full,
    Partial -> partial, Incomplete -> none. "N/A" (the expert could not open the page) and a null
    label give `unknown`, raw = the reason in words (`records.UNCHECKED`: "expert_na",
    "expert_unlabelled"): the expert did not judge that pair, which is not "does not support". A
    "Missing" claim has no evidence entry (in every split), so it cites nothing and gets no pair
    verdict: an uncited claim, unsupported by what it cites; should one come with evidence, its
    pairs are unknown too.
    APPROXIMATION: experts labelled a claim against all of its evidence at once; for a claim with
    several cited sources we give that one label to each of them. A "Complete" on a two-source claim
    may in truth need both sources together (that is union support, not per-source support).
  - the same label once more as a union verdict (source_index None, source_set = the claim's
    evidence indexes) for a claim with evidence from two or more sources: that one IS what the
    experts judged, and it is what NLI citation recall reads.
  - relevance from informativeness: "Very relevant", "A bit relevant" -> relevant;
    "Not too important", "Uninformative" -> filler (the guideline calls them points that are not
    (too) relevant to answering the question). Remap with the `raw` field if you disagree.
  - worthiness (cite-worthiness) Yes/No -> "yes"/"no".
  - reliability (of the evidence source): Reliable -> reliable, Somewhat reliable ->
    somewhat_reliable, Not reliable at all -> not_reliable; "Missing"/"N/A" give no verdict. The
    verdict names the source when the claim's evidence comes from exactly one index.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

from pipeline.errors import InputError
from pipeline.importers.dataset_files import download_splits, jsonl_files, read_jsonl
from pipeline.importers.refusals import Refusals, refuse_or_raise
from pipeline.records import SUPPORT_UNKNOWN, AnnotatedAnswer, Answer, Source, Statement, Verdict, unchecked_text
from pipeline.storage.paths import cache_dir
from pipeline.text.locate import locate_spans
from pipeline.text.text import find_citation_markers

__all__ = [
    "load_expertqa",
    "download_expertqa",
    "HUMAN_JUDGE",
    "PROMPT_VERSION",
    "SUPPORT_MAP",
    "INFORMATIVENESS_MAP",
    "SPLITS",
    "EXPERTQA_COMMIT",
]

HUMAN_JUDGE = "human:expertqa"
PROMPT_VERSION = "expertqa-v1"
DATASET = "expertqa"

SUPPORT_MAP = {"Complete": "full", "Partial": "partial", "Incomplete": "none"}
SUPPORT_NO_VERDICT = frozenset({"Missing", "N/A"})
INFORMATIVENESS_MAP = {
    "Very relevant": "relevant",
    "A bit relevant": "relevant",
    "Not too important": "filler",
    "Uninformative": "filler",
}
WORTHINESS_MAP = {"Yes": "yes", "No": "no"}
RELIABILITY_MAP = {
    "Reliable": "reliable",
    "Somewhat reliable": "somewhat_reliable",
    "Not reliable at all": "not_reliable",
}

# The authors' repository, pinned to a commit that holds data/lfqa/{domain_val,domain_test,rand_val}.jsonl.
EXPERTQA_REPO = "chaitanyamalaviya/ExpertQA"
EXPERTQA_COMMIT = "4b732d60707e61e34d508680d16168f485ee5632"
SPLITS = ("domain_val", "domain_test", "rand_val")
# What each of ExpertQA's six system ids (`Answer.engine`) stands for, from the paper's description of
# how the answers were produced; the dashboard explains the ids with it wherever they appear.
SYSTEMS = {
    "gpt4": "GPT-4 alone, citing web addresses from memory (no retrieval)",
    "bing_chat": "Bing Chat, the commercial engine, in its balanced mode",
    "rr_sphere_gpt4": "retrieve then read: GPT-4 writes the answer from passages found in Sphere, a CommonCrawl dump",
    "rr_gs_gpt4": "retrieve then read: GPT-4 writes the answer from Google search results",
    "post_hoc_sphere_gpt4": "GPT-4 answers first, then evidence for each claim is looked up in Sphere",
    "post_hoc_gs_gpt4": "GPT-4 answers first, then evidence for each claim is looked up in Google search results",
}
RAW_URL = "https://raw.githubusercontent.com/{repo}/{commit}/data/lfqa/{split}.jsonl"

_HEAD_RE = re.compile(r"^\s*\[\s*(\d{1,4})\s*\]\s*(.*?)\s*$")


# ------------------------------------------------------------------------------------------------
# download
# ------------------------------------------------------------------------------------------------


def download_expertqa(dest: Path | None = None, *, timeout: float = 60.0) -> Path:
    """Download the three annotated ExpertQA files once into `dest` (default
    `cache_dir()/expertqa`) and return that folder. Files already present are kept; each download is
    size-bounded and written atomically. Raises InputError with a clear message when offline."""
    return download_splits(
        Path(dest) if dest is not None else cache_dir() / "expertqa", SPLITS,
        lambda split: RAW_URL.format(repo=EXPERTQA_REPO, commit=EXPERTQA_COMMIT, split=split),
        lambda exc: (f"could not download ExpertQA ({exc}); are you offline? Put {', '.join(SPLITS)} .jsonl "
                     f"files in a folder and point EXPERTQA_DIR at it instead"),
        timeout=timeout,
    )


# ------------------------------------------------------------------------------------------------
# loading
# ------------------------------------------------------------------------------------------------


def load_expertqa(path: str | Path) -> list[AnnotatedAnswer]:
    """Import a folder of ExpertQA *.jsonl files (sorted by name) or one file."""
    return list(iter_expertqa(path))


def iter_expertqa(path: str | Path, refusals: Refusals | None = None) -> Iterator[AnnotatedAnswer]:
    """The answers of a folder of ExpertQA *.jsonl files (sorted by name) or of one file, one at a
    time; with `refusals`, a line that cannot be read is refused and the rest read."""
    for f in jsonl_files(path):
        for line_no, where, obj in read_jsonl(f, refusals=refusals):
            try:  # all of a line's answers or none of them
                answers = list(_parse_question(obj, f.stem, line_no, where))
            except InputError as exc:
                refuse_or_raise(refusals, exc, f.name)
                continue
            yield from answers


def _req(obj: Any, name: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, got {type(obj).__name__}", record=where)
    if name not in obj:
        raise InputError("missing required field", record=where, field=name)
    value = obj[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        want = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise InputError(f"expected {want}, got {type(value).__name__}", record=where, field=name)
    return value


def _opt_str(obj: dict, name: str) -> str:
    value = obj.get(name)
    return value if isinstance(value, str) else ""


def _parse_head(entry: str) -> tuple[int, str, str] | None:
    """'[n] url\\n\\npassage' -> (n, url, passage); None when the first line is not '[n] ...'."""
    head, _, rest = entry.partition("\n")
    m = _HEAD_RE.match(head)
    if not m:
        return None
    return int(m.group(1)), m.group(2), rest.strip()


def _marker_indexes(text: str) -> list[int]:
    return [index for marker in find_citation_markers(text) for index in marker.indexes]


def _parse_question(obj: Any, split: str, line_no: int, where: str) -> list[AnnotatedAnswer]:
    question = _req(obj, "question", str, where)
    answers = _req(obj, "answers", dict, where)
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    metadata = metadata if isinstance(metadata, dict) else {}
    annotator = _opt_str(obj, "annotator_id")
    out = []
    for system, ans in answers.items():
        out.append(_parse_answer(ans, str(system), question, metadata, annotator, split, line_no, f"{where} answers.{system}"))
    return out


def _parse_answer(
    ans: Any, system: str, question: str, metadata: dict, annotator: str, split: str, line_no: int, where: str
) -> AnnotatedAnswer:
    answer_id = f"{split}:{line_no}:{system}"
    text = _req(ans, "answer_string", str, where)
    attribution = _req(ans, "attribution", list, where)
    claims = _req(ans, "claims", list, where)

    urls: dict[int, str] = {}
    for k, entry in enumerate(attribution):
        if not isinstance(entry, str):
            raise InputError(f"expected a string, got {type(entry).__name__}", record=where, field=f"attribution[{k}]")
        parsed = _parse_head(entry)
        if parsed is None:
            raise InputError(f"expected '[n] url', got {entry[:60]!r}", record=where, field=f"attribution[{k}]")
        urls.setdefault(parsed[0], parsed[1])

    passages: dict[int, list[str]] = {i: [] for i in urls}
    judged: set[int] = set()  # sources some claim got a real support label against
    na_sources: set[int] = set()
    statements: list[Statement] = []
    verdicts: list[Verdict] = []

    for ci, claim in enumerate(claims):
        cwhere = f"{where} claims[{ci}]"
        claim_text = _req(claim, "claim_string", str, cwhere)
        evidence = claim.get("evidence") or []
        if not isinstance(evidence, list):
            raise InputError(f"expected a list, got {type(evidence).__name__}", record=cwhere, field="evidence")
        ev_order: list[int] = []
        ev_passages: dict[int, list[str]] = {}
        for k, entry in enumerate(evidence):
            if not isinstance(entry, str):
                raise InputError(f"expected a string, got {type(entry).__name__}", record=cwhere, field=f"evidence[{k}]")
            parsed = _parse_head(entry)
            if parsed is None:
                raise InputError(f"expected '[n] url...', got {entry[:60]!r}", record=cwhere, field=f"evidence[{k}]")
            n, url, passage = parsed
            if n not in ev_passages:
                ev_order.append(n)
                ev_passages[n] = []
            if n not in urls:  # evidence for an index the answer does not list: list it from here
                urls[n] = url
                passages[n] = []
            if passage and passage not in ev_passages[n]:
                ev_passages[n].append(passage)
            if passage and passage not in passages[n]:
                passages[n].append(passage)

        cited: list[int] = []
        dangling: list[int] = []
        for n in _marker_indexes(claim_text):
            if n in urls:
                if n not in cited:
                    cited.append(n)
            elif n not in dangling:
                dangling.append(n)
        for n in ev_order:  # evidence shown without a marker in the claim text
            if n not in cited:
                cited.append(n)
        statements.append(
            Statement(answer_id, ci, claim_text, -1, -1, tuple(cited), tuple(n for n in dangling if n not in cited))
        )

        support = claim.get("support")
        if isinstance(support, str) and support in SUPPORT_MAP:
            for n in ev_order:
                judged.add(n)
                verdicts.append(
                    Verdict(answer_id, "support", SUPPORT_MAP[support], HUMAN_JUDGE, PROMPT_VERSION, raw=support,
                            statement_index=ci, source_index=n, evidence="\n\n".join(ev_passages[n]))
                )
            if len(ev_order) >= 2:
                verdicts.append(
                    Verdict(answer_id, "support", SUPPORT_MAP[support], HUMAN_JUDGE, PROMPT_VERSION, raw=support,
                            statement_index=ci, source_set=tuple(sorted(ev_order)))
                )
        else:
            if support == "N/A":
                na_sources.update(ev_order)
            why = unchecked_text("expert_na" if support == "N/A" else "expert_unlabelled")
            verdicts.extend(Verdict(answer_id, "support", SUPPORT_UNKNOWN, HUMAN_JUDGE, PROMPT_VERSION, raw=why,
                                    statement_index=ci, source_index=n) for n in ev_order)

        info = claim.get("informativeness")
        if isinstance(info, str) and info in INFORMATIVENESS_MAP:
            verdicts.append(Verdict(answer_id, "relevance", INFORMATIVENESS_MAP[info], HUMAN_JUDGE, PROMPT_VERSION,
                                    raw=info, statement_index=ci))
        worth = claim.get("worthiness")
        if isinstance(worth, str) and worth in WORTHINESS_MAP:
            verdicts.append(Verdict(answer_id, "worthiness", WORTHINESS_MAP[worth], HUMAN_JUDGE, PROMPT_VERSION,
                                    raw=worth, statement_index=ci))
        rel = claim.get("reliability")
        if isinstance(rel, str) and rel in RELIABILITY_MAP:
            verdicts.append(Verdict(answer_id, "reliability", RELIABILITY_MAP[rel], HUMAN_JUDGE, PROMPT_VERSION,
                                    raw=rel, statement_index=ci,
                                    source_index=ev_order[0] if len(ev_order) == 1 else None))

    spans = locate_spans(text, [s.text for s in statements])
    statements = [s if span[0] < 0 else replace(s, start=span[0], end=span[1]) for s, span in zip(statements, spans)]

    sources = []
    for n in sorted(urls):
        text_n = "\n\n".join(passages.get(n, []))
        if n in na_sources and n not in judged:
            ok: bool | None = False
        elif text_n:
            ok = True
        else:
            ok = None
        sources.append(Source(index=n, url=urls[n], text=text_n, fetch_ok=ok))

    meta = {
        "split": split,
        "system": system,
        "question_type": str(metadata.get("question_type") or ""),
        "specific_field": str(metadata.get("specific_field") or ""),
        "annotator_id": annotator or _opt_str(ans, "annotator_id"),
        "support_scope": "cited_only",
        "line": str(line_no),
    }
    answer = Answer(
        answer_id=answer_id,
        engine=system,
        query=question,
        query_type="expertise",
        text=text,
        sources=tuple(sources),
        dataset=DATASET,
        field=str(metadata.get("field") or ""),
        meta=meta,
    )
    return AnnotatedAnswer(answer, tuple(statements), tuple(verdicts))


def content_hash(path: Path) -> str:
    """sha256 of a file (for manifests)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
