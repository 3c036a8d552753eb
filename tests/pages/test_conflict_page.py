"""The Conflicting evidence page and the inspector's source-stance panel (AppTest), and the golden
dataset-level side table on hand-labelled answers (tests/fixtures/source_stance_answers.jsonl).

The fixture: four debate answers from two engines with recorded statement and source stances.
a1 (Engine A, leans agree): [1] news agree, [2] government disagree, [3] research agree.
a2 (Engine B, leans disagree): [1] encyclopedia disagree, [2] blog agree.
a3 (Engine A): balanced answer (one agree, one disagree statement): its sources are not counted.
a4 (Engine B, leans agree): [1] government agree, [2] news unknown (left out).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conflict_fixtures import write_probe_run
from tolerances import close

from pipeline.conflict import probe_ask, probe_run, sides
from pipeline.conflict.perturb import parse_perturbations
from pipeline.conflict.probe_data import load_probe_data
from pipeline.testing.fake_openai import FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "source_stance_answers.jsonl"
PAGE = str(ROOT / "pages" / "conflict.py")
INSPECTOR = str(ROOT / "pages" / "inspector.py")

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest  # noqa: E402


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    from pipeline.runner import run_dataset

    root = tmp_path_factory.mktemp("conflict") / "results"
    run_dataset("stance", FIXTURE, root=root, progress=False)
    write_probe_run(root)
    return root


@pytest.fixture(autouse=True)
def env(results, tmp_path, monkeypatch):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(results))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("AEE_STUDIES_DIR", str(tmp_path / "studies"))


def test_golden_side_table():
    from pipeline.importers.canonical import load_canonical

    rows = sides.side_rows(load_canonical(FIXTURE))
    assert sides.coverage(rows) == {"answers": 4, "sources": 9, "labelled": 8, "with_side": 8, "answers_with_side": 3}
    table = sides.side_summary(rows, "source_type").set_index(["engine", "group"])
    expected = {("Engine A", "news"): (1, 1), ("Engine A", "research/academic"): (1, 1), ("Engine A", "government"): (1, 0),
                ("Engine B", "encyclopedia"): (1, 1), ("Engine B", "government"): (1, 1), ("Engine B", "blog/commercial"): (1, 0)}
    assert {k: (r["sources_with_side"], r["on_answer_side"]) for k, r in table.iterrows()} == expected
    assert table.loc[("Engine A", "news"), "ci_low"] == pytest.approx(0.2065, abs=1e-4)  # Wilson 1 of 1
    # followed: Engine B's blog is cited by a neutral and a disagree statement: not followed
    assert table.loc[("Engine B", "blog/commercial"), ["followed", "followed_of"]].tolist() == [0, 1]
    assert table.loc[("Engine A", "government"), ["followed", "followed_of"]].tolist() == [0, 1]
    by_domain = sides.side_summary(rows, "domain")
    assert set(by_domain["group"]) == {"bbc.co.uk", "wildlife.gov", "pubmed.ncbi.nlm.nih.gov", "en.wikipedia.org",
                                       "zoo-critic.example.com", "education.gov"}


def test_page_shows_side_table_and_probe_run():
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    sides_table = next(d.value for d in at.dataframe if "on the answer's side" in d.value.columns)
    shown = sides_table.set_index(["engine", "source type"])
    assert shown.loc[("Engine A", "government"), "share (%)"] == close(0.0)
    assert shown.loc[("Engine B", "encyclopedia"), "share (%)"] == close(100.0)
    assert shown.loc[("Engine A", "news"), "95% interval (%)"] == "[20.7, 100.0]"
    assert len(at.get("plotly_chart")) == 1  # only the open tab is drawn
    at.session_state["cf_tab"] = "Convincingness probe"
    at.run()
    assert not at.exception and at.query_params["tab"] == "Convincingness probe"
    effects = next(d.value for d in at.dataframe if "effect (points)" in d.value.columns).set_index(["perturbation", "baseline"])
    # the scripted model always takes the prefixed passage's side: yes paragraphs then win every time
    assert effects.loc[("relevance_prefix", "control"), "effect (points)"] == close(50.0)
    assert effects.loc[("references", "control"), "effect (points)"] == close(0.0)
    assert any("illustrative question set" in w.body for w in at.warning)
    winrates = next(d.value for d in at.dataframe if "win-rate (%)" in d.value.columns)
    assert list(winrates["win-rate (%)"]) == close([50.0] * len(winrates))  # original variant: pure order bias cancels over both orders
    assert len(at.get("plotly_chart")) == 2
    at.selectbox(key="cf_variant").set_value("relevance_prefix").run()
    winrates = next(d.value for d in at.dataframe if "win-rate (%)" in d.value.columns)
    by_stance = winrates.groupby("stance")["win-rate (%)"]
    assert by_stance.min().to_dict() == close({"yes": 100.0, "no": 0.0}) and by_stance.max().to_dict() == close({"yes": 100.0, "no": 0.0})
    at.session_state["cf_tab"] = "Sources the answers side with"
    at.run()
    at.radio(key="cf_by").set_value("domain").run()
    assert not at.exception
    assert "en.wikipedia.org" in next(d.value for d in at.dataframe if "domain" in d.value.columns)["domain"].tolist()


def test_page_without_results_says_what_to_run(tmp_path, monkeypatch):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "empty"))
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    assert not at.exception
    assert "--judge offline" in "\n".join(i.body for i in at.info)
    at.session_state["cf_tab"] = "Convincingness probe"
    at.run()
    assert "probe conflict" in "\n".join(c.value for c in at.code)


def test_inspector_panel_lists_sources_by_stance():
    at = AppTest.from_file(INSPECTOR, default_timeout=60)
    at.run()
    at.selectbox(key="ins_dataset").set_value("stance").run()
    at.selectbox(key="ins_query").set_value("Should zoos be abolished?").run()
    at.selectbox(key="ins_engine").set_value("Engine A").run()
    assert not at.exception, at.exception
    assert any(s.value == "Sources by stance" for s in at.subheader)
    panel = next(d.value for d in at.dataframe if "statements follow it" in d.value.columns)
    assert panel["source"].tolist() == ["[1]", "[2]", "[3]"]
    assert panel["statements follow it"].tolist() == ["yes", "no", "yes"]
    assert panel["on the answer's side"].tolist() == ["yes", "no", "yes"]
    assert panel["type"].tolist() == ["news", "government", "research/academic"]
    metrics = next(d.value for d in at.dataframe if list(d.value.columns) == ["metric", "value", "over", "note"]).set_index("metric")
    assert metrics.loc["Pro sources", "value"] == "66.67%" and metrics.loc["Side picked from two-sided sources", "value"] == "100.00%"
    assert "None" not in panel.to_csv() and "nan" not in metrics.to_csv()
    assert any("3 listed sources: 2 agree, 1 disagree. The answer's statements lean to the question's side"
               in m.value.replace("\\", "") for m in at.markdown)


def test_dataset_without_debate_answers_offers_one_with_them(results, tmp_path, monkeypatch):
    """ExpertQA-like data (expertise questions only) says why the side table is empty and offers a
    dataset with debate answers; the offline judge's all-unknown stances get their own reason."""
    import shutil

    from pipeline.runner import run_dataset

    root = tmp_path / "results"
    shutil.copytree(results, root)
    run_dataset("eqa", ROOT / "tests" / "fixtures" / "expertqa_mini.jsonl", importer="expertqa", root=root, progress=False)
    monkeypatch.setenv("AEE_RESULTS_DIR", str(root))
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["shared_dataset"] = "eqa"
    at.run()
    assert not at.exception, at.exception
    # the page opens on a dataset it can show (issue 45), whatever another page had chosen
    assert at.selectbox(key="cf_dataset").value == "stance"
    at.selectbox(key="cf_dataset").set_value("eqa").run()  # chosen by hand: says why, offers one with sides
    assert at.selectbox(key="cf_dataset").value == "eqa"
    assert any("has no scored debate answers" in i.body for i in at.info)
    at.button(key="cf_switch_stance").click().run()
    assert at.selectbox(key="cf_dataset").value == "stance"
    assert any(d for d in at.dataframe if "on the answer's side" in d.value.columns)


