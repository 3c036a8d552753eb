"""Re-score: paste an answer with its sources (or anything copied from an engine's page, or a saved
response), let a judge label it, see the same views as the inspector. Nothing pasted is written
anywhere unless "Save into a dataset" is pressed."""

from __future__ import annotations

import hashlib
import json
from functools import partial
from pathlib import Path

import streamlit as st

from dashboard import answer_html, answer_model, data, reliability_text, room_gate, second_opinion_view
from dashboard.answer_view import reliability_header, report_download, scoring_controls, show_report_views
from dashboard.render import ensure_router
from pipeline.annotate import annotate_answer
from pipeline.errors import InputError
from pipeline.fetching.fetch import fetch_source
from pipeline.fetching.fill_sources import fetch_by_default, fill_missing_texts
from pipeline.importers.canonical import load_canonical, parse_answer, to_canonical
from pipeline.importers.paste import Pasted, parse_paste, parse_upload
from pipeline.judges import JudgeError, get_judge
from pipeline.metrics import ScoreConfig, effective_necessity
from pipeline.records import AnnotatedAnswer
from pipeline.report.scoring import answer_report
from pipeline.storage import paths
from pipeline.text.citation_scope import PARAGRAPH, SCOPES, SENTENCE, known_scope, scope_from_text
from pipeline.text.text import split_statements

MAX_SOURCES = 20
OFFLINE, LLM = "Offline judge (no network, a few seconds)", "LLM judge (OpenAI-compatible endpoint)"
LEXICAL = "Offline judge, lexical-only support (offline:lexical)"
JUDGE_NAMES = {OFFLINE: "offline", LLM: "openai", LEXICAL: "offline:lexical"}  # radio choice -> registry name
FIELD_NAMES = {"answer": "Answer", "query": "Query", "engine": "Engine", "query_type": "Query type",
               "sources": "Sources", "answer_id": "Answer"}
INPUT_KEYS = ("rs_engine", "rs_query", "rs_qtype", "rs_answer", "rs_n", "rs_fetch", "rs_judge")
MAX_UPLOAD_BYTES = 20_000_000
# The "What was understood" table after Score fetched a source (fill_sources.source_after's states)
FETCHED_WORDS = {"page": "fetched on Score: {n:,} characters of the page",
                 "gone": "fetched on Score: the site says the page is gone (a dead source)",
                 "unreachable": "not fetched: this machine could not reach the web (not checked, not dead)",
                 "unfetched": "not fetched: the page could not be fetched (not checked, not dead)",
                 "none": "not fetched"}


def _examples_file() -> Path:
    demo = paths.data_dir() / "demo" / "answers.jsonl"
    return demo if demo.is_file() else paths.REPO_ROOT / "tests" / "fixtures" / "worked_example.json"


@st.cache_data(show_spinner=False)
def _examples(path: str, mtime: float) -> list[dict]:
    try:
        return [to_canonical(a) for a in load_canonical(path)]
    except InputError:
        return []


@st.cache_resource(show_spinner=False)
def _offline_judge(name: str = "offline"):
    """A judge that needs nothing (`offline`, `offline:lexical`), built once per session server."""
    return get_judge(name)


def _keep_inputs() -> None:
    """Widget values survive page switches: copy them to a plain session key and back."""
    kept = st.session_state.setdefault("rs_kept", {})
    for key in [*INPUT_KEYS, *(f"rs_src_{f}_{k}" for k in range(MAX_SOURCES) for f in ("title", "url", "text"))]:
        if key in st.session_state:
            kept[key] = st.session_state[key]


def _restore_inputs() -> None:
    for key, value in st.session_state.get("rs_kept", {}).items():
        if key not in st.session_state:
            st.session_state[key] = value


