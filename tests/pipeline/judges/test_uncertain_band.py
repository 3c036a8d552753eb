"""The uncertain band (pipeline/judges/measure/reliability.py), the report's uncertain flags, the one-line
reliability summary and the second-opinion comparison: hand-checked values at the band's edges."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest
from tolerances import close

from dashboard.answer_model import component_data, uncertain_summary
from dashboard.reliability_text import reliability_summary
from pipeline.importers.canonical import load_canonical
from pipeline.judges.measure import reliability
from pipeline.judges.measure.reliability import UncertainBand, is_uncertain, offline_thresholds, support_band
from pipeline.records import Verdict
from pipeline.report.scoring import answer_report
from pipeline.report.second_opinion import compare_judges

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "tests" / "fixtures" / "worked_example.json"


def test_band_edges_are_half_open_around_each_threshold():
    band = UncertainBand("x", (0.5, 0.8), margin=0.05)
    assert band.ranges() == close(((0.45, 0.55), (0.75, 0.85)))
    # hand-checked: the low edge is in, the high edge is out
    for score, inside in ((0.45, True), (0.4499, False), (0.5, True), (0.5499, True), (0.55, False),
                          (0.6, False), (0.75, True), (0.7499, False), (0.8499, True), (0.85, False), (1.0, False)):
        assert band.contains(score) is inside, score
    assert not band.contains(None) and not band.contains(float("nan"))
    assert band.text() == "scores from 0.45 to 0.55 or from 0.75 to 0.85"


def test_overlapping_bands_merge_and_stay_inside_zero_one():
    assert UncertainBand("x", (0.5, 0.55), margin=0.05).ranges() == close(((0.45, 0.6),))
    assert UncertainBand("x", (0.02, 0.99), margin=0.05).ranges() == close(((0.0, 0.07), (0.94, 1.0)))


def test_offline_band_reads_the_judges_own_thresholds(tmp_path):
    shipped = json.loads((ROOT / "pipeline" / "judges" / "offline" / "params.json").read_text())
    assert offline_thresholds("embed") == (shipped["embed"]["threshold_partial"], shipped["embed"]["threshold_full"])
    assert offline_thresholds("lexical") == (shipped["lexical"]["threshold_partial"], shipped["lexical"]["threshold_full"])
    own = tmp_path / "params.json"
    own.write_text(json.dumps({"embed": {"threshold_partial": 0.3, "threshold_full": 0.7}}))
    assert offline_thresholds("embed", own) == close((0.3, 0.7))
    assert offline_thresholds("lexical", own) == close((0.3, 0.7))  # a missing set falls back to the embed one
    band = support_band("offline", json.dumps({"mode": "lexical"}))
    assert band is not None and band.thresholds == offline_thresholds("lexical")


def test_offline_verdicts_at_the_band_edges():
    t_partial, t_full = offline_thresholds("embed")
    m = reliability.MARGIN
    raw = json.dumps({"mode": "embed"})
    assert is_uncertain("offline", t_full, raw)
    assert is_uncertain("offline", t_full - m, raw)
    assert not is_uncertain("offline", t_full - m - 0.001, raw)
    assert not is_uncertain("offline", t_full + m, raw)
    assert is_uncertain("offline", t_partial + m - 0.001, raw)
    assert not is_uncertain("offline", t_partial + m + 0.001, raw) or t_full - t_partial < 2 * m + 0.002
    # a stated rule set the label (number conflict holds the score just under the full threshold)
    assert not is_uncertain("offline", t_full - 1e-4, json.dumps({"mode": "embed", "rule": "number conflict"}))
    assert not is_uncertain("offline", t_full, raw, kind="relevance")
    assert not is_uncertain("offline", None, raw)


def test_nli_and_minicheck_use_their_recorded_thresholds_and_others_have_no_band():
    raw = json.dumps({"thresholds": {"full": 0.9, "partial": 0.4}})
    assert support_band("nli:some/model", raw).thresholds == close((0.4, 0.9))
    assert is_uncertain("nli:some/model", 0.86, raw) and not is_uncertain("nli:some/model", 0.5, raw)
    # no thresholds recorded: the defaults 0.2 / 0.5
    assert support_band("minicheck", "").thresholds == close((0.2, 0.5))
    assert is_uncertain("minicheck", 0.47, "not json") and not is_uncertain("minicheck", 0.3, "")
    for judge in ("openai:gpt-4o", "recorded", "human", "scripted"):
        assert support_band(judge) is None
        assert not is_uncertain(judge, 0.5)


def _example():
    return load_canonical(EXAMPLE)[0]


def _with_scores(annotated, judge: str, scores: dict[tuple[int, int], float]):
    """The example's support verdicts re-attributed to `judge` with the given scores."""
    out = []
    for v in annotated.verdicts:
        if v.kind == "support" and (v.statement_index, v.source_index) in scores:
            v = dataclasses.replace(v, judge=judge, score=scores[(v.statement_index, v.source_index)],
                                    raw=json.dumps({"thresholds": {"full": 0.5, "partial": 0.2}}))
        out.append(v)
    return dataclasses.replace(annotated, verdicts=tuple(out))


