"""WiCE as support pairs (issue 40): the loader's counts and labels, the pairs it makes, and the pinned
download (served from 127.0.0.1), which refuses a file whose sha256 differs."""

from __future__ import annotations

import http.server
import shutil
import threading
from pathlib import Path

import pytest

from pipeline.errors import InputError
from pipeline.judges.measure import wice

FOUND = wice.wice_dir()
needs_wice = pytest.mark.skipif(FOUND is None, reason="WiCE not found (set WICE_DIR or place it at ../shared/data/wice)")


@needs_wice
def test_the_two_splits_hold_the_published_counts_and_labels():
    dev, test = wice.load_rows("dev"), wice.load_rows("test")
    assert (len(dev), len(test)) == (349, 358)
    count = lambda rows, label: sum(r["label"] == label for r in rows)  # noqa: E731
    assert [count(dev, k) for k in ("supported", "partially_supported", "not_supported")] == [115, 191, 43]
    assert [count(test, k) for k in ("supported", "partially_supported", "not_supported")] == [111, 215, 32]


@needs_wice
def test_pairs_of_each_kind_carry_the_crowd_label_or_none():
    pairs = wice.pairs("dev", kinds=("page", "support_set", "near"))
    by_kind = {k: [p for p in pairs if p.kind == k] for k in ("page", "support_set", "near")}
    assert len(by_kind["page"]) == 349
    assert {p.gold for p in by_kind["page"]} == {"Complete", "Partial", "Incomplete"}
    # a supporting set only for claims with some support, labelled as the claim
    assert all(p.gold in ("Complete", "Partial") for p in by_kind["support_set"])
    assert sum(p.gold == "Complete" for p in by_kind["support_set"]) == 115
    # an off-support window is no support, and it shares no sentence with any supporting set
    assert by_kind["near"] and all(p.gold == "Incomplete" for p in by_kind["near"])
    first = by_kind["page"][0]
    assert not first.pair.source.startswith("(meta data)") and first.pair.question  # article and section
    # the same seed draws the same windows
    again = wice.pairs("dev", kinds=("near",))
    assert [p.pair.source for p in again] == [p.pair.source for p in by_kind["near"]]


@needs_wice
def test_the_pinned_download_checks_each_file(tmp_path):
    served = tmp_path / "served" / "data" / "entailment_retrieval" / "claim"
    served.mkdir(parents=True)
    for name in ("claim_dev", "claim_test"):
        shutil.copy(Path(FOUND) / f"{name}.jsonl", served / f"{name}.jsonl")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **k):
            super().__init__(*a, directory=str(tmp_path / "served"), **k)

        def log_message(self, *a):  # keep the test output clean
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}" + "/data/entailment_retrieval/claim/{name}.jsonl"
        folder = wice.download_wice(tmp_path / "cache", timeout=30, url=url)
        assert sorted(p.name for p in folder.glob("*.jsonl")) == ["claim_dev.jsonl", "claim_test.jsonl"]
        # a file that is not the pinned one is removed and refused in one line
        (served / "claim_test.jsonl").write_text('{"claim": "altered"}\n')
        with pytest.raises(InputError, match="not the pinned"):
            wice.download_wice(tmp_path / "other", timeout=30, url=url)
        assert not (tmp_path / "other" / "claim_test.jsonl").exists()
    finally:
        server.shutdown()


def test_an_unreachable_download_says_what_to_do_instead(tmp_path):
    with pytest.raises(InputError, match="point WICE_DIR at it"):
        wice.download_wice(tmp_path, timeout=5, url="http://127.0.0.1:9/{name}.jsonl")
