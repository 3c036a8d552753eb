"""A support audit that asks relevance too (issue 30): whole answers, every statement's relevance and
every checkable pair's support, so the corrected support metrics estimate the people's scorecard
itself (their relevance and support), not their support under the judge's relevance.

On the two-answer ExpertQA file of the tests (tests/fixtures/expertqa_mini.jsonl), with the scripted
judge audited and the experts standing in for the annotators. By hand, from the file:
  * gpt4: claim 0 is "Uninformative" (filler), claim 1 "Complete" [1], claim 2 "N/A" [2] (its
    source has no text: undecided), claim 3 "Partial" [1]. Relevant and decided: 1 (supported) and
    3 (not fully): unsupported 1/2 = 50.0; citations 1 accurate of 2 decided = 50.0.
  * bing_chat: four relevant claims; 0 and 1 "Complete", 2 "Partial", 3 "Incomplete": unsupported
    2/4 = 50.0; citations [1][2] + [1] accurate, [2] and [3] not: 3/5 = 60.0.
The scripted judge calls gpt4's claim 0 relevant, so a support-only audit counts it (uncited, so
unsupported): 2/3 = 66.7 there, which is the judge's relevance speaking.
"""

from __future__ import annotations

import pandas as pd
import pytest
from answer_fixtures import EQA_MINI
from tolerances import close

pytest.importorskip("ppi_py", reason="the `audit` extra (ppi-python) is not installed")

from pipeline.audit import CANT_TELL  # noqa: E402
from pipeline.audit.humans import expert_labels  # noqa: E402
from pipeline.audit.population import item_asks  # noqa: E402
from pipeline.audit.ppi import unit_values  # noqa: E402
from pipeline.audit.ppi_cells import ESTIMANDS, ppi_rows  # noqa: E402
from pipeline.audit.sample import draw_sample, register  # noqa: E402
from pipeline.audit.scorecard import ALL_ENGINES, domains, judge_values, ppi_scorecard  # noqa: E402
from pipeline.cli import main  # noqa: E402
from pipeline.storage.tables import load_annotated  # noqa: E402

JUDGE = "scripted"
GPT4, BING = "expertqa_mini:2:gpt4", "expertqa_mini:1:bing_chat"


@pytest.fixture(scope="module")
def eqa(tmp_path_factory):
    from pipeline.runner import run_dataset

    root = tmp_path_factory.mktemp("ppi_relevance") / "results"
    run_dataset("eqa-mini", EQA_MINI, importer="expertqa", root=root, progress=False)  # the experts: `human`
    run_dataset("eqa-mini", EQA_MINI, importer="expertqa", judge_name=JUDGE, root=root, progress=False, use_cache=False)
    with_relevance = draw_sample("eqa-mini", JUDGE, 10_000, unit="pair", relevance=True, root=root)
    support_only = draw_sample("eqa-mini", JUDGE, 10_000, unit="pair", root=root)
    for s in (with_relevance, support_only):
        register(s, root)
    return root, with_relevance, support_only


def test_the_frame_holds_whole_answers_a_relevance_item_before_each_statements_pairs(eqa):
    _, s, old = eqa
    assert s.meta["relevance"] is True and s.sample_id == "eqa-mini-scripted-pair-rel-n10000-s0"
    assert sorted(s.frame["cluster_id"]) == [BING, GPT4]  # answers are the clusters
    gpt4 = s.items[s.items["cluster_id"] == GPT4]
    # every statement asks relevance (claim 0 and claim 2 have no checkable pair: relevance only),
    # then the support of each pair whose source has text
    assert [(int(r.statement_index), item_asks(r._asdict()), int(r.source_index)) for r in gpt4.itertuples()] == [
        (0, "relevant", -1), (1, "relevant", -1), (1, "support", 1), (2, "relevant", -1), (3, "relevant", -1),
        (3, "support", 1)]
    assert list(gpt4["position"]) == list(range(6)) and gpt4["item_id"].str[:2].tolist() == ["s-", "s-", "p-", "s-", "s-", "p-"]
    assert int(s.frame.loc[s.frame["cluster_id"] == GPT4, "n_items"].iloc[0]) == 6
    assert old.meta["relevance"] is False and "asks" in old.items.columns and set(old.items["asks"]) == {"support"}


