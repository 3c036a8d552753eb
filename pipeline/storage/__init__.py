"""Results on disk: folders, Parquet schemas and writers, records <-> rows, result sets that change
whole, and the named crash points of the write path.

This package's face: the submodules below are what other code may use, imported by their
full name (`from pipeline.storage.store import ...`). This file imports none of them, so importing one
submodule never loads its siblings (the fetcher's extractor process, for one, starts with only what
it needs) and no circle can run through the package's face. A name that starts with `_` stays inside
its submodule.
"""

__all__ = ["store", "result_sets", "tables", "paths", "faults"]
