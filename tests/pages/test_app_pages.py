"""Smoke and interaction tests of the dashboard pages (AppTest on fixture Parquet).

The fixture runs the real pipeline on the Figure 7 worked example plus a few synthetic answers
from two more engines (one named like an HTML script tag), so filters change what the tables show.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
WORKED = ROOT / "tests" / "fixtures" / "worked_example.json"
HOSTILE = "<script>alert(1)</script>"
MY_PAGES = ("pages/home.py", "pages/tour.py", "pages/scorecard.py", "pages/confidence.py", "pages/judges.py",
            "pages/methodology.py")

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest  # noqa: E402


def _answer(answer_id: str, engine: str, query_type: str, field: str, cite: bool, confidence: int, stance: str) -> dict:
    return {
        "answer_id": answer_id, "engine": engine, "query": "Should cities ban cars downtown?" if query_type == "debate"
        else "How do vaccines train the immune system?", "query_type": query_type, "field": field,
        "answer": ("Cars pollute city air [1]. Bans help pedestrians [2]. Thanks for asking!" if cite
                   else "Cars pollute city air. Bans help pedestrians. Thanks for asking!"),
        "sources": [{"index": 1, "url": "https://x.example.org/1", "title": "One", "text": "air"},
                    {"index": 2, "url": "https://y.example.org/2", "title": "Two", "text": "walk"},
                    {"index": 3, "url": "https://z.example.org/3", "title": "Three", "text": "other"}],
        "labels": {"confidence": confidence, "statements": [
            {"text": "Cars pollute city air" + (" [1]." if cite else "."), "relevant": True, "stance": stance,
             "supported_by": [1]},
            {"text": "Bans help pedestrians" + (" [2]." if cite else "."), "relevant": True, "stance": stance,
             "supported_by": [3]},
            {"text": "Thanks for asking!", "relevant": False},
        ]},
    }


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """Fixture Parquet: fig7 + 'Second engine' (debate and expertise, two fields) + a hostile engine name."""
    from pipeline.runner import run_dataset

    tmp = tmp_path_factory.mktemp("app")
    worked = json.loads(WORKED.read_text())
    answers = [worked,
               _answer("second-debate", "Second engine", "debate", "Politics", True, 5, "agree"),
               _answer("second-bio", "Second engine", "expertise", "Biology", False, 3, "neutral"),
               _answer("second-law", "Second engine", "expertise", "Law", True, 2, "neutral"),
               _answer("hostile-1", HOSTILE, "expertise", "Biology", True, 4, "neutral")]
    worked_copy = copy.deepcopy(worked)
    worked_copy["answer_id"] = "fig7-expertise"
    worked_copy["query_type"] = "expertise"
    worked_copy["field"] = "Law"
    answers.append(worked_copy)
    path = tmp / "answers.jsonl"
    path.write_text("\n".join(json.dumps(a) for a in answers) + "\n")
    root = tmp / "results"
    run_dataset("fig7", path, root=root, progress=False)
    return root


@pytest.fixture
def app(results, monkeypatch, tmp_path) -> AppTest:
    monkeypatch.setenv("AEE_RESULTS_DIR", str(results))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception
    return at


def _goto(at: AppTest, page: str) -> AppTest:
    at.switch_page(page)
    at.run()
    assert not at.exception, at.exception
    return at


def _text(at: AppTest) -> str:
    """Everything the page wrote as text-like elements, plus table cells."""
    parts = [e.value for kind in ("title", "header", "subheader", "markdown", "caption", "code", "text")
             for e in getattr(at, kind)]
    parts += [e.body for kind in ("info", "warning", "success", "error") for e in getattr(at, kind)]
    for df in at.dataframe:
        parts.append(df.value.to_csv(index=False))
    return "\n".join(str(p) for p in parts)


def _plotly_specs(at: AppTest) -> list[str]:
    return [json.dumps(json.loads(e.proto.spec), ensure_ascii=False) for e in at.get("plotly_chart")]


def _grid(at: AppTest) -> str:
    """The scorecard grid's HTML (dashboard/scorecard_grid.py)."""
    import html

    return " ".join(html.unescape(e.proto.body) for e in at.get("html"))


