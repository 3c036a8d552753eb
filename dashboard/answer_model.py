"""What the answer view shows, shaped from one answer's report (inspector and re-score).

Loading lives in `dashboard.data`. Every number shown comes from `pipeline.report.scoring.answer_report`
(metrics, matrices, necessary sources) or from the exported tables (source type, duplicates,
injection flags); this module only reshapes them for display: statement statuses, citation-marker
positions, the per-pair judge output, flags and the study context.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from pipeline.judges.measure.reliability import uncertain_note, verdict_uncertain
from pipeline.matrices import unknown_verdict_code
from pipeline.records import SUPPORT_LABELS, SUPPORT_UNKNOWN, AnnotatedAnswer, unchecked_text
from pipeline.storage import paths
from pipeline.storage.tables import source_rows
from pipeline.text.headings import is_heading_line
from pipeline.text.text import find_citation_markers

# Statement statuses shown by the answer component (the key is what the JS reads).
STATUS_LABELS: dict[str, str] = {
    "supported": "Supported by a cited source",
    "unsupported": "Cited, but no cited source supports it",
    "unchecked": "Cited, not checked: a source it cites could not be judged (no text, for instance)",
    "uncited": "No citation",
    "filler": "Filler (not a claim)",
}
STATUS_SYMBOLS: dict[str, str] = {"supported": "✓", "unsupported": "✗", "unchecked": "◌", "uncited": "?", "filler": "…"}

# Per-pair classes of a citation marker.
CITE_LABELS: dict[str, str] = {
    "full": "the judge says this source supports the statement",
    "partial": "the judge says this source supports the statement only in part",
    "none": "the judge says this source does not support the statement",
    "unknown": "not checked: nobody judged this pair, so it counts neither as support nor against it",
    "unjudged": "no support verdict for this pair (source text missing or statement not judged)",
    "dangling": "this number matches no listed source",
    "free": "marker outside any statement",
}
# The mark of a support verdict whose score sits in the judge's uncertain band (with its own colour).
UNCERTAIN_MARK = "≈"
UNCERTAIN_LABEL = ("uncertain: the judge's score is close to its cut point, where its labels are least reliable "
                   "(the line style still shows the label)")

RAW_MAX = 2000
EVIDENCE_MAX = 1500
EXCERPT_MAX = 600
SAFE_DATASET = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_SAFE_LABEL_CHARS = re.compile(r"[^A-Za-z0-9 _.:-]+")


# ---- source analysis rows -------------------------------------------------------------------


def source_view_rows(rows: Iterable[dict]) -> list[dict]:
    """Exported source-analysis rows (sources table) in the shape the answer view reads."""
    out = []
    for r in rows:
        flags = r.get("injection_flags") or ""
        try:
            parsed = json.loads(flags) if flags else []
        except ValueError:
            parsed = [{"kind": "unreadable", "excerpt": ""}]
        dup = r.get("duplicate_of")
        out.append({"index": int(r["source_index"]), "source_type": r.get("source_type") or "unknown",
                    "injection_flags": parsed if isinstance(parsed, list) else [],
                    "duplicate_of": None if dup is None or dup != dup else int(dup)})
    return out


def computed_source_rows(annotated: AnnotatedAnswer) -> list[dict]:
    """The same source analysis the pipeline exports, computed for an answer not on disk."""
    return source_view_rows(source_rows("", [annotated]))


# ---- view inputs ----------------------------------------------------------------------------


def pair_verdicts(annotated: AnnotatedAnswer, rep: dict | None = None) -> dict[tuple[int, int], dict]:
    """The judge's support verdict per (statement, source): label, score, evidence, raw output.

    A pair nobody decided is label "unknown" with `reason` ("not checked: no text"): from its own
    verdict (unknown, or a failed call) or, with `rep`, from the report's list of cited pairs left
    unchecked (results labelled before such verdicts were written, data without a label). A decided
    label always wins over one that decided nothing."""
    out: dict[tuple[int, int], dict] = {}
    for v in annotated.verdicts:
        if v.kind != "support" or v.statement_index is None or v.source_index is None:
            continue
        key = (v.statement_index, v.source_index)
        if v.label not in SUPPORT_LABELS:
            if key not in out or out[key]["label"] == SUPPORT_UNKNOWN:
                out[key] = _unchecked_pair(unchecked_text(unknown_verdict_code(v)), v.judge, v.prompt_version, v.raw)
            continue
        out[key] = {
            "label": v.label, "score": v.score, "evidence": (v.evidence or "")[:EVIDENCE_MAX],
            "raw": (v.raw or "")[:RAW_MAX], "judge": v.judge, "prompt": v.prompt_version, "reason": "",
            "uncertain": verdict_uncertain(v), "uncertain_note": uncertain_note(v)}
    for u in (rep or {}).get("unchecked_support", {}).get("cited", []):
        out.setdefault((u["statement"], u["source"]), _unchecked_pair(u["reason"], rep.get("judge", "") if rep else "", "", ""))
    return out


def _unchecked_pair(reason: str, judge: str, prompt: str, raw: str) -> dict:
    return {"label": SUPPORT_UNKNOWN, "score": None, "evidence": "", "raw": (raw or "")[:RAW_MAX], "judge": judge,
            "prompt": prompt, "reason": reason, "uncertain": False, "uncertain_note": ""}


def statement_statuses(rep: dict) -> dict[int, str]:
    """Status of each statement, as the report gives it (`pipeline.report.scoring.statement_status`):
    filler, uncited, supported, unchecked (cited, no cited source supports it, and one of them
    was not checked) or unsupported (every cited source judged, none supports it)."""
    return {s["index"]: s["status"] for s in rep["statements"]}


def _display(text: str) -> str:
    """Markdown emphasis removed for display (the text itself is never parsed as HTML)."""
    return re.sub(r"(\*\*|__)(.+?)\1", r"\2", text)


def _parts(text: str, urls: dict[str, int], listed: set[int], statement: int | None,
           pairs: dict[tuple[int, int], dict]) -> list[dict]:
    """Split text into plain-text runs and one citation chip per cited index."""
    parts: list[dict] = []
    pos = 0
    for m in find_citation_markers(text, urls):
        before = text[pos:m.start]
        if m.form == "link":  # keep the visible label of "[label](url)"
            label_end = text.find("](", m.start)
            before += text[m.start + 1:label_end] if label_end > m.start else ""
        if before:
            parts.append({"t": "text", "s": _display(before)})
        for index in m.indexes:
            if index not in listed:
                cls = "dangling"
            elif statement is None:
                cls = "free"
            else:
                cls = pairs.get((statement, index), {}).get("label") or "unjudged"
            part = {"t": "cite", "src": index, "cls": cls}
            if statement is not None and pairs.get((statement, index), {}).get("uncertain"):
                part["unc"] = True
            parts.append(part)
        pos = m.end
    if text[pos:]:
        parts.append({"t": "text", "s": _display(text[pos:])})
    return parts


def _gap_blocks(text: str, urls: dict[str, int], listed: set[int], pairs: dict) -> list[dict]:
    """Text between statements: headings become heading blocks, the rest stays as text."""
    blocks: list[dict] = []
    for line in re.split(r"(\n)", text):
        if not line:
            continue
        heading = re.match(r"^[ \t]*#{1,6}[ \t]+(.*)$", line)
        if heading:
            blocks.append({"t": "heading", "s": _display(heading.group(1).strip())})
        elif is_heading_line(line):  # a heading pasted without its "#" (the splitter skipped it too)
            blocks.append({"t": "heading", "s": _display(line.strip().strip("*_").strip())})
        else:
            blocks.append({"t": "gap", "parts": _parts(line, urls, listed, None, pairs)})
    return blocks


def _tidy_blocks(blocks: list[dict]) -> list[dict]:
    """Merge neighbouring gaps; drop blank gaps next to headings or at the ends; keep at most
    one blank line between paragraphs."""
    merged: list[dict] = []
    for b in blocks:
        if b["t"] == "gap" and merged and merged[-1]["t"] == "gap":
            merged[-1] = {"t": "gap", "parts": merged[-1]["parts"] + b["parts"]}
        else:
            merged.append(b)
    out: list[dict] = []
    for k, b in enumerate(merged):
        if b["t"] == "gap" and all(p["t"] == "text" and not p["s"].strip() for p in b["parts"]):
            prev = merged[k - 1]["t"] if k > 0 else None
            nxt = merged[k + 1]["t"] if k + 1 < len(merged) else None
            if prev in (None, "heading") or nxt in (None, "heading"):
                continue
            blank = "".join(p["s"] for p in b["parts"])
            b = {"t": "gap", "parts": [{"t": "text", "s": "\n\n" if blank.count("\n") >= 2 else blank}]}
        out.append(b)
    return out


def source_title(title: str, url: str) -> str:
    """The title a reader sees for a source: its own, else the site and the page's path from its
    URL ("en.wikipedia.org/wiki/Urban_heat_island"), else a plain "(no title, no address)"."""
    if title.strip():
        return title.strip()
    from urllib.parse import unquote, urlsplit

    try:
        parts = urlsplit(url.strip())
    except ValueError:
        parts = None
    if parts is None or not parts.netloc:
        return url.strip()[:120] or "(no title, no address)"
    host = parts.hostname or parts.netloc
    host = host[4:] if host.startswith("www.") else host
    path = unquote(parts.path).rstrip("/")
    if len(path) > 70:
        path = path[:69] + "…"
    return host + path


NO_TEXT_PARTICIPANT = "(no text of this source is available here)"


def no_text_hint(dataset: str) -> str:
    """What the popover says about a source without text in a stored dataset: why, the command
    that fetches it, and what that changes."""
    from pipeline.fetching.fill_sources import WHAT_IT_CHANGES, fetch_command

    return (f"No text: the dataset carries none for this source, so a computed judge cannot check it here. "
            f"`{fetch_command(dataset)}` fetches the page; {WHAT_IT_CHANGES}.")


NO_TEXT_RESCORE = ("No text: nothing was pasted for this source and its page was not fetched. Paste the text in its "
                   "box, or tick “Fetch the page” and score again: the judge then checks the statements citing it.")


def component_data(annotated: AnnotatedAnswer, rep: dict, source_rows: Iterable[dict],
                   report_events: bool = False, participant: bool = False,
                   reliability: dict[str, str] | None = None, no_text: str = "") -> dict[str, Any]:
    """Everything the answer component shows, as JSON-ready data (inserted as text by the JS).

    `participant`: what a study participant may see - the answer with its markers and sources,
    as an answer engine shows them. No verdict, status, stance or audit flag leaves the server.
    `reliability`: {"line": the judge's measured reliability in one sentence, "url": the Judges
    page}, shown in every verdict popover. `no_text`: what the popover says of a source without
    text (`no_text_hint`, `NO_TEXT_RESCORE`); a title falls back to the site and path of the URL."""
    answer = annotated.answer
    text = answer.text
    urls = {s.url: s.index for s in answer.sources if s.url}
    listed = {s.index for s in answer.sources}
    pairs = {} if participant else pair_verdicts(annotated, rep)
    statuses = {s["index"]: "plain" for s in rep["statements"]} if participant else statement_statuses(rep)
    info = {} if participant else {r["index"]: r for r in source_rows}

    blocks: list[dict] = []
    located = sorted((s for s in annotated.statements if 0 <= s.start < s.end <= len(text)), key=lambda s: s.start)
    pos = 0
    for s in located:
        if s.start < pos:  # overlapping spans: show the statement on its own below
            continue
        blocks.extend(_gap_blocks(text[pos:s.start], urls, listed, pairs))
        stext = text[s.start:s.end]
        heading = re.match(r"^[ \t]*#{1,6}[ \t]+", stext)
        if heading:
            stext = stext[heading.end():]
        blocks.append({"t": "stmt", "i": s.index, "parts": _parts(stext, urls, listed, s.index, pairs)})
        pos = s.end
    blocks.extend(_gap_blocks(text[pos:], urls, listed, pairs))
    blocks = _tidy_blocks(blocks)
    shown = {b["i"] for b in blocks if b["t"] == "stmt"}
    rest = [s for s in annotated.statements if s.index not in shown]
    if rest:
        blocks.append({"t": "heading", "s": "Statements not located in the answer text"})
        for s in rest:
            blocks.append({"t": "stmt", "i": s.index, "parts": _parts(s.text, urls, listed, s.index, pairs), "own_line": True})

    if participant:
        for b in blocks:
            for part in b.get("parts", []):
                if part["t"] == "cite":
                    part["cls"] = "plain"
                    part.pop("unc", None)
    statements = {}
    for s in rep["statements"]:
        statements[str(s["index"])] = {
            "status": statuses[s["index"]], "stance": None if participant else s["stance"],
            "reason": "" if participant else s.get("status_reason", ""),
            "citations": s["citations"], "dangling": s["dangling"]}
    sources = {}
    for src in answer.sources:
        row = info.get(src.index, {})
        flags = []
        if src.fetch_ok is False and not participant:
            flags.append("dead: the page could not be fetched")
        if row.get("duplicate_of") is not None:
            flags.append(f"near-duplicate of source [{row['duplicate_of']}]")
        for f in row.get("injection_flags") or []:
            flags.append(f"injection-like text ({f.get('kind', '?')}): {str(f.get('excerpt', ''))[:160]}")
        sources[str(src.index)] = {
            "title": source_title(src.title, src.url), "url": src.url, "http": is_http_url(src.url),
            "type": "" if participant else row.get("source_type") or "unknown", "flags": flags, "has_text": bool(src.text.strip()),
            "excerpt": _excerpt(src.text),
            "no_text": "" if src.text.strip() else (NO_TEXT_PARTICIPANT if participant else
                                                     _fetch_failed_text(src) or no_text
                                                     or "No text: no judge could check this source."),
            "snippet": src.text_origin == "snippet"}
    return {
        "answer_id": answer.answer_id,
        "debate": answer.query_type == "debate",
        "blocks": blocks,
        "statements": statements,
        "sources": sources,
        "pairs": {f"{i}:{j}": v for (i, j), v in pairs.items()},
        "status_labels": STATUS_LABELS,
        "status_symbols": STATUS_SYMBOLS,
        "cite_labels": CITE_LABELS,
        "uncertain_mark": UNCERTAIN_MARK,
        "uncertain_label": UNCERTAIN_LABEL,
        "uncertain_count": 0 if participant else len(rep.get("uncertain_support") or []),
        "reliability": {} if participant or not reliability else
        {"line": str(reliability.get("line", ""))[:400], "url": str(reliability.get("url", ""))[:200]},
        "report_events": bool(report_events),
        "participant": bool(participant),
    }


def _fetch_failed_text(src) -> str:
    """What a source's popover says when a fetch got no text, and why ("" for other sources)."""
    if src.text_origin == "unreachable":
        return ("No text: this machine could not reach the web when the page was fetched. Not the engine's fault and "
                "not a dead source; fetch again with a network, or paste the text.")
    if src.text_origin == "unfetched":
        return "No text: the page could not be fetched (not known to be gone); paste its text to judge it."
    return ""


