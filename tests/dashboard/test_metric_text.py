"""How values are written for people: units, directions and thresholds from the metric registry,
"n/a" with reasons, readable p values, and exports that say when the data are illustrative."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from dashboard import charts
from dashboard.metric_text import blank_reason, ci_text, fmt_metric, row_label, thresholds_text
from dashboard.render import add_blank_reasons, scorecard_cells, summary_table, wide_table
from dashboard.study_view import descriptive_view, fmt_p, reproduction_view, significance_view
from pipeline import study


def test_row_labels_carry_unit_and_direction():
    assert row_label("uncited_sources") == "Uncited sources (%, ↓ better)"
    assert row_label("citation_accuracy") == "Citation accuracy (%, ↑ better)"
    assert row_label("n_sources") == "Sources (per answer)"
    assert row_label("confidence") == "Confidence (1–5)"
    assert row_label("dangling_citations") == "Dangling citations (per answer, ↓ better)"


def test_values_are_written_in_their_unit():
    assert fmt_metric(31.714, "uncited_sources") == "31.71%"
    assert fmt_metric(6.119, "n_sources") == "6.12"
    assert fmt_metric(None, "uncited_sources") == "n/a"
    assert fmt_metric(math.nan, "citation_accuracy") == "n/a"


def test_thresholds_follow_the_registry_bands():
    # Table 7: uncited sources acceptable below 5, borderline to 10; citation accuracy 90 / 50
    assert thresholds_text("uncited_sources") == "▲ below 5 · ● 5 to under 10 · ▼ 10 or more"
    assert thresholds_text("citation_accuracy") == "▼ below 50 · ● 50 to under 90 · ▲ 90 or more"
    assert thresholds_text("citation_accuracy", exact=True) == \
        "▼ problematic [0, 50); ● borderline [50, 90); ▲ acceptable [90, 100]"
    assert thresholds_text("n_sources") == "not rated"


def test_blank_reasons():
    assert blank_reason("one_sided", "E", {}, has_debate=False) == \
        "defined for debate queries only, and this selection has no debate queries"
    assert blank_reason("confidence", "E", {("E", "confidence"): "no confidence label"}, has_debate=True) == \
        "no confidence label"
    assert blank_reason("citation_f1", "E", {}, has_debate=True) == \
        "needs both citation precision and citation recall, and one of them has no value"
    assert ci_text(None, None, "citation_f1", 70.0, 5).startswith("n/a: a harmonic mean")
    assert ci_text(28.1, 35.2, "uncited_sources", 31.7, 151) == "[28.10%, 35.20%]"
    assert ci_text(None, None, "uncited_sources", None, 0) == "n/a: no value"


def _cells() -> pd.DataFrame:
    rows = []
    for engine, uncited, unsupported in (("Lumen", 8.75, 7.5), ("Parrot", 36.25, None)):
        for metric, value in (("uncited_sources", uncited), ("unsupported_statements", unsupported),
                              ("one_sided", None)):
            rating = None if value is None else ("borderline" if value < 10 else "problematic")
            rows.append({"engine": engine, "metric": metric, "query_type": "all", "value": value,
                         "ci_low": None, "ci_high": None, "n_answers": 8 if value is not None else 0,
                         "rating": rating})
    cells = scorecard_cells(pd.DataFrame(rows), "all")
    return add_blank_reasons(cells, {("Parrot", "unsupported_statements"): "no relevant statements"},
                             has_debate=False)


def test_wide_table_names_units_reasons_and_summary_metrics():
    table = wide_table(_cells()).set_index("Metric")
    assert list(table.columns[:3]) == ["Group", "Unit", "Better"]
    assert table.loc["Uncited sources", "Parrot"] == "36.25% ▼ (n=8)"
    assert table.loc["Uncited sources", "Thresholds"] == "▲ below 5 · ● 5 to under 10 · ▼ 10 or more"
    assert table.loc["Unsupported statements", "Parrot"] == "n/a"
    assert table.loc["Unsupported statements", "Why n/a"] == "Parrot: no relevant statements"
    assert table.loc["One-sided answer", "Why n/a"] == \
        "defined for debate queries only, and this selection has no debate queries"
    summary = summary_table(_cells())
    assert summary.loc["Sources", "Parrot"] == \
        "uncited sources: ▼ · unsupported statements: n/a"
    assert summary.loc["Answer text", "Lumen"] == "one-sided answer: n/a"


def test_exports_say_when_the_data_are_illustrative():
    cells = _cells()
    svg = charts.scorecard_svg(cells, title="t", illustrative=True)
    assert charts.ILLUSTRATIVE_NOTE in svg and "Uncited sources (%, ↓ better)" in svg
    assert "One-sided answer n/a: defined for debate queries only" in svg
    assert charts.ILLUSTRATIVE_NOTE not in charts.scorecard_svg(cells, title="t")
    tex = charts.scorecard_latex(cells, caption="Teaching corpus", illustrative=True)
    assert tex.startswith("% " + charts.ILLUSTRATIVE_NOTE)
    assert r"\caption{Illustrative teaching data: invented engines and answers; says nothing about any real " \
           r"product. Teaching corpus}" in tex
    assert r"36.25\% $\blacktriangledown$" in tex
    assert charts.ILLUSTRATIVE_NOTE not in charts.scorecard_latex(cells, caption="x")
    png = charts.scorecard_png(cells, title="t", illustrative=True)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(png) > len(charts.scorecard_png(cells, title="t"))  # the banner adds a drawn strip


def test_p_values_read_as_people_write_them():
    assert fmt_p(4.93e-06) == "4.93×10⁻⁶"
    assert fmt_p(7.780513e-53) == "7.78×10⁻⁵³"
    assert fmt_p(0.0123) == "0.012"
    assert fmt_p(0.001) == "0.001"
    assert fmt_p(math.nan, "too few participants") == "n/a: too few participants"


def test_sd_of_a_single_row_says_why():
    counts = study.validate_counts(pd.DataFrame([
        dict(participant="P1", session="s", engine="Lumen", query_id="q1", query_type="debate", alignment="none",
             hovered=3, clicked=1),
        dict(participant="P2", session="s", engine="Lumen", query_id="q1", query_type="debate", alignment="none",
             hovered=1, clicked=0),
        dict(participant="P3", session="s", engine="Parrot", query_id="q1", query_type="debate", alignment="none",
             hovered=2, clicked=2)]))
    view = descriptive_view(study.descriptive_table(counts))
    assert view.loc["SD", "hovered | Lumen"] == "1.41"  # sd of 3 and 1 = sqrt(2)
    assert view.loc["SD", "hovered | Parrot"] == "n/a: one row, no spread"
    main, more = significance_view(study.pair_tests(counts, "engine", "Lumen", "Parrot"))
    assert main.loc[0, "Student t"] == "n/a: too few participants"
    assert main.loc[0, "mean ± SD (second)"] == "2.00 (SD n/a: one row)"
    assert more.loc[0, "Mann-Whitney U"] == "1.0"  # U of Lumen (3, 1) vs Parrot (2): one win, one loss


@pytest.fixture(scope="module")
def repro():
    from pipeline.storage import paths

    if not all((paths.reference_dir() / f).is_file() for f in study.REFERENCE_FILES):
        pytest.skip("published study figures not in data/reference/")
    return study.reproduce(alpha=0.01)


def test_reproduction_says_what_the_paper_did_not_print(repro):
    view, more = reproduction_view(repro["tests"])
    assert more.iloc[0]["Cohen's d [95% CI]"] == "3.59 [3.09, 4.08]"
    table5 = view[view["table"] == "Table 5"]
    assert set(table5["t printed"]) == {"not printed in the paper"}
    first = view.iloc[0]
    assert first["t printed"] == "22.94" and first["p printed"] == "8.14×10⁻⁵³"


def test_exported_figures_say_why_each_na_cell_is_empty():
    """A PNG or SVG travels without the page: an engine's n/a cell gets its reason beneath the figure."""
    import pandas as pd

    from dashboard.charts import scorecard_svg

    rows = [{"engine": e, "group": "source_stance", "metric": "side_picked", "value": v, "ci_low": None, "ci_high": None,
             "n_answers": n, "rating": None, "symbol": "", "why_blank": why, "published_rating": None,
             "disagrees": False}
            for e, v, n, why in (("Lumen", None, 0, "no one-sided answer with two-sided sources"),
                                 ("Parrot", 1.0, 3, None))]
    svg = scorecard_svg(pd.DataFrame(rows))
    assert "n/a for Lumen: no one-sided answer with two-sided sources" in svg