def _scorecard_table(at: AppTest):
    """The wide text table (columns Group, Metric, one per engine)."""
    return next(df.value for df in at.dataframe if list(df.value.columns[:2]) == ["Group", "Metric"])


# ---- every page runs ---------------------------------------------------------------------------


@pytest.mark.parametrize("page", MY_PAGES)
def test_page_runs_without_exception(app, page):
    at = _goto(app, page)
    assert at.title, f"{page} has no title"


def test_router_lists_registry_pages_that_exist():
    from dashboard.pages_registry import PAGES

    titles = [p.title for p in PAGES]
    assert titles == ["Overview", "Start here", "Scorecard", "Confidence", "Answer inspector", "Compare", "Engine vs engine", "Re-score", "Judges",
                      "Audit the judge", "Usability study", "Conflicting evidence", "Over time", "Methodology"]
    assert all(p.path.is_file() for p in PAGES)
    assert sorted(p.script for p in PAGES) == sorted(f.name for f in (ROOT / "pages").glob("*.py"))
    for f in MY_PAGES:
        assert (ROOT / f).is_file()


def test_home_lists_dataset_engines_and_judge(app):
    at = _goto(app, "pages/home.py")
    text = _text(at)
    assert "fig7" in text and "Second engine" in text and "recorded" in text
    assert "aee run --dataset expertqa" in text
    # how to get each dataset: the same program the rest of the page names, with a real address
    assert "`aee import expertqa https://github.com/chaitanyamalaviya/ExpertQA`" in text
    assert "`aee import hagrid https://huggingface.co/datasets/miracl/hagrid`" in text
    assert "python -m pipeline" not in text
    # when the results were written, as the HTML report writes times (not a raw ISO stamp)
    import re

    shown = text.replace("\\", "")  # the caption's markdown escapes "-" and ":"
    assert re.search(r"Results written \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\.", shown), text


def test_expertqa_system_ids_are_explained_where_they_appear(app):
    from dashboard.render import engine_key

    # only ExpertQA's ids, each once, in the order given; nothing for other engines
    key = engine_key(["Example engine", "rr_gs_gpt4", "gpt4", "rr_gs_gpt4"])
    assert key.startswith("ExpertQA's systems: `rr_gs_gpt4`: retrieve then read") and key.count("`gpt4`") == 1
    assert "Example engine" not in key and engine_key(["Example engine", "Second engine"]) == ""
    # the Judges page's table of ExpertQA's published figures names all six systems: each one explained
    at = _goto(app, "pages/judges.py")
    shown = next(c.value for c in at.caption if c.value.startswith("ExpertQA's systems:"))
    for system in ("gpt4", "bing_chat", "rr_sphere_gpt4", "rr_gs_gpt4", "post_hoc_sphere_gpt4", "post_hoc_gs_gpt4"):
        assert f"`{system}`:" in shown
    # that table is static, so its last columns are in view rather than scrolled off to the right;
    # values as ExpertQA's Table 6 prints them (bing_chat, fine-tuned AutoAIS F1 .90)
    tables = [t.value.map(lambda v: str(v).replace("\\", "")).rename(columns=lambda c: str(c).replace("\\", ""))
              for t in at.table]
    printed = next(t for t in tables if "fine-tuned F1" in t.columns)  # cells and headers are escaped markdown
    assert len(printed.columns) == 11 and printed.set_index("system").loc["bing_chat", "fine-tuned F1"] == ".90"
    # a dataset without those engines gets no such line
    assert "ExpertQA's systems" not in _text(_goto(app, "pages/scorecard.py"))
    assert "ExpertQA's systems" not in _text(_goto(app, "pages/home.py"))


# ---- scorecard ---------------------------------------------------------------------------------


def _scorecard(app) -> AppTest:
    return _goto(app, "pages/scorecard.py")


