"""Safe text and the display form of scorecard cells.

Rules this module enforces for the pages:
* data-derived text (engine names, queries, file names, judge ids) never reaches
  `unsafe_allow_html`; in markdown it is escaped with `md_escape` (which also stops links, images,
  autolinks, colour directives, emoji shortcodes and LaTeX); in plotly labels with `plot_escape`;
  in SVG with `xml_escape`; in LaTeX with `latex_escape`.
* st.dataframe / st.text / st.code show text as text, so raw values may go there.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any, Callable, Iterable

import pandas as pd
import streamlit as st

from dashboard.metric_text import DIRECTION_WORDS  # noqa: F401 - one list, re-exported for older imports
from pipeline.metrics import GROUP_ORDER, METRICS, RATING_COLOURS, RATING_SYMBOLS

GROUP_TITLES: dict[str, str] = {
    "basic": "Basic statistics",
    "answer text": "Answer text",
    "sources": "Sources",
    "citation": "Citation",
    "liu": "Citation recall and precision (Liu et al.)",
    "attribution": "Attribution (Djeddal et al.)",
    "correctness": "Answer correctness against gold answers",
    "source analysis": "Source analysis",
    "source stance": "Source stance (debate queries)",
}
RATING_WORDS = {"acceptable": "acceptable", "borderline": "borderline", "problematic": "problematic"}
# Light tints of the registry colours for cell backgrounds (dark text stays readable on them in
# both themes); the symbol carries the rating too, so colour is never the only signal.
RATING_TINTS = {"acceptable": "#cfe9d6", "borderline": "#f6e3bf", "problematic": "#f4cccc", None: "#ececec"}

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:&=^%@/;,?\"'])")


def md_escape(text: object) -> str:
    """Text safe to place inside st.markdown: every ASCII punctuation mark is backslash-escaped
    (CommonMark allows that for all of them), so no link, image, HTML tag, autolink, `:colour[]`
    directive, emoji shortcode or `$math$` can form. Newlines become spaces."""
    s = "" if text is None else str(text)
    s = s.replace("\r", " ").replace("\n", " ")
    return _MD_SPECIAL.sub(r"\\\1", s)


def md_with_code(text: object) -> str:
    """Like md_escape, but `backtick spans` stay code spans (their content shows verbatim, so it
    needs no escaping): for fixed help text that names commands."""
    parts = ("" if text is None else str(text)).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: escape everything
        return md_escape(text)
    return "".join(md_escape(p) if i % 2 == 0 else f"`{p.replace(chr(10), ' ')}`" for i, p in enumerate(parts))


def engine_key(engines: Iterable[str]) -> str:
    """One markdown line saying what the ExpertQA system ids among `engines` stand for, in the
    order given ("" when none is one of them): the ids alone mean nothing to most readers."""
    from pipeline.importers.expertqa import SYSTEMS

    known = [e for e in dict.fromkeys(engines) if e in SYSTEMS]
    if not known:
        return ""
    return "ExpertQA's systems: " + " · ".join(f"`{e}`: {md_escape(SYSTEMS[e])}" for e in known) + "."


def plot_escape(text: object) -> str:
    """Text for plotly labels and hover (plotly renders a few HTML tags; entities decode back)."""
    return html.escape("" if text is None else str(text), quote=True)


def xml_escape(text: object) -> str:
    """Text for SVG."""
    return html.escape("" if text is None else str(text), quote=True)


_LATEX_MAP = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "<": r"\textless{}", ">": r"\textgreater{}",
}


def latex_escape(text: object) -> str:
    """Text for a LaTeX table cell."""
    return "".join(_LATEX_MAP.get(c, c) for c in ("" if text is None else str(text)))


def fmt_value(value: Any, decimals: int = 2) -> str:
    """A corpus value as shown in the scorecard ("–" when missing)."""
    if value is None or (isinstance(value, float) and value != value):
        return "–"
    try:
        return f"{float(value):.{decimals}f}"
    except (TypeError, ValueError):
        return str(value)


def fmt_ci(low: Any, high: Any, decimals: int = 2) -> str:
    """A 95% interval, or a short note when there is none."""
    if low is None or high is None or (isinstance(low, float) and low != low) or (isinstance(high, float) and high != high):
        return "no interval"
    return f"[{float(low):.{decimals}f}, {float(high):.{decimals}f}]"


def rating_text(rating: str | None) -> str:
    """Symbol and word of a rating ("" when unrated)."""
    if not rating or rating != rating:
        return ""
    return f"{RATING_SYMBOLS[rating]} {RATING_WORDS[rating]}"


def symbol(rating: object) -> str:
    """The rating's symbol ("" when unrated)."""
    return RATING_SYMBOLS.get(rating, "") if isinstance(rating, str) else ""


