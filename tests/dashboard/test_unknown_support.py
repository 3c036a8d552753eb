"""Unknown is not unsupported: golden cases, computed by hand, for every metric built on support
labels when some (statement, source) pairs were not judged (a source without text, a dead page, a
failed judge call), for the corpus aggregate's judged share, and for the records, tables and report
that carry the reason.

The threshold is the registry's one MAX_UNKNOWN_SHARE (0.5): a value is null when MORE than half of
the units it needs are undecided.
"""

from __future__ import annotations

import pandas as pd
import pytest
from tolerances import close

from pipeline.aggregate import summarize
from pipeline.annotate import annotate_answer
from pipeline.importers.expertqa import load_expertqa
from pipeline.judges import get_judge
from pipeline.matrices import label_view, unknown_pairs
from pipeline.metrics import METRICS, ScoreConfig, score_answer
from pipeline.metrics.context import CITED_ONLY_REASON, PARITY_SKIP_REASON
from pipeline.metrics.registry import MAX_UNKNOWN_SHARE, decided_mean
from pipeline.records import AnnotatedAnswer, Answer, MetricResult, Source, Statement, Verdict, unchecked_text
from pipeline.report.scoring import answer_report
from pipeline.storage.paths import expertqa_dir
from pipeline.storage.tables import label_rows, metric_rows, pair_rows

WITH_TEXT_1 = Source(1, url="https://a.example/1", title="A", text="The bridge opened in 1932.")
WITH_TEXT_2 = Source(2, url="https://b.example/2", title="B", text="It carries eight lanes of traffic.")
URL_ONLY_3 = Source(3, url="https://c.example/3")  # the engine listed only the address: nothing to read here
URL_ONLY_2 = Source(2, url="https://c.example/2")
DEAD_4 = Source(4, url="https://gone.example/4", fetch_ok=False)

SUPPORT_METRICS = ("unsupported_statements", "source_necessity", "citation_accuracy", "citation_thoroughness",
                   "autoais_citations", "autoais_passages", "nli_citation_recall", "nli_citation_precision",
                   "citation_recall", "citation_precision")


def support(statement: int, source: int, label: str | None, error: str = "") -> Verdict:
    return Verdict("g", "support", label, "test", "v1", statement_index=statement, source_index=source,
                   error=error if label is None else "")  # type: ignore[arg-type]


def answer(cites: list[tuple[int, ...]], verdicts: list[Verdict], sources: tuple[Source, ...],
           meta: dict[str, str] | None = None) -> AnnotatedAnswer:
    statements = tuple(Statement("g", i, f"Claim number {i} {''.join(f'[{c}]' for c in c_)}.", citations=c_)
                       for i, c_ in enumerate(cites))
    text = " ".join(s.text for s in statements)
    return AnnotatedAnswer(Answer("g", "engine", "When did the bridge open?", "expertise", text, sources,
                                  meta=meta or {}), statements, tuple(verdicts))


def scores(a: AnnotatedAnswer, mode: str = "strict") -> dict[str, MetricResult]:
    return score_answer(a, ScoreConfig(mode, "greedy" if mode == "parity" else "exact"))


# ---- the one threshold ------------------------------------------------------------------------------


def test_one_threshold_named_in_the_registry():
    assert MAX_UNKNOWN_SHARE == 0.5
    for name in SUPPORT_METRICS:
        assert METRICS[name].max_unknown_share == MAX_UNKNOWN_SHARE, name
        assert METRICS[name].unknown_unit, name
    # half undecided still gives a value over the decided half; more than half is null
    half = decided_mean([True, None], "statements", "none")
    assert (half.value, half.n, half.units, half.unknown) == (close(1.0), 1, 2, 1)
    assert half.reason == "1 of 2 statements left out, not judged"
    more = decided_mean([True, None, None], "statements", "none", "sources without text")
    assert more.value is None and more.reason == "only 1 of 3 statements (33%) judged (sources without text)"
    assert decided_mean([], "statements", "no relevant statements").reason == "no relevant statements"


