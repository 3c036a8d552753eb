"""Answer text: statements with character spans, citation markers, abbreviations, headings, how far a
citation reaches, and finding pre-split claims in their answer.

This package's face: the submodules below are what other code may use, imported by their
full name (`from pipeline.text.text import ...`). This file imports none of them, so importing one
submodule never loads its siblings (the fetcher's extractor process, for one, starts with only what
it needs) and no circle can run through the package's face. A name that starts with `_` stays inside
its submodule.
"""

__all__ = ["text", "abbreviations", "headings", "citation_scope", "locate"]
