"""Source stance: the judge ability (offline cues, LLM judge, cache, carried labels, annotate stage,
canonical labels) and the golden values of the source-stance metrics on hand-made labels."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai_fixtures import (  # (fixtures are used by name)
    _server_module,
    fake_openai,
    make_judge,
    smart_reply,
)
from tolerances import close

from pipeline.annotate import annotate_answer
from pipeline.errors import InputError
from pipeline.importers.canonical import parse_answer
from pipeline.judges import get_judge
from pipeline.judges.base import JudgeError
from pipeline.judges.cache import CachingJudge
from pipeline.judges.offline.source_stance import RULES_VERSION, offline_source_stance, parse_query, source_side
from pipeline.judges.scripted import ScriptedJudge
from pipeline.metrics import METRICS, ScoringContext, score_answer
from pipeline.metrics.source_stance import source_stance_rows
from pipeline.records import AnnotatedAnswer, Answer, Source, Statement, Verdict

ZOO_QUERY = "Should zoos be abolished?"


def _answer(query: str = ZOO_QUERY, query_type: str = "debate", n_sources: int = 5, texts: dict[int, str] | None = None) -> Answer:
    texts = texts or {}
    sources = tuple(Source(k, f"https://www.site{k}.example.org/page", f"Source {k}", texts.get(k, "")) for k in range(1, n_sources + 1))
    return Answer("a1", "Engine", query, query_type, "answer text", sources)  # type: ignore[arg-type]


def _statements(cites: list[tuple[int, ...]]) -> tuple[Statement, ...]:
    return tuple(Statement("a1", k, f"statement {k}", citations=c) for k, c in enumerate(cites))


def _v(kind: str, label: str, statement: int | None = None, source: int | None = None) -> Verdict:
    return Verdict("a1", kind, label, "hand", "v1", statement_index=statement, source_index=source)  # type: ignore[arg-type]


def _golden() -> AnnotatedAnswer:
    """Five sources: [1] agree, [2] agree, [3] disagree, [4] neutral, [5] unknown. Five relevant
    statements: s0 agree cites [1]; s1 agree cites [2, 3]; s2 agree cites [3]; s3 neutral cites
    [4]; s4 agree cites [5]."""
    stances = {1: "agree", 2: "agree", 3: "disagree", 4: "neutral", 5: "unknown"}
    sides = ["agree", "agree", "agree", "neutral", "agree"]
    verdicts = [_v("source_stance", label, source=k) for k, label in stances.items()]
    verdicts += [_v("stance", label, statement=k) for k, label in enumerate(sides)]
    return AnnotatedAnswer(_answer(), _statements([(1,), (2, 3), (3,), (4,), (5,)]), tuple(verdicts))


def _scores(annotated: AnnotatedAnswer) -> dict:
    return score_answer(annotated)


# ---- golden metric values -----------------------------------------------------------------------


def test_golden_values_on_hand_made_labels():
    s = _scores(_golden())
    # known stances: 4 of 5 (unknown left out); agree 2, disagree 1, neutral 1
    assert (s["pro_source_share"].value, s["pro_source_share"].n) == (pytest.approx(2 / 4), 4)
    assert (s["con_source_share"].value, s["con_source_share"].n) == (pytest.approx(1 / 4), 4)
    assert "4 of 5 listed sources" in s["pro_source_share"].reason
    # balance = 1 - |2 - 1| / 3 over the sources; the statements are 4 agree, 0 disagree
    assert (s["source_balance"].value, s["source_balance"].n) == (pytest.approx(2 / 3), 3)
    assert (s["answer_balance"].value, s["answer_balance"].n) == close((0.0, 4))
    assert s["balance_gap"].value == pytest.approx(0 - 2 / 3)
    # a one-sided answer whose sources offered both sides
    assert (s["side_picked"].value, s["side_picked"].n) == close((1.0, 4))
    # polar pairs: s0-[1] same, s1-[2] same, s1-[3] differ, s2-[3] differ; s4-[5] unknown left out
    assert (s["citing_follows_source"].value, s["citing_follows_source"].n) == close((0.5, 4))
    assert s["citing_follows_source"].reason == "1 citations to sources of unknown stance left out"


def test_golden_detail_rows():
    rows = {r["source_index"]: r for r in source_stance_rows(_golden())}
    assert rows[1]["stance"] == "agree" and rows[1]["follows"] is True and rows[1]["on_answer_side"] is True
    assert rows[3]["cited_by"] == [1, 2] and rows[3]["citing_agree"] == 2
    assert rows[3]["follows"] is False and rows[3]["on_answer_side"] is False  # cited twice against its side
    assert rows[4]["follows"] is None and rows[4]["on_answer_side"] is None  # neutral source
    assert rows[5]["stance"] == "unknown" and rows[5]["follows"] is None
    assert {r["answer_side"] for r in rows.values()} == {"agree"}
    assert rows[2]["domain"] == "site2.example.org" and rows[2]["judge"] == "hand"


def test_balanced_answer_and_one_sided_sources():
    stances = {1: "agree", 2: "agree", 3: "neutral"}
    verdicts = [_v("source_stance", label, source=k) for k, label in stances.items()]
    verdicts += [_v("stance", "agree", statement=0), _v("stance", "disagree", statement=1)]
    balanced = AnnotatedAnswer(_answer(n_sources=3), _statements([(1,), (2,)]), tuple(verdicts))
    s = _scores(balanced)
    assert s["answer_balance"].value == close(1.0) and s["source_balance"].value == close(0.0)
    assert s["balance_gap"].value == close(1.0)  # the answer is more balanced than its sources
    assert s["side_picked"].value is None and "not one-sided" in s["side_picked"].reason
    # s1 (disagree) cites [2] (agree): differ; s0 (agree) cites [1] (agree): same
    assert s["citing_follows_source"].value == close(0.5)

    one_sided = AnnotatedAnswer(_answer(n_sources=3), _statements([(1,), (2,)]),
                                tuple(verdicts[:3]) + (_v("stance", "agree", statement=0), _v("stance", "agree", statement=1)))
    assert _scores(one_sided)["side_picked"].value == close(0.0)  # one-sided, but so were the sources


def test_null_with_reasons():
    too_few = AnnotatedAnswer(_answer(n_sources=4), _statements([(1,)]),
                              (_v("source_stance", "agree", source=1), *(_v("source_stance", "unknown", source=k) for k in (2, 3, 4)),
                               _v("stance", "agree", statement=0)))
    s = _scores(too_few)
    for name in ("pro_source_share", "con_source_share", "source_balance", "side_picked"):
        assert s[name].value is None, name
        assert s[name].reason == ("only 1 of 4 listed sources (25%) judged "
                                  "(sources whose stance the judge could not tell)"), name
        assert (s[name].units, s[name].unknown) == (4, 3), name
    unlabelled = AnnotatedAnswer(_answer(), _statements([(1,)]), (_v("stance", "agree", statement=0),))
    s = _scores(unlabelled)
    assert s["pro_source_share"].reason == "no source stance labels"
    assert s["citing_follows_source"].reason == "no source stance labels"
    assert s["answer_balance"].value == close(0.0)  # the statements still have their own stance
    expertise = AnnotatedAnswer(_answer(query_type="expertise"), _statements([(1,)]), _golden().verdicts)
    for name, info in METRICS.items():
        if info.group == "source stance":
            result = info.fn(ScoringContext(expertise))
            assert result.value is None and result.reason == "defined for debate queries only", name
            assert info.debate_only


def test_parse_failure_counts_as_unlabelled():
    verdicts = [Verdict("a1", "source_stance", None, "openai:x", "source_stance_v1", raw="bad", source_index=k, error="parse")
                for k in (1, 2, 3)] + [_v("source_stance", "agree", source=4), _v("source_stance", "disagree", source=5)]
    s = _scores(AnnotatedAnswer(_answer(), _statements([(1,)]), tuple(verdicts)))
    assert s["pro_source_share"].value is None and "2 of 5" in s["pro_source_share"].reason


# ---- offline cues -------------------------------------------------------------------------------


@pytest.mark.parametrize("query, terms, polarity", [
    ("Is aspartame linked to cancer?", ("aspartam", "link", "cancer"), 1),
    ("Should zoos be abolished?", ("zoo", "abolish"), 1),
    ("Is nuclear power not safe?", ("nuclear", "power", "saf"), -1),
    ("Isn't nuclear power safe?", ("nuclear", "power", "saf"), 1),  # rhetorical: leans "safe"
    ("What are the arguments against school uniforms?", ("school", "uniform"), -1),
])
def test_query_proposition(query, terms, polarity):
    prop = parse_query(query)
    assert prop.terms == terms and prop.polarity == polarity


@pytest.mark.parametrize("query, text, label", [
    (ZOO_QUERY, "Zoos should be abolished. Keeping wild animals in zoos is cruel, and abolishing zoos would end it.", "agree"),
    (ZOO_QUERY, "Zoos should be kept open because zoos protect endangered species. Experts say zoos must be preserved.", "disagree"),
    ("Is aspartame linked to cancer?", "There is no evidence that aspartame is linked to cancer. The cancer link "
     "attributed to aspartame is a myth.", "disagree"),
    ("Is aspartame linked to cancer?", "A large study found aspartame linked to cancer. The link between aspartame "
     "and cancer was strongest for breast cancer.", "agree"),
    ("Is aspartame linked to cancer?", "Some studies link aspartame to cancer. Other studies found no link between "
     "aspartame and cancer.", "neutral"),
    ("Is aspartame linked to cancer?", "Aspartame is a sweetener found in many diet drinks.", "unknown"),
    ("Is aspartame linked to cancer?", "One report linked aspartame to cancer.", "unknown"),  # one sentence: too little
    ("Is aspartame safe?", "Aspartame is harmful, says one group. Aspartame is dangerous for some people.", "disagree"),
    ("Is aspartame not safe?", "Aspartame is safe at normal doses. Regulators call aspartame safe.", "disagree"),
])
def test_offline_labels(query, text, label):
    assert source_side(text, parse_query(query))[0] == label


def test_offline_verdicts_keep_rules_evidence_and_raw():
    answer = _answer(texts={1: "Zoos should be abolished. Abolishing zoos ends captivity.", 2: ""}, n_sources=2)
    verdicts = offline_source_stance(answer, answer.sources, "offline", "offline-v9")
    assert [(v.kind, v.source_index, v.label) for v in verdicts] == [("source_stance", 1, "agree"), ("source_stance", 2, "unknown")]
    assert verdicts[0].prompt_version == "offline-v9" and verdicts[0].evidence == "Zoos should be abolished."
    assert json.loads(verdicts[0].raw)["sentences_about_query"] == 2 and json.loads(verdicts[0].raw)["rules"] == RULES_VERSION
    assert json.loads(verdicts[1].raw)["why"] == "the source has no text"


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=200), st.text(max_size=2000))
def test_offline_cues_never_fail(query, text):
    prop = parse_query(query)
    assert prop.polarity in (1, -1)
    label, evidence, raw = source_side(text, prop)
    assert label in ("agree", "disagree", "neutral", "unknown") and len(evidence) <= 300
    json.dumps(raw)


# ---- the judge seam -----------------------------------------------------------------------------


class _Counting(ScriptedJudge):
    """The scripted judge, plus a source stance that records what it was asked."""

    name = "counting"

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[list[int]] = []

    def cache_material(self, method, answer, statements, sources):
        if method == "source_stance":  # its verdict reads the question and the source's text
            return [[answer.query, s.text] for s in sources]
        return super().cache_material(method, answer, statements, sources)

    def source_stance(self, answer, sources):
        self.asked.append([s.index for s in sources])
        return [Verdict(answer.answer_id, "source_stance", "agree", self.name, "v1", source_index=s.index) for s in sources]


def test_cache_keeps_one_entry_per_source(tmp_path):
    inner = _Counting()
    judge = CachingJudge(inner, tmp_path / "c.sqlite")
    answer = _answer(texts={1: "one", 2: "two", 3: "three"}, n_sources=3)
    first = judge.source_stance(answer, answer.sources[:2])
    again = judge.source_stance(answer, answer.sources)  # [1], [2] from the cache, [3] asked
    assert inner.asked == [[1, 2], [3]]
    assert [v.source_index for v in again] == [1, 2, 3] and [v.label for v in first] == ["agree", "agree"]
    other = Answer("a2", "Other engine", ZOO_QUERY, "debate", "other answer", answer.sources)
    assert [v.answer_id for v in judge.source_stance(other, answer.sources)] == ["a2"] * 3  # same query and text: cached
    assert inner.asked == [[1, 2], [3]] and judge.stats["hits"] == 5


def test_default_and_carried_judges():
    answer = _answer(texts={1: "text"}, n_sources=1)
    assert get_judge("scripted", cache=False).source_stance(answer, answer.sources) == []
    with pytest.raises(JudgeError):
        get_judge("recorded").source_stance(answer, answer.sources)


def test_annotate_asks_on_debate_queries_only(tmp_path):
    inner = _Counting()
    texts = {1: "text one", 2: "", 3: "text three"}
    debate = AnnotatedAnswer(_answer(texts=texts, n_sources=3), _statements([(1,)]))
    result = annotate_answer(debate, inner)
    assert inner.asked == [[1, 3]]  # sources with text only
    assert [(v.kind, v.source_index) for v in result.verdicts if v.kind == "source_stance"] == [("source_stance", 1), ("source_stance", 3)]
    annotate_answer(AnnotatedAnswer(_answer(query_type="expertise", texts=texts, n_sources=3), _statements([(1,)])), inner)
    assert inner.asked == [[1, 3]]


def test_llm_judge_labels_sources_and_finds_quotes(make_judge, fake_openai):
    texts = {1: "Zoos run breeding programmes for endangered species and should stay open.", 2: "Captivity harms animals."}
    answer = _answer(texts=texts, n_sources=3)
    judge = make_judge()
    fake_openai.handler = lambda req: json.dumps({"results": [
        {"id": "S1", "label": "against", "quote": "should stay open"}, {"id": "S2", "label": "agree", "quote": "not in the text"}]})
    verdicts = judge.source_stance(answer, answer.sources)
    assert len(fake_openai.chat_requests) == 1  # both short sources in one call
    prompt = fake_openai.chat_requests[0].prompt_text
    assert "Sources to classify: S1, S2." in prompt and "listed as [2]" in prompt
    by_source = {v.source_index: v for v in verdicts}
    assert by_source[1].label == "disagree" and by_source[1].evidence == "should stay open"
    assert by_source[2].label == "agree" and by_source[2].evidence == ""
    assert by_source[3].label is None and by_source[3].error == "call"  # no text: nothing to judge
    assert {v.prompt_version for v in verdicts} == {"source_stance_v1"} and by_source[1].judge == "openai:fake-model"


def test_llm_judge_parse_failure_is_recorded(make_judge, fake_openai):
    answer = _answer(texts={1: "Some text about zoos."}, n_sources=1)
    judge = make_judge()
    fake_openai.handler = lambda req: "I would rather not say."
    (verdict,) = judge.source_stance(answer, answer.sources)
    assert verdict.label is None and verdict.error == "parse" and "I would rather not say." in verdict.raw
    assert len(fake_openai.chat_requests) == 2  # one corrective follow-up


def test_llm_judge_splits_long_sources_over_calls(make_judge, fake_openai):
    long_text = " ".join(f"Zoos sentence number {k} about abolishing zoos and animal welfare." for k in range(400))
    answer = _answer(texts={k: long_text for k in range(1, 7)}, n_sources=6)
    judge = make_judge()
    fake_openai.handler = smart_reply()
    verdicts = judge.source_stance(answer, answer.sources)
    # each source sends 2,500 characters of passages; a call holds 12,000: four sources, then two
    assert len(fake_openai.chat_requests) == 2
    assert [v.source_index for v in verdicts] == [1, 2, 3, 4, 5, 6] and {v.label for v in verdicts} == {"disagree"}


# ---- recorded labels ----------------------------------------------------------------------------


def _canonical(labels: dict) -> dict:
    return {"answer_id": "c1", "engine": "E", "query": ZOO_QUERY, "query_type": "debate", "answer": "Zoos help [1]. Zoos harm [2].",
            "sources": [{"index": 1, "url": "https://a.org"}, {"index": 2, "url": "https://b.gov"}], "labels": labels}


def test_canonical_source_labels_become_recorded_verdicts():
    annotated = parse_answer(_canonical({"sources": [{"index": 1, "stance": "disagree"}, {"index": 2, "stance": "agree"}]}), "x")
    found = [(v.kind, v.source_index, v.label, v.judge) for v in annotated.verdicts]
    assert found == [("source_stance", 1, "disagree", "recorded"), ("source_stance", 2, "agree", "recorded")]


@pytest.mark.parametrize("sources, field", [
    ([{"index": 3, "stance": "agree"}], "labels.sources[0].index"),
    ([{"index": 1, "stance": "pro"}], "labels.sources[0].stance"),
    ([{"index": 1, "stance": "agree"}, {"index": 1, "stance": "agree"}], "labels.sources[1].index"),
    ({"index": 1}, "labels.sources"),
])
def test_canonical_source_labels_are_checked(sources, field):
    with pytest.raises(InputError) as err:
        parse_answer(_canonical({"sources": sources}), "x")
    assert field in str(err.value)
