"""How many statements the splitter changes on every bundled corpus, against an earlier commit.

    python -m bench.sentence_changes [--before REF] [-v]

The splitter of REF (default: the commit before the sentence work, ea9c845) is read with `git show`
into a temporary module and run beside the current one over the same answer texts: the teaching
corpus (data/demo), ExpertQA (EXPERTQA_DIR or ../shared/data/expertqa, when present), the HAGRID,
engine-response and paste fixtures, and the conflict corpus. A statement counts as changed when its
span or its citations differ. -v prints the first changed statements of each corpus.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Iterator

from pipeline.importers import IMPORTERS
from pipeline.importers.paste import parse_paste
from pipeline.storage.paths import expertqa_dir
from pipeline.text import text as current

ROOT = Path(__file__).resolve().parents[1]
BEFORE_REF = "ea9c845"


def splitter_at(ref: str) -> ModuleType:
    """pipeline/text/text.py as it was at `ref`, imported under another name."""
    code = subprocess.run(["git", "show", f"{ref}:pipeline/text/text.py"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout
    folder = Path(tempfile.mkdtemp(prefix="aee-splitter-"))
    path = folder / "text_before.py"
    path.write_text(code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("text_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["text_before"] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def answer_texts() -> Iterator[tuple[str, str, set[int], dict[str, int]]]:
    """(corpus, text, listed indexes, source URLs) of every bundled answer."""
    corpora = [("teaching corpus (data/demo)", "canonical", ROOT / "data/demo/answers.jsonl"),
               ("ExpertQA", "expertqa", expertqa_dir()),
               ("HAGRID fixture", "hagrid", ROOT / "tests/fixtures/hagrid"),
               ("engine fixtures", "auto", ROOT / "tests/fixtures/engines")]
    for name, fmt, path in corpora:
        if path is None or not Path(path).exists():
            continue
        for a in IMPORTERS[fmt].iter(path):
            srcs = a.answer.sources
            yield name, a.answer.text, {s.index for s in srcs}, {s.url: s.index for s in srcs if s.url}
    for f in sorted((ROOT / "tests/fixtures/paste").glob("*")):
        p = parse_paste(f.read_text(encoding="utf-8"))
        yield "paste fixtures", p.answer, {s.index for s in p.sources}, {s.url: s.index for s in p.sources if s.url}
    for line in (ROOT / "data/conflict/illustrative.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield "conflict corpus (data/conflict)", "\n\n".join(p["text"] for p in json.loads(line)["paragraphs"]), set(), {}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default=BEFORE_REF, help="git ref of the splitter to compare with")
    ap.add_argument("-v", action="store_true", help="print changed statements")
    args = ap.parse_args(argv)
    before = splitter_at(args.before)
    rows: dict[str, list[int]] = {}
    shown: dict[str, int] = {}
    for corpus, text, listed, urls in answer_texts():
        b = {(s.start, s.end, s.citations) for s in before.split_statements("x", text, listed, urls)}
        a = {(s.start, s.end, s.citations) for s in current.split_statements("x", text, listed, urls)}
        r = rows.setdefault(corpus, [0, 0, 0, 0, 0, 0])
        gone, new = b - a, a - b
        for k, v in enumerate((1, len(b), len(a), bool(gone or new), len(gone), len(new))):
            r[k] += v
        if args.v and (gone or new) and shown.get(corpus, 0) < 10:
            shown[corpus] = shown.get(corpus, 0) + 1
            print(f"[{corpus}]", *(f"\n  - {text[s:e][:150]!r}" for s, e, _ in sorted(gone)),
                  *(f"\n  + {text[s:e][:150]!r}" for s, e, _ in sorted(new)))
    print(f"{'corpus':34} {'answers':>7} {'statements before':>17} {'after':>6} {'answers changed':>15} "
          f"{'gone':>5} {'new':>5}")
    for corpus, r in rows.items():
        print(f"{corpus:34} {r[0]:>7} {r[1]:>17} {r[2]:>6} {r[3]:>15} {r[4]:>5} {r[5]:>5}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