# ---- a statement with one none and one unknown pair --------------------------------------------------
#
# Cited-only labels (as ExpertQA's experts give them): uncited pairs are outside what must be decided.
#   s0 cites [1][3]: [1] none, [3] has no text       -> undecided (no full; [3] could still support it)
#   s1 cites [2]:    [2] full                        -> supported
#   s2 cites [1]:    [1] none                        -> unsupported
#   s3 cites [2]:    [2] partial                     -> unsupported

ONE_NONE_ONE_UNKNOWN = answer(
    [(1, 3), (2,), (1,), (2,)],
    [support(0, 1, "none"), support(1, 2, "full"), support(2, 1, "none"), support(3, 2, "partial")],
    (WITH_TEXT_1, WITH_TEXT_2, URL_ONLY_3), meta={"support_scope": "cited_only"})


def test_one_none_and_one_unknown_pair_leaves_the_statement_undecided():
    s = scores(ONE_NONE_ONE_UNKNOWN)
    unsupported = s["unsupported_statements"]
    # 2 unsupported (s2, s3) of the 3 decided; s0 left out
    assert (unsupported.value, unsupported.n, unsupported.units, unsupported.unknown) == (close(2 / 3), 3, 4, 1)
    assert unsupported.reason == ("support known for cited pairs only: a lower bound on support; "
                                  "1 of 4 statements left out, not judged (sources without text)")
    assert unsupported.unknown_why == "sources without text"
    # citations: [1]@s0 no, [3]@s0 unknown, [2]@s1 yes, [1]@s2 no, [2]@s3 no (partial) -> 1 of 4 decided
    accuracy = s["citation_accuracy"]
    assert (accuracy.value, accuracy.n, accuracy.units, accuracy.unknown) == (close(0.25), 4, 5, 1)
    assert accuracy.reason == "1 of 5 citations left out, not judged (sources without text)"
    # Liu: recall s0 unknown, s1 yes, s2 no, s3 no -> 1/3; precision: [3]@s0 unknown, [2]@s1 good,
    # the rest not (the partial [2]@s3 does not complete a full union) -> 1/4; F1 = 2pr/(p+r) = 2/7
    assert (s["citation_recall"].value, s["citation_recall"].unknown) == (close(1 / 3), 1)
    assert (s["citation_precision"].value, s["citation_precision"].unknown) == (close(0.25), 1)
    assert s["citation_f1"].value == close(2 / 7)
    # attribution: AutoAIS s0 unknown -> 1/3; NLI recall the same; NLI precision: both of s0's
    # citations undecided (2 of 5, under half) -> [2]@s1 relevant, [1]@s2 and [2]@s3 not -> 1/3
    assert (s["autoais_citations"].value, s["autoais_citations"].unknown) == (close(1 / 3), 1)
    assert (s["nli_citation_recall"].value, s["nli_citation_recall"].unknown) == (close(1 / 3), 1)
    precision = s["nli_citation_precision"]
    assert (precision.value, precision.n, precision.unknown) == (close(1 / 3), 3, 2)
    # necessity and thoroughness need every pair: cited-only labels cannot give them
    assert s["source_necessity"].reason == CITED_ONLY_REASON and s["citation_thoroughness"].value is None


def test_paper_parity_keeps_the_notebooks_rule():
    # parity: only sources with fetched text are columns ([3] drops out) and a pair without a label
    # counts 0, as the released notebook did: s0 now counts as unsupported -> 3 of 4
    s = scores(ONE_NONE_ONE_UNKNOWN, "parity")
    assert s["unsupported_statements"].value == close(0.75) and s["unsupported_statements"].unknown == 0
    assert s["citation_accuracy"].value == close(0.25) and s["citation_accuracy"].n == 4
    assert s["n_sources"].value == close(2.0)


# ---- all unknown -------------------------------------------------------------------------------------

ALL_URL_ONLY = answer([(1,), (2,)], [], (Source(1, url="https://x.example/1"), URL_ONLY_2))


