"""The one-answer HTML report and the compare model: hand-checked content, hostile text stays
text, nothing in the report can run or fetch anything."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd

from dashboard import answer_html, answer_model, compare_model, reliability_text
from pipeline.importers.canonical import parse_answer
from pipeline.metrics import ScoreConfig
from pipeline.records import Verdict
from pipeline.report.scoring import answer_report

ROOT = Path(__file__).resolve().parents[2]
WORKED = ROOT / "tests" / "fixtures" / "worked_example.json"
HOSTILE_TEXT = ('Zoos harm animals <img src=x onerror="alert(1)"> [1]. <script>alert(2)</script> '
                'Read [this](javascript:alert(3)) [2].')


class _Scan(HTMLParser):
    """Collects tags, attributes and visible text of a document."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str]] = []
        self.text: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v or "") for k, v in attrs]
        if tag in ("style", "title"):
            self._skip += 1

    def handle_endtag(self, tag):
        if tag in ("style", "title"):
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip:
            self.text.append(data)


def _scan(doc: str) -> _Scan:
    scan = _Scan()
    scan.feed(doc)
    return scan


def _report(obj: dict, judge: str = "recorded", **kw) -> tuple[str, dict]:
    annotated = parse_answer(obj, "test")
    rep = answer_report(annotated, ScoreConfig("strict", "exact"), judge)
    rows = answer_model.computed_source_rows(annotated)
    doc = answer_html.answer_report_html(annotated, rep, rows, dataset=kw.pop("dataset", "fig7"),
                                         reliability=kw.pop("reliability", ["A line."]), **kw)
    return doc, rep


def _assert_inert(doc: str) -> _Scan:
    scan = _scan(doc)
    assert "script" not in scan.tags and not {"img", "iframe", "object", "embed", "link", "form"} & set(scan.tags)
    assert not [a for a in scan.attrs if a[1].startswith("on") or a[1] in ("src", "srcset", "action")]
    hrefs = [v for _, k, v in scan.attrs if k == "href"]
    assert all(h.startswith(("http://", "https://")) for h in hrefs), hrefs
    csp = [v for tag, k, v in scan.attrs if tag == "meta" and k == "content" and "default-src" in v]
    assert csp == [answer_html.CSP] and "script-src" not in csp[0]
    assert "url(" not in doc and "@import" not in doc  # the inline CSS loads nothing either
    return scan


def test_worked_example_report_holds_statements_verdicts_matrices_and_metrics():
    obj = json.loads(WORKED.read_text())
    doc, rep = _report(obj, illustrative=True, link="http://localhost:8501/inspector?dataset=fig7&answer=fig7")
    scan = _assert_inert(doc)
    text = " ".join(" ".join(scan.text).split())
    assert "Illustrative data" in text and "fig7 (illustrative)" in text
    for s in rep["statements"]:  # every statement's text, in the statements table
        assert " ".join(s["text"].split()) in text
    # worked example: statement 3 cites [1] and [3]; the recorded labels say neither supports it
    assert "Cited, but no cited source supports it" in text
    accuracy = rep["metrics"]["citation_accuracy"]["display"]
    assert f"Citation accuracy {accuracy:.2f}%" in text
    # one matrix row per relevant statement in each panel
    assert doc.count('<th class="row">') == 2 * len(rep["citation_matrix"]["rows"])
    assert "Partly supports" in text and "http://localhost:8501/inspector?dataset=fig7&amp;answer=fig7" in doc
    # value, direction and rating stay on one line each ("↑ higher" wrapped made every row two lines tall)
    assert '<table class="metrics"><thead><tr><th>metric</th><th>value</th><th>better</th><th>rating</th>' in doc
    assert ".metrics td:nth-child(2),.metrics td:nth-child(3),.metrics td:nth-child(4){white-space:nowrap}" in doc


