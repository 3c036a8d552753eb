"""Fetch the pages of listed sources that came without text (`aee run --fetch-missing`).

Some datasets carry a source's text only where someone looked at it: ExpertQA holds a passage for a
source only when an expert was shown it, so about half of its sources have a URL and no text. A
computed judge cannot check a statement against a source it cannot read, so such pairs stay
unjudged. This step fetches those pages through the project's safe fetcher (public http(s) only,
bounded, cached per day) before the annotate stage. What it changes:

* a page that is fetched becomes the source's text (`text_origin="page"`), so a computed judge
  (offline, openai, nli) labels support against it;
* a page that cannot be fetched is marked dead (`fetch_ok=False`): it counts in the dead-sources
  metric, and paper-parity rules drop it as the released notebook did;
* labels carried by the data (ExpertQA's experts, the `human` judge) do not change: the experts
  judged only the passages they were shown.

A source that already has text, has no http(s) URL, or is already known dead is left as it is.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from pipeline.fetch import FetchResult, fetch_source
from pipeline.records import AnnotatedAnswer

Fetch = Callable[[str], FetchResult]
WHAT_IT_CHANGES = ("a computed judge (offline, openai, nli) then checks statements against the fetched pages; "
                   "pages that cannot be fetched count as dead sources; labels that came with the data (such as "
                   "ExpertQA's experts) stay as they are")


def fetch_command(dataset: str, judge: str = "offline") -> str:
    """The command that fetches a dataset's missing source texts and labels them with `judge`."""
    return f"aee run --dataset {dataset} --judge {judge} --fetch-missing"


def needs_fetch(url: str, text: str, fetch_ok: bool | None) -> bool:
    """True for a source worth fetching: an http(s) URL, no text yet, not already known dead."""
    return bool(url) and url.lower().startswith(("http://", "https://")) and not text.strip() and fetch_ok is not False


def fill_missing_texts(annotated: AnnotatedAnswer, fetch: Fetch | None = None) -> AnnotatedAnswer:
    """The answer with the text of every source that `needs_fetch` fetched (or marked dead).
    Answers with nothing to fetch come back unchanged (the same object)."""
    get = fetch or (lambda url: fetch_source(url, timeout=15))
    answer = annotated.answer
    if not any(needs_fetch(s.url, s.text, s.fetch_ok) for s in answer.sources):
        return annotated
    sources = []
    fetched = 0
    for s in answer.sources:
        if not needs_fetch(s.url, s.text, s.fetch_ok):
            sources.append(s)
            continue
        result = get(s.url)
        if result.ok and result.text.strip():
            sources.append(replace(s, text=result.text, fetch_ok=True, text_origin="page", title=s.title or result.title))
            fetched += 1
        else:
            sources.append(replace(s, fetch_ok=False))
    meta = dict(answer.meta)
    if fetched:
        meta["sources"] = "fetch"  # the run's manifest counts answers whose source text the toolkit fetched
    return replace(annotated, answer=replace(answer, sources=tuple(sources), meta=meta))