def _load_example() -> None:
    path = _examples_file()
    examples = _examples(str(path), path.stat().st_mtime if path.exists() else 0.0)
    chosen = st.session_state.get("rs_example")
    obj = next((e for e in examples if e["answer_id"] == chosen), examples[0] if examples else None)
    if obj is None:
        st.session_state["rs_message"] = "No teaching example could be read."
        return
    st.session_state.update({"rs_engine": obj["engine"], "rs_query": obj["query"], "rs_qtype": obj["query_type"],
                             "rs_answer": obj["answer"], "rs_n": min(len(obj["sources"]), MAX_SOURCES)})
    for k in range(MAX_SOURCES):
        src = obj["sources"][k] if k < len(obj["sources"]) else {}
        for f in ("title", "url", "text"):
            st.session_state[f"rs_src_{f}_{k}"] = src.get(f, "")
    st.session_state.pop("rs_result", None)
    st.session_state["rs_message"] = answer_model.md_text(f"Loaded the example {obj['answer_id']} ({obj['engine']}).")


def _upload_key() -> str:
    return f"rs_upload_{st.session_state.get('rs_upload_gen', 0)}"


def _fill_from_paste() -> None:
    """Parse the paste box (or the uploaded file) into the form below, for review before scoring."""
    for key in ("rs_result", "rs_error", "rs_paste_error", "rs_paste_found", "rs_understood"):
        st.session_state.pop(key, None)
    upload = st.session_state.get(_upload_key())
    try:
        if upload is not None:
            data = upload.getvalue()
            if len(data) > MAX_UPLOAD_BYTES:
                raise InputError(f"{len(data):,} bytes; the limit is {MAX_UPLOAD_BYTES:,}", record=upload.name)
            pasted = parse_upload(data, upload.name)
        else:
            text = st.session_state.get("rs_paste", "") or ""
            if not text.strip():
                raise InputError("paste an answer with its sources, or upload a file", record="paste box")
            pasted = parse_paste(text)
    except InputError as exc:
        st.session_state["rs_paste_error"] = str(exc)
        return
    _fill_form(pasted)


def _fill_form(pasted: Pasted) -> None:
    notes = list(pasted.notes)
    by_index = {s.index: s for s in pasted.sources}
    if any(i > MAX_SOURCES for i in by_index):
        notes.append(f"The form holds {MAX_SOURCES} sources; sources numbered above {MAX_SOURCES} were left out.")
    st.session_state["rs_answer"] = pasted.answer
    kept_query = str(st.session_state.get("rs_query") or "").strip()
    if not pasted.query and kept_query:
        notes = [n for n in notes if "write the query" not in n]
        notes.append("The paste does not say what was asked: the query already in the form was kept.")
    for key, value in (("rs_query", pasted.query), ("rs_engine", pasted.engine), ("rs_qtype", pasted.query_type)):
        if value:
            st.session_state[key] = value
    if pasted.query_type and not pasted.query and kept_query:  # the type follows the query actually used
        from pipeline.importers.paste import guess_query_type

        st.session_state["rs_qtype"], why = guess_query_type(kept_query)
    else:
        why = pasted.query_type_why
    st.session_state["rs_n"] = max([i for i in by_index if i <= MAX_SOURCES] or [1])
    for k in range(MAX_SOURCES):
        src = by_index.get(k + 1)
        for f in ("title", "url", "text"):
            st.session_state[f"rs_src_{f}_{k}"] = getattr(src, f) if src else ""
    st.session_state["rs_paste_found"] = [pasted.found, *notes]
    st.session_state["rs_understood"] = {
        "query_from": pasted.query_from, "query_type_why": why,
        "sources": [{"n": s.index, "title": s.title, "url": s.url, "text": s.text} for s in pasted.sources
                    if s.index <= MAX_SOURCES]}


