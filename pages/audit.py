"""Audit the judge: label a random sample of the judge's decisions yourself (or with a class), so the
scorecard can say how far off the judge is and correct for it (docs/audit.md)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import audit_data, audit_draw, audit_fit, audit_publish, data, room_gate
from dashboard.audit_view import label_panel, who_table
from dashboard.render import ensure_router, link_to_page, md_escape, pick_dataset
from dashboard.url_state import full_url
from pipeline.audit import SCOPES
from pipeline.audit.agreement import FIELD_CLASSES, krippendorff_alpha, majority_labels
from pipeline.audit.files import FORMATS as IMPORT_FORMATS
from pipeline.audit.files import import_upload
from pipeline.audit.labels import seat_coverage, student_name
from pipeline.audit.ppi_cells import short_cells
from pipeline.audit.sample import annotation_text, asks_relevance, design_text, draw_sample, register
from pipeline.errors import InputError
from pipeline.judges.carried import AUDIT_JUDGE

MAX_ERRORS_SHOWN = 200  # error lines listed on the page; the download holds every one

ensure_router()
st.title("Audit the judge")
labelling = bool(st.session_state.get("audit_who")) and st.session_state.get("audit_mode", "Label") == "Label"
if not labelling:  # while someone labels, every line of height goes to the item
    st.caption("Every number on the scorecard rests on a judge's labels. Check the judge against your own eyes: "
               "label a random sample of its decisions (the judge's own label stays hidden until you answer). "
               "The Judges page then shows how often you agree, and the Scorecard corrects its numbers with your labels.")

top = st.columns([1, 1.4])
dataset = pick_dataset("audit_dataset", where=top[0])
if dataset is None:
    st.warning("No results yet: build some first (`make run`, or `aee run --dataset demo --judge offline`).")
    st.stop()
samples = audit_data.samples(dataset)
# The mode lives in the address (?view=draw): a link reopens it. With no sample yet the page opens where
# there is something to do (drawing one), not on an empty Label tab.
MODES = {"label": "Label", "draw": "Draw a sample", "import": "Import a file", "classroom": "Classroom",
         "fit": "Fit a judge"}
asked = MODES.get(str(st.query_params.get("view", "")))
if asked and asked != st.session_state.get("_audit_view_written"):
    st.session_state["audit_mode"] = asked
elif st.session_state.get("audit_mode") not in MODES.values():
    st.session_state["audit_mode"] = "Label" if samples else "Draw a sample"
mode = top[1].radio("What do you want to do?", list(MODES.values()), horizontal=True,
                    key="audit_mode") or "Label"  # radio buttons wrap on a narrow screen
st.session_state["_audit_view_written"] = mode
st.query_params["view"] = next(k for k, v in MODES.items() if v == mode)
illustrative = data.is_illustrative(dataset)
if illustrative and not labelling:
    st.info("Illustrative teaching data: the engines and answers are invented.", icon=":material/school:")
if not labelling and (records_note := data.records_note(dataset, data.default_judge(dataset))):
    st.caption(records_note)
labels = {str(m["sample_id"]): audit_data.sample_label(m) for m in samples}


def _default_scope() -> int:
    """Every listed source (index 1) where the judges label uncited pairs too, as on the teaching corpus: the
    unsupported-statements correction needs them; the cited ones (0) where labels cover cited pairs only (ExpertQA)."""
    judge = data.default_judge(dataset)
    cited_only = audit_data.cited_only(dataset, judge) if judge else None
    return 0 if cited_only is None or cited_only else 1


DRAW_JUDGE = "offline"  # the toolkit's default judge (`aee run`, `aee audit sample`)
CARRIED = ("recorded", "human")  # labels that came with the data: people's, not a judge's to check


def _draw_default(judges: list[str]) -> str | None:
    """The judge a sample audits by default: the toolkit's default judge when it has results here, else
    the first computed judge; labels carried by the data (the teaching corpus's hand labels, ExpertQA's
    experts) only when there is nothing else (auditing them audits people)."""
    if DRAW_JUDGE in judges:
        return DRAW_JUDGE
    return next((j for j in judges if j not in CARRIED), judges[0] if judges else None)


@st.cache_data(show_spinner=False, max_entries=32)
def _suggested_items(root: str, dataset: str, judge: str, unit: str, scope: str, relevance: bool, stamp: tuple) -> int | None:
    from pipeline.audit.ppi_cells import items_for_corrected_values

    frame = audit_data.population(dataset, judge, unit, scope, relevance)
    return items_for_corrected_values(frame, dataset=dataset, judge=judge)


def _draft_items(judge: str | None, unit: str, scope: str, relevance: bool) -> int:
    """What the Items field offers: the fewest items that give every engine a corrected value once
    labelled (at least the field's minimum), 100 when that cannot be worked out."""
    if not judge:
        return 100
    try:
        got = _suggested_items(str(data.results_root()), dataset, judge, unit, scope, relevance,
                               data._stamp(dataset, judge))
    except InputError:
        got = None
    return max(10, min(5000, got)) if got else 100


def _draw_form() -> None:
    judges = [j for j in data.judges(dataset) if j != AUDIT_JUDGE]  # the people's own labels are not audited
    if not judges:
        st.warning("This dataset has no judged results to audit.")
        return
    # what people label, and the relevance box, sit outside the form: the box follows the choice at once
    # (it only applies to support samples) and its help can state the cost on this dataset
    cols = st.columns([1, 1.4])
    unit = cols[0].radio("What people label", ["pair", "statement"], horizontal=True, key="audit_draw_unit",
                         format_func={"pair": "support (statement + source)", "statement": "relevance and stance"}.get)
    if unit == "statement":
        st.session_state["audit_draw_relevance"] = False  # a statement sample asks relevance already
    default = _draw_default(judges)
    scope_default = _default_scope()
    relevance = cols[1].checkbox(
        "Support samples: ask which statements count too (relevance)", key="audit_draw_relevance",
        disabled=unit == "statement",
        help=("Not for a relevance-and-stance sample: it asks every statement's relevance already. "
              if unit == "statement" else "") + audit_draw.relevance_help(dataset, default, SCOPES[scope_default]))
    if relevance:
        st.caption(f"Whole answers: {audit_draw.cost_words(dataset, default, SCOPES[scope_default])}, every statement "
                   "asked, filler too; a corrected value per engine needs 20 answers of it labelled completely (or all "
                   "of them).")
    drafted = _draft_items(default, unit, SCOPES[scope_default], bool(relevance))
    if st.session_state.get("audit_draw_n") in (None, st.session_state.get("_audit_draw_drafted")):
        st.session_state["audit_draw_n"] = drafted  # follows the draft until the person types a number
    st.session_state["_audit_draw_drafted"] = drafted
    with st.form("audit_draw"):
        judge = st.selectbox("Judge to audit", judges, index=judges.index(default) if default in judges else 0)
        cols = st.columns(3)
        n = cols[0].number_input(audit_draw.ITEMS_FIELD, min_value=10, max_value=5000, step=10, key="audit_draw_n",
                                 help=f"{drafted} is the fewest that give every engine a corrected value once all "
                                      f"are labelled, for the {default} judge with the sources offered here; fewer "
                                      "leaves some engines with the judge's values only.")
        seed = cols[1].number_input("Seed", min_value=0, max_value=10**6, value=0, step=1,
                                    help="The same seed draws the same items: a sample anyone can redraw.")
        scope = cols[2].selectbox("Sources per statement", list(SCOPES), index=scope_default,
                                  format_func={"cited": "the ones it cites", "all": "every listed source"}.get,
                                  help="Support samples only: the sources the statement cites (default), or every "
                                       "listed source (needed to correct unsupported statements when the judge also "
                                       "labels uncited pairs, as on the teaching corpus).")
        go = st.form_submit_button("Draw and register the sample", type="primary")
    if go:
        try:
            ask_relevance = bool(relevance) and unit == "pair"
            drawn = draw_sample(dataset, judge, int(n), seed=int(seed), unit=unit, scope=scope, root=data.results_root(),
                                relevance=ask_relevance, **audit_draw.from_records(dataset, judge, unit, scope, ask_relevance))
            _, new = register(drawn, data.results_root())
        except InputError as exc:
            st.error(md_escape(audit_draw.items_error(str(exc))))
            return
        st.session_state["audit_sample"] = drawn.sample_id
        st.success(f"Sample {md_escape(drawn.sample_id)}: {drawn.meta['n_items']} items"
                   + ("" if new else " (this exact draw was registered already)") + ". Switch to Label to start.")
        short = short_cells(drawn)  # said now, not after the labelling
        if short:
            st.warning("Even labelled in full, this sample leaves some engines without a corrected value: "
                       + "; ".join(md_escape(line) for line in short) + ".", icon=":material/warning:")


def _downloads(sample) -> None:
    st.markdown("**Label it elsewhere** (a spreadsheet works): the file has the ids, the texts and empty label columns; "
                "bring it back under *Import a file* above, or with `aee audit import`. The design file holds each item's "
                "stratum and sampling weight.")
    cols = st.columns(3)
    cols[0].download_button("CSV", annotation_text(sample, "csv").encode("utf-8"), f"{sample.sample_id}.csv",
                            "text/csv", key="audit_dl_csv", on_click="ignore", icon=":material/download:")
    cols[1].download_button("JSON lines", annotation_text(sample, "jsonl").encode("utf-8"),
                            f"{sample.sample_id}.jsonl", "application/jsonl", key="audit_dl_jsonl", on_click="ignore",
                            icon=":material/download:")
    cols[2].download_button("Weights", design_text(sample).encode("utf-8"), f"{sample.sample_id}.design.csv",
                            "text/csv", key="audit_dl_design", on_click="ignore", icon=":material/download:")
    st.code(f"aee audit import --dataset {dataset} {sample.sample_id}.csv --annotator \"Your name\"\n"
            f"aee audit export --sample {sample.sample_id} --format label-studio   # or argilla", language="bash")


def _pick_sample(key: str) -> str | None:
    if not samples:
        st.info("No sample of this dataset yet. Draw one first (Draw a sample above).", icon=":material/info:")
        return None
    ids = list(labels)
    wanted = st.session_state.get("audit_sample")
    index = ids.index(wanted) if wanted in ids else 0
    if wanted in ids and st.session_state.get(f"_{key}_follows") != wanted:
        # a keyed box keeps its earlier choice over `index`: a sample just drawn must become the one
        # shown, downloaded and named in the commands (once; the person may then pick another)
        st.session_state[key] = wanted
        st.session_state[f"_{key}_follows"] = wanted
    return st.selectbox("Sample", ids, index=index, format_func=labels.get, key=key)


def _class_people(sample, codes: tuple[str, ...], field: str) -> dict[str, dict[str, str]]:
    frame = audit_data.store().labels(sample.sample_id)
    out: dict[str, dict[str, str]] = {}
    for r in frame.to_dict("records"):
        if any(str(r["annotator"]).endswith(f"({c})") for c in codes) and isinstance(r.get(field), str):
            out.setdefault(str(r["annotator"]), {})[r["item_id"]] = r[field]
    return out


def _coverage_text(item_count: int, seats: pd.DataFrame) -> str:
    """What the class's seats hold: "every item of the 25 is seen by two students or more", or the counts."""
    got = seat_coverage(item_count, [(int(r.first), int(r.size)) for r in seats.itertuples()])
    if min(got) >= 2:
        return f"every one of the sample's {item_count} items is seen by two students or more."
    parts = [f"{got.get(2, 0) + sum(v for k, v in got.items() if k > 2)} seen twice or more",
             f"{got.get(1, 0)} seen once"] + ([f"{got[0]} not at all"] if got.get(0) else [])
    need = -(-2 * item_count // max(1, len(seats)))
    return (f"of the sample's {item_count} items, " + ", ".join(parts) + f" (for every item twice, give each "
            f"of the {len(seats)} students {need} items or more).")


def _audited_judge() -> str | None:
    """The judge the newest sample of this dataset audits (for the link that puts it beside the people)."""
    return str(samples[0].get("judge")) if samples else None


if mode == "Draw a sample":
    st.markdown("A sample is drawn at random, separately for each engine and for each label the judge gave, so rare "
                "labels are there too; each item carries the weight it needs for every estimate to stay unbiased.")
    if room_gate.join_form("draw a sample", "draw"):
        _draw_form()
    samples = audit_data.samples(dataset)  # with the one just drawn
    labels = {str(m["sample_id"]): audit_data.sample_label(m) for m in samples}
    if samples:
        st.subheader("Samples of this dataset")
        st.dataframe(pd.DataFrame([{"sample": m["sample_id"], "judge": m.get("judge"),
                                    "unit": f"{m.get('unit')} + relevance" if m.get("relevance") else m.get("unit"),
                                    "items": m.get("n_items"), "seed": m.get("seed"), "drawn": m.get("created")}
                                   for m in samples]), hide_index=True, width="stretch")
        chosen = _pick_sample("audit_download_sample")
        if chosen:
            _downloads(audit_data.sample(chosen))
        st.divider()
        audit_publish.publish_panel(dataset, "audit_draw", _audited_judge())
    st.stop()

if mode == "Fit a judge":
    audit_fit.fit_panel(dataset)
    st.stop()

if mode == "Import a file":
    st.markdown("Bring back labels given elsewhere: the CSV or JSON lines file of a sample filled in by hand, or a "
                "Label Studio or Argilla export of its tasks. Every row is checked against the sample it names; a bad "
                "row gets one line below, and the good rows land.")
    if not samples:
        st.info("No sample of this dataset yet: draw one first (Draw a sample above) and label its file.",
                icon=":material/info:")
        st.stop()
    if not room_gate.join_form("import labels", "import"):
        st.stop()
    with st.form("audit_import"):
        upload = st.file_uploader("Labelled file", type=["csv", "tsv", "jsonl", "json"], key="audit_import_file",
                                  help="The file `aee audit sample` or this page wrote, filled in; or a Label Studio / "
                                       "Argilla export (JSON) of the tasks `aee audit export` wrote.")
        cols = st.columns([1.2, 1, 1.6])
        person = cols[0].text_input("Whose labels", max_chars=60, key="audit_import_person",
                                    help="The labels are kept under this name, apart from everyone else's.")
        fmt = cols[1].selectbox("Format", list(IMPORT_FORMATS), key="audit_import_format",
                                format_func={"auto": "detect", "csv": "CSV", "jsonl": "JSON lines",
                                             "label-studio": "Label Studio", "argilla": "Argilla"}.get)
        from_file = "from the file"
        sample_choice = cols[2].selectbox("Sample", [from_file, *labels], key="audit_import_sample",
                                          format_func=lambda i: "named in the file (sample_id column)" if i == from_file
                                          else labels.get(i, i),
                                          help="Only for a file without a sample_id column.")
        go = st.form_submit_button("Import the labels", type="primary", icon=":material/upload_file:")
    if go:
        outcome: dict = {"dataset": dataset, "file": upload.name if upload is not None else ""}
        try:
            if upload is None:
                raise InputError("choose a file first")
            if room_gate.room():  # in a served room the name is the room's and this session's
                person = room_gate.writer_name(person)
                room_gate.claim(person)
            report = import_upload(upload.getvalue(), upload.name, dataset, person, store=audit_data.store(), fmt=fmt,
                                   sample_id=None if sample_choice == from_file else sample_choice,
                                   root=data.results_root())
            outcome |= {"summary": report.summary(), "errors": list(report.errors), "written": report.written}
        except InputError as exc:
            outcome |= {"failed": str(exc)}
        st.session_state["audit_import_report"] = outcome
        if outcome.get("written"):
            audit_publish.after_import(dataset, int(outcome["written"]), st.container())
    shown = st.session_state.get("audit_import_report")
    if shown and shown.get("dataset") == dataset:
        if shown.get("failed"):
            st.error(f"{md_escape(shown['file'])}: {md_escape(shown['failed'])}", icon=":material/error:")
        else:
            errors = shown.get("errors") or []
            (st.warning if errors else st.success)(f"{md_escape(shown['file'])}: {md_escape(shown['summary'])}",
                                                   icon=":material/warning:" if errors else ":material/task_alt:")
            if errors:
                st.markdown(f"**{len(errors)} bad row(s)**, one line each (nothing of them was saved):")
                st.code("\n".join(errors[:MAX_ERRORS_SHOWN]), language=None, wrap_lines=True)
                if len(errors) > MAX_ERRORS_SHOWN:
                    st.caption(f"… and {len(errors) - MAX_ERRORS_SHOWN} more in the file below.")
                st.download_button("Every error line (text)", "\n".join(errors).encode("utf-8"), "import_errors.txt",
                                   "text/plain", key="audit_import_errors", on_click="ignore", icon=":material/download:")
    st.divider()
    audit_publish.publish_panel(dataset, "audit_import", _audited_judge())
    st.stop()

if mode == "Classroom":
    st.markdown("Hand each student ten items of one sample by a short code. When the students hold at least two "
                "labels per item between them, the codes are spread so every item is seen by two students or more, "
                "and the class can measure how much its members agree with each other as well as with the judge; "
                "below that, the class's line says how many items are seen twice, once or not at all.")
    chosen = _pick_sample("audit_class_sample")
    if not chosen:
        st.stop()
    sample = audit_data.sample(chosen)
    store = audit_data.store()
    if not room_gate.join_form("create class codes", "class"):
        st.stop()
    with st.form("audit_class"):
        cols = st.columns([2, 1, 1])
        class_name = cols[0].text_input("Class name", value="My class", max_chars=60)
        students = cols[1].number_input("Students", min_value=1, max_value=200, value=12)
        per_seat = cols[2].number_input("Items each", min_value=1, max_value=50, value=10)
        make = st.form_submit_button("Create the codes", type="primary")
    if make:
        try:
            store.create_class(chosen, class_name, len(sample.items), int(students), int(per_seat), overlap=int(per_seat) // 2,
                               spread=True)
        except InputError as exc:
            st.error(md_escape(str(exc)))
    seats = store.classes(chosen)
    if seats.empty:
        st.stop()
    for name, part in seats.groupby("class_name", sort=False):
        st.subheader(f"Class: {name}")
        urls = room_gate.room_urls("audit")
        address = f"{urls[0]}?dataset={dataset}" if urls else full_url("audit", {"dataset": dataset})
        st.markdown(f"{len(part)} codes; {_coverage_text(len(sample.items), part)} "
                    f"Students open **{md_escape(address)}**, switch on *I have a class code*, and type their code and "
                    "first name" + (" (and the room's join code)." if urls else "."))
        room_gate.show_addresses("audit", f"dataset={dataset}", what="the class page")

        @st.fragment(run_every=10)
        def live(codes: tuple[str, ...] = tuple(part["code"]), title: str = str(name), seats: pd.DataFrame = part) -> None:
            """The class as it goes: who started, agreement with the judge and among the students."""
            field = audit_data.main_field(sample)
            people = {p: got for p, got in _class_people(sample, codes, field).items() if got}
            if asks_relevance(sample):  # statement items answer relevance: they count as answered too (the
                # agreement below stays on support: a relevance label is no support class, so it drops out there)
                for p, got in _class_people(sample, codes, "relevant").items():
                    people[p] = {**people.get(p, {}), **got}
            table = who_table(seats, len(sample.items))
            names, answered = [], []
            for r in seats.itertuples():
                mine = [p for p in people if p.endswith(f"({r.code})")]
                items = audit_data.item_order(sample, r._asdict())
                names.append(", ".join(p.rsplit(" (", 1)[0] for p in mine) or "not started")
                answered.append(f"{max((sum(1 for i in items if i in people[p]) for p in mine), default=0)} of {len(items)}")
            st.dataframe(table.assign(name=names, answered=answered), hide_index=True, width="stretch",
                         key=f"audit_class_progress_{title}")
            if not people:
                st.caption("No labels yet. This part refreshes every 10 seconds.")
                return
            judge, _ = audit_data.judge_item_labels(sample)
            major = majority_labels(people)
            both = [(judge.get(field, {}).get(i), v) for i, v in major.items()
                    if v not in (None, "cant_tell") and judge.get(field, {}).get(i) not in (None, "unknown")]
            same = sum(a == b for a, b in both)
            alpha = krippendorff_alpha(people, FIELD_CLASSES[field], replicates=0)
            value = alpha.get("alpha")
            cols = st.columns(3)
            cols[0].metric("Started", len(people), help=f"students who gave a label; {sum(len(g) for g in people.values())} "
                                                         "labels so far")
            cols[1].metric("Agree with the judge", f"{same / len(both):.0%}" if both else "n/a",
                           help=f"the class's majority label equals the judge's, on the {len(both)} items where both "
                                "gave one")
            cols[2].metric("Among students", f"α = {value['value']:.2f}" if value else "n/a",
                           help=(alpha.get("reason") or "Krippendorff's alpha: 1 = always the same label, 0 = no better "
                                 "than chance") + f"; {alpha.get('n_items', 0)} items labelled by two students or more")
            st.caption("Refreshes every 10 seconds. The Judges page has the full comparison, item by item.")

        live()
    st.stop()


# ---- Label ---------------------------------------------------------------------------------------

who = st.session_state.get("audit_who")
if who and who.get("dataset") != dataset:
    who = None
if not who:
    with_code = st.toggle("I have a class code", key="audit_has_code")
    if not with_code and not samples:  # nothing to label yet: no name field or button that would do nothing
        _pick_sample("audit_label_sample")
        st.stop()
    if not room_gate.join_form("label", "label"):
        st.stop()
    with st.form("audit_start"):
        if with_code:
            cols = st.columns(2)
            code = cols[0].text_input("Class code", max_chars=12, placeholder="e.g. K7QX2M")
            name = cols[1].text_input("Your first name", max_chars=40)
        else:
            chosen = _pick_sample("audit_label_sample")
            name = st.text_input("Your name", max_chars=60, help="Your labels are kept under this name, apart from "
                                 "everyone else's; use the same name to carry on later.")
        resume_key = st.text_input("Your key (only to carry on after a reload)", max_chars=12,
                                   key="audit_room_key") if room_gate.room() else ""
        start = st.form_submit_button("Start labelling", type="primary")
    if start:
        try:
            room_gate.use_key(resume_key)
            if with_code:
                seat = audit_data.store().seat(code)
                if seat is None:
                    raise InputError("no class has this code; check it with your teacher")
                if audit_data.sample(str(seat["sample_id"])).meta.get("dataset") != dataset:
                    raise InputError("this code belongs to another dataset: choose it at the top of the page first")
                annotator = student_name(seat, room_gate.seat_writer_name(name))
                room_gate.claim(annotator)
                st.session_state["audit_who"] = {"dataset": dataset, "sample_id": seat["sample_id"],
                                                 "annotator": annotator, "seat": seat}
            elif chosen:
                annotator = room_gate.writer_name(name)
                room_gate.claim(annotator)
                st.session_state["audit_who"] = {"dataset": dataset, "sample_id": chosen, "annotator": annotator,
                                                 "seat": None}
            st.rerun()
        except InputError as exc:
            st.error(md_escape(str(exc).split(": ", 1)[-1]))
    st.stop()

sample = audit_data.sample(who["sample_id"])
head = st.columns([3, 1.3])  # "Not you?" must fit at 800 px
head[0].markdown(f"Labelling as **{md_escape(who['annotator'])}** · sample {md_escape(sample.sample_id)}"
                 + (f" · class code {md_escape(who['seat']['code'])}" if who.get("seat") else "")
                 + (f" · your key **{md_escape(room_gate.session_key())}** (to carry on after a reload)"
                    if room_gate.room() else ""))
if st.session_state.pop("room_write_refused", False):
    st.warning("Slow down: this room allows about one label a second. The last label was not saved; give it again "
               "in a moment.", icon=":material/hourglass_top:")
if head[1].button("Not you?", key="audit_change_person", icon=":material/person:", help="Label as someone else"):
    st.session_state.pop("audit_who", None)
    st.rerun()
label_panel(sample, who["annotator"], who.get("seat"))
link_to_page("judges.py", "See how the judge agrees with everyone who labelled (Judges page)", icon=":material/gavel:")
