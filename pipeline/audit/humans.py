"""Human labels as the `human` judge of a dataset, for the audited items.

The annotators' labels of a sample (pipeline.audit.labels) become `Verdict` records of the same
kinds the judges give (support per (statement, source), relevance and stance per statement,
confidence per answer), under judge ids of the `human` family: `human:audit/<annotator>` for one
person and `human:audit` for the majority of several. ExpertQA's experts (`human:expertqa`, carried
by the `human` judge's results) are the same family, so on ExpertQA they can stand beside the
audit's annotators as one more person.

An abstention ("can't tell") is never a label: support and relevance abstentions give no verdict,
and a stance abstention is the stance vocabulary's own `unknown` (the metrics already leave it out).
Ties between annotators give no majority.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping

import pandas as pd

from pipeline.audit import AUDIT_JUDGE_PREFIX, AUDIT_PROMPT_VERSION, CANT_TELL, FIELD_VALUES, definite
from pipeline.audit.population import item_asks
from pipeline.records import Verdict

MAJORITY = "majority"
EXPERTS = "ExpertQA experts"  # the carried expert labels, named as an annotator
EXPERT_SUPPORT = {"full": "full", "partial": "partial", "none": "none"}
EXPERT_RELEVANCE = ("relevant", "filler")


def majority(values: Iterable[object]) -> str | None:
    """The label most annotators gave (abstentions left out); None on a tie or when nobody gave
    one; CANT_TELL when everybody who answered abstained."""
    given = [v for v in values if isinstance(v, str) and v]
    votes = Counter(v for v in given if definite(v))
    if not votes:
        return CANT_TELL if given else None
    (top, count), *rest = votes.most_common()
    return None if rest and rest[0][1] == count else top


def item_labels(labels: pd.DataFrame, annotators: Iterable[str] | None = None) -> dict[str, dict[str, str | None]]:
    """item id -> field -> the label of the chosen annotators (their majority when several); from
    `LabelStore.labels` rows. Fields nobody answered are absent."""
    chosen = None if annotators is None else set(annotators)
    out: dict[str, dict[str, str | None]] = {}
    if labels.empty:
        return out
    rows = labels if chosen is None else labels[labels["annotator"].isin(chosen)]
    for item, part in rows.groupby("item_id", sort=False):
        fields: dict[str, str | None] = {}
        for field in FIELD_VALUES:
            if field in part.columns:
                values = [v for v in part[field] if isinstance(v, str) and v]
                if values:
                    fields[field] = majority(values)
        if fields:
            out[str(item)] = fields
    return out


def audit_judge_id(annotators: list[str]) -> str:
    """The judge id of audit verdicts: one person's name, or the majority of several."""
    return f"{AUDIT_JUDGE_PREFIX}/{annotators[0]}" if len(annotators) == 1 else AUDIT_JUDGE_PREFIX


def human_verdicts(items: pd.DataFrame, labels: Mapping[str, Mapping[str, str | None]], judge: str,
                   unit: str) -> list[Verdict]:
    """Verdicts for the labelled items of a sample (`items` as registered: answer_id,
    statement_index, source_index for pairs). A confidence label is an answer-level verdict."""
    out: list[Verdict] = []
    confidence_done: set[str] = set()
    for r in items.to_dict("records"):
        got = labels.get(r["item_id"]) or {}
        aid, si = str(r["answer_id"]), int(r["statement_index"])
        raw = f"audit item {r['item_id']}"
        if unit == "pair" and item_asks(r) == "support":
            value = got.get("support")
            if definite(value):
                out.append(Verdict(aid, "support", value, judge, AUDIT_PROMPT_VERSION, raw, statement_index=si,
                                   source_index=int(r["source_index"])))
            continue
        relevant = got.get("relevant")
        if definite(relevant):
            out.append(Verdict(aid, "relevance", relevant, judge, AUDIT_PROMPT_VERSION, raw, statement_index=si))
        stance = got.get("stance")
        if stance and r.get("query_type") == "debate":
            out.append(Verdict(aid, "stance", "unknown" if stance == CANT_TELL else stance, judge, AUDIT_PROMPT_VERSION,
                               raw, statement_index=si))
        confidence = got.get("confidence")
        if definite(confidence) and aid not in confidence_done:
            confidence_done.add(aid)
            out.append(Verdict(aid, "confidence", confidence, judge, AUDIT_PROMPT_VERSION, raw))
    return out


def expert_labels(items: pd.DataFrame, verdicts: Iterable[Verdict]) -> dict[str, dict[str, str | None]]:
    """ExpertQA's expert labels (verdicts of `human:expertqa`) for a sample's items, in the same shape
    as `item_labels`, so the experts can be compared and used like an annotator: support for a pair
    sample's items, relevance (from the claim's informativeness, as the importer maps it) for a
    statement sample's (and a relevance sample's statement items); "can't tell" where they judged the
    answer but gave no decided label on the item. ExpertQA has no debate questions, so no stance or confidence."""
    verdicts = [v for v in verdicts if v.judge.startswith("human:")]
    by_pair = {(v.answer_id, v.statement_index, v.source_index): v.label for v in verdicts
               if v.kind == "support" and v.source_index is not None}
    relevance = {(v.answer_id, v.statement_index): v.label for v in verdicts
                 if v.kind == "relevance" and v.statement_index is not None}
    # an item of an answer the experts labelled, with no decided label of theirs (support "N/A": the page
    # would not open; no informativeness; a pair they were not shown), is their "can't tell": an answer,
    # read as `aee scorecard --judge human` reads it (the pair unknown, the statement counted as content)
    judged = {v.answer_id for v in verdicts}
    out: dict[str, dict[str, str | None]] = {}
    pairs = "source_index" in items.columns
    for r in items.to_dict("records"):
        if pairs and item_asks(r) == "support":
            key = (str(r["answer_id"]), int(r["statement_index"]), int(r["source_index"]))
            label = by_pair.get(key)
            if label in EXPERT_SUPPORT:
                out[str(r["item_id"])] = {"support": EXPERT_SUPPORT[label]}
            elif key[0] in judged:
                out[str(r["item_id"])] = {"support": CANT_TELL}
            continue
        statement = (str(r["answer_id"]), int(r["statement_index"]))
        relevant = relevance.get(statement)
        if relevant in EXPERT_RELEVANCE:
            out[str(r["item_id"])] = {"relevant": relevant}
        elif statement[0] in judged:
            out[str(r["item_id"])] = {"relevant": CANT_TELL}
    return out
