"""The people's audit labels as a judge of the dataset: `human:audit` (`aee audit publish`).

Labels given in an audit live in the label store (pipeline.audit.labels), per sample and person.
Publishing turns them into an ordinary judge results folder (`<results>/<dataset>/human_audit/`,
the same tables as every judge), so the Scorecard, the Answer inspector, Compare and the Judges
page can pick "human:audit" like any judge and put it beside the one it audited, item by item.

One label per item: the majority of the people who labelled it (their newest label, across every
sample of the dataset that holds the item). Why not one judge per person: a class of thirty would
put thirty judges in every picker, and a scorecard wants one reading per item; each person's label
is kept in the verdict's `raw` ("2 of 3 people said full: Ana: full; Ben: full; Chen: partial"),
and the Judges page compares the judge with each person separately. `--annotator` publishes some
people's labels only.

Everything nobody decided is `unknown` with its cause, never a guess (docs/metrics/unknown.md):
a pair or statement no one audited, a tie between people, an item everyone who saw it marked
"can't tell". Support unknowns carry the words of `records.UNCHECKED` ("not checked: no one audited
this pair"), so every metric leaves them out or is null with the judged share, and most of a
dataset's scorecard under `human:audit` reads n/a: an audit covers a sample, and the corrected
values for the whole dataset are the Scorecard's prediction-powered columns, not this judge.

The labels travel to the runner through its `transform` (attached to each answer as it is read;
the judge `AuditLabels` keeps exactly them), so the folder is written by the same run, with the same
schemas and the same all-or-nothing write, as every other judge's. An item whose statement no
longer matches the answer (the data changed since the sample was drawn) is left out and counted.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping

from pipeline.audit import AUDIT_PROMPT_VERSION, CANT_TELL, FIELD_VALUES, LABEL_WORDS, definite
from pipeline.audit.humans import majority
from pipeline.audit.labels import LabelStore, labels_path
from pipeline.audit.population import item_asks
from pipeline.audit.sample import list_samples, load_sample
from pipeline.errors import InputError
from pipeline.judges.carried import AUDIT_JUDGE
from pipeline.records import AnnotatedAnswer, LabelKind, Verdict, unchecked_text, unreadable_code
from pipeline.storage.store import list_judges, table_path
from pipeline.text.text import statements_for

# why a statement's relevance or stance is unknown under this judge (support uses records.UNCHECKED)
STATEMENT_WORDS = {
    "not_audited": "not checked: no one audited this statement",
    "audit_split": "not decided: the people who audited it disagree",
    "audit_cant_tell": "not decided: the people who audited it could not tell",
}
RULE = ("each item's label is the majority of the people who labelled it (their newest label); items nobody "
        "audited, ties and \"can't tell\" are unknown")


@dataclass(frozen=True)
class Decision:
    """What the people's labels of one item and field decide: a label, or None with a cause code."""

    label: str | None
    code: str  # "" when decided; else not_audited / audit_split / audit_cant_tell
    raw: str


def decide(votes: Mapping[str, str], sample_ids: Iterable[str] = ()) -> Decision:
    """The majority of `votes` (person -> label); see the module doc."""
    if not votes:
        return Decision(None, "not_audited", "")
    given = [v for v in votes.values() if definite(v)]
    if not given:
        return Decision(None, "audit_cant_tell", "")
    label = majority(votes.values())
    if label is None or label == CANT_TELL:
        return Decision(None, "audit_split", "")
    agree = sum(1 for v in given if v == label)
    people = "; ".join(f"{name}: {LABEL_WORDS.get(v, v)}" for name, v in sorted(votes.items()))
    where = ", ".join(sorted(set(sample_ids)))
    raw = (f"{agree} of {len(given)} {'person' if len(given) == 1 else 'people'} said {LABEL_WORDS.get(label, label)}: "
           f"{people}" + (f" (audit sample {where})" if where else ""))
    return Decision(label, "", raw)


