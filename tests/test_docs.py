"""The Methodology page is generated from the registries: every metric key, its label, direction
and thresholds appear on it, and so does every judge."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest  # noqa: E402

from dashboard.metric_text import DIRECTION_SHORT, UNIT_MARKS  # noqa: E402
from pipeline.judges import JUDGES  # noqa: E402
from pipeline.metrics import METRICS  # noqa: E402


@pytest.fixture(scope="module")
def methodology(tmp_path_factory):
    import os

    old = os.environ.get("AEE_RESULTS_DIR")
    os.environ["AEE_RESULTS_DIR"] = str(tmp_path_factory.mktemp("empty_results"))
    try:
        at = AppTest.from_file(str(ROOT / "pages" / "methodology.py"), default_timeout=60)
        at.run()
    finally:
        if old is None:
            os.environ.pop("AEE_RESULTS_DIR", None)
        else:
            os.environ["AEE_RESULTS_DIR"] = old
    assert not at.exception
    return at


def _markdown(at) -> str:
    return "\n".join(e.value for e in at.markdown)


def _table(at, key_column: str):
    return next(df.value for df in (*at.table, *at.dataframe) if key_column in df.value.columns)


@pytest.mark.parametrize("name", list(METRICS))
def test_every_metric_key_has_a_section(methodology, name):
    assert f"`{name}`" in _markdown(methodology)


def test_overview_table_matches_registry(methodology):
    table = _table(methodology, "thresholds").set_index("metric")
    assert list(table.index) == list(METRICS)
    for name, info in METRICS.items():
        assert table.loc[name, "label"] == info.label
        # short marks as on the Scorecard (the metric's own section spells them out)
        assert table.loc[name, "direction"] == DIRECTION_SHORT[info.direction]
        assert table.loc[name, "unit"] == UNIT_MARKS[info.unit]
        if info.bands:
            for band in info.bands:
                assert f"{band.low:g}, {band.high:g}" in table.loc[name, "thresholds"]
        else:
            assert table.loc[name, "thresholds"] == "not rated"


def test_every_judge_is_described(methodology):
    judges = _table(methodology, "how it works")
    assert set(judges["judge"]) == set(JUDGES)


def test_the_start_here_page_names_every_package_and_top_module():
    """docs/design/architecture.md's first section is the newcomer's map of pipeline/: a package or a
    top-level module added (or moved) later must appear there, and nothing it names may be gone."""
    import re

    text = (ROOT / "docs" / "design" / "architecture.md").read_text(encoding="utf-8")
    start = text.split("<!-- /start-here -->", 1)[0]
    named = set(re.findall(r"\| `(pipeline/[a-z_]+(?:/|\.py))` \|", start))
    packages = {f"pipeline/{p.name}/" for p in (ROOT / "pipeline").iterdir() if (p / "__init__.py").is_file()}
    modules = {f"pipeline/{p.name}" for p in (ROOT / "pipeline").glob("*.py")}
    assert packages | modules == named, {"missing": sorted((packages | modules) - named),
                                         "gone": sorted(named - (packages | modules))}
