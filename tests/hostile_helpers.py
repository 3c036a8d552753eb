"""What the hostile-input tests share (tests/pipeline/importers/test_hostile_inputs.py, tests/pipeline/importers/test_hostile_regressions.py):
the teaching corpus as the good input, a deep copy of its first answer, a snapshot of a results folder
by checksums, the command line run in process, and the object the re-score page builds."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pipeline.cli import main as cli_main

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "data" / "demo" / "answers.jsonl"
DEMO_LINES = DEMO.read_text(encoding="utf-8").splitlines()
GOOD = json.loads(DEMO_LINES[0])
# one bad JSON line of each kind, with a word its error names
BAD_LINES = {
    "invalid": ('{"answer_id": "x", "engine": }', "invalid JSON"),
    "truncated": (DEMO_LINES[1][: len(DEMO_LINES[1]) // 2], "invalid JSON"),
    "nan": (DEMO_LINES[1].replace('"engine"', '"nan_here": NaN, "engine"', 1), "NaN"),
    "infinity": (DEMO_LINES[1].replace('"engine"', '"x": [-Infinity], "engine"', 1), "Infinity"),
    "overflow": (DEMO_LINES[1].replace('"engine"', '"x": 1e999, "engine"', 1), "Infinity"),
    "surrogate": (DEMO_LINES[1].replace('"query": "', '"query": "\\ud800', 1), "surrogate"),
    "deep": ('{"a": ' * 5000 + "1" + "}" * 5000, "nested too deeply"),
    "list": ("[1, 2, 3]", "expected a JSON object"),
    "scalar": ('"just a string"', "expected a JSON object"),
    "wrong_type": (DEMO_LINES[1].replace('"query_type": "', '"query_type": 7, "x": "', 1), "query_type"),
    "missing": (json.dumps({k: v for k, v in json.loads(DEMO_LINES[1]).items() if k != "sources"}), "sources"),
    "huge_int": (DEMO_LINES[1].replace('"engine"', '"x": ' + "9" * 5000 + ', "engine"', 1), "digits"),
}


def good_obj() -> dict:
    return json.loads(json.dumps(GOOD))


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli_main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert code in (0, 2), f"exit {code} (internal error) for {argv}: {err}"
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), err
    return code, out, err


def pasted_object(engine: str, query: str, query_type: str, answer: str, sources: list[tuple[str, str, str]]) -> dict:
    """The object pages/rescore.py builds from its text boxes (_canonical_object), before parse_answer."""
    kept = [{"index": k + 1, "title": t.strip(), "url": u.strip(), "text": x}
            for k, (t, u, x) in enumerate(sources) if t.strip() or u.strip() or x.strip()]
    return {"answer_id": "pasted-0123456789ab", "engine": engine.strip() or "pasted", "query": query.strip(),
            "query_type": query_type, "answer": answer, "sources": kept}