def _excerpt(text: str, limit: int = EXCERPT_MAX) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def is_http_url(url: str) -> bool:
    """True for an absolute http(s) URL with a host (the only kind shown as a link)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.netloc) and not any(c in url for c in "\x00\r\n\t ")


def answer_flags(annotated: AnnotatedAnswer, rep: dict, source_rows: Iterable[dict]) -> list[dict]:
    """Problems worth a journalist's attention: dangling citations, dead, duplicate and
    injection-flagged sources. Each flag: kind, source or statement, message (plain text)."""
    flags: list[dict] = []
    for s in rep["statements"]:
        for d in s["dangling"]:
            flags.append({"kind": "dangling citation", "where": f"statement {s['index'] + 1}",
                          "message": f"cites [{d}], which matches no listed source"})
    titles = {s.index: s.title for s in annotated.answer.sources}
    for s in annotated.answer.sources:
        if s.fetch_ok is False:
            flags.append({"kind": "dead source", "where": f"source [{s.index}]", "message": "the page could not be fetched"})
    flags.extend(unchecked_flags(rep))
    for row in source_rows:
        if row.get("duplicate_of") is not None:
            flags.append({"kind": "duplicate source", "where": f"source [{row['index']}]",
                          "message": f"near-duplicate of source [{row['duplicate_of']}] ({titles.get(row['duplicate_of'], '')[:80]})"})
        for f in row.get("injection_flags") or []:
            flags.append({"kind": "injection-like text", "where": f"source [{row['index']}]",
                          "message": f"{f.get('kind', '?')}: {str(f.get('excerpt', ''))[:160]}"})
    return flags


def unchecked_flags(rep: dict) -> list[dict]:
    """One flag per statement whose cited sources were not checked (the same words as its chip and
    as the metrics' notes), after a summary flag counting every pair left unchecked by cause."""
    summary = rep.get("unchecked_support") or {}
    if not summary.get("pairs"):
        return []
    causes = "; ".join(f"{why}: {n}" for why, n in sorted(summary["causes"].items(), key=lambda kv: -kv[1]))
    flags = [{"kind": "not checked", "where": "answer",
              "message": f"{summary['pairs']} of {summary['of']} (statement, source) pairs were not judged ({causes}); "
                         "left out of the metrics, never counted as unsupported"}]
    for s in rep["statements"]:
        if s.get("status") == "unchecked":
            flags.append({"kind": "not checked", "where": f"statement {s['index'] + 1}",
                          "message": f"{s['status_reason']}: neither supported nor unsupported here"})
    return flags


def uncertain_summary(rep: dict) -> tuple[str, str]:
    """The Flags panel's count of uncertain support labels ("3 support labels uncertain") and the
    pairs they are on; ("", "") when there is none."""
    found = rep.get("uncertain_support") or []
    if not found:
        return "", ""
    pairs = ", ".join(f"S{u['statement'] + 1} × [{u['source']}] {u['label']}"
                      + (f" (score {u['score']:.2f})" if u.get("score") is not None else "") for u in found[:12])
    more = f" and {len(found) - 12} more" if len(found) > 12 else ""
    noun = "support label" if len(found) == 1 else "support labels"
    return f"{UNCERTAIN_MARK} {len(found)} {noun} uncertain", f"{pairs}{more}."


DIRECTION_MARKS = {"higher_is_better": "↑ higher", "lower_is_better": "↓ lower", "neutral": ""}


def metric_value_text(value: float | None, unit: str) -> str:
    """A per-answer value as shown: "57.14%", "3", "1.50"; "n/a" when the metric is not scorable."""
    if value is None or value != value:
        return "n/a"
    if unit == "percent":
        return f"{value:.2f}%"
    if unit == "count" and float(value).is_integer():
        return str(int(value))
    if unit == "likert":
        return f"{value:.2f} (scale 1-5)"
    return f"{value:.2f}"


def metrics_table(rep: dict) -> pd.DataFrame:
    """The report's metrics as text rows: label, value as shown (with its unit; "n/a" when not
    scorable), which direction is better, rating symbol and word, n, and the reason or note."""
    from pipeline.metrics import METRICS, RATING_SYMBOLS

    rows = []
    for name, m in rep["metrics"].items():
        info = METRICS.get(name)
        unit = info.unit if info else "ratio"
        shown = m["display"]
        rating = m["rating"]
        note = m["reason"] or ""
        if shown is None and not note:
            note = "not scorable for this answer"
        rows.append({"metric": m["label"], "value": metric_value_text(shown, unit),
                     "better": DIRECTION_MARKS.get(info.direction, "") if info else "",
                     "rating": f"{RATING_SYMBOLS[rating]} {rating}" if rating else "",
                     "n": str(m["n"]) if m["n"] is not None else "n/a", "note": note, "id": name})
    return pd.DataFrame(rows, columns=["metric", "value", "better", "rating", "n", "note", "id"])


# ---- study context --------------------------------------------------------------------------


def safe_label(value: str, fallback: str = "unknown") -> str:
    """A value that fits the study log's label pattern (letters, digits, space, _ . : -)."""
    cleaned = _SAFE_LABEL_CHARS.sub("_", value or "").strip(" _.:-")[:128]
    return cleaned if cleaned and cleaned[0].isalnum() else fallback


def query_id(annotated: AnnotatedAnswer) -> str:
    """A stable id for the query (the same text gives the same id across engines)."""
    carried = annotated.answer.meta.get("query_id") if annotated.answer.meta else None
    if carried:
        return safe_label(str(carried))
    digest = hashlib.sha1(" ".join(annotated.answer.query.lower().split()).encode("utf-8")).hexdigest()[:10]
    return f"q-{digest}"


def study_context(annotated: AnnotatedAnswer) -> dict[str, str]:
    """Engine, query id and query type of an answer, in the study log's safe form."""
    return {"engine": safe_label(annotated.answer.engine), "query_id": query_id(annotated),
            "query_type": annotated.answer.query_type}


def user_dataset_path(name: str) -> Path:
    """Where "save into a dataset" appends: data/user/<name>.jsonl (the name is checked)."""
    if not SAFE_DATASET.match(name or ""):
        raise ValueError("use 1-64 letters, digits, '-' or '_' (starting with a letter or digit)")
    return paths.user_data_dir() / "user" / f"{name}.jsonl"


def md_text(value: str, limit: int = 500) -> str:
    """User text made literal for st.markdown/st.caption: every ASCII punctuation mark is
    backslash-escaped (links, emphasis, HTML, `:colour[...]` directives and `$` maths stay text)."""
    value = " ".join(str(value).split())[:limit]
    return re.sub(r"([!-/:-@\[-`{-~])", r"\\\1", value)


def statement_count_text(annotated: AnnotatedAnswer, rep: dict) -> str:
    """How many statements an answer was split into, and how many of them are claims when some are
    filler: the Statements metric (from the report) counts claims only, so "6 statements" beside a
    Statements value of 4 would read as a contradiction."""
    total = len(annotated.statements)
    claims = ((rep.get("metrics") or {}).get("n_statements") or {}).get("display")
    noun = "statement" if total == 1 else "statements"
    if claims is None or int(claims) == total:
        return f"{total} {noun}"
    n_claims = int(claims)
    return f"{total} {noun} ({n_claims} claim{'' if n_claims == 1 else 's'}, {total - n_claims} filler)"