def test_all_pairs_unknown_gives_null_with_the_reason_never_100_percent():
    s = scores(ALL_URL_ONLY)
    assert s["unsupported_statements"].value is None
    assert s["unsupported_statements"].reason == "none of 2 statements judged (sources without text)"
    assert s["citation_accuracy"].reason == "none of 2 citations judged (sources without text)"
    for name in ("source_necessity", "citation_thoroughness"):
        assert s[name].value is None, name
        assert s[name].reason == "none of 4 (statement, source) pairs judged (sources without text)", name
        assert (s[name].units, s[name].unknown) == (4, 4), name
    assert s["citation_recall"].reason == "none of 2 worthy statements judged (sources without text)"
    assert s["citation_precision"].reason == "none of 2 citations judged (sources without text)"
    assert s["citation_f1"].value is None
    assert s["nli_citation_recall"].reason == "none of 2 statements judged (sources without text)"
    assert s["autoais_passages"].reason == "none of 2 statements judged (sources without text)"
    for name in SUPPORT_METRICS:
        assert s[name].value is None, name
    # parity has no source with fetched text: the notebook skips the answer
    assert scores(ALL_URL_ONLY, "parity")["unsupported_statements"].reason == PARITY_SKIP_REASON


def test_an_answer_with_no_sources_is_unsupported_not_unknown():
    # nothing is listed, so nothing could support the statements: decided, not unknown
    s = scores(answer([(), ()], [], ()))
    assert s["unsupported_statements"].value == close(1.0) and s["unsupported_statements"].unknown == 0


# ---- too few judged ----------------------------------------------------------------------------------
#
#   s0 cites [1]: [1] full                    -> supported, whatever [2], [3] say
#   s1 cites [2]: [1] none, [2] and [3] no text -> undecided
#   s2 cites [3]: [1] none, [2] and [3] no text -> undecided

TOO_FEW = answer([(1,), (2,), (3,)], [support(0, 1, "full"), support(1, 1, "none"), support(2, 1, "none")],
                 (WITH_TEXT_1, URL_ONLY_2, URL_ONLY_3))


def test_too_few_judged_is_null_with_the_judged_share():
    s = scores(TOO_FEW)
    assert s["unsupported_statements"].value is None
    assert s["unsupported_statements"].reason == "only 1 of 3 statements (33%) judged (sources without text)"
    assert s["citation_accuracy"].reason == "only 1 of 3 citations (33%) judged (sources without text)"
    assert s["source_necessity"].reason == "only 3 of 9 (statement, source) pairs (33%) judged (sources without text)"
    assert s["nli_citation_recall"].reason == "only 1 of 3 statements (33%) judged (sources without text)"


def test_the_cause_follows_the_verdicts():
    # a judge call that failed, a reply that could not be read, a judge that could not tell, a dead page
    a = answer([(1,), (1,), (1,), (4,)],
               [support(0, 1, None, "call"), support(1, 1, None, "parse"), support(2, 1, "unknown"),
                support(3, 1, "none")], (WITH_TEXT_1, DEAD_4), meta={"support_scope": "cited_only"})
    codes = unknown_pairs(a, label_view(a))
    assert codes == {(0, 1): "call_failed", (1, 1): "unreadable", (2, 1): "undecided", (3, 4): "dead"}
    rep = answer_report(a)
    assert [s["status_reason"] for s in rep["statements"]] == [
        "not checked: the judge could not be asked", "not checked: the judge's reply could not be read",
        "not decided: the judge could not tell", "not checked: the page could not be fetched"]
    assert {s["status"] for s in rep["statements"]} == {"unchecked"}
    # a decided label wins over one that decided nothing, whatever their order
    b = answer([(1,)], [support(0, 1, "full"), support(0, 1, None, "call")], (WITH_TEXT_1,))
    assert label_view(b).support == {(0, 1): "full"} and scores(b)["citation_accuracy"].value == close(1.0)


# ---- source stance ------------------------------------------------------------------------------------