def _show_understood() -> None:
    """What the paste was read as, before anything is scored: the question and where it came from,
    the query type and why, the engine, the answer's markers and every source with what it lacks."""
    seen = st.session_state.get("rs_understood")
    if not seen:
        return
    query = str(st.session_state.get("rs_query") or "")
    answer = str(st.session_state.get("rs_answer") or "")
    lines = [
        f"**Query:** {answer_model.md_text(query, 300)} (from {answer_model.md_text(seen['query_from'], 80)})"
        if query and seen.get("query_from") else
        ("**Query:** " + answer_model.md_text(query, 300) if query else "**Query:** none found: write it below"),
        f"**Query type:** {answer_model.md_text(seen.get('query_type_why') or st.session_state.get('rs_qtype'), 300)}",
        f"**Engine:** {answer_model.md_text(st.session_state.get('rs_engine') or 'pasted', 80)}",
        f"**Answer:** {len(answer):,} characters, starting “{answer_model.md_text(answer[:90], 100)}”",
    ]
    st.markdown("\n".join(f"- {line}" for line in lines))
    if seen["sources"]:
        rows = [{"source": f"[{s['n']}]", "title": s["title"] or f"(none; shown as {answer_model.source_title('', s['url'])})",
                 "address": s["url"] or "none: paste it, or its text",
                 "text": (f"snippet: {s['text'][:80]}…" if len(s["text"]) > 80 else f"snippet: {s['text']}") if s["text"]
                 else FETCHED_WORDS.get(s.get("fetched", ""), "").format(n=s.get("fetched_chars", 0)) if s.get("fetched")
                 else ("none yet: fetched on Score when “Fetch the page” is ticked" if s["url"] else "none")}
                for s in seen["sources"]]
        import pandas as pd

        from dashboard.render import md_escape

        table = pd.DataFrame(rows).map(md_escape)  # a static table wraps long addresses instead of cutting them
        with st.container(key="cards_understood"):  # on a phone: a card per source (layout.css)
            st.table(table, hide_index=True)


def _clear_all() -> None:
    """Empty the paste box, the upload, the form and the result."""
    st.session_state["rs_paste"] = ""
    st.session_state["rs_upload_gen"] = st.session_state.get("rs_upload_gen", 0) + 1
    st.session_state.update({"rs_engine": "pasted", "rs_query": "", "rs_answer": "", "rs_n": 3})
    for k in range(MAX_SOURCES):
        for f in ("title", "url", "text"):
            st.session_state[f"rs_src_{f}_{k}"] = ""
    for key in ("rs_result", "rs_error", "rs_paste_error", "rs_paste_found", "rs_kept", "rs_understood", "rs_query_error"):
        st.session_state.pop(key, None)


def _canonical_object() -> dict:
    """The pasted inputs as a canonical answer object (validated by the pipeline's importer)."""
    query = st.session_state.get("rs_query", "")
    if not query.strip():
        raise InputError("write the query the answer responds to", field="query")
    text = st.session_state.get("rs_answer", "")
    sources = []
    for k in range(int(st.session_state.get("rs_n", 1))):
        title, url, body = (str(st.session_state.get(f"rs_src_{f}_{k}", "") or "") for f in ("title", "url", "text"))
        if title.strip() or url.strip() or body.strip():
            sources.append({"index": k + 1, "title": title.strip(), "url": url.strip(), "text": body})
    digest = hashlib.sha1(json.dumps([query, text, sources], sort_keys=True).encode("utf-8")).hexdigest()[:12]
    engine = st.session_state.get("rs_engine", "").strip() or "pasted"
    reading = _scope_reading(engine, text, sources)
    st.session_state["rs_scope_reading"] = reading
    return {"answer_id": f"pasted-{digest}", "engine": engine,
            "query": query.strip(), "query_type": st.session_state.get("rs_qtype", "expertise"), "answer": text,
            "sources": sources, "citation_scope": reading["scope"]}


