"""Audit the judge on your own answers: samples, human labels, agreement and prediction-powered
scorecards (docs/audit.md).

The loop: `sample` draws a reproducible, stratified probability sample of a dataset's items (a
statement with one of its sources for support, a statement for relevance and stance) and registers
it under the results folder; people label it in the app's "Audit the judge" page, in a spreadsheet
or in Label Studio / Argilla (`files`); every label lands in an append-only SQLite store (`labels`);
`agreement` compares the judge with each annotator, with their majority and the annotators with each
other; `ppi` corrects the scorecard's means with the human labels (prediction-powered inference,
with the sampling weights).

Vocabulary shared by every part (and by the page): the label fields an annotator can give and the
values each takes. "cant_tell" is an annotator's abstention: it is stored and shown, but it is not a
label, exactly as a judge's `unknown` is not a prediction.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.storage.paths import results_dir

UNITS: tuple[str, ...] = ("pair", "statement")
SCOPES: tuple[str, ...] = ("cited", "all")
CANT_TELL = "cant_tell"
# field -> the values it takes (CANT_TELL included where an annotator may abstain)
FIELD_VALUES: dict[str, tuple[str, ...]] = {
    "support": ("full", "partial", "none", CANT_TELL),
    "relevant": ("relevant", "filler", CANT_TELL),
    "stance": ("agree", "disagree", "neutral", CANT_TELL),
    "confidence": ("1", "2", "3", "4", "5", CANT_TELL),
}
# the label fields of each unit (statement units ask for stance and confidence on debate answers only)
UNIT_FIELDS: dict[str, tuple[str, ...]] = {"pair": ("support",), "statement": ("relevant", "stance", "confidence")}
LABEL_WORDS: dict[str, str] = {
    "full": "fully supports", "partial": "partially supports", "none": "does not support", CANT_TELL: "can't tell",
    "relevant": "relevant", "filler": "filler", "agree": "agrees", "disagree": "disagrees", "neutral": "neutral",
}
AUDIT_JUDGE_PREFIX = "human:audit"  # verdicts from audit labels: "human:audit/<annotator>", the majority "human:audit"
AUDIT_PROMPT_VERSION = "audit-v1"


def audit_dir(root: Path | None = None) -> Path:
    """Where samples and labels live: `<results>/_audit/` (not a dataset: it has no answers table)."""
    return (root or results_dir()) / "_audit"


def definite(value: object) -> bool:
    """True for a label a statistic may use: a known value that is not an abstention."""
    return isinstance(value, str) and value not in ("", CANT_TELL, "unknown")
