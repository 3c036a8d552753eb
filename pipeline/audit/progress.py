"""Where an annotator stands in a sample: which answers an item still needs, whether it is done,
and where to resume. Pure functions of the item and the annotator's current labels (a row of
`LabelStore.labels`), shared by the app and the command line."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from pipeline.audit import CANT_TELL


def needed_fields(unit: str, query_type: str, labels: Mapping[str, Any] | None = None,
                  asks: str = "support") -> tuple[str, ...]:
    """The questions an item asks before it counts as answered: support for a pair (relevance for
    the statement item of a pair sample asking relevance too, whose `asks` is "relevant");
    relevance for a statement, and its stance on a debate question unless the person called it
    filler (the answer's confidence is optional)."""
    if unit == "pair":
        return ("relevant",) if asks == "relevant" else ("support",)
    if query_type != "debate":
        return ("relevant",)
    relevant = (labels or {}).get("relevant")
    return ("relevant",) if relevant in ("filler", CANT_TELL) else ("relevant", "stance")


def is_complete(unit: str, query_type: str, labels: Mapping[str, Any] | None, asks: str = "support") -> bool:
    """Every needed question has an answer ("can't tell" is an answer, though not a label)."""
    got = labels or {}
    return all(isinstance(got.get(f), str) and got.get(f) for f in needed_fields(unit, query_type, got, asks))


def resume_index(order: Sequence[str], query_types: Mapping[str, str], unit: str,
                 labels: Mapping[str, Mapping[str, Any]], asks: Mapping[str, str] | None = None) -> int:
    """The first item neither answered nor skipped; the first skipped one when only skips are left;
    len(order) when everything is answered. `asks`: item -> what it asks, for a pair sample asking
    relevance too (`population.item_asks`; items not in it ask support)."""
    skipped_first = None
    asks = asks or {}
    for i, item in enumerate(order):
        got = labels.get(item) or {}
        if is_complete(unit, query_types.get(item, ""), got, asks.get(item, "support")):
            continue
        if got.get("skipped"):
            skipped_first = i if skipped_first is None else skipped_first
            continue
        return i
    return skipped_first if skipped_first is not None else len(order)


def progress(order: Sequence[str], query_types: Mapping[str, str], unit: str,
             labels: Mapping[str, Mapping[str, Any]], asks: Mapping[str, str] | None = None) -> dict[str, int]:
    """Items answered, of them "can't tell" on the item's main question, skipped and still open
    (`asks` as for `resume_index`)."""
    done = cant = skipped = 0
    asks = asks or {}
    for item in order:
        got = labels.get(item) or {}
        kind = asks.get(item, "support")
        if is_complete(unit, query_types.get(item, ""), got, kind):
            done += 1
            main = ("relevant" if kind == "relevant" else "support") if unit == "pair" else "relevant"
            cant += got.get(main) == CANT_TELL
        elif got.get("skipped"):
            skipped += 1
    return {"total": len(order), "done": done, "cant_tell": cant, "skipped": skipped, "open": len(order) - done - skipped}
