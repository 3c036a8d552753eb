"""Is the full stop after this word an abbreviation's dot or a sentence's end?

The splitter (`pipeline.text.text`) asks this for every "." followed by white space and a word that does
not start in lower case (a lower-case next word never starts a sentence, so it needs no list).

Three kinds of words are told apart:

* words that stand before what they qualify ("Dr. Smith", "St. Louis", "e.g. rice", "Fig. 3"):
  their dot never ends a sentence;
* words that may stand at a sentence's end as well ("et al.", "Jr.", "Corp.", "Jan.", "U.S.",
  "a.m.", "Ph.D."): their dot ends the sentence only when the next word is one that typically opens a
  sentence ("The", "It", "However", ...), so "in the U.S. The rate" breaks and "U.S. Army" does not;
* a capital letter standing alone is an initial ("J. K. Rowling").

An abbreviation may be glued to the word before it: "FRED/St. Louis", "co-Dr. Smith", "(Dr. Lee",
a quote opening before it. Glued by "/" or a dash only listed words and dotted acronyms count (a
single capital there is more often a name's last letter, as in "vitamin-C. Then").
"""

from __future__ import annotations

import re
import unicodedata

# Compared lower-case, without the final dot.
BEFORE_WHAT_THEY_QUALIFY = frozenset(
    """
    e.g i.e cf vs v viz approx ca dr mr mrs ms mx prof st mt ft fig figs vol vols pp p ch sec
    eq eqs ref refs gen gov sen rep lt col capt sgt rev hon adm no nos
    """.split()
)
MAY_END_A_SENTENCE = frozenset(
    """
    al est ed eds dept univ assn bros co corp inc ltd jr sr ph.d m.d b.a m.a
    jan feb mar apr jun jul aug sep sept oct nov dec
    """.split()
)
ABBREVIATIONS = BEFORE_WHAT_THEY_QUALIFY | MAY_END_A_SENTENCE

# Words that, capitalised after an ambiguous abbreviation, say a new sentence has begun.
SENTENCE_OPENERS = frozenset(
    """
    the this that these those it its he she they we i you there here a an in on at for as by
    but and however also yet so thus therefore meanwhile since while when after before although
    though if many most some several both each all no one other such our their his her my
    """.split()
)

# Capitalised words that may follow a clock time inside the same sentence.
_AFTER_A_TIME = frozenset(
    """eastern central pacific mountain atlantic local standard daylight monday tuesday wednesday
    thursday friday saturday sunday""".split()
)

_DOTTED_ACRONYM_RE = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")
# What may open right before an abbreviation: brackets, quotes of several languages, emphasis marks.
_OPENERS = "([{\"'`*_\u201c\u2018\u201e\u201a\u00ab\u00bb\u2039\u203a"
# Joiners that glue an abbreviation to the previous word ("FRED/St.", "co-Dr.", "1990\u2013Jan.").
_JOINERS = "/\\-\u2010\u2011\u2012\u2013\u2014\u2212"


def _token_before(text: str, dot: int, lo: int) -> int:
    """Start of the run of letters and dots that ends right before position `dot`."""
    k = dot
    while k > lo and dot - k < 30 and (text[k - 1].isalpha() or text[k - 1] == "."):
        k -= 1
    return k


_DOMAIN_RE = re.compile(r"(?:://|www\.|[a-z0-9-]\.[a-z]{2,})")


def _looks_like_address(text: str, k: int, lo: int) -> bool:
    """Does the token that the abbreviation at k is glued to look like a web address or a path?"""
    w = k
    while w > lo and k - w < 200 and not text[w - 1].isspace():
        w -= 1
    return _DOMAIN_RE.search(text, w, k) is not None


def is_abbreviation(text: str, dot: int, lo: int, next_word: str) -> bool:
    """Does the '.' at `dot` belong to an abbreviation or an initial, not end a sentence?

    `lo` is where the current sentence started (nothing before it is looked at); `next_word` is the
    word after the dot and the spaces (and markers) following it, "" at the end of the text."""
    k = _token_before(text, dot, lo)
    tok = text[k:dot]
    if not tok:
        return False
    before = text[k - 1] if k > lo else " "
    glued = before in _JOINERS
    if not (before.isspace() or before in _OPENERS or glued):
        return False  # part of a longer token such as "x2.y"
    if glued and _looks_like_address(text, k, lo):
        return False  # the last part of a path such as "example.com/a.b"
    low = tok.lower()
    opens_sentence = next_word.lower() in SENTENCE_OPENERS
    if low in BEFORE_WHAT_THEY_QUALIFY:
        if low in ("no", "nos"):
            return next_word[:1].isdigit()
        return len(low) > 1 or not glued
    if low in MAY_END_A_SENTENCE:
        return not opens_sentence
    if len(tok) == 1 and tok.isupper() and tok.isascii():
        # an initial, as in "J. K. Rowling"; "Team B. The final" ends (a one-letter next word such
        # as "I" or "A" is more likely another initial)
        return not glued and not (opens_sentence and len(next_word) > 1)
    if _DOTTED_ACRONYM_RE.fullmatch(tok) is not None:  # U.S., U.K., a.m.
        if low in ("a.m", "p.m") and next_word[:1].isupper() and not next_word.isupper():
            return next_word.lower() in _AFTER_A_TIME  # "9 a.m. Eastern" goes on, "9 a.m. Bring water" ends
        return not opens_sentence
    return False


def next_word(text: str, j: int, end: int) -> str:
    """The word (letters and digits) that starts at position j, at most 30 characters."""
    k = j
    while k < end and k - j < 30 and (text[k].isalnum()):
        k += 1
    return text[j:k]


def trailing_symbols(text: str, j: int, end: int) -> int | None:
    """Where a sentence ends when emoji or other pictographs follow its end punctuation ("passed!
    \U0001F389 Turnout"): after them when they stand alone before the next word; else None."""
    k = j
    while k < end and (unicodedata.category(text[k]) == "So" or text[k] in "\u200d\ufe0f"):
        k += 1
    if k == j or (k < end and not text[k].isspace()):
        return None
    after = k
    while after < end and text[after].isspace():
        after += 1
    if after < end and text[after].islower():
        return None  # "n4. \U0001F308 trees grow": the emoji opens the next sentence
    return k
