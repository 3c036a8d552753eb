"""The Engine vs engine page (issue 45 item 4): `aee compare --engines A,B` for any two engines of a
dataset, on a page. Its numbers are the command's (the same functions, the same defaults), its
choices live in the address, and a dataset with one engine says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest  # noqa: E402

from pipeline.cli import main as cli_main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "engines.py")


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    from pipeline.runner import run_dataset

    root = tmp_path_factory.mktemp("engine_pair") / "results"
    run_dataset("demo", progress=False, root=root)
    return root


@pytest.fixture
def env(results, monkeypatch, tmp_path):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(results))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))


def _table(at: AppTest):
    return next(t.value for t in at.table if "verdict" in t.value.columns).map(lambda v: str(v).replace("\\", ""))


def test_the_page_prints_the_numbers_aee_compare_prints(env, capsys):
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params.update({"dataset": "demo", "judge": "recorded", "engine": "Lumen", "engine_b": "Parrot"})
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="pair_a").value == "Lumen" and at.selectbox(key="pair_b").value == "Parrot"
    assert cli_main(["compare", "--dataset", "demo", "--judge", "recorded", "--engines", "Lumen,Parrot", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)["comparisons"][0]
    table = _table(at).set_index("metric")
    assert len(table) == len(cli["differences"]) > 10
    for d in cli["differences"]:
        row = table.loc[d["label"]]
        unit = " points" if d["unit"] == "percent" else ""
        assert row["Lumen − Parrot [95% interval]"] == f"{d['diff']:+.1f}{unit} [{d['ci_low']:.1f}, {d['ci_high']:.1f}]"
        if d["p_holm"] < 0.001:  # a rounded 0.000 would read as "impossible"
            assert row["Holm p"] == "< 0.001"
        else:
            assert float(row["Holm p"]) == pytest.approx(d["p_holm"], abs=5e-4)
        assert row["verdict"] == ("real difference" if d["real"] else "within noise")
    words = " ".join(str(m.value).replace("\\", "") for m in at.markdown)
    real = [d for d in cli["differences"] if d["real"]]
    assert real and all(d["words"] in words for d in real)  # the verdicts in the command's own words
    assert any(d["p_holm"] < 0.001 for d in cli["differences"])  # the demo pair has such a row
    assert f"The other {len(cli['differences']) - len(real)} of {len(cli['differences'])} metrics are within noise" in words
    assert "aee compare --dataset demo --judge recorded --engines \"Lumen,Parrot\"" in at.code[0].value


def test_choosing_other_engines_writes_the_address(env):
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params.update({"dataset": "demo", "judge": "recorded"})
    at.run()
    at.selectbox(key="pair_a").set_value("Quarry").run()
    assert not at.exception, at.exception
    assert at.query_params["engine"] in ("Quarry", ["Quarry"])
    b = at.selectbox(key="pair_b").value
    assert b != "Quarry" and at.query_params["engine_b"] in (b, [b])
    assert list(_table(at).columns[:2]) == ["metric", "verdict"]  # the verdict first: what a phone shows


def test_the_page_is_in_the_registry():
    from dashboard.pages_registry import PAGES

    assert any(p.script == "engines.py" and p.title == "Engine vs engine" for p in PAGES)