def test_a_census_with_the_experts_gives_their_own_scorecard_by_hand(eqa):
    root, s, old = eqa
    out = ppi_scorecard("eqa-mini", JUDGE, samples={"pair": s.sample_id}, human="experts", root=root)
    rows = {(r["metric"], r["domain"]): r for r in out["rows"]}
    expected = {("unsupported_statements", "gpt4"): 50.0, ("unsupported_statements", "bing_chat"): 50.0,
                ("unsupported_statements", ALL_ENGINES): 50.0, ("citation_accuracy", "gpt4"): 50.0,
                ("citation_accuracy", "bing_chat"): 60.0, ("citation_accuracy", ALL_ENGINES): 55.0}
    for key, value in expected.items():
        r = rows[key]
        assert r["ppi"] == close(value, 1e-9) and (r["ppi_low"], r["ppi_high"]) == close((value, value), 1e-9), key
        assert r["experts_value"] == close(value, 1e-9), key  # `aee scorecard --judge human` itself
        assert r["estimand"] == ESTIMANDS["pair+relevance"] == "the people's relevance and support labels"
    assert "pair+relevance" in out["estimands"] and "pair" not in out["estimands"]
    # "judge biased" reads the judge-only value as printed against the corrected interval as printed
    for r in out["rows"]:
        if r["ppi_low"] is not None and r["judge_only"] is not None:
            outside = not (r["ppi_low"] - 1e-9 <= r["judge_only"] <= r["ppi_high"] + 1e-9)
            assert r["biased"] is outside and r["bias"] == close(r["judge_only"] - r["ppi"], 1e-9), r
    assert rows[("unsupported_statements", "gpt4")]["biased"] is True  # the judge says 100.0, the experts 50.0
    # the experts' own scorecard is what this sample's corrected values estimate, and the note says so
    assert "the corrected values estimate it" in out["experts_scorecard"]
    # no people-only value for a metric nobody labels
    uncited = rows[("uncited_sources", ALL_ENGINES)]
    assert uncited["human"] is None and uncited["ppi"] == uncited["judge_only"]
    # the support-only audit of the same labels keeps the judge's relevance: gpt4's filler claim counts
    before = {(r["metric"], r["domain"]): r for r in
              ppi_scorecard("eqa-mini", JUDGE, samples={"pair": old.sample_id}, human="experts", root=root)["rows"]}
    assert before[("unsupported_statements", "gpt4")]["ppi"] == close(200 / 3, 1e-9)


def test_the_same_sample_corrects_relevant_statements_where_no_statement_sample_was_drawn(eqa):
    root, s, _ = eqa
    out = ppi_scorecard("eqa-mini", JUDGE, samples={"pair": s.sample_id}, human="experts", root=root)
    rows = {(r["metric"], r["domain"]): r for r in out["rows"]}
    # by hand: bing_chat's four claims are all informative (100%), gpt4's first is not (3 of 4: 75%)
    for domain, value in ((ALL_ENGINES, 87.5), ("bing_chat", 100.0), ("gpt4", 75.0)):
        r = rows[("relevant_statements", domain)]
        assert r["ppi"] == close(value, 1e-9) and r["experts_value"] == close(value, 1e-9), domain
        assert r["estimand"] == ESTIMANDS["statement"] and r["sample_id"] == s.sample_id
    assert set(out["estimands"]) == {"pair+relevance", "pair+relevance:relevance"}
    assert out["samples"] == {"pair": s.sample_id, "relevance": s.sample_id}


def test_an_unlabelled_statement_sample_does_not_hide_the_labelled_relevance_sample(eqa, monkeypatch):
    from pipeline.audit.labels import LabelStore, labels_path
    from pipeline.audit.scorecard import pick_samples

    root, s, _ = eqa
    store = LabelStore(labels_path(root))
    empty = draw_sample("eqa-mini", JUDGE, 10_000, unit="statement", root=root, sample_id="empty-statements")
    register(empty, root)
    assert pick_samples("eqa-mini", JUDGE, store, root).get("relevance") is None  # nobody labelled either yet
    first = s.items[s.items["asks"] == "relevant"].iloc[0]["item_id"]
    store.record(s.sample_id, first, "Bo", "relevant", "filler")
    chosen = pick_samples("eqa-mini", JUDGE, store, root)
    assert chosen["statement"] == "empty-statements" and chosen["relevance"] == s.sample_id
    out = ppi_scorecard("eqa-mini", JUDGE, root=root)
    row = next(r for r in out["rows"] if r["metric"] == "relevant_statements" and r["domain"] == ALL_ENGINES)
    assert row["sample_id"] == s.sample_id and row["labelled_units"] == 0  # one item of an answer: not complete
    assert "label 2 answers" in row["reason"]


