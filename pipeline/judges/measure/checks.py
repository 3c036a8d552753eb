"""A behavioural check suite for judges, in the spirit of CheckList: small hand-written cases, each
probing one capability (verbatim support, a flipped direction, a greeting, a "critics argue"
frame...), with the label a careful reader would give.

Cases live in `data/judge_checks/*.jsonl`, one JSON object per line:

    {"id": "support-number-format-003", "kind": "support", "capability": "number formats",
     "query": "How long does a new reactor take to build?", "statement": "Building a plant takes 10 to 19 years.",
     "source": "Recent projects took between 10 and 19 years from planning to operation.",
     "expect": ["full"], "note": "a range written two ways"}

- `kind`: support | relevance | stance | confidence (the judge method the case calls).
- `expect`: the acceptable labels (a string is read as a one-element list). A judge that answers
  `unknown` (or cannot be parsed) fails the case and is counted as an abstention.
- support cases need `source`; confidence cases put the whole answer in `answer`; stance and
  relevance cases need `statement`; `query_type` defaults to debate for stance, else expertise.
- `decidable` (optional, support only): true when lexical and number evidence alone settle the
  case; the offline judge's target is stated on those.

`run_checks(judge, cases)` calls the judge the way the annotate stage would and returns one row per
case; `summarize_checks` gives the pass rate per kind and capability. `aee judges check --judge NAME`
prints both and saves them for the Judges page.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import pandas as pd

from pipeline.errors import InputError
from pipeline.judges.base import Judge
from pipeline.records import AnnotatedAnswer, Answer, Source, Statement, Verdict
from pipeline.storage.paths import data_dir, results_dir

KINDS = ("support", "relevance", "stance", "confidence")
ABSTAIN = "unknown"


@dataclass(frozen=True)
class CheckCase:
    """One behavioural check."""

    id: str
    kind: str
    capability: str
    expect: tuple[str, ...]
    query: str
    statement: str = ""
    source: str = ""
    answer: str = ""
    query_type: str = "expertise"
    decidable: bool = False
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # anything else on the line, kept for reports


def checks_dir() -> Path:
    """Where the bundled check cases live."""
    return data_dir() / "judge_checks"


def _case(obj: Any, where: str) -> CheckCase:
    if not isinstance(obj, dict):
        raise InputError("expected a JSON object", record=where)
    missing = [k for k in ("id", "kind", "capability", "expect", "query") if not obj.get(k)]
    if missing:
        raise InputError(f"missing {', '.join(missing)}", record=where)
    kind = obj["kind"]
    if kind not in KINDS:
        raise InputError(f"kind must be one of {', '.join(KINDS)}", record=where, field="kind")
    expect = obj["expect"]
    expect = (expect,) if isinstance(expect, str) else tuple(str(e) for e in expect)
    need = {"support": ("statement", "source"), "relevance": ("statement",), "stance": ("statement",),
            "confidence": ("answer",)}[kind]
    for name in need:
        if not isinstance(obj.get(name), str) or not obj[name].strip():
            raise InputError(f"a {kind} case needs a non-empty text", record=where, field=name)
    known = {"id", "kind", "capability", "expect", "query", "statement", "source", "answer", "query_type",
             "decidable", "note"}
    return CheckCase(
        id=str(obj["id"]), kind=kind, capability=str(obj["capability"]), expect=expect, query=str(obj["query"]),
        statement=str(obj.get("statement") or ""), source=str(obj.get("source") or ""),
        answer=str(obj.get("answer") or ""),
        query_type=str(obj.get("query_type") or ("debate" if kind == "stance" else "expertise")),
        decidable=bool(obj.get("decidable", False)), note=str(obj.get("note") or ""),
        extra={k: v for k, v in obj.items() if k not in known},
    )


def load_cases(paths: Iterable[Path] | None = None) -> list[CheckCase]:
    """Every case of the given files (default: all `*.jsonl` under `checks_dir()`); ids must be unique."""
    files = sorted(paths) if paths is not None else sorted(checks_dir().glob("*.jsonl"))
    cases: list[CheckCase] = []
    for path in files:
        for line_no, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
            if line.strip():
                where = f"{path.name}:{line_no}"
                try:
                    obj = json.loads(line)
                except ValueError as exc:
                    raise InputError(f"invalid JSON: {exc}", record=where) from exc
                cases.append(_case(obj, where))
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise InputError("duplicate check id", record=case.id, field="id")
        seen.add(case.id)
    return cases


def case_records(case: CheckCase) -> tuple[Answer, Statement, Source]:
    """The answer, statement and source a case is judged on (the statement cites the source)."""
    source = Source(index=1, url="", title="check source", text=case.source, fetch_ok=True if case.source else None)
    text = case.answer or case.statement
    statement = Statement(answer_id=case.id, index=0, text=case.statement or text, start=0,
                          end=len(case.statement or text), citations=(1,) if case.source else ())
    answer = Answer(answer_id=case.id, engine="checks", query=case.query, query_type=case.query_type,  # type: ignore[arg-type]
                    text=text, sources=(source,) if case.source else ())
    return answer, statement, source


def _ask(judge: Judge, case: CheckCase) -> Verdict | None:
    answer, statement, source = case_records(case)
    if case.kind == "support":
        verdicts = judge.support(answer, [statement], source)
    elif case.kind == "relevance":
        verdicts = judge.relevance(answer, [statement])
    elif case.kind == "stance":
        verdicts = judge.stance(answer, [statement])
    else:
        verdicts = [judge.confidence(answer)]
    return verdicts[0] if verdicts else None


def run_checks(judge: Judge, cases: Sequence[CheckCase]) -> pd.DataFrame:
    """One row per case: what was expected, what the judge said, whether it passed."""
    rows = []
    for case in cases:
        verdict = _ask(judge, case)
        label = verdict.label if verdict is not None else None
        rows.append({
            "id": case.id, "kind": case.kind, "capability": case.capability, "decidable": case.decidable,
            "expected": "|".join(case.expect), "label": label, "passed": label in case.expect,
            "abstained": label is None or label == ABSTAIN,
            "score": verdict.score if verdict is not None else None,
            "raw": (verdict.raw if verdict is not None else "")[:2000],
            "judge": judge.name, "prompt_version": judge.prompt_version,
        })
    return pd.DataFrame(rows)


def summarize_checks(results: pd.DataFrame) -> pd.DataFrame:
    """Pass rate per kind and capability (plus one row per kind over all its capabilities)."""
    if results.empty:
        return pd.DataFrame(columns=["kind", "capability", "n", "passed", "abstained", "pass_rate"])
    frames = []
    for keys, part in results.groupby(["kind", "capability"], sort=True):
        frames.append({"kind": keys[0], "capability": keys[1], "n": len(part), "passed": int(part["passed"].sum()),
                       "abstained": int(part["abstained"].sum())})
    for kind, part in results.groupby("kind", sort=True):
        frames.append({"kind": kind, "capability": "(all)", "n": len(part), "passed": int(part["passed"].sum()),
                       "abstained": int(part["abstained"].sum())})
    out = pd.DataFrame(frames)
    out["pass_rate"] = out["passed"] / out["n"]
    return out


def checks_path(judge_name: str, root: Path | None = None) -> Path:
    """Where a judge's check results are saved (read by the Judges page)."""
    from pipeline.storage.store import judge_dirname

    return (root or results_dir()) / "judge_checks" / f"{judge_dirname(judge_name)}.parquet"


