"""Issue 32 item 6: the one-answer HTML report opens with what a reader needs - which statements
are not backed, and by what - before any judge statistics, and leaves out metric rows that have
no value for the answer, saying how many and why."""

from __future__ import annotations

import re

from dashboard import answer_html, answer_model
from pipeline.importers.canonical import parse_answer
from pipeline.metrics import ScoreConfig
from pipeline.records import Verdict
from pipeline.report.scoring import answer_report


def _report() -> tuple[str, dict]:
    obj = {"answer_id": "r1", "engine": "E", "query": "How many people live in Harlow County?", "query_type": "expertise",
           "answer": "Harlow County had 827,526 residents in 2024 [1]. It is the largest county in the state [2]. "
                     "Its population grew fast [3]. Most residents commute by car.",
           "sources": [{"index": 1, "url": "https://fred.stlouisfed.org/series/HARLOW", "text": "827.526 Thousands of Persons, 2024"},
                       {"index": 2, "url": "https://guide.example.com/harlow", "text": "A guide to the county's parks."},
                       {"index": 3, "url": "https://gone.example.org/x", "fetch_ok": False}]}
    annotated = parse_answer(obj, "test")
    verdicts = [Verdict("r1", "relevance", "relevant", "recorded", "v", statement_index=s.index)
                for s in annotated.statements]
    verdicts += [Verdict("r1", "support", "full", "recorded", "v", statement_index=0, source_index=1),
                 Verdict("r1", "support", "none", "recorded", "v", statement_index=1, source_index=2)]
    verdicts += [Verdict("r1", "support", "none", "recorded", "v", statement_index=s.index, source_index=j)
                 for s in annotated.statements for j in (1, 2) if (s.index, j) not in ((0, 1), (1, 2))]
    from dataclasses import replace

    annotated = replace(annotated, verdicts=tuple(verdicts))
    rep = answer_report(annotated, ScoreConfig("strict", "exact"), "recorded")
    doc = answer_html.answer_report_html(annotated, rep, answer_model.computed_source_rows(annotated),
                                         dataset="pasted", reliability=["Agreement with experts: AUC 0.65."])
    return doc, rep


def _text(doc: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", doc.split("</style>", 1)[1]).split())


def test_the_report_opens_with_what_is_not_backed():
    doc, _ = _report()
    text = _text(doc)
    first = text.index("What is not backed")
    assert first < text.index("How far to trust the judge") and first < text.index("Metrics for this answer")
    assert first < text.index("Statements and verdicts")
    summary = text[first: text.index("Answer ", first + 20)]
    assert ("Of 4 statements that make a claim: 1 backed by a source they cite, 1 not backed by the sources they "
            "cite, 1 not checked, 1 citing no source.") in summary
    assert "✗ Not backed by the sources they cite: S2 “It is the largest county in the state [2].”: the judge's verdicts: [2] none" in summary
    assert "◌ Not checked: the page could not be fetched : S3 “Its population grew fast [3].” (cites [3])" in summary
    assert "? Cite no source : S4 “Most residents commute by car.”" in summary
    assert "Dead sources (the site says the page is gone): [3]" in summary


def test_metric_rows_without_a_value_are_left_out_and_counted():
    doc, rep = _report()
    table = doc.split('<table class="metrics">', 1)[1].split("</table>", 1)[0]
    empty = [m for m in rep["metrics"].values() if m["display"] is None]
    assert empty and all(f"<td>{m['label']}</td>" not in table for m in empty)
    assert all(f"<td>{m['label']}</td>" in table for m in rep["metrics"].values() if m["display"] is not None)
    text = _text(doc)
    assert f"Left out: {len(empty)} metrics with no value for this answer, by why:" in text
    assert "defined for debate queries only: Statement agreement, One-sided answer" in text  # stance, for a question of fact


def test_an_official_statistics_source_is_typed_so_in_the_report():
    doc, _ = _report()
    assert "official statistics" in _text(doc)