def test_experts_cant_tell_where_they_judged_a_claim_without_a_decided_label(eqa):
    root, s, _ = eqa
    truth = load_annotated("eqa-mini", "human", root)
    labels = expert_labels(s.items, [v for a in truth.values() for v in a.verdicts])
    gpt4 = s.items[s.items["cluster_id"] == GPT4]
    # every item of the census has the experts' answer (claim 2's "N/A" has no pair item: its source has no text)
    assert set(labels) == set(s.items["item_id"])
    assert [labels[i] for i in gpt4["item_id"]][0] == {"relevant": "filler"}


def test_a_draw_says_which_engines_can_never_show_a_corrected_value():
    from pipeline.audit.ppi_cells import short_cells
    from pipeline.audit.sample import Sample

    # engine A: 30 answers, 12 drawn (needs 20); engine B: 6 answers, all drawn (needs its 6)
    frame = pd.DataFrame({"cluster_id": [f"A{i}" for i in range(30)] + [f"B{i}" for i in range(6)],
                          "engine": ["A"] * 30 + ["B"] * 6, "n_items": [10] * 36})
    items = pd.DataFrame({"cluster_id": [f"A{i}" for i in range(12)] + [f"B{i}" for i in range(6)]})
    sample = Sample({"unit": "pair", "relevance": True}, items, frame)
    assert short_cells(sample) == ["A: 12 of its 30 answers drawn; its corrected values need 20 labelled answers "
                                   "(draw about 80 items more, or read its row as the judge's only)"]


def _census_rows(eqa, change):
    """ppi_rows of unsupported statements on the relevance census, the experts' labels edited by `change`."""
    root, s, _ = eqa
    answers = load_annotated("eqa-mini", JUDGE, root)
    truth = load_annotated("eqa-mini", "human", root)
    labels = expert_labels(s.items, [v for a in truth.values() for v in a.verdicts])
    change(s.items, labels)
    units = unit_values("unsupported_statements", s, answers, labels)
    values = judge_values("eqa-mini", JUDGE, root)
    masks = domains(sorted(values["engine"].dropna().unique()))
    return {r.domain: r for r in ppi_rows("unsupported_statements", units, s,
                                          values[values["metric"] == "unsupported_statements"], masks)}


def test_an_answer_the_people_leave_without_a_value_drops_out_of_the_mean(eqa):
    def gpt4_all_filler(items: pd.DataFrame, labels: dict) -> None:
        for r in items[(items["cluster_id"] == GPT4) & (items["asks"] == "relevant")].itertuples():
            labels[r.item_id] = {"relevant": "filler"}
        # and bing_chat's claim 3 fully supported: 1 of its 4 statements unsupported
        claim_3 = items[(items["cluster_id"] == BING) & (items["asks"] == "support") & (items["statement_index"] == 3)]
        labels[claim_3.iloc[0]["item_id"]] = {"support": "full"}

    rows = _census_rows(eqa, gpt4_all_filler)
    # no relevant statement in gpt4's answer: the people's mean over all engines is bing_chat's alone
    assert rows["bing_chat"].ppi == close(25.0, 1e-9)
    assert rows[ALL_ENGINES].ppi == close(25.0, 1e-9)
    assert rows["gpt4"].ppi is None and "leave no labelled answer here with a value" in rows["gpt4"].reason


def test_cant_tell_on_relevance_counts_the_statement_as_content(eqa):
    def unsure_of_claim_0(items: pd.DataFrame, labels: dict) -> None:
        first = items[(items["cluster_id"] == GPT4) & (items["asks"] == "relevant")].iloc[0]
        labels[first["item_id"]] = {"relevant": CANT_TELL}

    # gpt4's uncited claim 0 then counts (unsupported): 2 of 3 decided statements unsupported
    assert _census_rows(eqa, unsure_of_claim_0)["gpt4"].ppi == close(200 / 3, 1e-9)