def group_title(group: str) -> str:
    """Display title of a registry group."""
    return GROUP_TITLES.get(group, group.capitalize())


def metric_label(name: str) -> str:
    """The registry label of a metric."""
    info = METRICS.get(name)
    return info.label if info else name


def _clean(value: object) -> object:
    return None if value is None or (isinstance(value, float) and value != value) else value


def scorecard_cells(summary: pd.DataFrame, query_type: str, groups: Iterable[str] | None = None,
                    engines: list[str] | None = None) -> pd.DataFrame:
    """Long display cells of one scorecard: group, metric, label, engine, value, CI, n, rating, symbol.

    Rows follow the registry's group and metric order; `engines` fixes the column order. Extra
    columns of the summary (published_rating, disagrees) are carried along.
    """
    wanted = list(groups) if groups is not None else list(GROUP_ORDER)
    part = summary[summary["query_type"] == query_type] if "query_type" in summary.columns else summary
    present = set(part["engine"].dropna())
    engines = [e for e in engines if e in present] if engines else sorted(present)
    by_key = {(r["engine"], r["metric"]): r for r in records(part)}
    rows = []
    for group in GROUP_ORDER:
        if group not in wanted:
            continue
        for name, info in METRICS.items():
            if info.group != group:
                continue
            if not any((e, name) in by_key for e in engines):
                continue
            for engine in engines:
                rec = by_key.get((engine, name), {})
                rating = _clean(rec.get("rating"))
                rows.append({
                    "group": group, "metric": name, "label": info.label, "engine": engine,
                    "value": _clean(rec.get("value")), "ci_low": _clean(rec.get("ci_low")),
                    "ci_high": _clean(rec.get("ci_high")), "n_answers": _clean(rec.get("n_answers")),
                    "rating": rating, "symbol": symbol(rating),
                    "published_rating": _clean(rec.get("published_rating")),
                    "disagrees": bool(rec.get("disagrees")),
                    # share of the units the metric needed that a label decided, and why the cell is
                    # null when too few were (absent from summaries built before they were kept)
                    "judged_share": _clean(rec.get("judged_share")), "judged_reason": _clean(rec.get("reason")) or "",
                    # how the corpus value was formed (`aggregate.with_aggregation`), and the units pooled
                    "aggregated_as": _clean(rec.get("aggregated_as")) or "mean over answers",
                    "pooled_units": _clean(rec.get("pooled_units")),
                })
    return pd.DataFrame(rows, columns=["group", "metric", "label", "engine", "value", "ci_low", "ci_high",
                                       "n_answers", "rating", "symbol", "published_rating", "disagrees",
                                       "judged_share", "judged_reason", "aggregated_as", "pooled_units"])


def add_blank_reasons(cells: pd.DataFrame, reasons: dict[tuple[str, str], str], *, has_debate: bool) -> pd.DataFrame:
    """The cells with a "why_blank" column: for each cell without a value, why (in words), read
    from the reasons the pipeline stored per answer (`data.blank_reasons`); "" where there is a value."""
    from dashboard.metric_text import blank_reason

    why = [("" if r["value"] is not None else r.get("judged_reason")
            or blank_reason(r["metric"], r["engine"], reasons, has_debate=has_debate, n_answers=r["n_answers"]))
           for r in records(cells)]
    return cells.assign(why_blank=why)