@dataclass
class Publication:
    """Every person's newest label of every audited item of a dataset, ready to become verdicts."""

    dataset: str
    annotators: list[str]
    samples: list[str]
    label_state: tuple[int, int]
    items: dict[str, dict[str, Any]]  # item id -> answer_id, statement_index, source_index, statement, unit, asks
    votes: dict[str, dict[str, dict[str, str]]]  # item id -> field -> person -> label
    item_samples: dict[str, set[str]]  # item id -> the samples its labels came from
    ranks: dict[str, dict[str, int]] = field(default_factory=dict)  # item id -> person -> event id of their confidence
    counts: Counter = field(default_factory=Counter)  # (kind, outcome) -> verdicts written; ("stale", "") -> items

    def __post_init__(self) -> None:
        self._by_answer: dict[str, list[str]] = {}
        for item_id, item in self.items.items():
            self._by_answer.setdefault(str(item["answer_id"]), []).append(item_id)

    # ---- the runner's transform ------------------------------------------------------------------

    def transform(self, annotated: AnnotatedAnswer) -> AnnotatedAnswer:
        """The answer with the `human:audit` verdicts attached (the judge keeps only those)."""
        statements = statements_for(annotated)
        answer = annotated.answer
        by_index = {s.index: s for s in statements}
        relevance: dict[int, dict[str, str]] = {}
        stance: dict[int, dict[str, str]] = {}
        support: dict[tuple[int, int], dict[str, str]] = {}
        confidence: dict[str, tuple[int, str]] = {}
        where: dict[tuple[str, int, int | None], set[str]] = {}
        for item_id in self._by_answer.get(answer.answer_id, ()):
            item = self.items[item_id]
            si = int(item["statement_index"])
            st = by_index.get(si)
            if st is None or " ".join(st.text.split()) != " ".join(str(item["statement"]).split()):
                self.counts[("stale", "")] += 1  # the answer changed since the sample was drawn
                continue
            got = self.votes.get(item_id, {})
            if item["unit"] == "pair" and item.get("asks") != "relevant":
                key = (si, int(item["source_index"]))
                support[key] = {**support.get(key, {}), **got.get("support", {})}
                where[("support", *key)] = self.item_samples.get(item_id, set())
                continue
            # a statement item (of a statement sample, or asking relevance in a pair sample: the same item id)
            relevance[si] = got.get("relevant", {})
            stance[si] = got.get("stance", {})
            where[("relevance", si, None)] = where[("stance", si, None)] = self.item_samples.get(item_id, set())
            for person, (rank, value) in self._confidence(item_id).items():
                if person not in confidence or rank > confidence[person][0]:
                    confidence[person] = (rank, value)
        verdicts: list[Verdict] = []
        aid = answer.answer_id
        for st in statements:
            rel = decide(relevance.get(st.index, {}), where.get(("relevance", st.index, None), ()))
            verdicts.append(self._verdict(aid, "relevance", rel, statement_index=st.index))
            if rel.label == "filler":
                continue  # like a judge, nobody asks what a filler statement's sources support
            if answer.query_type == "debate":
                side = decide(stance.get(st.index, {}), where.get(("stance", st.index, None), ()))
                verdicts.append(self._verdict(aid, "stance", side, statement_index=st.index))
            for source in answer.sources:
                key = (st.index, source.index)
                votes = support.get(key, {})
                pair = decide(votes, where.get(("support", *key), ()))
                if pair.label is None and not votes and unreadable_code(source):
                    pair = Decision(None, unreadable_code(source), "")  # no text: nobody could have audited it
                verdicts.append(self._verdict(aid, "support", pair, statement_index=st.index, source_index=source.index))
        level = decide({p: v for p, (_, v) in confidence.items()})
        if level.label is not None:
            verdicts.append(self._verdict(aid, "confidence", level))
        return AnnotatedAnswer(answer, statements, annotated.verdicts + tuple(verdicts))

    def _confidence(self, item_id: str) -> dict[str, tuple[int, str]]:
        """person -> (event id, level) of the answer's confidence given on this item (the newest wins)."""
        ranks = self.ranks.get(item_id, {})
        return {p: (ranks.get(p, 0), v) for p, v in self.votes.get(item_id, {}).get("confidence", {}).items()}

    def _verdict(self, answer_id: str, kind: LabelKind, got: Decision, *, statement_index: int | None = None,
                 source_index: int | None = None) -> Verdict:
        self.counts[(kind, "decided" if got.label is not None else got.code)] += 1
        if got.label is not None:
            return Verdict(answer_id, kind, got.label, AUDIT_JUDGE, AUDIT_PROMPT_VERSION, got.raw,
                           statement_index=statement_index, source_index=source_index)
        words = unchecked_text(got.code) if kind == "support" else STATEMENT_WORDS.get(got.code, STATEMENT_WORDS["not_audited"])
        return Verdict(answer_id, kind, "unknown", AUDIT_JUDGE, AUDIT_PROMPT_VERSION, words,
                       statement_index=statement_index, source_index=source_index)

    # ---- what the run records and prints ---------------------------------------------------------

    def config(self) -> dict[str, Any]:
        """The manifest's record of what was published (`config_extra` of the run)."""
        answers = sorted({str(self.items[i]["answer_id"]) for i in self.votes if i in self.items})
        return {"audit": {"rule": RULE, "annotators": list(self.annotators), "samples": list(self.samples),
                          "label_state": list(self.label_state), "items_labelled": len(self.votes),
                          "answers": answers,  # the answers holding a label (pages open one of them)
                          "published": datetime.now(timezone.utc).isoformat(timespec="seconds")}}

    def summary(self) -> str:
        """One paragraph: what became a label and what stayed unknown, by kind."""
        parts = []
        for kind, noun in (("support", "pairs"), ("relevance", "statements for relevance"),
                           ("stance", "statements for stance"), ("confidence", "answers for confidence")):
            decided = self.counts[(kind, "decided")]
            split, cant = self.counts[(kind, "audit_split")], self.counts[(kind, "audit_cant_tell")]
            total = sum(n for (k, _), n in self.counts.items() if k == kind)
            if not total:
                continue
            extra = ", ".join(x for x in (f"{split} split" if split else "", f"{cant} can't tell" if cant else "") if x)
            what = noun.split(" for ")
            parts.append(f"{decided} of {total} {what[0]} labelled" + (f" for {what[1]}" if len(what) > 1 else "")
                         + (f" ({extra})" if extra else ""))
        stale = self.counts[("stale", "")]
        who = ", ".join(self.annotators)
        return (f"judge {AUDIT_JUDGE} of {self.dataset}: labels of {len(self.annotators)} "
                f"{'person' if len(self.annotators) == 1 else 'people'} ({who}) from {len(self.samples)} sample(s); "
                + "; ".join(parts) + "; everything else unknown"
                + (f"; {stale} labelled item(s) left out: their statement changed since the sample was drawn" if stale else ""))


