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
from typing import Any, Iterable

import pandas as pd
import streamlit as st

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
DIRECTION_WORDS = {"higher_is_better": "higher is better", "lower_is_better": "lower is better", "neutral": "no direction"}

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:&=^%@/;,?\"'])")


def md_escape(text: object) -> str:
    """Text safe to place inside st.markdown: every ASCII punctuation mark is backslash-escaped
    (CommonMark allows that for all of them), so no link, image, HTML tag, autolink, `:colour[]`
    directive, emoji shortcode or `$math$` can form. Newlines become spaces."""
    s = "" if text is None else str(text)
    s = s.replace("\r", " ").replace("\n", " ")
    return _MD_SPECIAL.sub(r"\\\1", s)


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
                })
    return pd.DataFrame(rows, columns=["group", "metric", "label", "engine", "value", "ci_low", "ci_high",
                                       "n_answers", "rating", "symbol", "published_rating", "disagrees"])


def group_summaries(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per rated group: the symbols of its metrics per engine ("▲ ▲ ●")."""
    rated = cells[cells["metric"].map(lambda m: bool(METRICS[m].bands))]
    rows = []
    for group in [g for g in GROUP_ORDER if g in set(rated["group"])]:
        part = rated[rated["group"] == group]
        for engine in dict.fromkeys(cells["engine"]):
            symbols = [s or "–" for s in part.loc[part["engine"] == engine, "symbol"]]
            rows.append({"group": group, "engine": engine, "symbols": " ".join(symbols)})
    return pd.DataFrame(rows, columns=["group", "engine", "symbols"])


def wide_table(cells: pd.DataFrame, with_n: bool = True) -> pd.DataFrame:
    """The scorecard as a text table: one row per metric, one column per engine ("57.14 ● (n=1)"),
    plus the summary rows of symbols per group. Suitable for st.dataframe and CSV."""
    engines = list(dict.fromkeys(cells["engine"]))
    rows = []
    for (group, name), part in cells.groupby(["group", "metric"], sort=False):
        row = {"Group": group_title(group), "Metric": METRICS[name].label}
        for rec in records(part):
            text = fmt_value(rec["value"])
            if rec["symbol"]:
                text += f" {rec['symbol']}"
            if with_n and rec["n_answers"]:
                text += f" (n={int(rec['n_answers'])})"
            row[rec["engine"]] = text
        rows.append(row)
    for group, part in group_summaries(cells).groupby("group", sort=False):
        row = {"Group": "Summary", "Metric": group_title(group)}
        row.update(dict(zip(part["engine"], part["symbols"])))
        rows.append(row)
    return pd.DataFrame(rows, columns=["Group", "Metric", *engines])


def rating_legend() -> str:
    """A markdown legend of the three ratings (fixed text, safe)."""
    return " · ".join(f"{RATING_SYMBOLS[r]} {r}" for r in ("acceptable", "borderline", "problematic")) + " · – not rated"


def caption(text: object) -> None:
    """st.caption of data-derived text, escaped."""
    st.caption(md_escape(text))


def colour(rating: str | None) -> str:
    """The registry colour of a rating (grey when unrated)."""
    return RATING_COLOURS.get(rating, "#6b7280") if isinstance(rating, str) else "#6b7280"


def pick_dataset(key: str, label: str = "Dataset", where=None, prefer=None) -> str | None:
    """A dataset selectbox that opens on the dataset chosen on another page (shared state set in
    app.py) and marks illustrative datasets in its labels. None when there are no results."""
    from dashboard import data

    names = data.datasets()
    if not names:
        return None
    default = data.default_dataset(names, prefer)
    index = names.index(default) if default in names else 0
    target = where or st
    return target.selectbox(
        label, names, index=index, key=key, on_change=data.remember_dataset, args=(key,),
        format_func=lambda n: f"{n} (illustrative)" if data.is_illustrative(n) else n,
    )


def no_results_message() -> None:
    """What to do when no results exist yet."""
    st.warning("No results found in the results folder. Produce some first, for example:")
    st.code("python -m pipeline run --dataset demo\n"
            "python -m pipeline run --dataset fig7 --path tests/fixtures/worked_example.json", language="bash")


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