def save_checks(results: pd.DataFrame, root: Path | None = None) -> Path:
    """Write one judge's check results atomically."""
    import pyarrow as pa

    from pipeline.storage.store import write_atomic

    judge = str(results["judge"].iloc[0]) if len(results) else "judge"
    return write_atomic(checks_path(judge, root), pa.Table.from_pandas(results, preserve_index=False))


def iter_failures(results: pd.DataFrame, limit: int = 20) -> Iterator[dict]:
    """The first failed cases, for a human to read."""
    yield from results.loc[~results["passed"]].head(limit).to_dict("records")


def hand_label_agreement(judge: Judge, answers: Iterable[AnnotatedAnswer]) -> dict[str, Any]:
    """How a judge's relevance, stance and confidence labels compare with hand labels carried by a
    corpus (the teaching corpus `data/demo/answers.jsonl` carries all three).

    - filler: precision and recall of the judge's `filler` against the hand `filler` labels, over
      every statement with a hand relevance label;
    - stance: accuracy on the statements of debate answers that the hand labels call relevant and
      give a stance (the judge sees exactly those, as the annotate stage would show it its relevant
      statements); an `unknown` counts as a miss and is also counted apart;
    - confidence: exact and within-one-level accuracy of the 1..5 answer label.
    """
    filler_tp = filler_fp = filler_fn = 0
    stance_n = stance_hit = stance_unknown = 0
    stance_pairs: dict[str, int] = {}
    conf_n = conf_exact = conf_near = 0
    for annotated in answers:
        answer = annotated.answer
        hand = {(v.kind, v.statement_index): v.label for v in annotated.verdicts}
        statements = list(annotated.statements)
        labelled = [s for s in statements if ("relevance", s.index) in hand]
        if labelled:
            for v in judge.relevance(answer, labelled):
                truth, said = hand[("relevance", v.statement_index)], v.label
                filler_tp += truth == "filler" and said == "filler"
                filler_fp += truth != "filler" and said == "filler"
                filler_fn += truth == "filler" and said != "filler"
        if answer.query_type == "debate":
            judged = [s for s in statements if hand.get(("relevance", s.index)) == "relevant"
                      and hand.get(("stance", s.index)) is not None]
            for v in judge.stance(answer, judged) if judged else []:
                truth = str(hand[("stance", v.statement_index)])
                stance_n += 1
                stance_hit += v.label == truth
                stance_unknown += v.label == ABSTAIN
                key = f"{truth}->{v.label}"
                stance_pairs[key] = stance_pairs.get(key, 0) + 1
        truth_conf = hand.get(("confidence", None))
        if truth_conf is not None:
            said_conf = judge.confidence(answer).label
            conf_n += 1
            conf_exact += said_conf == truth_conf
            conf_near += said_conf is not None and abs(int(said_conf) - int(truth_conf)) <= 1

    def ratio(a: int, b: int) -> float | None:
        return a / b if b else None

    return {
        "filler": {"precision": ratio(filler_tp, filler_tp + filler_fp), "recall": ratio(filler_tp, filler_tp + filler_fn),
                   "true_positives": filler_tp, "false_positives": filler_fp, "false_negatives": filler_fn},
        "stance": {"n": stance_n, "accuracy": ratio(stance_hit, stance_n), "correct": stance_hit,
                   "unknown": stance_unknown, "truth_to_label": dict(sorted(stance_pairs.items()))},
        "confidence": {"n": conf_n, "exact": ratio(conf_exact, conf_n), "within_one": ratio(conf_near, conf_n)},
    }
