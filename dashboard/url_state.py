"""Shareable page state: the URL parameters every page uses, read and written the same way.

A journalist sends a link to one answer, a teacher a link to one view: the dataset, answer, judge,
scoring rules and filters a page shows live in its URL (`st.query_params`). Pages share the
parameter NAMES below, so a link built on one page means the same on another.

How a page uses it (widgets keep their own keys; this module only moves values):

    wanted = url_state.incoming("inspector")        # what a pasted link / reload asks for, else {}
    url_state.seed("ins_dataset", datasets, wanted.get(url_state.DATASET), fallback=default)
    dataset = st.selectbox("Dataset", datasets, key="ins_dataset")
    ...
    url_state.publish("inspector", {url_state.DATASET: dataset, url_state.ANSWER: answer_id})

`seed` also fixes stale selections: a widget whose remembered value is not among the new options
(after a dataset switch, a new search) gets a valid value through session state, which Streamlit
sends to the browser, so the box never shows the old dataset's value.

Values from a URL are untrusted: they are only ever compared with the options a page offers
(`seed`), never shown or used as paths; each is cut to MAX_VALUE characters.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence
from urllib.parse import urlencode

import streamlit as st

# ---- the one list of parameter names every page uses --------------------------------------------
DATASET = "dataset"  # dataset name
JUDGE = "judge"  # judge whose labels are shown
ANSWER = "answer"  # answer id
MODE = "mode"  # scoring rules: strict | parity
NECESSITY = "necessity"  # necessity method chosen (parity always runs greedy)
SEARCH = "q"  # free-text filter of a list
QUERY_TYPE = "type"  # query type: all | debate | expertise
FIELDS = "field"  # subject fields (repeatable: ?field=Law&field=Music)
ENGINE = "engine"  # an engine name
VIEW = "view"  # a page's sub-view (compare: engines | judges)
ENGINE_B = "engine_b"  # the second engine of a comparison
JUDGE_B = "judge_b"  # the second judge of a comparison
STUDY = "study"  # a study id
GROUPS = "group"  # metric groups shown (repeatable; absent = the page's default groups)
PUBLISHED = "published"  # published figures beside the computed ones: a scorecard key, or "off"
TAB = "tab"  # the open tab of a page (its label)
ONLY_DIFF = "only"  # compare: "diff" shows only the items the two judges label differently
LOG = "log"  # study: simulated | upload | recorded
SEED = "seed"  # study: the simulated log's seed
ALPHA = "alpha"  # study: significance level
TEST = "test"  # study: which comparison
CONDITION = "condition"  # study: the column whose conditions are compared
FIRST = "first"  # study: first condition
SECOND = "second"  # study: second condition
BY = "by"  # conflicting evidence: group sources by source type or domain
TOP = "top"  # conflicting evidence: domains shown per engine
RUN = "run"  # conflicting evidence: probe run
VARIANT = "variant"  # conflicting evidence: probe variant
QUESTION = "question"  # conflicting evidence: probe question
DONE = "done"  # start here: steps ticked done (repeatable step numbers)
METRIC = "metric"  # over time: the metric followed across waves
WAVE = "wave"  # over time: the wave whose stability is shown
SIDE = "side"  # inspector: answers (askings of one query by one engine) shown side by side (repeatable)

PARAMS: dict[str, str] = {
    DATASET: "dataset name", JUDGE: "judge", ANSWER: "answer id", MODE: "scoring rules", NECESSITY: "necessity method",
    SEARCH: "search text", QUERY_TYPE: "query type", FIELDS: "subject field (repeatable)", ENGINE: "engine",
    VIEW: "sub-view of a page", ENGINE_B: "second engine", JUDGE_B: "second judge", STUDY: "study id",
    GROUPS: "metric group (repeatable)", PUBLISHED: "published figures shown", TAB: "open tab",
    ONLY_DIFF: "only differing items", LOG: "study log", SEED: "simulation seed", ALPHA: "significance level",
    TEST: "comparison", CONDITION: "compared column", FIRST: "first condition", SECOND: "second condition",
    BY: "grouping", TOP: "items shown", RUN: "probe run", VARIANT: "probe variant", QUESTION: "probe question",
    DONE: "step done (repeatable)", METRIC: "metric", WAVE: "wave", SIDE: "answer side by side (repeatable)",
}
MULTI = frozenset({FIELDS, GROUPS, DONE, SIDE})  # parameters that may repeat
MAX_VALUE = 300
MAX_REPEAT = 50

Value = str | list[str]


def _current() -> dict[str, Value]:
    """The known parameters in the browser's URL right now (unknown ones are ignored)."""
    out: dict[str, Value] = {}
    for name in PARAMS:
        if name in MULTI:
            values = [v[:MAX_VALUE] for v in st.query_params.get_all(name)[:MAX_REPEAT]]
            if values:
                out[name] = values
        else:
            value = st.query_params.get(name)
            if value:
                out[name] = str(value)[:MAX_VALUE]
    return out