def test_report_flags_uncertain_pairs_and_the_flags_count_them():
    annotated = _example()
    pairs = [(v.statement_index, v.source_index) for v in annotated.verdicts
             if v.kind == "support" and v.source_index is not None and v.label is not None]
    a, b, c = pairs[:3]
    labelled = _with_scores(annotated, "nli:tiny", {a: 0.52, b: 0.9, c: 0.18})  # 0.52, 0.18 in the band; 0.9 not
    rep = answer_report(labelled, judge="nli:tiny")
    found = {(u["statement"], u["source"]) for u in rep["uncertain_support"]}
    assert found == {a, c}
    sm = rep["support_matrix"]
    flagged = {(sm["rows"][i], sm["columns"][j]) for i, row in enumerate(sm["uncertain"]) for j, f in enumerate(row) if f}
    assert flagged == {p for p in (a, c) if p[0] in sm["rows"] and p[1] in sm["columns"]}
    headline, listed = uncertain_summary(rep)
    assert headline == "≈ 2 support labels uncertain"
    assert f"S{a[0] + 1} × [{a[1]}]" in listed and "(score 0.52)" in listed
    data = component_data(labelled, rep, [], reliability={"line": "nli judge: never measured", "url": "judges"})
    assert data["uncertain_count"] == 2 and data["reliability"]["url"] == "judges"
    assert data["pairs"][f"{a[0]}:{a[1]}"]["uncertain"] and "0.52" in data["pairs"][f"{a[0]}:{a[1]}"]["uncertain_note"]
    assert not data["pairs"][f"{b[0]}:{b[1]}"]["uncertain"]
    chips = [p for blk in data["blocks"] for p in blk.get("parts", []) if p["t"] == "cite" and p.get("unc")]
    assert chips  # the marker reaches the chips
    hidden = component_data(labelled, rep, [], participant=True, reliability={"line": "x", "url": "judges"})
    assert hidden["uncertain_count"] == 0 and not hidden["reliability"]
    assert not any(p.get("unc") for blk in hidden["blocks"] for p in blk.get("parts", []))


def _agreement(judge: str, in_calibration: int) -> pd.DataFrame:
    rows = [("support.n", 803), ("support.auc", 0.6956), ("support.in_calibration", in_calibration),
            ("support_unseen.auc", 0.712)]
    return pd.DataFrame([{"dataset": "expertqa-rand_val", "judge": judge, "metric": k, "value": float(v),
                          "value_json": json.dumps(v)} for k, v in rows])


def test_reliability_summary_in_one_line():
    checks = pd.DataFrame({"kind": ["support"] * 4 + ["stance"] * 6,
                           "passed": [True, True, True, False] + [True] * 5 + [False]})
    line = reliability_summary("offline", _agreement("offline", 0), checks)
    assert line == ("offline judge: AUC 0.70 against experts on expertqa-rand_val (held out), "
                    "80% of 10 behavioural checks passed (support 75%)")
    seen = reliability_summary("offline", _agreement("offline", 12), checks)
    assert "AUC 0.71 against experts on expertqa-rand_val (unseen questions)" in seen
    never = reliability_summary("nli:x", _agreement("offline", 0), pd.DataFrame())
    assert never == ("nli:x judge: agreement with experts not measured here (aee judges evaluate --dataset expertqa "
                     "--judge nli:x), behavioural checks not run here (aee judges check --judge nli:x)")
    for judge in ("human", "recorded", "scripted"):
        text = reliability_summary(judge)
        assert text and "None" not in text and "nan" not in text


def test_second_opinion_lists_metric_and_label_differences():
    annotated = _example()
    first = annotated
    support = [v for v in annotated.verdicts if v.kind == "support" and v.source_index is not None and v.label == "full"]
    flipped = support[0]
    second = dataclasses.replace(annotated, verdicts=tuple(
        dataclasses.replace(v, label="none", judge="other") if v is flipped else v for v in annotated.verdicts))
    diff = compare_judges(first, second, judges=("recorded", "other"))
    differing = [x for x in diff["labels"] if x["differs"]]
    assert [(x["statement"], x["source"], x["first"], x["second"]) for x in differing] == [
        (flipped.statement_index, flipped.source_index, "full", "none")]
    rows = {m["id"]: m for m in diff["metrics"]}
    # the worked example: citation accuracy 4/7 -> losing one accurate citation gives 3/7
    acc = rows["citation_accuracy"]
    assert acc["first"] == pytest.approx(400 / 7) and acc["second"] == pytest.approx(300 / 7)
    assert acc["difference"] == pytest.approx(-100 / 7) and acc["differs"]
    assert not rows["relevant_statements"]["differs"] and rows["relevant_statements"]["difference"] == 0
    with pytest.raises(ValueError):
        compare_judges(first, dataclasses.replace(annotated, answer=dataclasses.replace(annotated.answer, answer_id="x")))


def test_verdict_without_label_is_never_uncertain():
    v = Verdict("a", "support", None, "nli:x", "v1", raw="", statement_index=0, source_index=1, score=0.5)
    assert not reliability.verdict_uncertain(v)