def test_scorecard_shows_metrics_values_and_symbols(app):
    at = _scorecard(app)
    text = _text(at)
    assert "Citation accuracy" in text
    assert "Citation accuracy" in _grid(at)
    # debate queries only: the worked example alone -> its published numbers
    at.radio(key="scorecard_query_type").set_value("debate").run()
    assert not at.exception
    table = _scorecard_table(at)
    row = table[table["Metric"] == "Citation accuracy"].iloc[0]
    assert row["Example engine"].startswith("57.14% ●")
    assert (row["Unit"], row["Better"]) == ("%", "↑ higher")
    assert row["Thresholds"] == "▼ below 50 · ● 50 to under 90 · ▲ 90 or more"  # registry: higher_bands(90, 50)
    uncited = table[table["Metric"] == "Uncited sources"].iloc[0]
    assert uncited["Example engine"].startswith("0.00% ▲") and uncited["Better"] == "↓ lower"
    sources = table[table["Metric"] == "Sources"].iloc[0]
    assert sources["Unit"] == "per answer" and sources["Better"] == "descriptive" and "%" not in sources["Example engine"]
    summary_rows = table[table["Group"] == "Summary"]
    assert len(summary_rows) == 3 and summary_rows["Example engine"].str.contains("●").all()
    # summary cells name each metric beside its symbol
    citation = summary_rows[summary_rows["Metric"] == "Citation ratings"].iloc[0]["Example engine"]
    assert citation.startswith("citation accuracy: ●") and "citation thoroughness: " in citation


def test_scorecard_problematic_symbol_appears(app):
    at = _scorecard(app)
    table = _scorecard_table(at)
    assert table.to_csv().count("▼") >= 1


def test_query_type_filter_changes_table(app):
    at = _scorecard(app)
    all_table = _scorecard_table(at).copy()
    at.radio(key="scorecard_query_type").set_value("debate").run()
    debate_table = _scorecard_table(at)
    assert not all_table.equals(debate_table)
    assert HOSTILE not in debate_table.columns  # the hostile engine answered expertise only


def test_mode_filter_changes_table_and_forces_greedy(app):
    at = _scorecard(app)
    at.radio(key="scorecard_query_type").set_value("expertise").run()
    strict = _scorecard_table(at).copy()
    at.radio(key="scorecard_mode").set_value("parity").run()
    assert not at.exception
    parity = _scorecard_table(at)
    assert not strict.equals(parity)  # no-citation answer: undefined (strict) vs 1.0 (parity)
    assert "greedy" in _text(at)
    nec = [s for s in at.selectbox if s.label == "Source necessity"][0]
    assert nec.value == "greedy" and nec.disabled


def test_field_filter_recomputes(app):
    at = _scorecard(app)
    before = _scorecard_table(at).copy()
    at.multiselect(key="scorecard_fields").set_value(["Law"]).run()
    assert not at.exception
    after = _scorecard_table(at)
    assert not before.equals(after)
    assert HOSTILE not in after.columns


def test_published_toggle_flags_deeptrace_disagreement(app):
    """The disagreements listed are the chosen published scorecard's: AEE's printed ratings all match,
    DeepTRACE's do not (and the AEE view only says that other scorecards have some)."""
    at = _scorecard(app)
    at.toggle(key="scorecard_published").set_value(True).run()
    assert not at.exception
    text = _text(at).replace("\\", "")
    assert "Every rating printed in AEE (Venkit et al. 2024), Fig. 8a matches" in text
    assert not any("thresholds give" in df.value.columns for df in at.dataframe)  # no DeepTRACE rows under AEE
    assert "Other published scorecards with printed ratings that disagree: DeepTRACE 2025" in text
    at.selectbox(key="scorecard_published_source").set_value("deeptrace_gs").run()
    assert not at.exception
    flagged = next(df.value for df in at.dataframe if "thresholds give" in df.value.columns)
    assert sorted(flagged["engine"]) == ["Bing Copilot", "You.com"] and set(flagged["metric"]) == {"One-sided answer"}
    at.selectbox(key="scorecard_published_source").set_value("deeptrace_dr").run()
    assert not at.exception
    flagged = next(df.value for df in at.dataframe if "thresholds give" in df.value.columns)
    assert flagged[["engine", "metric"]].values.tolist() == [["YouChat (ARI)", "Relevant statements"]]
    assert "⚑" in _grid(at)


