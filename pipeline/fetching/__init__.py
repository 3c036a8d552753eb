"""Reaching the network safely: fetching a cited page and turning it into text (what a failure means,
the extractor process, filling missing sources), where a call with the user's API key may go, and
keeping that key out of everything written or shown.

This package's face: the submodules below are what other code may use, imported by their
full name (`from pipeline.fetching.fetch import ...`). This file imports none of them, so importing one
submodule never loads its siblings (the fetcher's extractor process, for one, starts with only what
it needs) and no circle can run through the package's face. A name that starts with `_` stays inside
its submodule.
"""

__all__ = ["fetch", "fetch_text", "fetch_outcome", "extract_serve", "extract_worker", "outbound", "fill_sources", "redact"]