def test_source_stance_of_sources_without_text_is_unknown():
    debate = Answer("d", "engine", "Should bridges be tolled?", "debate", "Yes [1]. No [2]. Maybe [3].",
                    (WITH_TEXT_1, URL_ONLY_2, URL_ONLY_3))
    a = AnnotatedAnswer(debate, tuple(Statement("d", i, t, citations=(i + 1,)) for i, t in enumerate(("Yes [1].", "No [2].", "Maybe [3]."))),
                        (Verdict("d", "source_stance", "agree", "test", "v1", source_index=1),))
    s = score_answer(a)
    assert s["pro_source_share"].value is None
    assert s["pro_source_share"].reason == "only 1 of 3 listed sources (33%) judged (sources without text)"
    assert (s["pro_source_share"].units, s["pro_source_share"].unknown) == (3, 2)


# ---- the annotate stage, the tables, the report -------------------------------------------------------


def test_annotate_marks_pairs_without_text_unknown_with_the_reason():
    labelled = annotate_answer(answer([(1,), (3,)], [], (WITH_TEXT_1, URL_ONLY_3, DEAD_4)), get_judge("scripted", cache=False))
    unknown = sorted((v.statement_index, v.source_index, v.raw) for v in labelled.verdicts
                     if v.kind == "support" and v.label == "unknown")
    assert unknown == [(0, 3, unchecked_text("no_text")), (0, 4, unchecked_text("dead")),
                       (1, 3, unchecked_text("no_text")), (1, 4, unchecked_text("dead"))]
    assert all(v.judge == "scripted" and v.prompt_version == "scripted-v2" and v.error == ""
               for v in labelled.verdicts if v.label == "unknown")
    # the judge itself, asked directly about a source without text, says the same (never "none")
    [direct] = get_judge("scripted", cache=False).support(labelled.answer, labelled.statements[:1], URL_ONLY_3)
    assert (direct.label, direct.raw, direct.score) == ("unknown", "not checked: no text", None)

    pairs = {(r["statement_index"], r["source_index"]): (r["support"], r["support_reason"])
             for r in pair_rows("t", "scripted", [labelled], {})}
    assert pairs[(0, 3)] == ("unknown", "not checked: no text")
    assert pairs[(1, 4)] == ("unknown", "not checked: the page could not be fetched")
    assert pairs[(0, 1)][0] in ("full", "partial", "none") and pairs[(0, 1)][1] == ""
    labels = [r for r in label_rows("t", [labelled]) if r["label"] == "unknown"]
    assert len(labels) == 4 and {r["raw"] for r in labels} == {"not checked: no text", "not checked: the page could not be fetched"}
    rows = [r for r in metric_rows("t", "scripted", [labelled], (ScoreConfig(),)) if r["metric"] == "citation_accuracy"]
    assert (rows[0]["units"], rows[0]["unknown"], rows[0]["unknown_why"]) == (2, 1, "sources without text")


def test_report_statuses_and_matrices_tell_the_same_story():
    rep = answer_report(TOO_FEW)
    assert [(s["status"], s["status_reason"]) for s in rep["statements"]] == [
        ("supported", ""), ("unchecked", "not checked: no text"), ("unchecked", "not checked: no text")]
    sm = rep["support_matrix"]
    assert sm["labels"][1] == ["none", "unknown", "unknown"]
    assert sm["reasons"][1] == ["", "not checked: no text", "not checked: no text"]
    assert rep["unchecked_support"] == {"pairs": 6, "of": 9, "causes": {"sources without text": 6},
                                        "cited": [{"statement": 1, "source": 2, "reason": "not checked: no text"},
                                                  {"statement": 2, "source": 3, "reason": "not checked: no text"}]}
    assert rep["metrics"]["unsupported_statements"]["value"] is None
    assert (rep["metrics"]["unsupported_statements"]["units"], rep["metrics"]["unsupported_statements"]["unknown"]) == (3, 2)


# ---- the corpus aggregate -------------------------------------------------------------------------------