def test_exports_produce_bytes(results, monkeypatch):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(results))
    from dashboard import charts, data
    from dashboard.render import scorecard_cells

    summary = data.summary("fig7", "recorded", "strict", "exact")
    cells = scorecard_cells(summary, "all")
    svg = charts.scorecard_svg(cells, title="t & <b>")
    assert svg.startswith("<svg") and "&lt;b&gt;" in svg and "<script>" not in svg
    png = charts.scorecard_png(cells, title="t")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000
    tex = charts.scorecard_latex(cells, caption="50% of <x>_y")
    assert r"\begin{tabular}" in tex and r"50\% of \textless{}x\textgreater{}\_y" in tex
    assert r"\textless{}script\textgreater{}" in tex
    assert len(charts.parquet_bytes(cells.drop(columns=["published_rating"]))) > 100


def test_download_buttons_present(app):
    at = _scorecard(app)
    labels = {e.proto.label for e in at.get("download_button")}
    assert {"CSV", "Parquet", "LaTeX", "SVG", "PNG"} <= labels


def test_hostile_engine_name_is_not_rendered_as_html(app):
    for page in MY_PAGES:
        at = _goto(app, page)
        for kind in ("markdown", "caption"):
            for e in getattr(at, kind):
                if "script" in e.value and "alert" in e.value:
                    assert "<script>" not in e.value or not e.proto.allow_html, page
        for e in at.get("markdown"):
            if getattr(e.proto, "allow_html", False):
                assert HOSTILE not in e.proto.body, page
        for spec in _plotly_specs(at):
            assert HOSTILE not in spec, page
        for e in at.get("html"):
            assert HOSTILE not in e.proto.body, page
    at = _scorecard(app)
    assert "&lt;script&gt;" in " ".join(e.proto.body for e in at.get("html"))


# ---- confidence --------------------------------------------------------------------------------


def test_confidence_counts_and_published(app):
    at = _goto(app, "pages/confidence.py")
    table = next(df.value for df in at.dataframe if "Strongly confident" in df.value.columns)
    row = table[(table["split"] == "all") & (table["engine"] == "Example engine")].iloc[0]
    assert row["Confident"] == 2 and row["answers"] == 2  # fig7 (confidence 4) and its expertise copy
    bars = [e.proto.body for e in at.get("html")]
    assert len(bars) == 2 and "Perplexity" in bars[1] and not at.get("plotly_chart")  # computed | published, no bundle
    assert 'title="Example engine · Confident: 2 of 2 answers (100.0%)"' in bars[0]


# ---- judges ------------------------------------------------------------------------------------


def test_judges_without_agreement_says_what_to_run(app):
    at = _goto(app, "pages/judges.py")
    assert "aee judges evaluate" in _text(at)
    assert "GPT-4o" in _text(at)


