"""One answer's report: every metric with its rating, statements and matrices (`aee score`, Re-score,
the inspector), and the same answer under two judges side by side.

This package's face: the submodules below are what other code may use, imported by their
full name (`from pipeline.report.scoring import ...`). This file imports none of them, so importing one
submodule never loads its siblings (the fetcher's extractor process, for one, starts with only what
it needs) and no circle can run through the package's face. A name that starts with `_` stays inside
its submodule.
"""

__all__ = ["scoring", "second_opinion"]