def _rows(engine: str, per_answer: list[tuple[float | None, int, int]]) -> list[dict]:
    return [{"dataset": "d", "judge": "j", "mode": "strict", "necessity": "exact", "answer_id": f"{engine}{k}",
             "engine": engine, "query_type": "expertise", "metric": "unsupported_statements", "value": value,
             "units": units, "unknown": unknown, "unknown_why": "sources without text" if unknown else ""}
            for k, (value, units, unknown) in enumerate(per_answer)]


def test_a_scorecard_cell_carries_its_judged_share_and_is_null_below_half():
    frame = pd.DataFrame(
        # E1: 4 answers, 10 statements, 4 undecided: 60% judged, mean of the three values (0.5 + 0 + 1) / 3
        _rows("E1", [(0.5, 2, 0), (0.0, 2, 0), (1.0, 2, 0), (None, 4, 4)])
        # E2: one answer with all 2 statements judged, one with none of its 6: 25% judged -> null
        + _rows("E2", [(1.0, 2, 0), (None, 6, 6)]))
    cells = summarize(frame).query("query_type == 'all' and metric == 'unsupported_statements'").set_index("engine")
    assert cells.loc["E1", "value"] == close(50.0) and cells.loc["E1", "judged_share"] == close(0.6)
    assert cells.loc["E1", "reason"] == "" and cells.loc["E1", "n_answers"] == 3
    assert pd.isna(cells.loc["E2", "value"]) and cells.loc["E2", "judged_share"] == close(0.25)
    assert cells.loc["E2", "reason"] == "only 25% of statements judged (sources without text)"
    assert pd.isna(cells.loc["E2", "ci_low"]) and pd.isna(cells.loc["E2", "rating"])


def test_a_harmonic_mean_says_which_part_was_judged_too_little():
    rows = []
    for metric, value, unknown in (("citation_precision", None, 5), ("citation_recall", 0.5, 0)):
        rows.append({"dataset": "d", "judge": "j", "mode": "strict", "necessity": "exact", "answer_id": "a1",
                     "engine": "E", "query_type": "expertise", "metric": metric, "value": value, "units": 5,
                     "unknown": unknown, "unknown_why": "sources without text" if unknown else ""})
    cells = summarize(pd.DataFrame(rows)).query("query_type == 'all'").set_index("metric")
    assert pd.isna(cells.loc["citation_f1", "value"])
    assert cells.loc["citation_f1", "reason"] == "citation precision: none of the citations judged (sources without text)"


def test_old_metric_tables_without_counts_still_aggregate():
    frame = pd.DataFrame(_rows("E", [(0.5, 2, 0), (1.0, 2, 0)])).drop(columns=["units", "unknown", "unknown_why"])
    cells = summarize(frame).query("query_type == 'all' and metric == 'unsupported_statements'")
    assert cells["value"].iloc[0] == close(75.0) and pd.isna(cells["judged_share"].iloc[0])


@pytest.mark.parametrize("name", SUPPORT_METRICS)
def test_every_support_metric_is_versioned_past_the_old_rule(name):
    # results computed before "unknown is not unsupported" carry version 1 in the metrics table
    assert METRICS[name].version >= 2


# ---- ExpertQA: the two engines whose sources have no text here -----------------------------------------

EQA = expertqa_dir()


@pytest.mark.skipif(EQA is None or not (EQA / "rand_val.jsonl").is_file(),
                    reason="ExpertQA's rand_val.jsonl not found (set EXPERTQA_DIR or put it in ../shared/data/expertqa)")
