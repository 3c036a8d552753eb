"""bench/pages_scale.py (rows t4): the rows and the docs table say what the timings say, with no
page run (the timings here are made up; the real ones come from `python bench/pages_scale.py`)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import pages_scale  # noqa: E402 - bench/ is not a package
from rows import Row, cost_row, skipped  # noqa: E402,F401 - bench/rows.py, without run.py's environment changes

from dashboard.pages_registry import PAGES  # noqa: E402


def _timings(warm: float, slow: str | None = None, broken: str | None = None) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for p in PAGES:
        if p.script == broken:
            out[p.script] = {"error": "EXCEPTION boom | here", "load": 3.0}
        else:
            out[p.script] = {"cold": 1.5, "warm": 2.5 if p.script == slow else warm, "shown": "over-time-20k", "load": 3.0}
    return out


BUILT = {"1k": {"answers": 1008, "run_s": 15.0, "reused": False}, "20k": {"answers": 20016, "run_s": 240.0, "reused": True}}


def test_one_row_per_registry_page_with_its_verdict():
    pages = {"1k": _timings(0.1), "20k": _timings(0.4, slow="compare.py", broken="study.py")}
    rows = pages_scale.rows(("1k", "20k"), BUILT, pages, cost_row, skipped)
    assert [r.name.split()[2] for r in rows] == [p.url_path for p in PAGES]
    by_page = {r.name.split()[2]: r for r in rows}
    home = by_page["home"]
    assert isinstance(home, Row) and home.note.startswith("under the 2 s target")
    assert abs(home.baseline - 0.1) < 1e-9 and abs(home.ours - 0.4) < 1e-9 and abs(home.ratio - 0.25) < 1e-9
    assert by_page["compare"].note.startswith("OVER the 2 s target at 20k;")
    assert by_page["study"].note.startswith("SKIPPED: the page failed: EXCEPTION boom") and by_page["study"].ratio is None


def test_docs_table_has_every_page_and_size():
    pages = {"1k": _timings(0.1), "20k": _timings(0.4, slow="compare.py", broken="study.py")}
    text = pages_scale.table(("1k", "20k"), BUILT, pages)
    lines = [x for x in text.splitlines() if x.startswith("| ")]
    assert len(lines) == 1 + len(PAGES)  # header + one per page
    compare = next(x for x in lines if "(`compare`)" in x)
    assert "| 1.50 | 0.10 | 1.50 | 2.50 | NO |" in compare
    study = next(x for x in lines if "(`study`)" in x)
    assert "failed" in study and "boom / here" in study and study.count("|") == compare.count("|")
    assert "20k: 20,016 answers, aee run 240 s (reused)" in text


def test_quick_is_one_skipped_row():
    rows = pages_scale.bench_pages_scale(True, cost_row, skipped)
    assert len(rows) == 1 and rows[0].note.startswith("SKIPPED") and rows[0].name.startswith("t4.")


def test_row_t_carries_one_t4_row_per_page(monkeypatch):
    import over_time

    def fake_measure(label, folder, page=True):
        n = {"1k": 1008, "20k": 20016}[label]
        return {"label": label, "answers": n, "run_s": n / 100, "build_s": n / 1000, "page_cold_s": 1.0, "page_warm_s": 0.2}

    monkeypatch.setattr(over_time, "measure", fake_measure)
    monkeypatch.setattr(pages_scale, "measure_pages", lambda label, folder: _timings(0.1 if label == "1k" else 0.3))
    rows = over_time.bench_over_time(False, cost_row, Row)
    names = [r.name.split(".")[0] for r in rows]
    assert names[:3] == ["t1", "t2", "t3"] and names[3:] == ["t4"] * len(PAGES)
    assert all(abs(r.ours - 0.3) < 1e-9 and r.note.startswith("under") for r in rows[3:])
