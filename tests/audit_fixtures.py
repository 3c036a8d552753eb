"""Results the audit tests sample from: the teaching corpus under its hand labels (`recorded`) and the
`scripted` judge, and a small dataset whose answers and sources are hostile (HTML, scripts, a
formula for spreadsheets) under the scripted judge.

Import it from a test module: `from audit_fixtures import build_audit_results, HOSTILE_TEXT`
(and `goto`, `page_text` for AppTest pages).
"""

from __future__ import annotations

import json
from pathlib import Path

HOSTILE_TEXT = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
FORMULA = "=HYPERLINK(\"http://evil.example\",\"click\")"


def hostile_answers() -> list[dict]:
    """Two answers whose every text field tries to inject markup (and a spreadsheet formula)."""
    out = []
    for k in range(2):
        out.append({
            "answer_id": f"hostile-{k}", "engine": f"<b>Engine{k}</b>", "query": f"Why <i>{k}</i>? {HOSTILE_TEXT}",
            "query_type": "expertise",
            "answer": f"{FORMULA} Claims about {HOSTILE_TEXT} hold [1]. Another claim [2]. Plain claim about rivers [1][2].",
            "sources": [
                {"index": 1, "url": "javascript:alert(1)", "title": f"<script>t{k}</script>",
                 "text": f"Rivers flow. {HOSTILE_TEXT} Claims about rivers hold here.", "fetch_ok": True},
                {"index": 2, "url": "https://example.org/<x>", "title": "Second", "text": "Another claim is made here.",
                 "fetch_ok": True},
            ],
        })
    return out


def build_audit_results(tmp: Path) -> Path:
    """Run the pipeline into tmp/results: demo (recorded, scripted) and hostile (scripted)."""
    from pipeline.runner import run_dataset

    root = tmp / "results"
    run_dataset("demo", progress=False, root=root)
    run_dataset("demo", judge_name="scripted", progress=False, root=root, use_cache=False)
    path = tmp / "hostile.jsonl"
    path.write_text("\n".join(json.dumps(a) for a in hostile_answers()) + "\n", encoding="utf-8")
    run_dataset("hostile", path, judge_name="scripted", progress=False, root=root, use_cache=False)
    return root


def goto(at, page: str, **params):
    """Open another page of a running AppTest with these query parameters; no exception allowed."""
    for k, v in params.items():
        at.query_params[k] = v
    at.switch_page(page)
    at.run()
    assert not at.exception, at.exception
    return at


def page_text(at) -> str:
    """Everything an AppTest page shows as text (titles, markdown, captions, code, alerts, tables)."""
    parts = [e.value for kind in ("title", "subheader", "markdown", "caption", "code") for e in getattr(at, kind)]
    parts += [e.body for kind in ("info", "warning", "success", "error") for e in getattr(at, kind)]
    parts += [df.value.to_csv(index=False) for df in at.dataframe]
    parts += [t.value.to_csv(index=False) for t in at.table]
    return "\n".join(str(p) for p in parts).replace("\\", "")  # markdown escapes read back as plain text


RELEVANCE_SAMPLE = "demo-scripted-pair-all-rel-n300-s3"


def build_relevance_results(tmp: Path) -> Path:
    """`build_audit_results` plus a registered pair sample asking relevance (RELEVANCE_SAMPLE)."""
    from pipeline.audit.sample import draw_sample, register

    root = build_audit_results(tmp)
    register(draw_sample("demo", "scripted", 300, seed=3, unit="pair", scope="all", relevance=True, root=root), root)
    return root


def started_app(root: Path, monkeypatch, tmp_path: Path):
    """The app under AppTest on these results (its own cache folder), run once without an exception."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("AEE_RESULTS_DIR", str(root))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=90)
    at.run()
    assert not at.exception
    return at
