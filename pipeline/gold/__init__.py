"""Reference (gold) answers: how they are stored and matched, an answer's similarity with them
(measured in the annotate stage), and `aee compare-gold`.

This package's face: the submodules below are what other code may use, imported by their
full name (`from pipeline.gold.gold import ...`). This file imports none of them, so importing one
submodule never loads its siblings (the fetcher's extractor process, for one, starts with only what
it needs) and no circle can run through the package's face. A name that starts with `_` stays inside
its submodule.
"""

__all__ = ["gold", "similarity", "compare_gold"]