def test_an_unlabelled_relevance_item_leaves_the_answer_unlabelled(eqa):
    def forget_one(items: pd.DataFrame, labels: dict) -> None:
        labels.pop(items[(items["cluster_id"] == GPT4) & (items["asks"] == "relevant")].iloc[1]["item_id"])

    rows = _census_rows(eqa, forget_one)
    assert rows["gpt4"].labelled_units == 0 and rows["gpt4"].ppi is None
    assert "no labelled answer" in rows["gpt4"].reason and "relevance" in rows["gpt4"].reason


def test_the_cli_draws_one_and_says_what_it_holds(eqa, monkeypatch, capsys):
    root, _, _ = eqa
    monkeypatch.setenv("AEE_RESULTS_DIR", str(root))
    assert main(["audit", "sample", "--dataset", "eqa-mini", "--judge", JUDGE, "--n", "100", "--relevance",
                 "--id", "rel-cli"]) == 0
    text = capsys.readouterr().out
    assert "sample rel-cli: 15 relevance and pair items in 2 answers of 2" in text
    assert main(["audit", "sample", "--dataset", "eqa-mini", "--judge", JUDGE, "--n", "5", "--relevance",
                 "--unit", "statement"]) == 2
    assert "--relevance goes with --unit pair" in capsys.readouterr().err
    # `aee audit status` counts each item's own question: a relevance answer is a label too
    from pipeline.audit.labels import LabelStore
    from pipeline.audit.sample import load_sample

    items = load_sample("rel-cli").items
    relevance_item = items[items["asks"] == "relevant"].iloc[0]["item_id"]
    support_item = items[items["asks"] == "support"].iloc[0]["item_id"]
    store = LabelStore()
    store.record("rel-cli", relevance_item, "Ada", "relevant", "filler")
    store.record("rel-cli", support_item, "Ada", "support", "cant_tell")
    assert main(["audit", "status", "--dataset", "eqa-mini"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("Ada"))
    assert "2 labelled (1 can't tell)" in line and "0 of 2 answers complete" in line


def test_a_comparison_does_not_guess_around_answers_the_people_left_without_a_value():
    from pipeline.audit.ppi import UnitValues
    from pipeline.consistency.judge_error import UNUSABLE, judge_check

    clusters = pd.DataFrame({"cluster_id": ["a", "b"], "answer_id": ["a", "b"], "stratum": ["s", "s"],
                             "in_population": [True, True], "labelled": [True, True], "drop_out": [0.0, 1.0],
                             "y": [0.5, 0.0], "yhat": [0.4, 0.6]})
    check = judge_check("unsupported_statements", UnitValues(clusters, pd.DataFrame()),
                        pd.Series({"a": 1.0, "b": -1.0}), minimum=1)
    assert check.status == UNUSABLE and "leave 1 labelled answer(s) here without a value" in check.note


def test_cant_tell_on_relevance_leaves_the_statement_out_of_relevant_statements(eqa):
    from pipeline.audit.ppi_relevance import relevance_view

    root, s, _ = eqa
    answers = load_annotated("eqa-mini", JUDGE, root)
    truth = load_annotated("eqa-mini", "human", root)
    labels = expert_labels(s.items, [v for a in truth.values() for v in a.verdicts])
    second = s.items[(s.items["cluster_id"] == GPT4) & (s.items["asks"] == "relevant")].iloc[1]["item_id"]
    labels[second] = {"relevant": CANT_TELL}
    view = relevance_view(s)
    units = unit_values("relevant_statements", view, answers, labels)
    values = judge_values("eqa-mini", JUDGE, root)
    masks = domains(sorted(values["engine"].dropna().unique()))
    rows = {r.domain: r for r in ppi_rows("relevant_statements", units, view,
                                          values[values["metric"] == "relevant_statements"], masks)}
    # gpt4: claim 0 filler, claim 1 unsure (left out, as on the scorecard), claims 2 and 3 relevant: 2 of 3
    assert rows["gpt4"].labelled_units == 1 and rows["gpt4"].ppi == close(200 / 3, 1e-9)
