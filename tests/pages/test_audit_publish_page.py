"""The people's labels on the pages (AppTest): a labelled file uploaded on the Audit the judge page
(the same checks as `aee audit import`: one line per bad row, nothing of a file rendered as markup,
the good rows landing), published as the judge `human:audit` right after, then picked in the
Answer inspector, put beside the audited judge in Compare and linked from the Judges page's list
of disagreements."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from audit_fixtures import build_audit_results, goto, page_text

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest  # noqa: E402

from pipeline.audit.labels import LabelStore, labels_path  # noqa: E402
from pipeline.audit.sample import annotation_text, draw_sample, load_sample, register  # noqa: E402
from pipeline.storage.store import list_judges  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
SAMPLE = "demo-scripted-pair-n70-s1"
AUDIT = "human:audit"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = build_audit_results(tmp_path_factory.mktemp("audit_publish_page"))
    register(draw_sample("demo", "scripted", 70, seed=1, root=root), root)
    return root


@pytest.fixture
def app(built, monkeypatch, tmp_path) -> AppTest:
    monkeypatch.setenv("AEE_RESULTS_DIR", str(built))
    monkeypatch.setenv("AEE_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception
    return at




def _filled_file(built: Path) -> tuple[bytes, list[dict]]:
    """The sample's CSV with six labels, a wrong id, an unknown label and markup in a note."""
    sample = load_sample(SAMPLE, built)
    rows = list(csv.DictReader(io.StringIO(annotation_text(sample, "csv"))))
    for k, r in enumerate(rows[:6]):
        r["support"] = ("full", "none", "partial")[k % 3]
    rows[6]["support"] = "perhaps"
    rows[7]["item_id"], rows[7]["support"] = "<script>alert(1)</script>", "full"
    rows[0]["note"] = "<img src=x onerror=alert(2)> check"
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue().encode("utf-8"), rows


def test_an_uploaded_file_lands_its_good_rows_and_is_published_as_a_judge(app, built):
    content, rows = _filled_file(built)
    at = goto(app, "pages/audit.py", dataset="demo")
    at.radio(key="audit_mode").set_value("Import a file")
    at.run()
    assert "Import the labels" in str([b.label for b in at.button])
    at.file_uploader(key="audit_import_file").upload("filled.csv", content, "text/csv")
    at.text_input(key="audit_import_person").input("Rita")
    next(b for b in at.button if "Import the labels" in str(b.label)).click()
    at.run()
    assert not at.exception, at.exception
    text = page_text(at)
    # six support labels and the note
    assert f"{len(rows)} rows read for Rita: 7 labels written, 0 already there, 0 repeated rows, 2 bad rows" in text
    errors = next(c.value for c in at.code if "row 8" in str(c.value))
    lines = errors.splitlines()
    assert len(lines) == 2 and lines[0].startswith("row 8: item ") and "'perhaps' is not a support label" in lines[0]
    assert lines[1].startswith("row 9: item '<script>alert(1)</script>' is not in sample")  # shown as text
    for element in (*at.markdown, *at.caption, *at.success, *at.warning, *at.error):
        value = str(getattr(element, "value", getattr(element, "body", "")))
        assert "<script" not in value and "<img" not in value, value
    got = LabelStore(labels_path(built)).labels(SAMPLE, "Rita")
    assert sorted(got["support"].dropna()) == sorted(("full", "none", "partial") * 2)
    assert "<img src=x onerror=alert(2)> check" in set(got["note"].dropna())  # kept as plain text
    # a small dataset publishes right after the import: the labels are now a judge of the dataset
    assert AUDIT in list_judges("demo", built)
    assert "published judge human:audit of demo: labels of 1 person (Rita)" in page_text(at)
    assert "Up to date." in page_text(at)

    # the Answer inspector picks it like any judge and says what it is
    labelled = rows[0]["answer_id"]
    at = goto(at, "pages/inspector.py", dataset="demo", judge=AUDIT, answer=labelled)
    assert AUDIT in [s.value for s in at.selectbox if s.value == AUDIT]
    assert "human:audit labels: what the people who audited a sample here said" in page_text(at)


def test_compare_and_the_judges_page_put_the_judge_beside_the_people(app, built):
    store = LabelStore(labels_path(built))
    s = load_sample(SAMPLE, built)
    first = s.items.sort_values("order").iloc[12]  # an item nobody else labels in these tests
    judge_label = {"full": "none", "none": "full", "partial": "full"}
    from pipeline.matrices import label_view
    from pipeline.storage.tables import load_annotated

    scripted = label_view(load_annotated("demo", "scripted", built)[first["answer_id"]])
    said = scripted.support.get((int(first["statement_index"]), int(first["source_index"])), "none")
    store.record(SAMPLE, first["item_id"], "Sol", "support", judge_label[said])  # disagrees with the judge
    at = goto(app, "pages/judges.py")
    at.selectbox(key="judges_audit_dataset").set_value("demo")
    at.run()
    at.selectbox(key="judges_audit_sample").set_value(SAMPLE)
    at.run()
    publish = next(b for b in at.button if str(b.key).startswith("judges_audit_") and str(b.key).endswith("_publish"))
    publish.click()
    at.run()
    assert not at.exception, at.exception
    assert AUDIT in list_judges("demo", built)
    links = next(df.value for df in at.dataframe if "both" in df.value.columns)
    row = links[links["item"] == 13].iloc[0]
    assert row["both"] == (f"compare?dataset=demo&judge=scripted&answer={first['answer_id']}&view=judges&"
                           "judge_b=human%3Aaudit")

    at = goto(at, "pages/compare.py", view="judges", dataset="demo", judge="scripted", judge_b=AUDIT,
               answer=first["answer_id"])
    verdicts = next(df.value for df in at.dataframe if "agreement" in df.value.columns)
    mine = verdicts[verdicts["judged"] == f"support by source [{int(first['source_index'])}]"]
    mine = mine[mine["statement"] == f"S{int(first['statement_index']) + 1}"].iloc[0]
    assert mine["agreement"] == "differs" and mine[f"B: {AUDIT}"] == judge_label[said]
    # the pairs nobody audited are not disagreements: one side decided, the other did not
    others = verdicts[verdicts[f"B: {AUDIT}"].str.startswith("not checked: no one audited", na=False)]
    assert len(others) and set(others["agreement"]) <= {"one side only", "same"}
    assert "one side only" in set(others["agreement"])