def test_judges_with_saved_agreement_shows_confusion(results, monkeypatch, tmp_path):
    agree_root = tmp_path / "results_with_agreement"
    import shutil

    shutil.copytree(results, agree_root)
    monkeypatch.setenv("AEE_RESULTS_DIR", str(agree_root))
    from pipeline.judges.measure.agreement import save_agreement

    report = {"judge": "offline", "prompt_version": "offline-v1",
              "support": {"n": 10, "n_positive": 5, "auc": 0.8, "balanced_accuracy": 0.7, "kappa": 0.4, "kappa_3way": 0.3,
                          "precision": 0.7, "recall": 0.6, "f1": 0.65,
                          "confusion": {"rows": ["full", "partial", "none"], "cols": ["Complete", "Partial", "Incomplete"],
                                        "matrix": [[4, 1, 0], [1, 1, 0], [0, 1, 2]]}},
              "relevance": {"n": 6, "n_positive": 1, "balanced_accuracy": 0.9, "kappa": 0.8,
                            "confusion": {"rows": ["relevant", "filler"], "cols": ["relevant", "filler"],
                                          "matrix": [[4, 0], [1, 1]]}}}
    save_agreement(report, "expertqa", "offline")
    at = AppTest.from_file(str(ROOT / "pages" / "judges.py"), default_timeout=60)
    at.run()
    assert not at.exception
    confusions = [t.value for t in at.table if any("experts" in str(c) for c in t.value.columns)]
    assert len(confusions) == 2 and not at.get("plotly_chart")  # tables of counts, no chart bundle
    support = confusions[0].rename(columns=lambda c: c.replace("\\", ""), index=lambda i: i.replace("\\", ""))
    assert support.loc["judge offline: full", "experts: Complete"] == 4
    assert support.loc["judge offline: none", "experts: Incomplete"] == 2
    # a static table of escaped markdown (it wraps long statistic names at any width)
    summary = next(t.value for t in at.table if "statistic" in t.value.columns).map(lambda v: v.replace("\\", ""))
    summary.columns = [c.replace("\\", "") for c in summary.columns]
    summary = summary.set_index("statistic")
    assert summary.loc["support: Cohen's kappa (2 classes)", "offline on expertqa"] == "0.400"
    assert summary.loc["support: pairs compared", "offline on expertqa"] == "10"
    # the positive class named per task: the Complete column of the support matrix, the filler column of relevance
    assert summary.loc["support: of which the experts mark 'Complete'", "offline on expertqa"] == "5"
    assert summary.loc["relevance: of which the experts mark filler", "offline on expertqa"] == "1"


def test_judges_says_whether_each_measurement_is_held_out(results, monkeypatch, tmp_path):
    agree_root = tmp_path / "results_heldout"
    import shutil

    shutil.copytree(results, agree_root)
    monkeypatch.setenv("AEE_RESULTS_DIR", str(agree_root))
    from pipeline.judges.measure.agreement import save_agreement

    confusion = {"rows": ["full", "partial", "none"], "cols": ["Complete", "Partial", "Incomplete"],
                 "matrix": [[4, 1, 0], [1, 1, 0], [0, 1, 2]]}
    calibration = {"dataset": "expertqa", "fit_splits": "domain_val+domain_test", "fit_pairs": 1035,
                   "cv_auc": 0.654, "cv_balanced_accuracy": 0.61}
    held = {"judge": "offline", "support": {"n": 803, "auc": 0.696, "in_calibration": 0, "confusion": confusion},
            "calibration": calibration}
    seen = {"judge": "offline", "support": {"n": 974, "auc": 0.673, "in_calibration": 861, "confusion": confusion},
            "support_unseen": {"n": 113, "auc": 0.617, "balanced_accuracy": 0.579}, "calibration": calibration}
    save_agreement(held, "expertqa-rand_val", "offline")
    save_agreement(seen, "expertqa-domain_test", "offline")
    at = AppTest.from_file(str(ROOT / "pages" / "judges.py"), default_timeout=60)
    at.run()
    assert not at.exception
    table = next(df.value for df in at.table if "status" in df.value.columns).set_index("measurement")
    held, seen = table.loc["offline on expertqa-rand_val"], table.loc["offline on expertqa-domain_test"]
    assert held["held out"] == "yes" and held["status"] == "0 of 803 pairs from calibration questions"
    assert seen["held out"] == "no" and seen["status"] == "861 of 974 pairs from calibration questions"
    assert held["AUC, unseen pairs"] == "0.696"  # every pair unseen: the overall AUC
    assert seen["AUC, unseen pairs"] == "0.617"  # only the 113 unseen pairs
    assert held["cross-validated AUC / bal. acc."] == "0.654 / 0.610"
    assert held["calibrated on"] == "1035 pairs of domain_val + domain_test"


# ---- methodology -------------------------------------------------------------------------------


def test_methodology_has_parity_table_and_provenance(app):
    at = _goto(app, "pages/methodology.py")
    text = _text(at)
    assert "Paper parity versus strict" in text
    assert "Citation accuracy with no citations" in text
    assert "fig7" in text and "expertqa" in text


