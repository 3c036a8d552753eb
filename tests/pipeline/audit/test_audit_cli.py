"""`aee audit sample | import | export | status` and `aee scorecard --ppi --json`: what a person
types, what they read back, exit codes."""

from __future__ import annotations

import csv
import json

import pytest
from audit_fixtures import build_audit_results

from pipeline.cli import main


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_audit_results(tmp_path_factory.mktemp("audit_cli"))


@pytest.fixture
def root(built, monkeypatch, tmp_path):
    monkeypatch.setenv("AEE_RESULTS_DIR", str(built))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    return built


def test_sample_import_status_and_the_ppi_scorecard(root, tmp_path, capsys):
    out_file = tmp_path / "to_label.csv"
    assert main(["audit", "sample", "--dataset", "demo", "--judge", "scripted", "--n", "80", "--seed", "2",
                 "--out", str(out_file)]) == 0
    said = capsys.readouterr().out
    assert "sample demo-scripted-pair-n80-s2:" in said and "registered in" in said and "weight" in said
    # the corrected scorecard's label-free part is computed at the draw, once per result set and design
    assert "prepared what the corrected scorecard reads of the 24 answers (2 design(s)," in said
    assert main(["audit", "sample", "--dataset", "demo", "--judge", "scripted", "--n", "70", "--seed", "3"]) == 0
    assert "prepared what" not in capsys.readouterr().out  # the same designs: read, not computed again
    rows = list(csv.DictReader(out_file.open(encoding="utf-8")))
    for k, r in enumerate(rows):
        r["support"] = ("full", "none", "partial")[k % 3]
    rows[0]["support"] = "perhaps"
    with out_file.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert main(["audit", "import", str(out_file), "--dataset", "demo", "--annotator", "Ana"]) == 2  # a bad row
    captured = capsys.readouterr()
    assert captured.err.count("error: ") == 1 and "row 2:" in captured.err and "'perhaps'" in captured.err
    assert f"{len(rows)} rows read for Ana: {len(rows) - 1} labels written" in captured.out
    # the labels that landed are published as the dataset's judge human:audit right away
    assert "published judge human:audit of demo: labels of 1 person (Ana)" in captured.out
    rows[1]["support"] = "partial" if rows[1]["support"] != "partial" else "full"  # Ana changes her mind once
    with out_file.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert main(["audit", "import", str(out_file), "--dataset", "demo", "--annotator", "Ana", "--no-publish"]) == 2
    said = capsys.readouterr().out
    assert "1 labels written" in said and "published" not in said  # the label landed; publishing was declined

    assert main(["audit", "status", "--dataset", "demo", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    mine = next(s for s in status if s["sample_id"] == "demo-scripted-pair-n80-s2")
    assert mine["annotators"] == [{"annotator": "Ana", "labelled": len(rows) - 1, "cant_tell": 0, "skipped": 0}]

    assert main(["scorecard", "--dataset", "demo", "--judge", "scripted", "--ppi", "--json",
                 "--sample", "demo-scripted-pair-n80-s2"]) == 0
    printed = json.loads(capsys.readouterr().out)
    from pipeline.audit.scorecard import ppi_scorecard

    direct = ppi_scorecard("demo", "scripted", samples={"pair": "demo-scripted-pair-n80-s2"}, root=root)
    assert printed["rows"] == json.loads(json.dumps(direct["rows"]))
    accuracy = next(r for r in printed["rows"] if r["metric"] == "citation_accuracy" and r["domain"] == "all engines")
    assert accuracy["ppi"] is not None and accuracy["ppi_low"] <= accuracy["ppi"] <= accuracy["ppi_high"]
    assert accuracy["labelled_units"] > 0 and accuracy["sample_id"] == "demo-scripted-pair-n80-s2"

    assert main(["scorecard", "--dataset", "demo", "--judge", "scripted", "--ppi"]) == 0
    table = capsys.readouterr().out
    assert "prediction-powered scorecard: demo, judge scripted" in table and "Citation accuracy:" in table


def test_export_and_errors_are_one_line(root, tmp_path, capsys):
    assert main(["audit", "sample", "--dataset", "demo", "--judge", "scripted", "--n", "90", "--seed", "4",
                 "--unit", "statement"]) == 0
    capsys.readouterr()
    assert main(["audit", "export", "--format", "label-studio", "--sample", "demo-scripted-statement-n90-s4",
                 "--out", str(tmp_path)]) == 0
    assert (tmp_path / "demo-scripted-statement-n90-s4.label-studio.config.xml").is_file()
    assert main(["audit", "export", "--format", "argilla", "--dataset", "demo", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["audit", "sample", "--dataset", "demo", "--judge", "nobody", "--n", "50"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "no results for judge 'nobody'" in err
    assert main(["audit", "import", str(tmp_path / "missing.csv"), "--dataset", "demo", "--annotator", "A"]) == 2
    assert main(["scorecard", "--dataset", "demo", "--judge", "scripted", "--ppi", "--mode", "parity"]) == 2
    assert "strict rules" in capsys.readouterr().err
