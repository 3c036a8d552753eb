"""Class codes spread over a sample (`LabelStore.create_class(spread=True)`): when the seats hold two
labels per item, every item is seen by two students or more; below that, `seat_coverage` says what
holds (4 students x 10 items over 25 items: 15 items twice, 10 once)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.audit.labels import LabelStore, seat_coverage


def _coverage(tmp_path, n: int, seats: int, per_seat: int) -> dict[int, int]:
    store = LabelStore(tmp_path / "labels.sqlite")
    rows = store.create_class("S", "C", n, seats, per_seat, overlap=per_seat // 2, spread=True)
    return seat_coverage(n, [(r["first"], r["size"]) for r in rows])


def test_the_issue_case_says_what_holds(tmp_path):
    assert _coverage(tmp_path, 25, 4, 10) == {2: 15, 1: 10}
    assert _coverage(tmp_path, 25, 5, 10) == {2: 25}  # 50 labels for 25 items: each exactly twice


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 120), seats=st.integers(2, 40), per_seat=st.integers(1, 50))
def test_enough_labels_means_every_item_twice(tmp_path_factory, n, seats, per_seat):
    got = _coverage(tmp_path_factory.mktemp("c"), n, seats, per_seat)
    assert sum(got.values()) == n
    if seats * min(per_seat, n) >= 2 * n:
        assert min(got) >= 2, got