def test_page_on_the_teaching_corpus_shows_sources_by_side(tmp_path, monkeypatch):
    """The bundled teaching corpus carries hand-labelled source stances (data/demo/README.md), so on a
    fresh clone the page has a side table. Expected counts worked out by hand from those labels: an
    answer's side is its statements' majority (lumen-q3 and lumen-q4 are balanced, so 10 answers
    count); .gov is government, .edu research/academic, .com/.org/.net blog/commercial. For example
    Parrot's research/academic row: transit-review (disagree) on parrot-q1, which leans agree;
    sleep-institute (agree) on parrot-q3, which leans disagree; civics-institute (agree) on
    parrot-q4, which leans agree: 3 sources, 1 on the answer's side."""
    from pipeline.runner import run_dataset

    root = tmp_path / "results"
    run_dataset("demo", ROOT / "data" / "demo" / "answers.jsonl", root=root, progress=False)
    monkeypatch.setenv("AEE_RESULTS_DIR", str(root))
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="cf_dataset").value == "demo" and at.selectbox(key="cf_judge").value == "recorded"
    captions = "\n".join(c.value.replace("\\", "") for c in at.caption)
    assert "12 debate answers list 47 sources; 45 have a known stance and 30 take a side. 10 answers lean one way" in captions
    table = next(d.value for d in at.dataframe if "on the answer's side" in d.value.columns).set_index(["engine", "source type"])
    got = {k: (r["sources with a side"], r["on the answer's side"]) for k, r in table.iterrows()}
    assert got == {("Lumen", "blog/commercial"): (4, 3), ("Lumen", "government"): (1, 1), ("Lumen", "research/academic"): (1, 0),
                   ("Parrot", "blog/commercial"): (5, 3), ("Parrot", "research/academic"): (3, 1), ("Parrot", "government"): (1, 1),
                   ("Quarry", "blog/commercial"): (7, 4), ("Quarry", "research/academic"): (2, 2), ("Quarry", "government"): (1, 1)}
    # Quarry's blog/commercial sources: parents-voice (q2) and the retail council (q3) disagree yet are
    # cited only by agreeing statements; liberty-forum (q4) is never cited: 6 cited, 4 followed
    assert table.loc[("Quarry", "blog/commercial"), ["cited", "followed", "cited with a side"]].tolist() == [6, 4, 6]


