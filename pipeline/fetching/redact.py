"""Keeping API keys out of everything the toolkit writes or shows.

Judges, engine importers, `aee collect` and the conflict probe all keep or log text that may hold a
credential (a request body, an error message from a server echoing its headers). Each passes such
text through `redact` first. It lives at the bottom of the house so that every layer can import it
downwards.
"""

from __future__ import annotations

import re
from typing import Iterable

__all__ = ["redact", "redact_clip"]

_KEYLIKE_RE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{8,}|Bearer\s+[A-Za-z0-9_\-\.=]{8,})")


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Replace the given secrets and anything shaped like an API key / bearer token by '***'."""
    if not text:
        return text
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return _KEYLIKE_RE.sub("***", text)


def redact_clip(text: str, secrets: Iterable[str | None] = (), limit: int = 300) -> str:
    """`redact`, then cut to `limit` characters: in that order, so a key that straddles the cut is
    masked whole instead of leaving its first characters (issue 46: a 400 whose message held 280
    characters and then the key kept 19 of its 32). A text that was already cut before it came
    here (a reply read up to a byte budget) may end in the first characters of a secret: those are
    masked too."""
    out = redact(text, secrets)[:limit]
    for secret in secrets:
        if not secret or len(secret) < 4:
            continue
        for size in range(min(len(secret) - 1, len(out)), 3, -1):  # the longest piece first
            if out.endswith(secret[:size]):
                out = out[:-size] + "***"
                break
    return out