def collect(dataset: str, *, annotators: Iterable[str] | None = None, root: Path | None = None,
            store: LabelStore | None = None) -> Publication:
    """Every person's newest label of every item of the dataset's samples (see the module doc).
    InputError when nobody has labelled anything (or none of the named people has)."""
    store = store or LabelStore(labels_path(root))
    metas = list_samples(dataset, root)
    if not metas:
        raise InputError(f"dataset {dataset!r} has no audit sample; draw one with `aee audit sample`", field="--dataset")
    chosen = None if annotators is None else {str(a) for a in annotators}
    items: dict[str, dict[str, Any]] = {}
    newest: dict[tuple[str, str, str], tuple[int, str, str]] = {}  # (item, person, field) -> (event id, value, sample)
    sample_ids = []
    for meta in metas:
        sample_id = str(meta["sample_id"])
        sample_ids.append(sample_id)
        events = store.current(sample_id)
        if events.empty:
            continue
        sample = load_sample(sample_id, root)
        for r in sample.items.to_dict("records"):
            items.setdefault(str(r["item_id"]), {
                "answer_id": str(r["answer_id"]), "statement_index": int(r["statement_index"]),
                "source_index": int(r["source_index"]) if sample.unit == "pair" else None,
                "statement": str(r["statement"]), "unit": sample.unit,
                "asks": item_asks(r) if sample.unit == "pair" else "statement"})
        for e in events.itertuples(index=False):
            if e.field not in FIELD_VALUES or (chosen is not None and e.annotator not in chosen):
                continue
            key = (str(e.item_id), str(e.annotator), str(e.field))
            if key not in newest or int(e.id) > newest[key][0]:
                newest[key] = (int(e.id), str(e.value), sample_id)
    if chosen is not None:
        missing = sorted(chosen - {person for _, person, _ in newest})
        if missing:
            raise InputError(f"no label by {', '.join(repr(m) for m in missing)} in the samples of {dataset!r}",
                             field="--annotator")
    if not newest:
        raise InputError(f"nobody has labelled a sample of {dataset!r} yet: there is nothing to publish", field="--dataset")
    votes: dict[str, dict[str, dict[str, str]]] = {}
    ranks: dict[str, dict[str, int]] = {}
    item_samples: dict[str, set[str]] = {}
    people: dict[str, int] = {}
    for (item_id, person, fld), (event_id, value, sample_id) in sorted(newest.items(), key=lambda kv: kv[1][0]):
        if item_id not in items:
            continue
        votes.setdefault(item_id, {}).setdefault(fld, {})[person] = value
        item_samples.setdefault(item_id, set()).add(sample_id)
        people.setdefault(person, event_id)
        if fld == "confidence":
            ranks.setdefault(item_id, {})[person] = event_id
    return Publication(dataset, sorted(people, key=lambda p: people[p]), sorted(set(sample_ids)), store.state(sample_ids),
                       items, votes, item_samples, ranks)


