"""What a corrected value estimates, said on every number, and the experts' own scorecard told apart
from it (issue 30): a support audit corrects support labels only, so its corrected value is the
scorecard of the people's support labels under the judge's relevance; ExpertQA's experts also give
relevance, which corrects the relevance metric itself, and `aee scorecard --judge human` (the experts
deciding everything) is printed beside, named as what it is. On the two-answer ExpertQA file of the
tests, with the scripted judge audited and the experts standing in for the annotators."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from answer_fixtures import EQA_MINI
from tolerances import close

pytest.importorskip("ppi_py", reason="the `audit` extra (ppi-python) is not installed")

from pipeline.audit.humans import expert_labels  # noqa: E402
from pipeline.audit.ppi_cells import ESTIMANDS  # noqa: E402
from pipeline.audit.sample import draw_sample, register  # noqa: E402
from pipeline.audit.scorecard import ALL_ENGINES, ppi_scorecard  # noqa: E402
from pipeline.cli import main  # noqa: E402
from pipeline.records import Verdict  # noqa: E402
from pipeline.storage.store import read_table, table_path  # noqa: E402

JUDGE = "scripted"


@pytest.fixture(scope="module")
def eqa(tmp_path_factory):
    from pipeline.runner import run_dataset

    root = tmp_path_factory.mktemp("ppi_estimand") / "results"
    run_dataset("eqa-mini", EQA_MINI, importer="expertqa", root=root, progress=False)  # the experts: `human`
    run_dataset("eqa-mini", EQA_MINI, importer="expertqa", judge_name=JUDGE, root=root, progress=False, use_cache=False)
    samples = {}
    for unit in ("pair", "statement"):  # a census of each unit
        s = draw_sample("eqa-mini", JUDGE, 10_000, seed=0, unit=unit, root=root)
        register(s, root)
        samples[unit] = s.sample_id
    return root, samples


def _experts_cell(root, metric: str, engine: str | None) -> float:
    """The experts' own scorecard cell by hand: the strict per-answer values of the `human` judge, averaged."""
    m = read_table(table_path("eqa-mini", "metrics", "human", root))
    part = m[(m["mode"] == "strict") & (m["necessity"] == "exact") & (m["metric"] == metric)]
    if engine is not None:
        part = part[part["engine"] == engine]
    return float(part["value"].dropna().mean()) * 100


def test_expert_labels_give_relevance_for_statement_items():
    items = pd.DataFrame({"item_id": ["s-a", "s-b", "s-c"], "answer_id": ["q1", "q1", "q1"], "statement_index": [0, 1, 2]})
    verdicts = [Verdict("q1", "relevance", "relevant", "human:expertqa", "x", statement_index=0),
                Verdict("q1", "relevance", "filler", "human:expertqa", "x", statement_index=1),
                Verdict("q1", "relevance", "filler", "offline", "x", statement_index=2)]  # a judge's, not the experts'
    # statement 2 of an answer the experts labelled, without a relevance of theirs: their "can't tell"
    # (a judge's label is never taken for theirs)
    assert expert_labels(items, verdicts) == {"s-a": {"relevant": "relevant"}, "s-b": {"relevant": "filler"},
                                              "s-c": {"relevant": "cant_tell"}}
    other = pd.DataFrame({"item_id": ["s-d"], "answer_id": ["q2"], "statement_index": [0]})
    assert expert_labels(other, verdicts) == {}  # an answer the experts never saw: no label at all


def test_every_corrected_row_names_its_estimand_and_the_experts_own_value_stands_beside(eqa):
    root, samples = eqa
    out = ppi_scorecard("eqa-mini", JUDGE, samples=samples, human="experts", root=root)
    assert "the judge's relevance" in out["estimands"]["pair"] and "--judge human" in out["experts_scorecard"]
    rows = {(r["metric"], r["domain"]): r for r in out["rows"]}
    for metric in ("unsupported_statements", "citation_accuracy"):
        for domain in (ALL_ENGINES, "bing_chat", "gpt4"):
            r = rows[(metric, domain)]
            assert r["estimand"] == ESTIMANDS["pair"] == "the people's support labels, the judge's relevance"
            engine = None if domain == ALL_ENGINES else domain
            assert r["experts_value"] == close(_experts_cell(root, metric, engine), 1e-9), (metric, domain)
    # the experts gave relevance too: a census of it gives back the experts' own relevant statements exactly
    r = rows[("relevant_statements", ALL_ENGINES)]
    assert r["estimand"] == ESTIMANDS["statement"] and r["reason"] == ""
    expected = _experts_cell(root, "relevant_statements", None)
    assert expected < 100.0  # gpt4's first claim is "Uninformative": filler
    assert r["ppi"] == close(expected, 1e-9) and r["experts_value"] == close(expected, 1e-9)
    assert (r["ppi_low"], r["ppi_high"]) == close((expected, expected), 1e-9)
    # ExpertQA has no debate question: the debate-only rows say so instead of asking for labels
    assert rows[("one_sided", ALL_ENGINES)]["ppi"] is None
    assert rows[("one_sided", ALL_ENGINES)]["reason"].startswith("no debate question here")


def test_the_cli_states_the_estimand_and_the_experts_own_value(eqa, monkeypatch, capsys):
    root, samples = eqa
    monkeypatch.setenv("AEE_RESULTS_DIR", str(root))
    args = ["scorecard", "--dataset", "eqa-mini", "--judge", JUDGE, "--ppi", "--human", "experts",
            "--sample", samples["pair"], "--sample", samples["statement"]]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "Unsupported statements: (PPI and human: the people's support labels, the judge's relevance)" in text
    assert "estimate the scorecard with the people's support labels" in text
    line = next(x for x in text.splitlines() if x.startswith("Unsupported statements:"))
    first = text.splitlines()[text.splitlines().index(line) + 1]
    assert first.lstrip().startswith(ALL_ENGINES) and "experts' own " in first
    assert f"experts' own {_experts_cell(root, 'unsupported_statements', None):.1f}" in first
    assert main([*args, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert all(r["estimand"] for r in printed["rows"] if r["metric"] != "uncited_sources")