def test_expertqa_bing_chat_and_gpt4_are_not_100_percent_unsupported_under_the_offline_judge():
    # ExpertQA carries only the URLs of bing_chat's and gpt4's sources (the experts opened the pages
    # themselves), so the offline judge can judge none of their cited pairs. Before, every statement
    # counted as unsupported: 100.0%, interval [100, 100], against the experts' ~30% and ~48%.
    answers = [a for a in load_expertqa(EQA / "rand_val.jsonl") if a.answer.engine in ("bing_chat", "gpt4")]
    judge = get_judge("offline", cache=False)
    labelled = [annotate_answer(a, judge) for a in answers]
    for a in labelled:  # every cited pair is unknown with the reason, never "none"
        for s in a.statements:
            got = {v.source_index: (v.label, v.raw) for v in a.verdicts if v.kind == "support" and v.statement_index == s.index}
            assert all(got.get(c, ("unknown", "not checked: no text")) in (("unknown", "not checked: no text"),
                                                                          ("unknown", "not checked: the page could not be fetched"))
                       for c in s.citations)
    rows = pd.DataFrame(metric_rows("eqa", "offline", labelled, (ScoreConfig(),)))
    cells = summarize(rows).query("query_type == 'all'").set_index(["engine", "metric"])
    for engine in ("bing_chat", "gpt4"):
        # judged: only the statements that cite nothing (ExpertQA's "Missing" claims: no evidence at
        # all, so unsupported by what they cite), counted here from the records themselves
        relevant = [s for a in labelled if a.answer.engine == engine for s in a.statements
                    if label_view(a).relevant.get(s.index, True)]
        share = sum(1 for s in relevant if not s.citations) / len(relevant)
        cell = cells.loc[(engine, "unsupported_statements")]
        assert pd.isna(cell["value"]) and cell["judged_share"] == close(share) and share < MAX_UNKNOWN_SHARE
        assert cell["reason"] == f"only {share:.0%} of statements judged (sources without text)"
        accuracy = cells.loc[(engine, "citation_accuracy")]
        assert pd.isna(accuracy["value"]) and accuracy["judged_share"] == close(0.0)
        assert accuracy["reason"] == "none of the citations judged (sources without text)"
    # checked on the file: bing_chat has 237 claims, 75 of them "Missing" (no evidence); gpt4 109 and 19.
    # The offline judge calls 6 and 2 claims filler (4 and 2 of them Missing), leaving 231 and 107
    # relevant statements of which 71 and 17 cite nothing
    assert cells.loc[("bing_chat", "unsupported_statements"), "judged_share"] == close(71 / 231)
    assert cells.loc[("gpt4", "unsupported_statements"), "judged_share"] == close(17 / 107)


def test_the_judge_cache_keeps_an_unknown_verdict_and_its_reason(tmp_path):
    cached = get_judge("scripted", cache=tmp_path / "judges.sqlite")
    a = answer([(3,)], [], (WITH_TEXT_1, URL_ONLY_3))
    first = cached.support(a.answer, a.statements, URL_ONLY_3)
    again = cached.support(a.answer, a.statements, URL_ONLY_3)
    assert (cached.hits, cached.misses) == (1, 1)  # nothing to retry: the answer is the same until there is text
    assert [(v.label, v.raw, v.error) for v in again] == [(v.label, v.raw, v.error) for v in first] == [
        ("unknown", "not checked: no text", "")]
    # once the source has text it is another question, asked anew
    texted = Source(3, url=URL_ONLY_3.url, text="The bridge opened in 1932.")
    assert cached.support(a.answer, a.statements, texted)[0].label in ("full", "partial", "none")
    assert cached.misses == 2


def test_aee_scorecard_says_why_a_cell_is_na_with_its_judged_share(tmp_path, monkeypatch, capsys):
    import json

    from pipeline.cli import main as cli_main

    monkeypatch.setenv("AEE_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    rows = [{"answer_id": f"{e}-{k}", "engine": e, "query": f"How do bridges carry load {k}?", "query_type": "expertise",
             "answer": "Steel carries tension [1]. Stone carries compression [2].",
             "sources": [{"index": 1, "url": "https://a.example.org/1", "text": "Steel carries tension" if e == "Texted" else ""},
                         {"index": 2, "url": "https://b.example.org/2", "text": "Stone carries compression" if e == "Texted" else ""}]}
            for k in range(2) for e in ("Texted", "Bare")]
    path = tmp_path / "bridges.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert cli_main(["run", "--dataset", "bridges", "--path", str(path), "--judge", "scripted", "--no-progress"]) == 0
    capsys.readouterr()
    assert cli_main(["scorecard", "--dataset", "bridges", "--judge", "scripted"]) == 0
    out = capsys.readouterr().out
    assert "  Unsupported statements · Bare: none of the statements judged (sources without text)" in out
    assert "  Citation accuracy · Bare: none of the citations judged (sources without text)" in out
    assert cli_main(["scorecard", "--dataset", "bridges", "--judge", "scripted", "--json"]) == 0
    cells = {(c["engine"], c["metric"]): c for c in json.loads(capsys.readouterr().out)}
    bare, texted = cells[("Bare", "unsupported_statements")], cells[("Texted", "unsupported_statements")]
    assert bare["value"] is None and bare["judged_share"] == close(0.0)
    assert bare["reason"] == "none of the statements judged (sources without text)"
    assert texted["value"] == close(0.0) and texted["judged_share"] == close(1.0) and texted["reason"] == ""


