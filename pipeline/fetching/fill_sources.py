"""Fetch the pages of listed sources that came without text (`aee run --fetch-missing`).

Some datasets carry a source's text only where someone looked at it: ExpertQA holds a passage for a
source only when an expert was shown it, so about half of its sources have a URL and no text. A
computed judge cannot check a statement against a source it cannot read, so such pairs stay
unjudged. This step fetches those pages through the project's safe fetcher (public http(s) only,
bounded, cached per day) before the annotate stage. What it changes:

* a page that is fetched becomes the source's text (`text_origin="page"`), so a computed judge
  (offline, openai, nli) labels support against it;
* a page the site says is gone (HTTP 404 / 410) is marked dead (`fetch_ok=False`): it counts in the
  dead-sources metric, and paper-parity rules drop it as the released notebook did;
* a page this machine could not reach (no network) or whose site did not give it (a server error,
  a timeout, a refusal) is not dead: its pairs are "not checked" with the reason
  (`text_origin="unreachable"` / `"unfetched"`, see `pipeline.fetching.fetch_outcome`), and a later run
  fetches it again;
* labels carried by the data (ExpertQA's experts, the `human` judge) do not change: the experts
  judged only the passages they were shown.

A source that already has text, has no http(s) URL, or is already known dead is left as it is.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Callable

from pipeline.fetching.fetch import FetchResult, fetch_source
from pipeline.fetching.fetch_outcome import UNFETCHED_ORIGIN, UNREACHABLE_ORIGIN, Outcome, fetch_outcomes
from pipeline.records import AnnotatedAnswer, Source

Fetch = Callable[[str], FetchResult]
WHAT_IT_CHANGES = ("a computed judge (offline, openai, nli) then checks statements against the fetched pages; "
                   "pages the site says are gone count as dead sources; pages this machine could not reach stay "
                   "not checked; labels that came with the data (such as ExpertQA's experts) stay as they are")


def fetch_by_default() -> bool:
    """Whether missing source text is fetched when nobody said (Re-score's box, `aee score`): yes,
    unless AEE_FETCH is off / 0 / no / false (the test suite sets it, so no test reaches for the web)."""
    return os.environ.get("AEE_FETCH", "").strip().lower() not in ("0", "off", "no", "false")


def fetch_command(dataset: str, judge: str = "offline") -> str:
    """The command that fetches a dataset's missing source texts and labels them with `judge`."""
    return f"aee run --dataset {dataset} --judge {judge} --fetch-missing"


def needs_fetch(url: str, text: str, fetch_ok: bool | None) -> bool:
    """True for a source worth fetching: an http(s) URL, no text yet, not already known dead."""
    return bool(url) and url.lower().startswith(("http://", "https://")) and not text.strip() and fetch_ok is not False


def fill_missing_texts(annotated: AnnotatedAnswer, fetch: Fetch | None = None,
                       notes: list[str] | None = None) -> AnnotatedAnswer:
    """The answer with the text of every source that `needs_fetch` fetched, marked dead (the site
    says the page is gone) or marked not reached (see `pipeline.fetching.fetch_outcome`); one plain line per
    fetched source goes to `notes` when given. Answers with nothing to fetch come back unchanged
    (the same object)."""
    get = fetch or (lambda url: fetch_source(url, timeout=15))
    answer = annotated.answer
    todo = [s for s in answer.sources if needs_fetch(s.url, s.text, s.fetch_ok)]
    if not todo:
        return annotated
    outcomes = fetch_outcomes([s.url for s in todo], get)
    sources = []
    fetched = 0
    done: list[tuple[int, Outcome]] = []
    for s in answer.sources:
        outcome = outcomes.get(s.url) if needs_fetch(s.url, s.text, s.fetch_ok) else None
        if outcome is None:
            sources.append(s)
            continue
        sources.append(source_after(s, outcome))
        fetched += outcome.state == "page"
        done.append((s.index, outcome))
    if notes is not None:
        notes.extend(outcome_notes(done))
    meta = dict(answer.meta)
    if fetched:
        meta["sources"] = "fetch"  # the run's manifest counts answers whose source text the toolkit fetched
    return replace(annotated, answer=replace(answer, sources=tuple(sources), meta=meta))


def source_after(s: Source, outcome: Outcome) -> Source:
    """A source as its fetch left it: its page text, dead, or not checked with the reason."""
    if outcome.state == "page":
        return replace(s, text=outcome.text, fetch_ok=True, text_origin="page", title=s.title or outcome.title)
    if outcome.state == "gone":
        return replace(s, fetch_ok=False)
    return replace(s, fetch_ok=None, text_origin=UNREACHABLE_ORIGIN if outcome.state == "unreachable" else UNFETCHED_ORIGIN)


def _numbers(indexes: list[int]) -> str:
    return ("source " if len(indexes) == 1 else "sources ") + ", ".join(str(i) for i in indexes)


def outcome_notes(done: list[tuple[int, Outcome]]) -> list[str]:
    """A few plain lines for a reader about a batch of fetches: one per kind of outcome (and reason),
    not one per source, so six sources that could not be reached read as one line."""
    groups: dict[tuple[str, str], list[int]] = {}
    for index, outcome in done:
        why = outcome.why.split(" (not tried", 1)[0]
        groups.setdefault((outcome.state, why), []).append(index)
    untried = [i for i, o in done if "(not tried" in o.why]
    lines = []
    for (state, why), indexes in groups.items():
        which = _numbers(indexes)
        if state == "page":
            lines.append(f"Fetched the page of {which}.")
        elif state == "gone":
            lines.append(f"{which[0].upper()}{which[1:]}: {why}; {'it counts' if len(indexes) == 1 else 'they count'} "
                         "as dead.")
        elif state == "unreachable":
            skipped = f" ({_numbers(untried)} not tried: the sources before could not be reached)" if untried else ""
            lines.append(f"{which[0].upper()}{which[1:]} not checked: {why}{skipped}. This is not the engine's fault and "
                         "is not counted as dead; fetch again with a network, or paste the text.")
        else:
            lines.append(f"{which[0].upper()}{which[1:]} not checked: the page could not be fetched ({why}). Not counted "
                         "as dead; paste the text to judge it.")
    return lines
