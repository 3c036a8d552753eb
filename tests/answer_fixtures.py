"""Fixture results for the answer pages' tests (AppTest and browser): the Figure 7 worked example
plus two more engines' answers to the same query (one named like a script tag), under the recorded
labels and the scripted judge, and a small hand-written ExpertQA-format file under its experts.

Import it from a test module: `from answer_fixtures import HOSTILE, build_results`.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKED = ROOT / "tests" / "fixtures" / "worked_example.json"
EQA_MINI = ROOT / "tests" / "fixtures" / "expertqa_mini.jsonl"
HOSTILE = "<script>alert(1)</script>"


def other_engine(answer_id: str, engine: str) -> dict:
    """A second answer to the worked example's query, with recorded labels: [1] fully supports the
    first statement, [2] supports nothing, the last sentence is filler."""
    return {
        "answer_id": answer_id, "engine": engine, "query": "Why should zoos be abolished?", "query_type": "debate",
        "answer": "Zoos confine animals in small spaces [1]. Some zoos fund conservation [2]. Hope this helps!",
        "sources": [{"index": 1, "url": "https://a.example.org/space", "title": "Space", "text": "Enclosures are small."},
                    {"index": 2, "url": "https://b.example.org/money", "title": "Money", "text": "Zoos fund projects."}],
        "labels": {"confidence": 4, "statements": [
            {"text": "Zoos confine animals in small spaces [1].", "relevant": True, "stance": "agree", "supported_by": [1]},
            {"text": "Some zoos fund conservation [2].", "relevant": True, "stance": "disagree", "supported_by": []},
            {"text": "Hope this helps!", "relevant": False}]},
    }


def build_results(tmp: Path) -> Path:
    """Run the pipeline on the fixtures into tmp/results: fig7 (recorded, scripted) and eqa-mini (human)."""
    from pipeline.runner import run_dataset

    worked = json.loads(WORKED.read_text())
    answers = [worked, other_engine("second-zoo", "Second engine"), other_engine("hostile-zoo", HOSTILE)]
    path = tmp / "answers.jsonl"
    path.write_text("\n".join(json.dumps(a) for a in copy.deepcopy(answers)) + "\n")
    root = tmp / "results"
    run_dataset("fig7", path, root=root, progress=False)
    run_dataset("fig7", path, judge_name="scripted", root=root, progress=False, use_cache=False)
    run_dataset("eqa-mini", EQA_MINI, importer="expertqa", root=root, progress=False)
    return root
