"""What a failed fetch means, and whose fault it is, in plain words.

`pipeline.fetching.fetch.fetch_source` says *that* a fetch failed and gives the low-level cause ("dns error:
[Errno -3] Temporary failure in name resolution"). A reader needs to know whose fault it is:

* **gone** - the site answered that the page is not there (HTTP 404 or 410). Only this makes a
  dead source (`fetch_ok=False`), which counts against the engine that cited it;
* **unreachable** - this machine could not reach the web: no route to the network, or no host name
  could be looked up at all. Nothing is known about the source; its pairs are "not checked: this
  machine could not reach the web" (`text_origin="unreachable"`), never dead;
* **failed** - no readable page for another reason: a server error, a refusal, a timeout, a name
  that does not exist while other names do, an unsupported file type, an address the fetcher's
  safety rules refuse. Not known to be gone: "not checked: the page was not fetched, not known to
  be gone" (`text_origin="unfetched"`); a later fetch may work.

A failed name lookup is ambiguous on its own: one host that does not exist looks like a machine
without a network. `fetch_outcomes` decides it over the whole batch: when no fetch of the batch got
any answer from any site, every name-lookup failure is the machine's; when some site answered, a
name that could not be looked up is that site's. After `GIVE_UP_AFTER` such failures with no answer
from anywhere, the rest of the batch is not tried: a machine without a network would otherwise wait
on every source in turn.
"""

from __future__ import annotations

import errno
import re
from dataclasses import dataclass
from typing import Callable, Iterable

from pipeline.fetching.fetch import FetchResult

GONE_STATUSES = frozenset({404, 410})
UNREACHABLE_ORIGIN = "unreachable"  # Source.text_origin of a source this machine could not reach
UNFETCHED_ORIGIN = "unfetched"  # Source.text_origin of a source whose site did not give the page
GIVE_UP_AFTER = 2
# Connection errors that say this machine has no way out (rather than that one host is down)
_NO_ROUTE = frozenset({errno.ENETUNREACH, errno.ENETDOWN})
_HOST_UNREACHABLE = frozenset({errno.EHOSTUNREACH})
_ERRNO_RE = re.compile(r"\[Errno (-?\d+)\]")
_NO_ROUTE_WORDS = ("network is unreachable", "network is down")
_HOST_WORDS = ("no route to host",)


@dataclass(frozen=True)
class Outcome:
    """One URL's fetch, read for a person: `state` is page | gone | unreachable | failed."""

    url: str
    state: str
    text: str = ""
    title: str = ""
    why: str = ""  # plain words, no error numbers ("" for a page)


def _errno(reason: str) -> int | None:
    m = _ERRNO_RE.search(reason)
    return int(m.group(1)) if m else None


def lookup_failed(result: FetchResult) -> bool:
    """The host name could not be looked up (no DNS answer, or no such name)."""
    return not result.ok and result.reason.startswith("dns error")


def no_route(result: FetchResult) -> bool:
    """The connection failed because this machine has no route to the network (or to that host)."""
    if result.ok or not result.reason.startswith("connection error"):
        return False
    code = _errno(result.reason)
    low = result.reason.lower()
    return code in _NO_ROUTE | _HOST_UNREACHABLE or any(w in low for w in _NO_ROUTE_WORDS + _HOST_WORDS)


def machine_offline(result: FetchResult) -> bool:
    """No route to the network at all: the machine's own fault, whatever other fetches did."""
    if result.ok or not result.reason.startswith("connection error"):
        return False
    return _errno(result.reason) in _NO_ROUTE or any(w in result.reason.lower() for w in _NO_ROUTE_WORDS)


def plain_reason(result: FetchResult) -> str:
    """Why a fetch failed, in words a reader understands (no error numbers, no library names)."""
    reason = result.reason or ""
    status = result.status
    if result.ok:
        return ""
    if status in GONE_STATUSES:
        return f"the site answered that the page is gone (HTTP {status})"
    if lookup_failed(result):
        return "the site's name could not be looked up"
    if no_route(result):
        return "there was no route to the site"
    if reason == "timeout":
        return "the site did not answer in time"
    if reason.startswith("http ") and status is not None:
        if status >= 500:
            return f"the site's server failed (HTTP {status})"
        if status in (401, 403):
            return f"the site refused to give the page to the fetcher (HTTP {status})"
        if status == 429:
            return "the site asked the fetcher to slow down (HTTP 429)"
        return f"the site answered with an error (HTTP {status})"
    if reason.startswith("refused") or reason.startswith("redirect to"):
        return "the fetcher's safety rules do not allow this address (only public web pages are fetched)"
    if reason.startswith(("unsupported scheme", "invalid url")):
        return "the address is not a web page address"
    if reason.startswith("too large"):
        return "the page is larger than the fetcher reads"
    if reason.startswith("too many redirects"):
        return "the site sent the fetcher around in circles (too many redirects)"
    if reason.startswith("tls error"):
        return "the site's secure connection could not be checked"
    if reason.startswith("connection error"):
        return "the connection to the site failed"
    if reason == "no text extracted":
        return "the page holds no text the fetcher can read"
    if reason.startswith(("unsupported content", "pdf not supported", "bad pdf")):
        return "the page is a kind of file the fetcher cannot read"
    return "the page could not be read"


UNREACHABLE_WHY = "this machine could not reach the web"


def fetch_outcomes(urls: Iterable[str], fetch: Callable[[str], FetchResult]) -> dict[str, Outcome]:
    """Fetch each URL once (in order) and say what each fetch means (see the module's rules)."""
    todo = list(dict.fromkeys(urls))
    results: dict[str, FetchResult] = {}
    answered = False  # some site gave any answer (a page or an HTTP status): the network works
    silent = 0  # fetches that failed before any site could answer
    skipped: list[str] = []
    for url in todo:
        if not answered and silent >= GIVE_UP_AFTER:
            skipped.append(url)
            continue
        result = fetch(url)
        results[url] = result
        if result.ok or result.status is not None:
            answered = True
        elif lookup_failed(result) or no_route(result):
            silent += 1
    out: dict[str, Outcome] = {}
    for url, r in results.items():
        if r.ok and r.text.strip():
            out[url] = Outcome(url, "page", r.text, r.title)
        elif machine_offline(r) or (not answered and (lookup_failed(r) or no_route(r))):
            out[url] = Outcome(url, "unreachable", why=UNREACHABLE_WHY)
        elif r.status in GONE_STATUSES:
            out[url] = Outcome(url, "gone", why=plain_reason(r))
        else:
            out[url] = Outcome(url, "failed", why=plain_reason(r))
    for url in skipped:
        out[url] = Outcome(url, "unreachable", why=UNREACHABLE_WHY + " (not tried: the sources before it could not be reached)")
    return out
