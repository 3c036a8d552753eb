"""Keeping API keys out of everything the toolkit writes or shows.

Judges, engine importers, `aee collect` and the conflict probe all keep or log text that may hold a
credential (a request body, an error message from a server echoing its headers). Each passes such
text through `redact` first. It lives at the bottom of the house so that every layer can import it
downwards.
"""

from __future__ import annotations

import re
from typing import Iterable

__all__ = ["redact"]

_KEYLIKE_RE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{8,}|Bearer\s+[A-Za-z0-9_\-\.=]{8,})")


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Replace the given secrets and anything shaped like an API key / bearer token by '***'."""
    if not text:
        return text
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return _KEYLIKE_RE.sub("***", text)