def test_hostile_answer_and_sources_stay_text():
    obj = {"answer_id": "h<1>", "engine": "E<b>x</b>", "query": "q <script>alert(0)</script>", "query_type": "debate",
           "answer": HOSTILE_TEXT,
           "sources": [{"index": 1, "url": "javascript:alert(4)", "title": "<img src=x onerror=alert(5)>", "text": "t"},
                       {"index": 2, "url": "https://ok.example.org/a?b=<c>", "title": "fine", "text": "u"}]}
    doc, _ = _report(obj, reliability=["<script>alert(6)</script>"])
    scan = _assert_inert(doc)
    text = " ".join(scan.text)
    assert "<script>alert(2)</script>" in text and '<img src=x onerror="alert(1)">' in text  # shown, as text
    assert "<img src=x onerror=alert(5)>" in text and "<script>alert(6)</script>" in text
    assert "javascript:alert(4)" in text  # the bad URL is shown as text, never as a link
    hrefs = [v for _, k, v in scan.attrs if k == "href"]
    assert hrefs == ["https://ok.example.org/a?b=<c>"]
    assert answer_html.report_filename("h<1>/../x") == "answer-report-h_1_x.html"
    assert text.count("text available") == 2  # both sources carry their text (nothing was fetched)


def test_reliability_lines_use_the_saved_agreement():
    agreement = pd.DataFrame([
        {"dataset": "expertqa-rand_val", "judge": "offline", "metric": "support.n", "value": 803.0},
        {"dataset": "expertqa-rand_val", "judge": "offline", "metric": "support.auc", "value": 0.6956},
        {"dataset": "expertqa-rand_val", "judge": "offline", "metric": "support.kappa", "value": 0.1977},
        {"dataset": "expertqa-rand_val", "judge": "offline", "metric": "support.in_calibration", "value": 0.0},
        {"dataset": "expertqa-rand_val", "judge": "other", "metric": "support.n", "value": 5.0},
    ])
    checks = pd.DataFrame({"kind": ["support", "support", "stance"], "passed": [True, False, True]})
    lines = reliability_text.reliability_lines("offline", agreement, checks)
    assert any("AUC 0.696" in line and "Cohen's kappa 0.198" in line and "803 pairs" in line for line in lines)
    assert "Behavioural checks passed: stance 1/1, support 1/2." in lines
    assert any("unchecked" in line for line in reliability_text.reliability_lines("scripted", agreement))
    assert not any("`" in line for line in reliability_text.reliability_lines("recorded"))  # plain sentences
    human = reliability_text.reliability_lines("human", agreement)
    assert any("reference" in line for line in human) and not any("AUC" in line for line in human)


def test_uncertain_support_verdicts_carry_their_own_mark_and_are_counted_apart():
    import dataclasses

    from pipeline.importers.canonical import load_canonical

    annotated = load_canonical(WORKED)[0]
    # the worked example's support verdicts as if the offline:lexical judge gave them; its cut points
    # are 0.089 / 0.328 (cal7), so its band is [0.039, 0.139) and [0.278, 0.378)
    scores = {(0, 1): 0.35, (1, 2): 0.60}  # S1 x [1]: 0.35, inside the band; S2 x [2]: 0.60, outside
    lexical = json.dumps({"mode": "lexical"})
    verdicts = tuple(
        dataclasses.replace(v, judge="offline:lexical", raw=lexical,
                            score=scores.get((v.statement_index, v.source_index), 0.9 if v.label == "full" else 0.01))
        if v.kind == "support" else v for v in annotated.verdicts)
    annotated = dataclasses.replace(annotated, verdicts=verdicts)
    rep = answer_report(annotated, ScoreConfig("strict", "exact"), "offline:lexical")
    assert [(u["statement"], u["source"]) for u in rep["uncertain_support"]] == [(0, 1)]
    doc = answer_html.answer_report_html(annotated, rep, answer_model.computed_source_rows(annotated),
                                         dataset="fig7", reliability=["A line."])
    scan = _assert_inert(doc)
    text = " ".join(" ".join(scan.text).split())
    # the answer: S1's chip [1] carries the mark on the uncertain colour, S2's chip [2] does not
    assert doc.count('<span class="unc-mark">≈</span></span>') == 2  # S1's chip and the legend's key
    assert ('<span class="cite c-full unc" title="uncertain support label: the judge&#x27;s score is close to its cut '
            'point">[1]<span class="unc-mark">≈</span></span>') in doc
    assert '<span class="cite c-full">[2]</span>' in doc
    assert "uncertain: the judge's score is close to its cut point, where its labels are least reliable" in text
    # the verdicts table says where the score sits; the 0.60 verdict says nothing of the kind
    assert "[1] full (score 0.35) ≈ Uncertain: score 0.35 is within 0.05 of the judge's cut point 0.33" in text
    assert "[2] full (score 0.60) raw judge output" in text
    assert text.count("Uncertain: score") == 1
    # counted apart from the flags, with the pair
    assert "≈ 1 support label uncertain (the judge's score is close to its cut point" in text
    assert "S1 × [1] full (score 0.35)." in text
    # the support matrix: S1 x [1] shows the full symbol followed by ≈ on violet, S2 x [2] plain full
    assert doc.count('<td class="s4"') == 1 and ">●≈</td>" in doc
    assert ".s4{background:#d0bfff}" in doc
    # nothing inside the band: no mark, no count, no key
    outside = dataclasses.replace(annotated, verdicts=tuple(
        dataclasses.replace(v, score=0.60) if (v.kind, v.statement_index, v.source_index) == ("support", 0, 1) else v
        for v in annotated.verdicts))
    rep = answer_report(outside, ScoreConfig("strict", "exact"), "offline:lexical")
    doc = answer_html.answer_report_html(outside, rep, answer_model.computed_source_rows(outside),
                                         dataset="fig7", reliability=["A line."])
    assert "unc-mark" not in doc.split("</style>")[1] and "support label uncertain" not in doc
    assert '<td class="s4"' not in doc


