"""One answer as a self-contained HTML report: the answer with its statements highlighted, every
verdict, both matrices, the flags, the metrics and how far the judge can be trusted.

Made to be mailed and opened offline: one file, inline CSS, no script, no image, no font, nothing
fetched. Every piece of data-derived text goes through `html.escape`; a Content-Security-Policy
forbids scripts and remote loads, so even a slip in escaping could not run code or call home.
Source URLs become links only when they are http(s) (`rel="noopener noreferrer"`), and are shown
in full as text beside the link.

Numbers come from the pipeline's report (`pipeline.report.scoring.answer_report`) and the exported
agreement / check tables; this module only lays them out.
"""

from __future__ import annotations

import html
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping

from dashboard import answer_model
from dashboard.answer_view import (
    CELL_CITATION,
    CELL_SUPPORT,
    UNCERTAIN_CODE,
    matrix_cells,
    matrix_key,
    support_cell_texts,
    unchecked_headline,
)
from pipeline import __version__
from pipeline.metrics import MODE_LABELS
from pipeline.records import AnnotatedAnswer, unchecked_text
from pipeline.text.citation_scope import scope_note

CHIP_UNCERTAIN = "uncertain support label: the judge's score is close to its cut point"
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; base-uri 'none'; form-action 'none'"
MAX_EXCERPT = 600

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;max-width:980px;margin:24px auto;
padding:0 16px;color:#1f2328;line-height:1.55}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #d0d7de}
.meta{color:#57606a;font-size:.92em}.banner{background:#fff4d6;border:1px solid #e3b341;padding:8px 12px;border-radius:6px}
table{border-collapse:collapse;margin:.6em 0;font-size:.92em}th,td{border:1px solid #d0d7de;padding:4px 8px;
vertical-align:top;text-align:left}th{background:#f6f8fa}
.answer{border-left:3px solid #d0d7de;padding:4px 12px;white-space:pre-wrap}
.stmt{border-radius:3px;padding:1px 2px}.st-supported{background:#dafbe1;border-bottom:2px solid #1a7f37}
.st-unsupported{background:#ffebe9;border-bottom:2px dashed #cf222e}.st-uncited{background:#fff1d6;
border-bottom:2px dotted #9a6700}.st-unchecked{background:#eef1f4;border-bottom:2px dotted #6e7781}
.st-filler{color:#6e7781;font-style:italic}.sym{font-weight:700;font-size:.8em}
.cite{font-size:.8em;border:1px solid #8c959f;border-radius:4px;padding:0 3px;vertical-align:2px}
.c-full{border:2px solid #1a7f37}.c-partial{border:2px dashed #9a6700}.c-none{border:2px solid #cf222e;
text-decoration:line-through}.c-dangling{border:2px dotted #cf222e;font-style:italic}
.c-unknown{border:2px dotted #6e7781;color:#57606a}.unchecked{color:#57606a}
.matrix td{text-align:center;min-width:2.2em;font-size:1.05em}.matrix th.row{font-weight:400;max-width:360px}
.m1{background:#8fd19e}.m2{background:#f4a3a3}.m3{background:#ffd08a}.m0{background:#f1f3f5}.m4{background:#dde3ea}
.s3{background:#8fd19e}.s2{background:#ffe08a}.s1{background:#e9ecef}.s0{background:#fff}.s5{background:#dde3ea}
blockquote{margin:4px 0;padding:4px 8px;border-left:3px solid #d0d7de;background:#f6f8fa;white-space:pre-wrap}
.url{word-break:break-all;font-size:.9em}.small{font-size:.85em;color:#57606a}
.cite.unc{background:#efe6fd;outline:1px dotted #803df5;outline-offset:1px}.unc-mark{font-weight:700;color:#6d28d9;
margin-left:1px}.s4{background:#d0bfff}.uncertain{color:#6d28d9}.uncertain b{color:#6d28d9}
.metrics td:nth-child(2),.metrics td:nth-child(3),.metrics td:nth-child(4){white-space:nowrap}
.scroll{max-width:100%;overflow-x:auto}
@media (max-width:640px){body{margin:12px auto;padding:0 10px}
table:not(.matrix),table:not(.matrix) tbody{display:block;width:100%}table:not(.matrix) thead{display:none}
table:not(.matrix) tr{display:flex;flex-wrap:wrap;column-gap:.7em;padding:.4em 0;border-bottom:1px solid #d0d7de}
table:not(.matrix) td{display:block;border:none;padding:0;min-width:0;overflow-wrap:anywhere}
table:not(.matrix) td:first-child{font-weight:600}table:not(.matrix) td:last-child{flex-basis:100%}
.metrics td:nth-child(5)::before{content:"n = "}.matrix th.row{max-width:150px}}
"""


def _e(value: object) -> str:
    """Escaped text ("" for None)."""
    return html.escape("" if value is None else str(value), quote=True)


def _table(header: Iterable[str], rows: Iterable[Iterable[object]], cls: str = "") -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{_e(cls)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


# ---- the report -----------------------------------------------------------------------------


def _answer_html(data: Mapping[str, Any]) -> str:
    """The answer text with statements and markers, from the answer component's data."""
    symbols, statuses = data["status_symbols"], data["statements"]
    out = []
    for b in data["blocks"]:
        if b["t"] == "heading":
            out.append(f"<strong>{_e(b['s'])}</strong>\n")
            continue
        inner = []
        for p in b.get("parts", []):
            if p["t"] == "cite" and p.get("unc"):  # an uncertain support verdict: its own mark and colour
                inner.append(f'<span class="cite c-{_e(p["cls"])} unc" title="{_e(CHIP_UNCERTAIN)}">[{_e(p["src"])}]'
                             f'<span class="unc-mark">{_e(answer_model.UNCERTAIN_MARK)}</span></span>')
            elif p["t"] == "cite":
                inner.append(f'<span class="cite c-{_e(p["cls"])}">[{_e(p["src"])}]</span>')
            else:
                inner.append(_e(p["s"]))
        if b["t"] == "gap":
            out.append("".join(inner))
        else:
            info = statuses.get(str(b["i"]), {})
            status = info.get("status", "uncited")
            why = f': {info["reason"]}' if info.get("reason") else ""
            out.append(f'<span class="stmt st-{_e(status)}" title="statement {b["i"] + 1}{_e(why)}">'
                       f'<span class="sym">{_e(symbols.get(status, ""))}S{b["i"] + 1}</span> {"".join(inner)}</span>'
                       + ("\n" if b.get("own_line") else ""))
    return f'<div class="answer">{"".join(out)}</div>'


def _statements_html(annotated: AnnotatedAnswer, rep: dict, data: Mapping[str, Any]) -> str:
    pairs = answer_model.pair_verdicts(annotated, rep)
    labels = data["status_labels"]
    rows = []
    for s in rep["statements"]:
        status = data["statements"][str(s["index"])]["status"]
        verdicts = []
        for src in s["citations"]:
            v = pairs.get((s["index"], src))
            if v is None:
                verdicts.append(f"<div>[{_e(src)}] no verdict</div>")
                continue
            if v["label"] == "unknown":  # nobody judged it: the reason, never a label it does not have
                verdicts.append(f'<div class="unchecked">[{_e(src)}] <b>{_e(v["reason"])}</b></div>')
                continue
            score = f" (score {v['score']:.2f})" if isinstance(v["score"], (int, float)) else ""
            evidence = f"<blockquote>{_e(v['evidence'])}</blockquote>" if v["evidence"] else ""
            raw = (f"<details><summary>raw judge output</summary><pre>{_e(v['raw'])}</pre></details>"
                   if v["raw"] else "")
            uncertain = (f'<div class="uncertain"><span class="unc-mark">{_e(answer_model.UNCERTAIN_MARK)}</span> '
                         f"{_e(v['uncertain_note'])}</div>" if v.get("uncertain") else "")
            verdicts.append(f"<div>[{_e(src)}] <b>{_e(v['label'])}</b>{_e(score)}{uncertain}{evidence}{raw}</div>")
        for d in s["dangling"]:
            verdicts.append(f"<div>[{_e(d)}] matches no listed source</div>")
        stance = s["stance"] or ""
        shown = s.get("status_reason") or labels.get(status, status)
        rows.append(f"<tr><td>S{s['index'] + 1}</td><td>{_e(s['text'])}</td><td>{_e(shown)}"
                    f"{'<br><span class=small>stance: ' + _e(stance) + '</span>' if stance else ''}</td>"
                    f"<td>{''.join(verdicts) or 'no citation'}</td></tr>")
    return ("<table><thead><tr><th>#</th><th>statement</th><th>status</th><th>cited sources: judge's verdict</th>"
            f"</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _matrices_html(rep: dict) -> str:
    rows, cols = rep["citation_matrix"]["rows"], rep["citation_matrix"]["columns"]
    if not rows or not cols:
        return "<p>No relevant statement or no usable source: the matrices are empty.</p>"
    texts = {s["index"]: s["text"] for s in rep["statements"]}
    cit, sup = matrix_cells(rep)
    # as in the inspector: an uncertain support verdict keeps its label's symbol, followed by ≈, on violet
    sup_codes, sup_texts = support_cell_texts(rep, sup)
    cit_texts = [[CELL_CITATION[code][0] for code in row] for row in cit]
    reasons = rep["support_matrix"].get("reasons") or [[""] * len(cols) for _ in rows]
    out = []
    for title, codes, symbols, names, table, prefix in (
            ("Citations: what the answer cites", cit, cit_texts, cit, CELL_CITATION, "m"),
            ("Support: what the judge found", sup_codes, sup_texts, sup, CELL_SUPPORT, "s")):
        head = "<th>statement</th>" + "".join(f"<th>[{_e(c)}]</th>" for c in cols)
        body = []
        for i, r in enumerate(rows):
            cells = "".join(
                f'<td class="{prefix}{code}" title="{_e(_cell_title(table, names[i][j], code, reasons[i][j]))}">'
                f"{_e(symbols[i][j])}</td>" for j, code in enumerate(codes[i]))
            body.append(f'<tr><th class="row">S{r + 1} {_e(texts.get(r, ""))}</th>{cells}</tr>')
        out.append(f"<h3>{_e(title)}</h3><div class=\"scroll\"><table class=\"matrix\"><thead><tr>{head}</tr></thead>"
                   f"<tbody>{''.join(body)}</tbody></table></div>")  # a wide matrix scrolls in its own box
    nec = ", ".join(f"[{c}]" for c in rep["necessary_sources"]) or "none"
    out.append(f"<p class=small>{_e(matrix_key())}</p>")
    out.append(f"<p>Minimum set of sources that together support every supported statement "
               f"({_e(rep['necessity'])} method): {_e(nec)}.</p>")
    return "".join(out)


def _cell_title(table: Mapping[int, tuple[str, str, str]], label_code: int, shown_code: int, reason: str = "") -> str:
    """A matrix cell's tooltip: what its label means, that it is uncertain when it is, and why it
    was not checked when it was not ("not checked: no text")."""
    name = table[label_code][1]
    if table is CELL_SUPPORT and shown_code == UNCERTAIN_CODE:
        name = f"{name}; {CELL_SUPPORT[UNCERTAIN_CODE][1]}"
    return f"{reason}. {name}" if reason else name


def _uncertain_html(rep: dict) -> str:
    """The uncertain support labels, counted apart from the flags (a limit of the judge, not a
    problem of the answer), with the pairs they are on; "" when there is none."""
    headline, pairs = answer_model.uncertain_summary(rep)
    if not headline:
        return ""
    return (f'<p class="uncertain"><b>{_e(headline)}</b> (the judge\'s score is close to its cut point, where its '
            f"labels are least reliable; read the source before relying on them): {_e(pairs)}</p>")


def _sources_html(annotated: AnnotatedAnswer, data: Mapping[str, Any]) -> str:
    rows = []
    for src in annotated.answer.sources:
        info = data["sources"].get(str(src.index), {})
        url = src.url or ""
        link = (f'<a href="{_e(url)}" rel="noopener noreferrer nofollow" referrerpolicy="no-referrer">{_e(url)}</a>'
                if url and answer_model.is_http_url(url) else _e(url or "(no URL)"))
        if src.fetch_ok is False:
            fetched = "dead: could not be fetched"
        elif not src.text.strip() and src.text_origin in ("unreachable", "unfetched"):
            fetched = unchecked_text(src.text_origin)  # the fetch failed through no fault of the source
        else:
            fetched = "text available" if src.text.strip() else "no text in the data: no judge could check it"
        flags = "".join(f"<div>{_e(f)}</div>" for f in info.get("flags", []))
        excerpt = f"<blockquote>{_e(info.get('excerpt', ''))}</blockquote>" if info.get("excerpt") else ""
        rows.append(f"<tr><td>[{_e(src.index)}]</td><td><b>{_e(answer_model.source_title(src.title, src.url))}</b>"
                    f"<div class=url>{link}</div>{excerpt}</td><td>{_e(info.get('type', ''))}<br>"
                    f"<span class=small>{_e(fetched)}</span>{flags}</td></tr>")
    return ("<table><thead><tr><th>#</th><th>source</th><th>type and flags</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _short(text: str, limit: int = 140) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _not_backed_html(annotated: AnnotatedAnswer, rep: dict) -> str:
    """What a reader needs first: which statements are not backed by the sources they cite, and by
    what (the verdict on each cited source), which could not be checked and why (grouped by the
    reason, said once), which cite nothing; then dangling citations and dead sources. The rest of
    the report says how each was decided."""
    pairs = answer_model.pair_verdicts(annotated, rep)
    claims = [s for s in rep["statements"] if s["status"] != "filler"]
    count = {k: sum(1 for s in claims if s["status"] == k) for k in ("supported", "unsupported", "unchecked", "uncited")}

    def where(s: dict) -> str:
        return f"S{s['index'] + 1} “{_short(s['text'])}”"

    out = []
    if not claims:
        return "<p>The answer makes no claim (every statement is filler).</p>"
    out.append(f"<p>Of <b>{len(claims)} statements</b> that make a claim: <b>{count['supported']}</b> backed by a source "
               f"they cite, <b>{count['unsupported']}</b> not backed by the sources they cite, <b>{count['unchecked']}</b> "
               f"not checked, <b>{count['uncited']}</b> citing no source.</p>")
    unsupported = [f"<li>{_e(where(s))}: the judge's verdicts: " + _e("; ".join(
        f"[{c}] {pairs.get((s['index'], c), {}).get('label', 'no verdict')}" for c in s["citations"])) + "</li>"
        for s in claims if s["status"] == "unsupported"]
    if unsupported:
        out.append(f"<p>✗ <b>Not backed</b> by the sources they cite:</p><ul>{''.join(unsupported)}</ul>")
    by_reason: dict[str, list[str]] = {}
    for s in claims:
        if s["status"] == "unchecked":
            cites = ", ".join(f"[{c}]" for c in s["citations"])
            by_reason.setdefault(s.get("status_reason") or "not checked", []).append(f"<li>{_e(where(s))} (cites {_e(cites)})</li>")
    for reason, items in by_reason.items():
        out.append(f"<p>◌ <b>{_e(reason[:1].upper() + reason[1:])}</b>:</p><ul>{''.join(items)}</ul>")
    uncited = [f"<li>{_e(where(s))}</li>" for s in claims if s["status"] == "uncited"]
    if uncited:
        out.append(f"<p>? <b>Cite no source</b>:</p><ul>{''.join(uncited)}</ul>")
    more = [f"<li>{_e(where(s))} cites {_e(', '.join(f'[{d}]' for d in s['dangling']))}, which the answer does not list</li>"
            for s in claims if s["dangling"]]
    dead = [src for src in annotated.answer.sources if src.fetch_ok is False]
    if dead:
        more.append(f"<li>Dead sources (the site says the page is gone): {_e(', '.join(f'[{d.index}]' for d in dead))}</li>")
    if more:
        out.append(f"<ul>{''.join(more)}</ul>")
    return "".join(out)


def _metrics_html(rep: dict) -> str:
    """The metric rows that have a value for this answer, and one line naming the ones left out and why."""
    table = answer_model.metrics_table(rep).drop(columns=["id"])
    shown = table[table["value"] != "n/a"]
    left = table[table["value"] == "n/a"]
    out = [_table(["metric", "value", "better", "rating", "n", "note"], shown.itertuples(index=False, name=None),
                  cls="metrics")]
    if len(left):
        why: dict[str, list[str]] = {}
        for label, note in zip(left["metric"], left["note"]):
            why.setdefault(str(note) or "not scorable for this answer", []).append(str(label))
        items = "".join(f"<li>{_e(reason)}: {_e(', '.join(labels))}</li>" for reason, labels in why.items())
        out.append(f"<p class=small>Left out: {len(left)} metric{'s' if len(left) != 1 else ''} with no value for this "
                   f"answer, by why:</p><ul class=small>{items}</ul>")
    return "".join(out)


def answer_report_html(annotated: AnnotatedAnswer, rep: dict, source_rows: list[dict], *, dataset: str,
                       reliability: list[str], illustrative: bool = False, link: str = "",
                       generated: datetime | None = None) -> str:
    """The whole report as one HTML document (a str)."""
    answer = annotated.answer
    data = answer_model.component_data(annotated, rep, source_rows)
    flags = answer_model.answer_flags(annotated, rep, source_rows)
    when = (generated or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M UTC")
    banner = ('<p class="banner">Illustrative data: invented engines and answers for teaching. '
              "Its numbers say nothing about any real product.</p>") if illustrative else ""
    legend = " · ".join(f"{data['status_symbols'][k]} {data['status_labels'][k]}" for k in data["status_labels"])
    uncertain_key = (f' <span class="cite unc"><span class="unc-mark">{_e(answer_model.UNCERTAIN_MARK)}</span></span> '
                     f'<span class="uncertain">{_e(answer_model.UNCERTAIN_LABEL)}.</span>' if data["uncertain_count"] else "")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>Answer report: {_e(answer.engine)} - {_e(answer.query[:120])}</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Answer report</h1>",
        banner,
        f"<p><b>Query</b> ({_e(answer.query_type)}): {_e(answer.query)}</p>",
        f'<p class="meta">Engine: {_e(answer.engine)} · answer id: {_e(answer.answer_id)} · dataset: {_e(dataset)}'
        f"{' (illustrative)' if illustrative else ''} · judge: {_e(rep['judge'])} · rules: {_e(MODE_LABELS.get(rep['mode'], rep['mode']).lower())}, "
        f"necessity by the {_e(rep['necessity'])} method · generated {_e(when)} by answer-engine-audit {_e(__version__)}</p>",
        f'<p class="meta">Open in the dashboard: {_e(link)}</p>' if link else "",
        "<h2>What is not backed</h2>",
        _not_backed_html(annotated, rep),
        "<h2>Answer</h2>",
        f'<p class="unchecked"><b>{_e(unchecked_headline(rep))}</b></p>' if unchecked_headline(rep) else "",
        f"<p class=small>{_e(legend)}. Markers: solid border = the source supports the statement, dashed = partly, "
        f"struck through = does not, grey dotted = not checked (no text, for instance), red dotted = no such "
        f"source.{uncertain_key}</p>",
        f"<p class=small>{_e(scope_note(answer.meta, answer.engine))}</p>" if scope_note(answer.meta, answer.engine) else "",
        _answer_html(data),
        "<h2>Statements and verdicts</h2>",
        _statements_html(annotated, rep, data),
        "<h2>Flags</h2>",
        _table(["kind", "where", "message"], [(f["kind"], f["where"], f["message"]) for f in flags])
        if flags else "<p>No dangling citations, dead, duplicate or injection-flagged sources.</p>",
        _uncertain_html(rep),
        "<h2>Metrics for this answer</h2>",
        "<p class=small>Ratings use the published thresholds: ▲ acceptable, ● borderline, ▼ problematic.</p>",
        _metrics_html(rep),
        "<h2>How far to trust the judge</h2>",
        "<ul>" + "".join(f"<li>{_e(line)}</li>" for line in reliability) + "</ul>",
        "<h2>Citation and support matrices</h2>",
        _matrices_html(rep),
        "<h2>Sources</h2>",
        _sources_html(annotated, data),
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p)


def report_filename(answer_id: str) -> str:
    """A safe file name for the download ("answer-report-rand_val_8_gpt4.html")."""
    import re

    return "answer-report-" + (re.sub(r"[^A-Za-z0-9_-]+", "_", answer_id).strip("_")[:80] or "answer") + ".html"