def _scope_reading(engine: str, text: str, sources: list[dict]) -> dict[str, str]:
    """How the answer's markers are read, and on what ground: the person's own choice (the switch under
    the result), the engine's known habit, or, for an engine this toolkit does not know (the default
    "pasted"), the text itself: a paragraph whose only markers close it is read as cited as a whole."""
    chosen = st.session_state.get("rs_scope_choice")
    if chosen in (SENTENCE, PARAGRAPH):
        return {"scope": chosen, "from": "your choice"}
    known = known_scope(engine)
    if known:
        return {"scope": known, "from": f"how {engine} cites"}
    listed = {int(s["index"]) for s in sources}
    urls = {s["url"]: int(s["index"]) for s in sources if s.get("url")}
    scope, why = scope_from_text(text, split_statements("scope", text, listed, urls))
    return {"scope": scope, "from": f"read from the text: {why}"}


def _switch_scope(to: str) -> None:
    st.session_state["rs_scope_choice"] = to
    st.session_state["rs_rescore"] = True  # scored again below, with the same inputs


def _show_scope_reading() -> None:
    """Which reading of the markers the result uses, why, and the one-click switch to the other."""
    reading = st.session_state.get("rs_scope_reading")
    if not reading:
        return
    scope = reading["scope"]
    words = {SENTENCE: "each marker backs only the sentence it closes",
             PARAGRAPH: "a marker closing a paragraph backs the whole paragraph"}
    other = PARAGRAPH if scope != PARAGRAPH else SENTENCE
    r1, r2 = st.columns([3, 1.3], vertical_alignment="center")
    r1.markdown(f"**Citations read as:** {words.get(scope, SCOPES.get(scope, scope))} "
                f"({answer_model.md_text(reading['from'], 200)}).")
    r2.button("Read as " + ("whole paragraphs" if other == PARAGRAPH else "single sentences"), key="rs_scope_switch",
              on_click=_switch_scope, args=(other,), icon=":material/swap_horiz:", width="stretch",
              help="Score again with the other reading; what counts as uncited changes with it.")


def _field_name(exc: InputError) -> str:
    field = exc.field or ""
    if field.startswith("sources["):
        number = field[len("sources["):].split("]", 1)[0]
        rest = field.split("]", 1)[1].lstrip(".")
        return f"Source {int(number) + 1}" + (f" ({rest})" if rest else "") if number.isdigit() else "Sources"
    return FIELD_NAMES.get(field.split(".")[0], field or "input")


def _fetch_missing(annotated: AnnotatedAnswer, status) -> tuple[AnnotatedAnswer, list[str]]:
    """Fetch text for sources with a web address and no text, through the safe fetcher (nothing
    written to disk: pasted URLs leave no trace); a source this machine could not reach stays not
    checked, never dead (pipeline.fetching.fetch_outcome). Returns the answer and one note per source."""
    notes: list[str] = []
    wanted = {s.url: s.index for s in annotated.answer.sources}

    def fetch(url: str):
        status.update(label=f"Fetching source {wanted.get(url, '?')}…")
        return fetch_source(url, timeout=10, cache=False)

    filled = fill_missing_texts(annotated, fetch=fetch, notes=notes)
    for s in annotated.answer.sources:
        if s.url and not s.text.strip() and not answer_model.is_http_url(s.url):
            notes.append(f"Source {s.index}: only http(s) addresses can be fetched.")
    return filled, notes


def _after_fetch(annotated: AnnotatedAnswer) -> None:
    """The "What was understood" table shows what the fetch brought, so it never contradicts the result."""
    seen = st.session_state.get("rs_understood")
    if not seen:
        return
    by_index = {s.index: s for s in annotated.answer.sources}
    for row in seen["sources"]:
        src = by_index.get(row["n"])
        if src is not None and not row["text"] and src.url:
            row["fetched"] = ("page" if src.fetch_ok else "gone" if src.fetch_ok is False
                              else src.text_origin or "none")
            row["fetched_chars"] = len(src.text)


def _unchecked_hint(annotated: AnnotatedAnswer) -> str:
    """How to get the unchecked pairs checked, for the reason they were not."""
    if any(s.text_origin == "unreachable" and not s.text.strip() for s in annotated.answer.sources):
        return ("This machine could not reach the web, so the pages were not fetched: paste each source's text "
                "into the form above, or score again once this machine has a network.")
    return "To judge them, paste each source's text into the form above (or tick \"Fetch the page\"), then score again."


