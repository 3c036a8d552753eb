"""Headings written without Markdown: a line that titles what follows is not a statement.

Markdown headings ("## Results", setext underlines, a paragraph that is one bold span) are dropped by
the splitter's block reader. Answers pasted from a chat window lose the "#" and keep only the line:
"Population trends" on a line of its own, or "Key findings:" over a list. Such a line is a heading
when it is short, stands alone on its line, carries no citation marker, and something follows it.
Every view of the answer then agrees: a heading is neither an uncited statement nor filler.
"""

from __future__ import annotations

import re
import unicodedata

MAX_TITLE_WORDS = 8  # "Population trends in St. Louis since 2000" is a title; a longer line reads as prose
MAX_CAPTION_WORDS = 10  # "Key findings:" / "What the data show:" over a list
_EMPHASIS = "*_"
_END_OF_PROSE = ".!?;,\u2026\u3002\uff01\uff1f\uff1b\uff0c"
_TITLE_PUNCT = "-\u2010\u2013\u2014&'\u2019()/,:.!?;\u2026\u3002\uff01\uff1f\uff1b\uff0c"  # (end punctuation is judged below)
_ANSWER_WORDS = frozenset({"yes", "no", "maybe", "true", "false", "correct", "incorrect"})
_WORD_RE = re.compile(r"[^\W_]+")
# A colon-ended line with one of these words leads into a list as a sentence would ("Here are the
# main reasons:", "The options include:"); without them it is a caption ("Key findings:").
_LEAD_IN_WORDS = frozenset(
    """here there is are was were be been being include includes including has have had can could
    will would should may might must follows following below""".split()
)


def is_heading_line(line: str) -> bool:
    """Is this whole line (markers already known to be absent) a heading rather than a sentence?"""
    t = line.strip().strip(_EMPHASIS).strip()
    if not t or "\n" in t or "|" in t:  # a table row is never a heading
        return False
    if any(not (ch.isalnum() or ch.isspace() or ch in _TITLE_PUNCT or unicodedata.category(ch) == "So") for ch in t):
        return False  # "volume \u00d7 density", "$$E = mc^2$$": a formula, not a title
    words = _WORD_RE.findall(t)
    if not words:
        return False
    first = next((ch for ch in t if ch.isalnum()), "")
    if not (first.isupper() or first.isdigit() or not first.isascii()):
        return False  # a lower-case start continues a sentence
    if t.endswith(":"):
        inner = t[:-1].strip().strip(_EMPHASIS)
        return (len(words) <= MAX_CAPTION_WORDS and not any(ch in ".!?:" for ch in inner)
                and not any(w.lower() in _LEAD_IN_WORDS for w in words))
    if t[-1] in _END_OF_PROSE or len(words) > MAX_TITLE_WORDS:
        return False
    if len(words) == 1 and words[0].lower() in _ANSWER_WORDS:
        return False  # a bare "Yes" answers the question
    return not any(ch in ".!?:" for ch in t)  # "Pros: cheaper" is a label and its content


def is_bold_heading(text: str, start: int, end: int) -> bool:
    """A block that is one bold span such as "**Pros:**" or "**Key points**" acts as a heading."""
    t = text[start:end].strip()
    for d in ("**", "__"):
        if not t.startswith(d):
            continue
        close = t.find(d, 2)
        if close < 0:
            return False
        rest = t[close + 2:].strip()
        inner = t[2:close].strip()
        if rest not in ("", ":") or not inner:
            return False
        if rest == ":" or inner.endswith(":"):
            return True
        if any(ch in ".!?\u3002\uff01\uff1f" for ch in inner):
            return False
        return len(inner.split()) < 8
    return False