def run_input(dataset: str, root: Path | None = None) -> tuple[str | None, str | None, int | None]:
    """(path, importer, limit) the dataset's results were built from, read from a judge's manifest
    (the audited judge's first): the publishing run reads the same answers. Nones when no manifest
    says (a known dataset then resolves by name)."""
    judges = list_judges(dataset, root)
    audited = [str(m.get("judge")) for m in list_samples(dataset, root)]
    for judge in [*dict.fromkeys(j for j in audited if j in judges), *(j for j in judges if j != AUDIT_JUDGE)]:
        try:
            manifest = json.loads(table_path(dataset, "summary", judge, root).with_name("manifest.json").read_text("utf-8"))
        except (OSError, ValueError):
            continue
        config = manifest.get("config") or {}
        path = config.get("path")
        return (str(path) if path and Path(str(path)).exists() else None, config.get("importer"),
                config.get("limit") if isinstance(config.get("limit"), int) else None)
    return None, None, None


def published(dataset: str, root: Path | None = None) -> dict[str, Any] | None:
    """What the published `human:audit` judge of a dataset holds (its manifest's `audit` record),
    None when it was never published."""
    if AUDIT_JUDGE not in list_judges(dataset, root):
        return None
    try:
        manifest = json.loads(table_path(dataset, "summary", AUDIT_JUDGE, root).with_name("manifest.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    record = (manifest.get("config") or {}).get("audit")
    return record if isinstance(record, dict) else None


def labels_since(dataset: str, root: Path | None = None, store: LabelStore | None = None) -> int | None:
    """Label events given on the dataset's samples after the `human:audit` judge was published (0:
    it is up to date); None when it was never published."""
    record = published(dataset, root)
    if record is None:
        return None
    store = store or LabelStore(labels_path(root))
    count, _ = store.state(str(m["sample_id"]) for m in list_samples(dataset, root))
    then = record.get("label_state") or [0, 0]
    return max(0, count - int(then[0]))