def _score() -> None:
    st.session_state.pop("rs_error", None)
    st.session_state.pop("rs_query_error", None)
    st.session_state.pop("rs_result", None)  # an error must not leave the previous answer's result on screen
    try:
        obj = _canonical_object()
        parse_answer(obj, "pasted answer")  # validate before any slow step
    except InputError as exc:
        st.session_state["rs_error"] = f"{_field_name(exc)}: {str(exc).split(': ', 1)[-1]}"
        if exc.field == "query":  # also shown under the Query field itself
            st.session_state["rs_query_error"] = str(exc).split(": ", 1)[-1]
        return
    use_llm = st.session_state.get("rs_judge") == LLM
    judge_name = JUDGE_NAMES.get(st.session_state.get("rs_judge") or OFFLINE, "offline")
    with st.status("Scoring the answer…", expanded=True) as status:
        try:
            annotated = parse_answer(obj, "pasted answer", dataset="pasted")
        except InputError as exc:
            st.session_state["rs_error"] = f"{_field_name(exc)}: {str(exc).split(': ', 1)[-1]}"
            status.update(label="Scoring failed", state="error")
            return
        notes: list[str] = []
        if st.session_state.get("rs_fetch"):
            annotated, notes = _fetch_missing(annotated, status)
            _after_fetch(annotated)
        for note in notes:
            st.write(note)
        status.update(label="Loading the judge…")
        try:
            judge = get_judge("openai") if use_llm else _offline_judge(judge_name)
        except JudgeError as exc:
            st.session_state["rs_error"] = f"Judge: {exc}"
            status.update(label="No judge available", state="error")
            return
        steps = 2 + (annotated.answer.query_type == "debate") + sum(1 for s in annotated.answer.sources if s.text.strip())
        bar = st.progress(0.0, text="Relevance of each statement")
        done = [0]

        def tick(what: str) -> None:
            done[0] += 1
            bar.progress(min(done[0] / steps, 1.0), text=f"Judging {what}")

        try:
            labelled = annotate_answer(annotated, judge, progress=tick)
        except JudgeError as exc:
            st.session_state["rs_error"] = f"Judge: {exc}"
            status.update(label="The judge failed", state="error")
            return
        except Exception as exc:  # a network error from an LLM endpoint, for instance
            st.session_state["rs_error"] = f"Judge: {type(exc).__name__}: {exc}"
            status.update(label="The judge failed", state="error")
            return
        bar.progress(1.0, text="Done")
        status.update(label=f"Scored with the {judge.name} judge", state="complete", expanded=False)
    st.session_state["rs_result"] = {"annotated": labelled, "parsed": annotated, "judge": judge.name, "notes": notes}


_restore_inputs()
for _key, _default in (("rs_engine", "pasted"), ("rs_n", 3), ("rs_qtype", "expertise"), ("rs_fetch", fetch_by_default() and room_gate.can_write())):
    st.session_state.setdefault(_key, _default)
ensure_router()
st.title("Re-score an answer")
st.caption("Paste an answer with its citation markers and the sources it lists; a judge labels it and "
           "the inspector's views show the result. Nothing you paste is stored unless you save it, and it stays in "
           "this browser session: a link to this page opens an empty form (to share a scored answer, download its "
           "HTML report below the result).")

examples_path = _examples_file()
examples = _examples(str(examples_path), examples_path.stat().st_mtime if examples_path.exists() else 0.0)
with st.container(border=True):
    e1, e2 = st.columns([3, 1], vertical_alignment="bottom")
    e1.selectbox("Teaching example", [e["answer_id"] for e in examples], key="rs_example",
                 format_func=lambda aid: next((f"{e['engine']}: {e['query'][:80]}" for e in examples if e["answer_id"] == aid), aid))
    e2.button("Load example", key="rs_load", on_click=_load_example, width="stretch")
if st.session_state.get("rs_message"):
    st.caption(st.session_state.pop("rs_message"))