# ---- compare model ------------------------------------------------------------------------------


def _two_judges():
    obj = {"answer_id": "a", "engine": "E", "query": "Should cities ban cars?", "query_type": "debate",
           "answer": "Cars pollute [1]. Bans help walkers [2].",
           "sources": [{"index": 1, "url": "https://x.example.org", "title": "X", "text": "x"},
                       {"index": 2, "url": "https://y.example.org", "title": "Y", "text": "y"}]}
    base = parse_answer(obj, "test")

    def with_labels(judge, support_1, support_2, stance_2):
        v = [Verdict("a", "relevance", "relevant", judge, "t", statement_index=0),
             Verdict("a", "relevance", "relevant", judge, "t", statement_index=1),
             Verdict("a", "support", support_1, judge, "t", statement_index=0, source_index=1),
             Verdict("a", "stance", stance_2, judge, "t", statement_index=1)]
        if support_2 is not None:
            v.append(Verdict("a", "support", support_2, judge, "t", statement_index=1, source_index=2))
        return type(base)(base.answer, base.statements, tuple(v))

    return with_labels("j1", "full", "full", "agree"), with_labels("j2", "full", None, "neutral")


def test_statement_count_names_filler_beside_the_claims():
    a, _ = _two_judges()
    rep = answer_report(a, ScoreConfig("strict", "exact"), "j1")
    assert answer_model.statement_count_text(a, rep) == "2 statements"  # both relevant: nothing to add
    filler = type(a)(a.answer, a.statements, tuple(
        Verdict("a", "relevance", "filler", "j1", "t", statement_index=1) if v.kind == "relevance" and v.statement_index == 1
        else v for v in a.verdicts))
    rep = answer_report(filler, ScoreConfig("strict", "exact"), "j1")
    assert rep["metrics"]["n_statements"]["display"] == 1
    assert answer_model.statement_count_text(filler, rep) == "2 statements (1 claim, 1 filler)"
    assert answer_model.statement_count_text(filler, {}) == "2 statements"  # no report: no judge's split shown


