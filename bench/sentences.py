"""The sentence splitter beside a maintained segmenter on the hand-checked golden file.

    python -m bench.sentences [--golden tests/fixtures/sentences_golden.jsonl] [--before REF] [--json]

Each golden case is a short answer text and the statements a careful reader finds in it (headings
are not statements; a citation marker after a full stop belongs to the sentence before it). Scored:

* ours: `pipeline.text.text.split_statements`, exact statement texts (markers and offsets included), and
  the same after the normalisation used for the others;
* pysbd, whole text: pysbd (rule-based, offline, `pip install pysbd`) over the raw text;
* pysbd in our blocks: pysbd inside the paragraphs, list items and table rows our Markdown reader
  finds (Markdown headings already removed), so only the sentence rules are compared.

A segmenter that is not ours never sees our markers as part of a sentence, so its output and the
golden sentences are compared after removing citation markers, list bullets, emphasis marks and "#"
and collapsing white space; an empty piece after that is not a sentence. A case is right when the
whole list of sentences matches. pysbd is optional: without it only our rows print.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Callable

from pipeline.text.headings import is_bold_heading
from pipeline.text.text import _blocks, _Layout, split_statements

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "sentences_golden.jsonl"
LISTED = set(range(1, 10))
_MARKER_RE = re.compile(r"\[\^?[0-9][0-9,\s\-\u2013]*\]")
_BULLET_RE = re.compile(r"^\s*(?:[-*+\u2022]|[0-9]{1,3}[.)])\s+")


def load(path: Path = GOLDEN) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def normalise(sentences: list[str]) -> list[str]:
    """Sentences without markers, bullets, emphasis, heading marks or extra space; empties dropped."""
    out = []
    for s in sentences:
        t = _MARKER_RE.sub("", s)
        t = _BULLET_RE.sub("", t)
        t = t.replace("**", "").lstrip("#> ").strip()
        t = " ".join(t.split())
        if any(ch.isalnum() for ch in t):
            out.append(t)
    return out


def ours(text: str) -> list[str]:
    return [s.text for s in split_statements("golden", text, LISTED)]


def _pysbd_segmenter() -> Callable[[str], list[str]] | None:
    try:
        import pysbd
    except ImportError:
        return None
    seg = pysbd.Segmenter(language="en", clean=False)
    return lambda text: [str(s) for s in seg.segment(text)] if text.strip() else []


def pysbd_in_blocks(segment: Callable[[str], list[str]], text: str) -> list[str]:
    out: list[str] = []
    for block in _blocks(text, _Layout(text)):
        if block.kind != "row" and is_bold_heading(text, block.start, block.end):
            continue
        out.extend(segment(text[block.start:block.end]))
    return out


def score(cases: list[dict], before: str = "") -> dict[str, dict]:
    """Per splitter: right/total overall and by category, and the ids it got wrong. `before`: a git
    ref whose splitter is scored too (exact statement texts), to see what a change fixed."""
    runners: dict[str, Callable[[str], list[str]]] = {"ours (exact)": ours, "ours": lambda t: normalise(ours(t))}
    if before:
        from bench.sentence_changes import splitter_at

        old = splitter_at(before)
        runners[f"ours at {before} (exact)"] = lambda t: [s.text for s in old.split_statements("golden", t, LISTED)]
    segment = _pysbd_segmenter()
    if segment is not None:
        runners["pysbd, whole text"] = lambda t: normalise(segment(t))
        runners["pysbd in our blocks"] = lambda t: normalise(pysbd_in_blocks(segment, t))
    report: dict[str, dict] = {}
    for name, run in runners.items():
        right: Counter[str] = Counter()
        total: Counter[str] = Counter()
        wrong: list[str] = []
        for case in cases:
            want = case["sentences"] if name.endswith("(exact)") else normalise(case["sentences"])
            total[case["category"]] += 1
            if run(case["text"]) == want:
                right[case["category"]] += 1
            else:
                wrong.append(case["id"])
        report[name] = {"right": sum(right.values()), "total": sum(total.values()),
                        "by_category": {c: [right[c], total[c]] for c in sorted(total)}, "wrong": wrong}
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--golden", type=Path, default=GOLDEN)
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument("--before", default="", metavar="REF", help="also score the splitter of this git ref")
    args = ap.parse_args(argv)
    report = score(load(args.golden), args.before)
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    cats = sorted(next(iter(report.values()))["by_category"])
    print(f"{'splitter':26} {'right':>7}  " + "  ".join(f"{c[:10]:>10}" for c in cats))
    for name, r in report.items():
        cells = "  ".join(f"{r['by_category'][c][0]:>4}/{r['by_category'][c][1]:<5}" for c in cats)
        print(f"{name:26} {r['right']:>3}/{r['total']:<3}  {cells}")
    for name, r in report.items():
        print(f"{name} wrong: {', '.join(r['wrong']) or '-'}")
    if not any(name.startswith("pysbd") for name in report):
        print("(pysbd not installed: pip install pysbd to compare)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
