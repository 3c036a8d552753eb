"""Versioned prompt files for the LLM judges.

Each prompt lives in `<name>_v<N>.txt`. A file has an optional header of `#` comment lines, a
system part, and a user part introduced by a line that reads exactly `---- USER ----`. The user
part holds `{{placeholders}}` that `render_prompt` fills in one pass (a value is never re-scanned,
so braces or placeholder-like text inside a document stay inert).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

PROMPT_DIR = Path(__file__).resolve().parent
USER_MARKER = "---- USER ----"
_FILE_RE = re.compile(r"^(?P<name>[a-z_]+?)_(?P<version>v\d+)\.txt$")
_PLACEHOLDER_RE = re.compile(r"\{\{([a-z_]+)\}\}")

__all__ = ["load_prompt", "split_prompt", "render_prompt", "available_prompts", "PROMPT_DIR"]


def available_prompts() -> dict[str, list[str]]:
    """Prompt name -> versions present on disk, oldest first (e.g. {"support": ["v1"]})."""
    found: dict[str, list[str]] = {}
    for path in PROMPT_DIR.glob("*.txt"):
        match = _FILE_RE.match(path.name)
        if match:
            found.setdefault(match["name"], []).append(match["version"])
    return {name: sorted(versions, key=lambda v: int(v[1:])) for name, versions in found.items()}


@lru_cache(maxsize=64)
def load_prompt(name: str, version: str | None = None) -> tuple[str, str]:
    """Return (text, version) for a prompt.

    `name` is either a bare name ("support", newest version wins) or a full id ("support_v1").
    Raises FileNotFoundError with the available choices when nothing matches.
    """
    match = re.fullmatch(r"([a-z_]+?)_(v\d+)", name)
    if match and version is None:
        name, version = match.group(1), match.group(2)
    versions = available_prompts().get(name, [])
    if version is None:
        if not versions:
            raise FileNotFoundError(f"no prompt named {name!r} in {PROMPT_DIR}")
        version = versions[-1]
    path = PROMPT_DIR / f"{name}_{version}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"no prompt {name}_{version}.txt in {PROMPT_DIR}; have {versions}")
    return path.read_text(encoding="utf-8"), version


def split_prompt(text: str) -> tuple[str, str]:
    """Split a prompt file's text into (system, user_template); header comment lines dropped."""
    lines = text.splitlines()
    while lines and (lines[0].startswith("#") or not lines[0].strip()):
        lines.pop(0)
    body = "\n".join(lines)
    if USER_MARKER not in body:
        return body.strip(), ""
    system, _, user = body.partition(USER_MARKER)
    return system.strip(), user.strip()


def render_prompt(template: str, **values: str) -> str:
    """Fill `{{name}}` placeholders in one pass; a missing value raises KeyError."""

    def _sub(match: re.Match[str]) -> str:
        return str(values[match.group(1)])

    return _PLACEHOLDER_RE.sub(_sub, template)