def test_grid_cells_are_tinted_by_rating_and_say_their_interval():
    """The HTML grid: each rating's tint, its symbol, n, and the interval in the cell's tooltip; data
    escaped; names break only at "_"."""
    import pandas as pd

    from dashboard.render import RATING_TINTS
    from dashboard.scorecard_grid import scorecard_html

    cells = pd.DataFrame([
        {"group": "citation", "metric": "citation_accuracy", "engine": "post_hoc_gs_gpt4", "value": 57.14,
         "ci_low": 40.0, "ci_high": 70.5, "n_answers": 7, "rating": "borderline", "published_rating": None,
         "disagrees": False, "why_blank": ""},
        {"group": "citation", "metric": "citation_accuracy", "engine": "<b>x</b>", "value": None, "ci_low": None,
         "ci_high": None, "n_answers": None, "rating": None, "published_rating": None, "disagrees": False,
         "why_blank": "no cited source"}])
    html = scorecard_html(cells)
    assert f'background:{RATING_TINTS["borderline"]}' in html and f'background:{RATING_TINTS[None]}' in html
    assert "57.14%<br><small>● n=7</small>" in html and "95% CI: [40.00, 70.50]" in html
    assert "post_<wbr>hoc_<wbr>gs_<wbr>gpt4" in html and "why: no cited source" in html
    assert "<b>x</b>" not in html and "&lt;b&gt;x" in html


# ---- ExpertQA opens on the metric groups that have values --------------------------------------


@pytest.fixture(scope="module")
def expertqa_results(tmp_path_factory) -> Path:
    from pipeline.runner import run_dataset

    root = tmp_path_factory.mktemp("eqa") / "results"
    run_dataset("expertqa", ROOT / "tests" / "fixtures" / "expertqa_mini.jsonl", root=root, progress=False)
    return root


def test_expertqa_scorecard_opens_on_groups_with_values(expertqa_results, monkeypatch, tmp_path):
    """No gold answers and no debate questions in ExpertQA: those groups start hidden, one line says
    which and why, rows without any value leave the grid (they stay listed with their reason), and
    turning a group on is kept in the address."""
    monkeypatch.setenv("AEE_RESULTS_DIR", str(expertqa_results))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file(str(ROOT / "pages" / "scorecard.py"), default_timeout=60).run()
    assert not at.exception
    groups = at.get("button_group")[0].value
    assert "correctness" not in groups and "source stance" not in groups and "citation" in groups
    hidden = next(c.value for c in at.caption if c.value.startswith("Not shown:")).replace("\\", "")
    assert "Answer correctness against gold answers** (no engine has a value here: no gold answer" in hidden
    assert "Source stance (debate queries)** (no engine has a value here: defined for debate queries only" in hidden
    spec = _grid(at)
    assert "Citation accuracy" in spec and "BLEU" not in spec and "Pro sources" not in spec
    assert "Statement agreement" not in spec  # n/a for every engine: listed below, not a grey row
    listed = "\n".join(m.value for m in at.markdown).replace("\\", "")
    assert "Metrics without a value here, and why" in listed and "- Statement agreement: defined for debate" in listed
    assert "- BLEU" not in listed  # its group is off: the caption above already says why
    at.toggle(key="scorecard_show_empty").set_value(True).run()
    assert "Statement agreement" in _grid(at) and at.query_params["empty"] == "show"


