"""Fencing untrusted text (source documents, the answer) before it goes into an LLM prompt.

The fence itself is `pipeline.injection.injection.fence_document`: fixed opening and closing lines that the
fenced text cannot reproduce, so a document cannot close its block and speak as the instructions.
This module is the judges' single entry to it: request planning calls `fence`, tests read the
markers from `fence_markers`, and `FENCE_ID` names the fence in the judge's cache fingerprint, so
cached verdicts are invalidated if the fence is ever replaced.
"""

from __future__ import annotations

from pipeline.injection import injection

__all__ = ["FENCE_ID", "fence", "fence_markers"]

# Part of OpenAIJudge.cache_fingerprint: changing it invalidates cached verdicts.
FENCE_ID = "pipeline.injection.injection.fence_document"


def fence_markers() -> tuple[str, str]:
    """The opening and closing fence lines that `fence` produces."""
    return injection.FENCE_OPEN, injection.FENCE_CLOSE


def fence(text: str) -> str:
    """Fence untrusted text with `pipeline.injection.injection.fence_document`."""
    return injection.fence_document(text)