def test_na_cells_of_some_engines_are_explained_on_the_page():
    """Parity rules leave some engines' rows n/a (ExpertQA's bing_chat and gpt4): one line per reason
    names the engines and metrics; a metric with no value for anyone is listed elsewhere."""
    import pandas as pd

    from dashboard.na_notes import partial_blank_notes

    skip = "paper-parity skips answers with no relevant statement or no fetched source"
    cells = pd.DataFrame([
        {"metric": "n_sources", "engine": "bing_chat", "value": None, "why_blank": skip},
        {"metric": "n_sources", "engine": "gpt4", "value": None, "why_blank": skip},
        {"metric": "n_sources", "engine": "rr_gs_gpt4", "value": 2.5, "why_blank": ""},
        {"metric": "uncited_sources", "engine": "bing_chat", "value": None, "why_blank": skip},
        {"metric": "uncited_sources", "engine": "rr_gs_gpt4", "value": 0.3, "why_blank": ""},
        {"metric": "confidence", "engine": "bing_chat", "value": None, "why_blank": "no confidence label"},
        {"metric": "confidence", "engine": "rr_gs_gpt4", "value": None, "why_blank": "no confidence label"},
    ])
    assert partial_blank_notes(cells) == [(skip, ["bing_chat", "gpt4"], ["Sources", "Uncited sources"])]