def test_judges_page_opens_with_its_verdict_and_explains_the_relevance_row(results, monkeypatch, tmp_path):
    """The conclusion comes first (not after ~7,000 px of tables), with the measured numbers, and the
    relevance row, near chance against the experts while every behavioural check passes, is explained."""
    import shutil

    from pipeline.judges.measure.agreement import save_agreement
    from pipeline.judges.measure.checks import checks_path

    root = tmp_path / "results_with_checks"
    shutil.copytree(results, root)
    monkeypatch.setenv("AEE_RESULTS_DIR", str(root))
    save_agreement({"judge": "offline", "prompt_version": "offline-v1",
                    "support": {"n": 803, "n_positive": 400, "auc": 0.666, "balanced_accuracy": 0.640},
                    "relevance": {"n": 889, "n_positive": 147, "recall": 6 / 147, "kappa": 0.047,
                                  "balanced_accuracy": 0.515}}, "expertqa-rand_val", "offline")
    import pandas as pd

    checks = pd.DataFrame([{"id": f"r{k}", "kind": "relevance", "capability": "greeting or pleasantry", "decidable": True,
                            "expected": "filler", "label": "filler", "passed": True, "abstained": False, "score": None,
                            "raw": "", "judge": "offline", "prompt_version": "offline-v1"} for k in range(4)])
    path = checks_path("offline", root)
    path.parent.mkdir(parents=True, exist_ok=True)
    checks.to_parquet(path, index=False)
    at = AppTest.from_file(str(ROOT / "pages" / "judges.py"), default_timeout=60).run()
    assert not at.exception
    assert [h.value for h in at.subheader][0] == "In short"
    verdict = at.markdown[0].value.replace("\\", "")
    assert "offline** on expertqa-rand_val: support agreement is fair, well short of the experts (AUC 0.67, " \
           "balanced accuracy 0.64, 803 pairs)" in verdict
    comment = at.info[0].body.replace("\\", "")
    assert "recall 0.04, 6 of 147 claims, kappa 0.05" in comment and "pass 100% of 4 relevance cases" in comment
    assert "conversational filler" in comment


def test_scorecard_cell_on_sources_without_text_says_how_little_was_judged(tmp_path, monkeypatch):
    """One engine's sources have text, the other's are URLs only: the second's support cells are
    n/a with the judged share and the reason in the table, the hover and the detail tab."""
    from pipeline.runner import run_dataset

    def answer(k: int, engine: str, with_text: bool) -> dict:
        return {"answer_id": f"{engine}-{k}", "engine": engine, "query": f"How do bridges carry load {k}?",
                "query_type": "expertise", "answer": "Steel carries tension [1]. Stone carries compression [2].",
                "sources": [{"index": 1, "url": "https://a.example.org/steel", "text": "Steel carries tension" if with_text else ""},
                            {"index": 2, "url": "https://b.example.org/stone", "text": "Stone carries compression" if with_text else ""}]}

    path = tmp_path / "bridges.jsonl"
    path.write_text("\n".join(json.dumps(answer(k, e, e == "Texted")) for k in range(3) for e in ("Texted", "Bare")) + "\n")
    root = tmp_path / "results"
    run_dataset("bridges", path, judge_name="scripted", root=root, progress=False, use_cache=False)
    monkeypatch.setenv("AEE_RESULTS_DIR", str(root))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file(str(ROOT / "pages" / "scorecard.py"), default_timeout=60)
    at.query_params.update({"dataset": "bridges", "judge": "scripted"})
    at.run()
    assert not at.exception, at.exception
    table = _scorecard_table(at).set_index("Metric")
    # the scripted judge finds every statement fully supported by the source it cites (word overlap)
    assert table.loc["Unsupported statements", "Texted"].startswith("0.00% ▲ (n=3)")
    assert table.loc["Unsupported statements", "Bare"] == "n/a (0% judged)"
    assert table.loc["Unsupported statements", "Why n/a"] == "Bare: none of the statements judged (sources without text)"
    assert table.loc["Citation accuracy", "Why n/a"] == "Bare: none of the citations judged (sources without text)"
    hover = _grid(at)
    assert "why: none of the statements judged (sources without text)" in hover and "0% judged" in hover
    at.session_state["scorecard_tab"] = "Values with intervals"  # only the open tab is drawn
    at.run()
    detail = next(df.value for df in at.dataframe if "judged" in df.value.columns).set_index(["metric", "engine"])
    assert detail.loc[("Unsupported statements", "Bare"), "value"] == "n/a: none of the statements judged (sources without text)"
    assert detail.loc[("Unsupported statements", "Bare"), "judged"] == "0% of statements"
    assert detail.loc[("Unsupported statements", "Texted"), "judged"] == "all statements"