def test_verdict_differences_pair_every_item():
    a, b = _two_judges()
    diffs = compare_model.verdict_differences(a, b)
    rows = {(r["statement"], r["judged"]): (r["judge A"], r["judge B"], r["agreement"]) for r in diffs.to_dict("records")}
    assert rows == {
        ("S1", "relevance"): ("relevant", "relevant", "same"),
        ("S1", "support by source [1]"): ("full", "full", "same"),
        ("S2", "relevance"): ("relevant", "relevant", "same"),
        ("S2", "stance"): ("agree", "neutral", "differs"),
        # one judge decided, the other did not: nothing to compare, not a disagreement
        ("S2", "support by source [2]"): ("full", "no verdict", "one side only"),
    }
    assert list(diffs["statement"]) == ["S1", "S1", "S2", "S2", "S2"]  # reading order
    assert compare_model.statements_match(a, b)


def test_metrics_side_by_side_names_the_favoured_side():
    a, b = _two_judges()
    rep_a = answer_report(a, ScoreConfig("strict", "exact"), "j1")
    rep_b = answer_report(b, ScoreConfig("strict", "exact"), "j2")
    table = compare_model.metrics_side_by_side(rep_a, rep_b, "j1", "j2").set_index("metric")
    # j1: both citations accurate (100 %); j2 gave [2] no verdict: not checked, so it is left out, not
    # counted inaccurate: 1 of the 1 judged citation (100 %), and the note says one was left out
    assert table.loc["Citation accuracy", "A: j1"] == "100.00%" and table.loc["Citation accuracy", "B: j2"] == "100.00%"
    assert table.loc["Citation accuracy", "favours"] == "equal"
    assert "B: 1 of 2 citations left out, not judged (pairs without a label)" in table.loc["Citation accuracy", "note"]
    assert table.loc["Dangling citations", "favours"] == "equal"
    assert table.loc["Statement agreement", "A: j1"] != "None"
    assert table.loc["Sources", "favours"] == ""  # a count with no better direction
    # the same reason on both sides reads once
    assert table.loc["BLEU", "A: j1"] == "n/a" and table.loc["BLEU", "note"] == "both: no gold answer for this query"


def test_sources_without_text_read_not_checked_in_the_report():
    from pipeline.annotate import annotate_answer
    from pipeline.judges import get_judge

    obj = {"answer_id": "u", "engine": "E", "query": "Do street trees cool cities?", "query_type": "expertise",
           "answer": "Trees cool streets [1]. Shade saves energy [2].",
           "sources": [{"index": 1, "url": "https://a.example.org/trees"}, {"index": 2, "url": "https://b.example.org/shade"}]}
    annotated = annotate_answer(parse_answer(obj, "test"), get_judge("scripted", cache=False))
    rep = answer_report(annotated, ScoreConfig("strict", "exact"), "scripted")
    doc = answer_html.answer_report_html(annotated, rep, answer_model.computed_source_rows(annotated), dataset="pasted",
                                         reliability=["A line."])
    text = " ".join(" ".join(_assert_inert(doc).text).split())
    assert "Not checked: all 4 of 4 (statement, source) pairs (sources without text: 4)." in text
    assert text.count("[1] not checked: no text") == 1 and text.count("[2] not checked: no text") == 1
    assert text.count("S1 Trees cool streets [1]. not checked: no text") == 1  # the statements table's status
    assert "none of 2 statements judged (sources without text)" in text  # the metrics table's note
    assert 'class="stmt st-unchecked"' in doc and "st-unsupported" not in doc.split("</style>", 1)[1]
    assert 'class="cite c-unknown"' in doc


def test_report_says_how_a_paragraph_citing_engine_cites():
    obj = {"answer_id": "p", "engine": "ChatGPT", "query": "Do street trees cool cities?", "query_type": "expertise",
           "answer": "Trees cool streets. Shade saves <b>energy</b> [1].",
           "sources": [{"index": 1, "url": "https://a.example.org/trees", "text": "Trees cool streets."}]}
    doc, _ = _report(obj)
    text = " ".join(" ".join(_assert_inert(doc).text).split())
    assert text.count("How ChatGPT cites: a citation at the end of a paragraph backs every sentence of that paragraph "
                      "before it. 1 sentence without a marker of its own is counted as cited by its paragraph's citation.") == 1
    plain, _ = _report(obj | {"engine": "Norbridge"})
    assert "cites:" not in " ".join(_assert_inert(plain).text)