def group_summaries(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per rated group and engine: the symbols of its rated metrics in registry order
    ("▼ ▼ –"), their labels ("uncited sources · unsupported statements · source necessity") and
    the two together ("uncited sources: ▼ · unsupported statements: ▼ · source necessity: n/a")."""
    rated = cells[cells["metric"].map(lambda m: bool(METRICS[m].bands))]
    rows = []
    for group in [g for g in GROUP_ORDER if g in set(rated["group"])]:
        part = rated[rated["group"] == group]
        names = list(dict.fromkeys(part["metric"]))
        labels = [METRICS[n].label.lower() for n in names]
        for engine in dict.fromkeys(cells["engine"]):
            mine = part[part["engine"] == engine].set_index("metric")
            symbols = [(mine.at[n, "symbol"] or "–") if n in mine.index else "–" for n in names]
            named = [f"{label}: {sym if sym != '–' else 'n/a'}" for label, sym in zip(labels, symbols)]
            rows.append({"group": group, "engine": engine, "symbols": " ".join(symbols),
                         "names": " · ".join(labels), "named": " · ".join(named)})
    return pd.DataFrame(rows, columns=["group", "engine", "symbols", "names", "named"])


def wide_table(cells: pd.DataFrame, with_n: bool = True) -> pd.DataFrame:
    """The scorecard as a text table: one row per metric with its unit, better direction and
    Table 7 thresholds (from the registry), one column per engine ("57.14% ● (n=1)", "n/a" where
    there is no value), and "Why n/a" naming the reason; then one summary row per rated group whose
    cells name each metric beside its symbol. Suitable for st.dataframe and CSV."""
    from dashboard.metric_text import DIRECTION_SHORT, cell_note, fmt_metric, thresholds_text, unit_mark

    engines = list(dict.fromkeys(cells["engine"]))
    rows = []
    for (group, name), part in cells.groupby(["group", "metric"], sort=False):
        info = METRICS[name]
        row = {"Group": group_title(group), "Metric": info.label, "Unit": unit_mark(name),
               "Better": DIRECTION_SHORT[info.direction], "Thresholds": thresholds_text(name)}
        why: dict[str, list[str]] = {}
        for rec in records(part):
            text = fmt_metric(rec["value"], name)
            if rec["symbol"]:
                text += f" {rec['symbol']}"
            if with_n and (note := cell_note(rec)):
                text += f" ({note})"
            row[rec["engine"]] = text
            if rec["value"] is None:
                why.setdefault(rec.get("why_blank") or "no value", []).append(rec["engine"])
        if len(why) == 1 and len(next(iter(why.values()))) == len(engines):
            row["Why n/a"] = next(iter(why))  # every engine, one reason
        else:
            row["Why n/a"] = "; ".join(f"{', '.join(es)}: {reason}" for reason, es in why.items())
        rows.append(row)
    for group, part in group_summaries(cells).groupby("group", sort=False):
        row = {"Group": "Summary", "Metric": f"{group_title(group)} ratings", "Unit": "",
               "Better": "", "Thresholds": "", "Why n/a": ""}
        row.update(dict(zip(part["engine"], part["named"])))
        rows.append(row)
    return pd.DataFrame(rows, columns=["Group", "Metric", "Unit", "Better", *engines, "Thresholds", "Why n/a"])


def summary_table(cells: pd.DataFrame) -> pd.DataFrame:
    """Each rated group's ratings per engine, every symbol beside the metric it rates
    ("uncited sources: ▼ · unsupported statements: ▼ · source necessity: n/a"): rows are groups."""
    summaries = group_summaries(cells)
    engines = list(dict.fromkeys(cells["engine"]))
    rows = []
    for group, part in summaries.groupby("group", sort=False):
        row = {"Group": group_title(group)}
        row.update(dict(zip(part["engine"], part["named"])))
        rows.append(row)
    return pd.DataFrame(rows, columns=["Group", *engines]).set_index("Group")


def rating_legend() -> str:
    """A markdown legend of the three ratings (fixed text, safe)."""
    return (" · ".join(f"{RATING_SYMBOLS[r]} {r}" for r in ("acceptable", "borderline", "problematic"))
            + " · – not rated (no value, or no thresholds)")


def caption(text: object) -> None:
    """st.caption of data-derived text, escaped."""
    st.caption(md_escape(text))


def colour(rating: str | None) -> str:
    """The registry colour of a rating (grey when unrated)."""
    return RATING_COLOURS.get(rating, "#6b7280") if isinstance(rating, str) else "#6b7280"


def pick_dataset(key: str, label: str = "Dataset", where=None, prefer: Callable[[str], bool] | None = None) -> str | None:
    """The dataset selectbox of a page. Every page opens on the same dataset (`data.default_dataset`:
    the URL's `dataset`, else the one chosen on another page, else the largest real one); the
    choice is written back to the URL (`?dataset=`) so a link reopens it. Datasets show their
    label ("Teaching corpus" for `demo`); the router marks an illustrative choice in the sidebar.
    `prefer` (a predicate: the dataset has something this page can show) narrows the page's opening
    choice when a link names none. None when there are no results."""
    from dashboard import data

    names = data.datasets()
    if not names:
        return None
    wanted = st.query_params.get("dataset")
    if wanted in names and st.session_state.get(key) != wanted and st.session_state.get("_url_dataset") != wanted:
        st.session_state[key] = wanted  # a link (or the address bar) asked for this dataset
    elif st.session_state.get(key) not in names:
        st.session_state[key] = data.default_dataset(names, prefer=prefer)
    target = where or st
    dataset = target.selectbox(label, names, key=key, on_change=data.remember_dataset, args=(key,),
                               format_func=data.dataset_label)
    st.session_state["shared_dataset"] = dataset
    url_remember("dataset", dataset)
    return dataset


def pick_dataset_and_judge(prefix: str, dataset_where: Any, judge_where: Any,
                           judge_help: str | None = None, prefer: Callable[[str], bool] | None = None) -> tuple[str, str]:
    """The dataset and judge selectboxes a page opens with (keys `<prefix>_dataset` and
    `<prefix>_judge`), both taken from and written back to the URL. Stops the page, saying what to
    do, when there are no results at all or none scored for the chosen dataset."""
    from dashboard import data

    dataset = pick_dataset(f"{prefix}_dataset", where=dataset_where, prefer=prefer)
    if dataset is None:
        no_results_message()
        st.stop()
    judge_list = data.judges(dataset)
    if not judge_list:
        st.warning(f"Dataset {md_escape(dataset)} has no scored results yet.")
        st.stop()
    url_choice("judge", f"{prefix}_judge", judge_list, data.default_judge(dataset))
    judge = judge_where.selectbox("Judge", judge_list, key=f"{prefix}_judge", help=judge_help)
    url_remember("judge", judge)
    return dataset, judge


def url_choice(param: str, key: str, options: list[str], default: str | None = None) -> None:
    """Before a widget with `key` is drawn: take its value from the URL's `param` when the URL
    names a valid option that differs from the last value written there (a shared link), else
    keep the widget's own value, else `default` (else the first option). Pair with `url_remember`
    after the widget."""
    wanted = st.query_params.get(param)
    seen = f"_url_{param}"
    if wanted in options and st.session_state.get(key) != wanted and st.session_state.get(seen) != wanted:
        st.session_state[key] = wanted
    elif st.session_state.get(key) not in options and options:
        st.session_state[key] = default if default in options else options[0]


def link_to_page(script: str, label: str, icon: str | None = None, query_params: dict | None = None,
                 where=None) -> None:
    """A link to another page of the registry (`script` as "scorecard.py"), opening it on
    `query_params`. Run outside the app's navigation (a page script alone, as AppTest can run
    it), Streamlit cannot resolve the page; a plain relative link does the same job then."""
    from urllib.parse import urlencode

    from streamlit.errors import StreamlitAPIException

    from dashboard.pages_registry import page

    info = page(script)
    target = where or st
    try:
        target.page_link(str(info.path), label=label, icon=icon, query_params=query_params)
    except StreamlitAPIException:
        address = Path(script).stem + (f"?{urlencode(query_params)}" if query_params else "")
        target.markdown(f"[{md_escape(label)}]({address})")


def url_remember(param: str, value: str) -> None:
    """Write a page's current choice to the URL, so the address bar always reopens this view."""
    st.session_state[f"_url_{param}"] = value
    st.query_params[param] = value


def url_choices(param: str, key: str, options: list[str], default: list[str]) -> bool:
    """`url_choice` for a multiselect or multi-choice pills: the URL's repeated `param` (valid
    options only) when it differs from what this page last wrote; else the widget's own values
    that are still offered; else `default`. True when the URL decided."""
    raw = st.query_params.get_all(param)
    wanted = [v for v in dict.fromkeys(raw) if v in options]
    if raw and wanted != st.session_state.get(key) and st.session_state.get(f"_url_{param}") != wanted:
        st.session_state[key] = wanted
        return True
    if key not in st.session_state:
        st.session_state[key] = [v for v in default if v in options]
    else:
        kept = [v for v in st.session_state[key] if v in options]
        if kept != st.session_state[key]:
            st.session_state[key] = kept
    return False


def url_remember_list(param: str, values: list[str], default: list[str] | None = None) -> None:
    """Write a page's current multiple choice to the URL as a repeated `param`; the default (or
    nothing chosen) leaves it out, so a plain link means the default view."""
    values = list(values)
    st.session_state[f"_url_{param}"] = values
    if not values or (default is not None and values == list(default)):
        if param in st.query_params:
            del st.query_params[param]
    else:
        st.query_params[param] = values


def url_forget(param: str) -> None:
    """Take `param` out of the URL (a choice that is off, or back at its default)."""
    st.session_state[f"_url_{param}"] = None
    if param in st.query_params:
        del st.query_params[param]


def no_results_message() -> None:
    """What to do when no results exist yet."""
    st.warning("No results found in the results folder. Produce some first, for example:")
    st.code("aee run --dataset demo\n"
            "aee run --dataset fig7 --path tests/fixtures/worked_example.json", language="bash")


def records(frame: pd.DataFrame) -> list[dict]:
    """Rows as dicts with missing values (NaN, NA) turned into None."""
    return [{k: (None if v is None or v is pd.NA or (isinstance(v, float) and v != v) else v) for k, v in r.items()}
            for r in frame.to_dict("records")]


def ensure_router() -> None:
    """Rerun once through app.py when Streamlit ran this page file on its own.

    With a `pages/` folder beside app.py, the very first session after the server starts runs the
    requested page in Streamlit's older folder-discovery mode, skipping app.py (no wide layout, no
    page titles) until some session opens the root URL. The guard switches Streamlit to app.py's
    navigation (the same flag st.navigation sets) and reruns once. Pages run directly by AppTest
    have no app.py as main script and are left alone.
    """
    if st.session_state.get("_router_ran"):
        return
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
        main = Path(ctx.pages_manager.main_script_path) if ctx is not None else None
    except Exception:  # noqa: BLE001 - internal API; without it, do nothing
        return
    if main is not None and main.name == "app.py" and not st.session_state.get("_router_rerun"):
        st.session_state["_router_rerun"] = True
        try:
            from streamlit.runtime.pages_manager import PagesManager

            PagesManager.uses_pages_directory = False
        except Exception:  # noqa: BLE001
            return
        st.rerun()