def test_two_judges_that_both_decided_nothing_do_not_disagree():
    from dashboard import compare_model

    a = answer([(3,)], [support(0, 3, "unknown")], (WITH_TEXT_1, URL_ONLY_3))
    b = answer([(3,)], [support(0, 1, "none")], (WITH_TEXT_1, URL_ONLY_3))
    rows = {r["judged"]: (r["judge A"], r["judge B"], r["agreement"]) for r in compare_model.verdict_differences(a, b).to_dict("records")}
    assert rows["support by source [3]"] == ("not decided: the judge could not tell", "no verdict", "same")
    # one judge decided, the other did not: nothing to compare, and not a disagreement either
    assert rows["support by source [1]"] == ("no verdict", "none", "one side only")


# ---- relevance nobody decided ----------------------------------------------------------------------


def relevance(statement: int, label: str) -> Verdict:
    return Verdict("g", "relevance", label, "test", "v1", statement_index=statement)  # type: ignore[arg-type]


def test_a_statement_without_a_relevance_verdict_is_not_counted_relevant():
    """Labels that come with the data may cover some statements only: the ones without a verdict are
    left out of the relevance share (by hand: 1 relevant of 2 decided = 0.5), counted as content
    below the limit (3 statements), and the answer is null above it."""
    verdicts = [relevance(0, "relevant"), relevance(1, "filler"), support(0, 1, "full"), support(2, 1, "full")]
    r = scores(answer([(1,), (1,), (1,)], verdicts, (WITH_TEXT_1,)))
    assert r["relevant_statements"].value == close(0.5) and r["relevant_statements"].n == 2
    assert r["n_statements"].value == close(2.0)  # statements 0 and 2: undecided ones count as content
    assert "1 statement(s) of undecided relevance counted as content" in r["n_statements"].reason

    nothing = scores(answer([(1,), (1,), (1,)], [support(i, 1, "full") for i in range(3)], (WITH_TEXT_1,)))
    for name in ("relevant_statements", "n_statements", "citations_per_statement"):
        assert nothing[name].value is None, name  # an answer imported without labels is not "100% relevant"
        assert nothing[name].reason.startswith("none of 3 statements judged"), nothing[name].reason


def test_a_null_citation_recall_names_the_statements_it_did_decide_and_why():
    """Issue 45 item 3: "only 2 of 8 statements judged" with no source text at all: the two are the
    statements that cite nothing (uncited counts as not supported without reading a source)."""
    cites = [(1,), (1,), (), (2,), (1,), (2,), (), (1,)]
    none_read = scores(answer(cites, [], (Source(1, url="https://x.example/1"), URL_ONLY_2)))
    assert none_read["citation_recall"].value is None
    assert none_read["citation_recall"].reason == (
        "only 2 of 8 worthy statements (25%) judged (sources without text): statements 3 and 7 cite no source, "
        "which counts as not supported without reading any")
    one_read = scores(answer(cites, [support(0, 1, "none")], (WITH_TEXT_1, URL_ONLY_2)))
    assert one_read["citation_recall"].value is None  # 3 of 8 decided: still more than half undecided
    assert one_read["citation_recall"].reason.endswith(
        ": statements 3 and 7 cite no source, which counts as not supported without reading any; "
        "statement 1 had its citations judged")
