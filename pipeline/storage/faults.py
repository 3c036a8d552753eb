"""Named points of the write path, where a crash test can stop the process.

Every file operation that writes results (a table's last row group, its close, its rename into
place, a manifest, a link into a new result set, the pointer switch, a removal) calls `point(name)`
right after it. In normal runs nothing is installed and a point costs one comparison. The crash
tests (tests/pipeline/storage/test_result_sets.py) install a hook that counts points and sends the process SIGKILL
at the chosen one, then check what a reader sees.
"""

from __future__ import annotations

from typing import Callable

__all__ = ["point", "set_hook"]

_hook: Callable[[str], None] | None = None


def point(name: str) -> None:
    """A file operation named `name` has just completed."""
    if _hook is not None:
        _hook(name)


def set_hook(hook: Callable[[str], None] | None) -> None:
    """Install (or remove, with None) the function every point calls."""
    global _hook
    _hook = hook
