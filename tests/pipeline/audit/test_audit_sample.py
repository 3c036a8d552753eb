"""Audit samples (pipeline.audit.sample, pipeline.audit.population): reproducible draws, every
stratum present, sampling weights that recover the population exactly, registration, and the file
a person labels (no judge label in it, no formula a spreadsheet would run)."""

from __future__ import annotations

import csv
import json

import pandas as pd
import pytest
from audit_fixtures import FORMULA, build_audit_results
from tolerances import close

from pipeline.audit.population import best_passage, item_id
from pipeline.audit.sample import (
    design_path,
    draw_sample,
    list_samples,
    load_sample,
    register,
    spreadsheet_safe,
    write_annotation_file,
)
from pipeline.errors import InputError


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return build_audit_results(tmp_path_factory.mktemp("audit_sample"))


def test_the_same_seed_draws_the_same_items_and_another_seed_others(root):
    a = draw_sample("demo", "scripted", 60, seed=11, root=root)
    b = draw_sample("demo", "scripted", 60, seed=11, root=root)
    c = draw_sample("demo", "scripted", 60, seed=12, root=root)
    assert list(a.items["item_id"]) == list(b.items["item_id"])
    assert list(a.items["item_id"]) != list(c.items["item_id"])
    assert a.sample_id == "demo-scripted-pair-n60-s11"


def test_every_stratum_is_present_and_the_weights_recover_the_population_exactly(root):
    s = draw_sample("demo", "scripted", 60, seed=3, root=root)
    frame_sizes = s.frame.groupby("stratum")["cluster_id"].count()
    drawn = s.items.drop_duplicates("cluster_id")
    assert set(drawn["stratum"]) == set(frame_sizes.index)  # rare labels included
    # each drawn cluster stands for N_h / n_h clusters: the weights of a stratum add up to N_h
    for stratum, part in drawn.groupby("stratum"):
        assert part["weight"].sum() == close(float(frame_sizes[stratum]))
        assert (part["weight"] == part["stratum_size"] / part["stratum_drawn"]).all()
        assert len(part) == int(part["stratum_drawn"].iloc[0])
    assert drawn["weight"].sum() == close(float(len(s.frame)))
    # and the sample.json strata say the same
    for row in s.meta["strata"]:
        assert row["clusters"] == int(frame_sizes[row["stratum"]])


def test_the_design_file_carries_the_weights_a_researcher_can_check(root, tmp_path):
    s = draw_sample("demo", "scripted", 60, seed=3, root=root)
    out = write_annotation_file(s, tmp_path / "audit.csv")
    design = pd.read_csv(design_path(out))
    per_cluster = design.drop_duplicates("cluster_id")
    assert per_cluster["weight"].sum() == close(float(len(s.frame)), 1e-9)
    assert set(design["item_id"]) == set(s.items["item_id"])


def test_a_pair_cluster_is_a_relevant_statement_with_all_its_cited_sources(root):
    s = draw_sample("demo", "scripted", 60, seed=5, root=root)
    for cluster_id, part in s.items.groupby("cluster_id"):
        assert part["cited"].all()
        assert list(part["position"]) == list(range(len(part)))
        assert cluster_id == f"{part['answer_id'].iloc[0]}#s{int(part['statement_index'].iloc[0])}"
    everything = draw_sample("demo", "scripted", 100, seed=5, scope="all", root=root)
    assert not everything.items["cited"].all()  # scope all also asks about sources the statement does not cite


def test_statement_samples_draw_whole_answers(root):
    s = draw_sample("demo", "scripted", 90, seed=1, unit="statement", root=root)
    for answer_id, part in s.items.groupby("answer_id"):
        assert part["cluster_id"].nunique() == 1 and part["cluster_id"].iloc[0] == answer_id
        assert len(part) == int(s.frame.set_index("cluster_id").loc[answer_id, "n_items"])


def test_too_small_a_sample_says_how_many_items_it_needs(root):
    with pytest.raises(InputError, match=r"ask for at least \d+ items"):
        draw_sample("demo", "scripted", 5, root=root)


def test_a_judge_without_results_is_one_clear_error(root):
    with pytest.raises(InputError, match="no results for judge 'offline'"):
        draw_sample("demo", "offline", 40, root=root)


def test_registering_the_same_draw_twice_is_a_no_op_and_a_clash_is_refused(root):
    s = draw_sample("demo", "scripted", 60, seed=21, root=root)
    folder, new = register(s, root)
    assert new and (folder / "sample.json").is_file()
    assert register(s, root) == (folder, False)
    other = draw_sample("demo", "scripted", 60, seed=22, root=root, sample_id=s.sample_id)
    with pytest.raises(InputError, match="holds other items"):
        register(other, root)
    back = load_sample(s.sample_id, root)
    assert list(back.items["item_id"]) == list(s.items["item_id"])
    assert s.sample_id in [m["sample_id"] for m in list_samples("demo", root)]


def test_sample_ids_cannot_escape_the_samples_folder(root):
    with pytest.raises(InputError):
        load_sample("../../etc", root)
    with pytest.raises(InputError):
        draw_sample("demo", "scripted", 60, root=root, sample_id="a/b")


def test_the_annotation_file_hides_the_judge_and_neutralises_formulas(root, tmp_path):
    s = draw_sample("hostile", "scripted", 10, seed=0, root=root)
    out = write_annotation_file(s, tmp_path / "h.csv")
    text = out.read_text(encoding="utf-8")
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert rows and {"support", "note"} <= set(rows[0])
    assert all(r["support"] == "" for r in rows)
    assert "judge" not in ",".join(rows[0]) and "weight" not in ",".join(rows[0]) and "stratum" not in ",".join(rows[0])
    assert not any(v.startswith("=") for r in rows for v in r.values())  # no cell a spreadsheet would run
    assert spreadsheet_safe(FORMULA) == "'" + FORMULA
    assert "<script>" in text  # kept as text for the reader: escaping is the renderer's job
    jsonl = write_annotation_file(s, tmp_path / "h.jsonl")
    lines = [json.loads(line) for line in jsonl.read_text(encoding="utf-8").splitlines()]
    assert [r["item_id"] for r in lines] == list(s.items["item_id"])
    with pytest.raises(InputError, match=".csv or .jsonl"):
        write_annotation_file(s, tmp_path / "h.xlsx")


def test_item_ids_are_stable_and_the_best_passage_is_the_matching_window():
    assert item_id("demo", "pair", "a1", 2, 3) == item_id("demo", "pair", "a1", 2, 3)
    assert item_id("demo", "pair", "a1", 2, 3) != item_id("demo", "pair", "a1", 2, 4)
    assert item_id("demo", "statement", "a1", 2).startswith("s-")
    source = ("Bees visit many flowers in spring. " * 20 + "The river delta floods every autumn after heavy rain. "
              + "Markets open on Mondays. " * 20)
    start, end = best_passage("The delta floods each autumn.", source)
    assert start <= source.index("The river delta") < end
    assert best_passage("anything", "   ") == (-1, -1)