with st.container(border=True):
    st.text_area("Paste anything", key="rs_paste", height=150,
                 placeholder="An answer copied from an engine's page with its markers and its source list "
                             "([1] Title - https://..., 1. https://..., links, footnotes, a Sources: block), "
                             "or a saved API response / capture as JSON",
                 help="It is read into the form below for you to check before scoring; nothing is scored yet.")
    u1, u2, u3 = st.columns([3, 1, 1], vertical_alignment="bottom")
    u1.file_uploader("…or a file: a capture envelope, an engine's JSON response, canonical JSON(L) or text",
                     type=["json", "jsonl", "txt", "md"], key=_upload_key())
    u2.button("Fill the form", key="rs_parse", on_click=_fill_from_paste, width="stretch")
    u3.button("Clear", key="rs_clear", on_click=_clear_all, width="stretch")
    if st.session_state.get("rs_paste_error"):
        st.error(answer_model.md_text(f"Paste: {st.session_state['rs_paste_error']}", limit=600))
    if st.session_state.get("rs_paste_found"):
        with st.container(border=True, key="rs_understood_box"):
            st.markdown("**What was understood** (check it, correct the form below, then press Score)")
            query_written = bool(str(st.session_state.get("rs_query") or "").strip())
            for line in st.session_state.get("rs_paste_found") or []:
                if query_written and "write the query" in line:
                    continue  # asked for a query that has been written since
                st.caption(answer_model.md_text(line, limit=600))
            _show_understood()

c1, c2, c3 = st.columns([1, 2, 1])
c1.text_input("Engine", key="rs_engine")
c2.text_input("Query", key="rs_query")
if st.session_state.get("rs_query_error"):
    c2.error(answer_model.md_text(f"Query: {st.session_state['rs_query_error']}", limit=300))
c3.radio("Query type", ["debate", "expertise"], key="rs_qtype", horizontal=True,
         help="debate: the question asks to take a side (should, better than, good or bad); the stance metrics apply. "
              "expertise: a question of fact.")
st.text_area("Answer (markdown with markers such as [1] or [2, 3])", key="rs_answer", height=200)

st.markdown("##### Sources")
st.number_input("Number of sources", min_value=1, max_value=MAX_SOURCES, step=1, key="rs_n")
for k in range(int(st.session_state.get("rs_n") or 1)):
    with st.container(border=True):
        s1, s2 = st.columns(2)
        s1.text_input(f"[{k + 1}] Title", key=f"rs_src_title_{k}")
        s2.text_input(f"[{k + 1}] URL", key=f"rs_src_url_{k}")
        st.text_area(f"[{k + 1}] Text of the source (leave empty to fetch it from the URL)", key=f"rs_src_text_{k}", height=90)
st.checkbox("Fetch the page for sources that have a URL but no text", key="rs_fetch",
            help="Uses the project's safe fetcher (public http(s) pages only, bounded in time and size, nothing "
                 "saved). A page the site says is gone counts as a dead source; when this machine cannot reach "
                 "the web, such sources stay \"not checked\" and never count against the engine.")
st.radio("Judge", [OFFLINE, LLM, LEXICAL], key="rs_judge", horizontal=True,
         help="The LLM judge reads its endpoint, model and key from the environment or .streamlit/secrets.toml. "
              "offline:lexical is the offline judge with its lexical-only support model (no embedding model); "
              "its relevance, stance and confidence rules are the offline judge's.")
_keep_inputs()
# On a server others can reach, fetching pages (outbound requests from this machine) and the LLM judge
# (the owner's API key and money) are the room's, like writing labels: both need its join code.
_outbound = bool(st.session_state.get("rs_fetch")) or st.session_state.get("rs_judge") == LLM
if _outbound and not room_gate.can_write():
    st.caption("On this shared server, fetching pages and the LLM judge need the room's join code; "
               "untick “Fetch the page” and use an offline judge to score without it.")
    room_gate.join_form("fetch pages or use the LLM judge", "rescore_outbound")