def test_judge_without_sides_shows_the_datasets_judge_with_them(tmp_path, monkeypatch):
    """On the teaching corpus the offline judge gives no listed source a side, while the corpus's
    recorded labels do: the page says why, and shows the recorded judge's table at once (no click),
    naming the judge it came from. The page opens the corpus with its recorded labels by default."""
    from pipeline.runner import run_dataset

    root = tmp_path / "results"
    for judge in ("offline", "recorded"):  # the first three answers: one debate question, three engines
        run_dataset("demo", ROOT / "data" / "demo" / "answers.jsonl", judge_name=judge, limit=3, root=root, progress=False)
    monkeypatch.setenv("AEE_RESULTS_DIR", str(root))
    fresh = AppTest.from_file(PAGE, default_timeout=60).run()
    assert fresh.selectbox(key="cf_judge").value == "recorded"  # the same default judge as every other page
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["cf_judge"] = "offline"
    at.run()
    assert not at.exception, at.exception
    info = " ".join(i.body for i in at.info)
    assert "has a source-stance label with a side under the offline judge" in info
    assert "Shown below: the recorded judge's labels" in info
    assert any(d for d in at.dataframe if "on the answer's side" in d.value.columns)
    assert any("(judge recorded)" in c.value.replace("\\", "") for c in at.caption)
    assert at.selectbox(key="cf_judge").value == "offline"  # the reader's choice stays as it was


def test_probe_tab_without_a_run_says_what_it_needs(tmp_path, monkeypatch):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "empty"))
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["tab"] = "Convincingness probe"
    at.run()
    assert not at.exception
    info = " ".join(i.body for i in at.info)
    assert "this tab needs a language model" in info and "OpenAI-compatible endpoint" in info
    assert any("aee probe conflict" in c.value for c in at.code)
