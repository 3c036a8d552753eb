"""Support is independent of citation (issue 30, item 5): a support label is a fact about a statement,
a source text and the question, so adding or removing a citation marker changes no support label of
any judge that runs offline; only the citation metrics built on the labels may move.

Property checked over the bundled corpora (the teaching corpus; ExpertQA from the shared data or
EXPERTQA_DIR when present, a fixed sample of its answers): every statement's markers removed, and every
statement citing every listed source, give the same support label for every (statement, source) pair
as the answer as published, for each offline judge in the registry.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import pytest
from tolerances import close

from pipeline.annotate import annotate_answer
from pipeline.importers.canonical import load_canonical
from pipeline.judges import JUDGES, get_judge
from pipeline.metrics import ScoreConfig, score_answer
from pipeline.records import AnnotatedAnswer, Statement
from pipeline.storage.paths import data_dir, expertqa_dir
from pipeline.text.text import find_citation_markers, strip_citation_markers

# every judge of the registry that needs no network, no argument (a model to name) and no carried labels
OFFLINE_JUDGES = sorted(name for name, info in JUDGES.items()
                        if not info.needs_network and not info.carried and not info.argument)
EXPERTQA_ANSWERS = 20  # a fixed sample (the first answers of rand_val): the property, not a benchmark


def test_the_offline_judges_are_the_ones_expected():
    # a judge added to the registry joins the property below by itself; this names today's list
    assert OFFLINE_JUDGES == ["offline", "offline:lexical", "scripted"]


def without_markers(st: Statement) -> Statement:
    return replace(st, text=strip_citation_markers(st.text, find_citation_markers(st.text)).strip(),
                   citations=(), dangling=())


def citing(st: Statement, indexes: tuple[int, ...]) -> Statement:
    """The statement citing every one of `indexes`: markers for those it does not cite yet, written
    after its last marker, or before its closing punctuation when it has none."""
    extra = "".join(f"[{i}]" for i in indexes if i not in st.citations)
    if not extra:
        return st
    markers = find_citation_markers(st.text)
    if markers:
        at = max(m.end for m in markers)
    else:
        found = re.search(r"[.!?:;]*\s*$", st.text)
        at = found.start() if found else len(st.text)
    text = st.text[:at] + " " + extra + st.text[at:]
    return replace(st, text=text, citations=st.citations + tuple(i for i in indexes if i not in st.citations))


def support_labels(annotated: AnnotatedAnswer, judge) -> dict[tuple[int, int | None], str | None]:
    done = annotate_answer(AnnotatedAnswer(annotated.answer, annotated.statements), judge)
    return {(v.statement_index, v.source_index): v.label for v in done.verdicts
            if v.kind == "support" and v.source_index is not None}


def variants(a: AnnotatedAnswer) -> dict[str, AnnotatedAnswer]:
    listed = tuple(s.index for s in a.answer.sources)
    return {"no markers": AnnotatedAnswer(a.answer, tuple(without_markers(s) for s in a.statements)),
            "every source cited": AnnotatedAnswer(a.answer, tuple(citing(s, listed) for s in a.statements))}


@lru_cache(maxsize=1)
def teaching() -> tuple[AnnotatedAnswer, ...]:
    return tuple(load_canonical(data_dir() / "demo" / "answers.jsonl"))


@lru_cache(maxsize=1)
def expertqa_sample() -> tuple[AnnotatedAnswer, ...]:
    from pipeline.importers.expertqa import iter_expertqa

    folder = expertqa_dir()
    out = []
    for a in iter_expertqa(Path(folder) / "rand_val.jsonl"):  # type: ignore[arg-type]
        if any((s.text or "").strip() for s in a.answer.sources):
            out.append(a)
        if len(out) == EXPERTQA_ANSWERS:
            break
    return tuple(out)


def corpus(which: str) -> tuple[AnnotatedAnswer, ...]:
    if which == "teaching":
        return teaching()
    folder = expertqa_dir()
    if folder is None or not (Path(folder) / "rand_val.jsonl").is_file():
        pytest.skip("ExpertQA not found (set EXPERTQA_DIR to a folder holding rand_val.jsonl); "
                    "the teaching corpus case runs without it")
    return expertqa_sample()


@pytest.mark.parametrize("which", ["teaching", "expertqa"])
@pytest.mark.parametrize("name", OFFLINE_JUDGES)
def test_adding_or_removing_markers_changes_no_support_label(name, which):
    answers = corpus(which)
    judge = get_judge(name, cache=False)
    compared = changed = 0
    first_change = None
    for a in answers:
        base = support_labels(a, judge)
        for what, other in variants(a).items():
            got = support_labels(other, judge)
            assert got.keys() == base.keys(), (a.answer.answer_id, what)
            for key, label in base.items():
                compared += 1
                if got[key] != label:
                    changed += 1
                    first_change = first_change or (a.answer.answer_id, what, key, label, got[key])
    assert compared > (400 if which == "teaching" else 100)
    assert changed == 0, f"{changed} of {compared} labels moved; first: {first_change}"


def test_the_issue_case_a_removed_marker_keeps_full_and_unsupported():
    # quarry-q7, statement 0 cites [1]: before offline-v2.2 removing the marker turned the offline
    # judge's label for (statement 0, source 1) from full to none, and Unsupported from 50% to 75%
    a = next(x for x in teaching() if x.answer.answer_id == "quarry-q7")
    assert a.statements[0].citations == (1,)
    judge = get_judge("offline", cache=False)
    cited = annotate_answer(AnnotatedAnswer(a.answer, a.statements), judge)
    moved = AnnotatedAnswer(a.answer, (without_markers(a.statements[0]), *a.statements[1:]))
    uncited = annotate_answer(moved, judge)

    def label(x: AnnotatedAnswer) -> str | None:
        return next(v.label for v in x.verdicts if v.kind == "support" and v.statement_index == 0 and v.source_index == 1)

    assert label(cited) == label(uncited) == "full"
    config = ScoreConfig("strict", "exact")
    before, after = score_answer(cited, config), score_answer(uncited, config)
    # 0.5 under offline-v2.2; offline-v3 calls one more of its statements fully supported: 0.25,
    # with or without the marker
    assert before["unsupported_statements"].value == close(0.25)
    assert after["unsupported_statements"].value == close(0.25)
    # citation metrics may move: the statement is no longer cited, so citation accuracy reads one citation fewer
    assert before["citation_accuracy"].n != after["citation_accuracy"].n or \
        before["citation_accuracy"].value != after["citation_accuracy"].value