_score_now = st.button("Score", type="primary", key="rs_score", disabled=_outbound and not room_gate.can_write())
if _score_now:
    st.session_state.pop("rs_scope_choice", None)  # a new Score reads the markers afresh
if _score_now or st.session_state.pop("rs_rescore", False):
    _shown_query_error = st.session_state.get("rs_query_error")
    _score()
    if _shown_query_error or st.session_state.get("rs_query_error") or (st.session_state.get("rs_result") or {}).get("notes"):
        st.rerun()  # the Query field's error and the "What was understood" table sit above this button
if st.session_state.get("rs_error"):
    st.error(answer_model.md_text(st.session_state["rs_error"], limit=1000))

result = st.session_state.get("rs_result")
if result:
    annotated = result["annotated"]
    st.divider()
    st.subheader("Result")
    for note in result.get("notes", []):
        st.caption(answer_model.md_text(note))
    _show_scope_reading()
    o1, o2, o3 = st.columns([1.2, 1.2, 1], vertical_alignment="bottom")
    mode, necessity = scoring_controls("rs", (o1, o2))
    rep = answer_report(annotated, ScoreConfig(mode, effective_necessity(mode, necessity)), result["judge"])
    source_view = answer_model.computed_source_rows(annotated)
    reliability = reliability_text.reliability_lines(result["judge"], data.agreement(), data.judge_checks(result["judge"]))
    report_download(o3, partial(answer_html.answer_report_html,  # built only when someone downloads it
                                annotated, rep, source_view, dataset="pasted (not saved)", reliability=reliability),
                    answer_html.report_filename(annotated.answer.answer_id), key="rs_report")
    summary = data.judge_reliability_summary(result["judge"])
    reliability_header(summary)
    show_report_views(annotated, rep, source_view, key="rs_view", reliability=summary,
                      unchecked_hint=_unchecked_hint(annotated),
                      no_text=answer_model.NO_TEXT_RESCORE)

    st.markdown("#### Second opinion")
    st.caption("Label the same answer with another judge and see both side by side: every metric with the "
               "difference, and the labels on which the two judges disagree.")
    choices = second_opinion_view.judge_choices(result["judge"])
    usable = [name for name, why in choices if not why]
    for name, why in choices:
        if why:
            st.caption(answer_model.md_text(f"{name}: not available here: {why}", limit=400))
    if usable and result.get("parsed") is not None:
        j1, j2 = st.columns([2, 1], vertical_alignment="bottom")
        other = j1.selectbox("Second judge", usable, key="rs_second_judge")
        st.caption(answer_model.md_text(f"{other}: {second_opinion_view.description(other)}", limit=500))
        if j2.button("Get a second opinion", key="rs_second_go", width="stretch"):
            second_opinion_view.run_second_opinion(result["parsed"], other)
        second_opinion_view.show_second_opinion(annotated, result["judge"],
                                                ScoreConfig(mode, effective_necessity(mode, necessity)), key="rs_second")
    elif not usable:
        st.caption("No other judge is usable here.")

    st.markdown("#### Keep this answer")
    k1, k2 = st.columns([2, 1], vertical_alignment="bottom")
    name = k1.text_input("Dataset name (saved as data/user/<name>.jsonl)", key="rs_save_name", max_chars=64)
    writable = room_gate.can_write()  # a served room: saving writes on the server, members only
    if k2.button("Save into a dataset", key="rs_save", width="stretch", disabled=not writable,
                 help=None if writable else "Saving writes on the server: join the room on the Audit page first."):
        try:
            target = answer_model.user_dataset_path(name.strip())
        except ValueError as exc:
            st.error(f"Dataset name: {exc}")
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(to_canonical(annotated), ensure_ascii=False) + "\n")
            st.success(f"Appended to data/user/{name.strip()}.jsonl; run `aee run --dataset "
                       f"{name.strip()} --path data/user/{name.strip()}.jsonl` to score it with the pipeline.")
