"""Text in a source that tries to instruct the model or the judge instead of informing the reader, and
its disguised rewordings.

This package's face: the submodules below are what other code may use, imported by their
full name (`from pipeline.injection.injection import ...`). This file imports none of them, so importing one
submodule never loads its siblings (the fetcher's extractor process, for one, starts with only what
it needs) and no circle can run through the package's face. A name that starts with `_` stays inside
its submodule.
"""

__all__ = ["injection", "injection_variants"]
