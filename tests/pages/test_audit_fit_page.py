"""The Audit page's "Fit a judge" (issue 41, AppTest): the guard rails said before the button, the
button runs `aee audit fit`, and the sentence of what the labels bought is the computed one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from audit_fixtures import goto, page_text, started_app  # noqa: E402
from fitted_fixtures import build_fitted_corpus, label_sample  # noqa: E402

pytest.importorskip("streamlit.testing.v1")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from pipeline.audit.sample import draw_sample, register

    root = build_fitted_corpus(tmp_path_factory.mktemp("fit_page"))
    small = draw_sample("fitcorp", "scripted", 80, seed=5, root=root)
    register(small, root)
    label_sample(small, root, seed=2)
    big = draw_sample("fitcorp", "scripted", 500, seed=0, root=root)
    register(big, root)
    label_sample(big, root)
    return root, big.sample_id, small.sample_id


def test_fit_a_judge_on_the_page(built, monkeypatch, tmp_path):
    from pipeline.audit.fitted_run import labels_bought

    root, big, small = built
    at = goto(started_app(root, monkeypatch, tmp_path), "pages/audit.py", dataset="fitcorp", view="fit")
    assert at.radio(key="audit_mode").value == "Fit a judge"
    at.selectbox(key="audit_fit_sample").set_value(small).run()
    text = page_text(at)
    assert ("No fit yet.** 80 labels are too few for a 5-fold fit: label 120 more (at least 40 per fold). Only 35 "
            "labels of the rarer kind: about 5 more of them are needed (at least 8 per fold).") in text
    button = next(b for b in at.button if b.key == "audit_fit_go")
    assert button.disabled
    at.selectbox(key="audit_fit_sample").set_value(big).run()
    button = next(b for b in at.button if b.key == "audit_fit_go")
    assert not button.disabled and "No fit yet" not in page_text(at)
    button.click()
    at.run(timeout=600)
    assert not at.exception, at.exception
    text = page_text(at)
    assert "Judge fitted (fitted-logistic-v1), fitted to 500 labels of Ana on " + big in text
    assert "What your labels bought" in text
    assert next(b for b in at.button if b.key == "audit_fit_go").label.startswith("Fit again to these labels")
    bought = labels_bought("fitcorp", root=root)
    assert bought["sentence"].startswith("With your 500 labels the fitted judge agrees with the held-out labels at kappa")
    assert bought["sentence"] in text
    assert f"over the {bought['cells']} engine cells that show one under both judges" in text
    # the Scorecard under the fitted judge corrects it from the audited judge's sample
    at = goto(at, "pages/scorecard.py", dataset="fitcorp", judge="fitted")
    assert "This judge was fitted to people's labels over scripted's signals" in page_text(at)
    toggle = next(t for t in at.toggle if t.key == "scorecard_ppi")
    toggle.set_value(True).run(timeout=600)
    assert not at.exception, at.exception
    from pipeline.audit.scorecard import ppi_scorecard

    row = next(r for r in ppi_scorecard("fitcorp", "fitted", root=root)["rows"]
               if r["metric"] == "citation_accuracy" and r["domain"] == "all engines")
    assert f"{row['ppi']:.1f}" in page_text(at)