class Wanted(dict):
    """What a page is asked to show, and where the request came from: "link" (the URL: a pasted
    link, a reload, an edited address), "memory" (the page's last state, when the reader comes
    back through the sidebar with a bare URL) or "none"."""

    source: str = "none"


def incoming(page: str) -> Wanted:
    """What this page should show on this run, or an empty Wanted when its widgets decide.

    The URL's parameters when they differ from what this page last wrote (a link from outside);
    the page's last written state when the URL is bare (Streamlit forgets the widgets of a page
    the reader left, the page should not); otherwise nothing."""
    current = _current()
    memo = st.session_state.get(_memo(page))
    out = Wanted()
    if current and current != memo:
        out.update(current)
        out.source = "link"
    elif not current and memo:
        out.update(memo)
        out.source = "memory"
    return out


def seed(key: str, options: Sequence[Any], wanted: Any = None, fallback: Any = None) -> None:
    """Give widget `key` a value among `options` before the widget is drawn: `wanted` when offered,
    else the value it holds when still offered, else `fallback` when offered, else the first option."""
    options = list(options)
    if not options:
        return
    if wanted is not None and wanted in options:
        st.session_state[key] = wanted
    elif key in st.session_state and st.session_state[key] in options:
        return
    else:
        st.session_state[key] = fallback if fallback in options else options[0]


def seed_many(key: str, options: Sequence[Any], wanted: Iterable[Any] | None = None) -> None:
    """`seed` for a multiselect: keep the chosen values that are still offered."""
    offered = set(options)
    if wanted is not None:
        st.session_state[key] = [v for v in dict.fromkeys(wanted) if v in offered]
    elif key in st.session_state:
        kept = [v for v in st.session_state[key] if v in offered]
        if kept != st.session_state[key]:
            st.session_state[key] = kept


def _clean(values: Mapping[str, Any]) -> dict[str, Value]:
    out: dict[str, Value] = {}
    for name, value in values.items():
        if name not in PARAMS or value is None:
            continue
        if name in MULTI:
            items = [str(v)[:MAX_VALUE] for v in (value if isinstance(value, (list, tuple)) else [value]) if str(v)]
            if items:
                out[name] = items[:MAX_REPEAT]
        elif str(value):
            out[name] = str(value)[:MAX_VALUE]
    return out


def publish(page: str, values: Mapping[str, Any]) -> None:
    """Write what the page shows into the URL (empty values are left out) and remember it, so the
    next run does not mistake it for a link from outside."""
    clean = _clean(values)
    if _current() != clean:
        st.query_params.from_dict(clean)
    st.session_state[_memo(page)] = clean


def query_string(values: Mapping[str, Any]) -> str:
    """`values` as a URL query string ("dataset=demo&answer=a%3A1"), in PARAMS order."""
    clean = _clean(values)
    pairs: list[tuple[str, str]] = []
    for name in PARAMS:
        value = clean.get(name)
        if isinstance(value, list):
            pairs += [(name, v) for v in value]
        elif value is not None:
            pairs.append((name, value))
    return urlencode(pairs)


def page_link(page: str, values: Mapping[str, Any]) -> str:
    """A link to another page of the app with its state ("compare?dataset=demo&answer=..."),
    relative to the app's root."""
    qs = query_string(values)
    return f"{page}?{qs}" if qs else page


def page_link_to(where: Any, script: str, label: str, values: Mapping[str, Any], icon: str | None = None) -> None:
    """A link to another page of the app (`script` as in the page registry) that opens it on `values`.

    Run outside the app's navigation (a page script alone, as AppTest runs it), Streamlit cannot
    resolve the page; a plain relative link does the same job then."""
    from streamlit.errors import StreamlitAPIException

    from dashboard.pages_registry import PAGES

    info = next(p for p in PAGES if p.script == script)
    clean = _clean(values)
    try:
        where.page_link(info.path, label=label, icon=icon, query_params=clean)
    except StreamlitAPIException:
        where.markdown(f"[{label}]({page_link(info.url_path, clean)})")


def full_url(page: str, values: Mapping[str, Any]) -> str:
    """The absolute address of a page with its state, as the reader's browser reaches the app
    (the relative link when the address is unknown, as under AppTest)."""
    from dashboard.pages_registry import PAGES

    try:
        base = str(st.context.url or "")
    except Exception:  # noqa: BLE001 - no browser session (AppTest, bare mode)
        base = ""
    link = page_link(page, values)
    if not base.startswith(("http://", "https://")):
        return link
    root = base.split("?", 1)[0].split("#", 1)[0].rstrip("/")
    head, _, last = root.rpartition("/")
    if last in {p.url_path for p in PAGES} and "://" not in last and head.count("/") >= 2:
        root = head  # the address of the page the reader is on: go up to the app's root
    return f"{root}/{link}"


def _memo(page: str) -> str:
    return f"_url_state_{page}"
