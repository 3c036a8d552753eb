"""Rewrite figures into one form before the offline support judge compares a statement with a source.

Engines reword the figures of their sources: "0.5 pct." for "0.5 percent", "827,526 residents" for
a data page's "827.526 Thousands of Persons", "46 to 11 over three years" for "from 46 in 2018 to
11 in 2021", "1 March 2021" for "March 1, 2021". The judge's figure reader (`numbers.py`) already
equates many forms; this module puts the remaining ones into a single written form, on both sides,
so that every later stage (word lists, figure matching, clause alignment, the embedding passage)
sees the same figure written the same way. Every rule is about how a figure is written, never
about which words surround it: a changed value stays a changed value (0.7 pct. against 0.5
percent, five years against 2018 to 2021).

Rules, in order:

* dates: "March 1, 2021", "March 1st 2021", "1st March 2021" and "2021-03-01" become "1 March 2021";
* percent words: "pct.", "pct", "p.c." and "per cent" after a figure become "percent";
* plural scale words as data publishers write units: "827.526 Thousands of Persons" becomes
  "827.526 thousand Persons" (also millions, billions, trillions);
* number words of more than one word with a hundred, thousand, million or billion in them
  ("two hundred and fifty thousand") become digits ("250000"); a single number word ("three") is
  left to the figure reader, which already reads it and knows a bare "one" is not a count;
* a number of years written out after "over", "in", "within" or "across" ("over three years")
  becomes digits ("over 3 years");
* a change between two dated values, "from A in X to B in Y" (X and Y years, X before Y), becomes
  "from A to B over N years (X to Y)", the form a summary uses, with N = Y - X.

`normalise_figures(text)` applies them all; it is pure and bounded (texts are cut at MAX_CHARS).
"""

from __future__ import annotations

import re
from functools import lru_cache

FIGURE_FORMS_VERSION = "figure-forms-v2"  # in the offline judge's cache key: new rules relabel
MAX_CHARS = 200_000

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
          "october", "november", "december")
_MONTH_ABBR = {m[:3]: m for m in MONTHS} | {"sept": "september"}
_MONTH_RE = (r"(?P<month>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
             r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_DAY_RE = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR_RE = r"(?P<year>1\d{3}|20\d{2})"

_MONTH_FIRST = re.compile(rf"\b{_MONTH_RE}\s+{_DAY_RE},?\s+{_YEAR_RE}\b", re.I)
_DAY_FIRST = re.compile(rf"\b{_DAY_RE}(?:\s+of)?\s+{_MONTH_RE}\s*,?\s+{_YEAR_RE}\b", re.I)
_ISO_DATE = re.compile(r"(?<![\d-])(?P<year>1\d{3}|20\d{2})-(?P<mon>0[1-9]|1[0-2])-(?P<day>0[1-9]|[12]\d|3[01])(?![\d-])")

_FIGURE = r"\d[\d,]*(?:\.\d+)?"
_PERCENT_WORDS = re.compile(rf"(?P<fig>{_FIGURE})\s*(?:pct\b(?P<dot>\.)?|p\.c\.|per\s+cent\b|per-cent\b)"
                            r"(?P<ends>(?=\s*$|\s+(?-i:[A-Z])))?", re.I)
_PLURAL_SCALE = re.compile(rf"(?P<fig>{_FIGURE})\s+(?P<scale>thousand|million|billion|trillion)s(?:\s+of)?\b", re.I)

_UNITS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
          "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
          "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "a": 1}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
         "ninety": 90}
_MULTIPLIERS = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_NUMBER_WORD = r"(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen" \
               r"|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety" \
               r"|hundred|thousand|million|billion)(?:-(?:one|two|three|four|five|six|seven|eight|nine))?"
_NUMBER_PHRASE = re.compile(rf"\b(?:a\s+)?{_NUMBER_WORD}(?:(?:\s+and\s+|\s+|-){_NUMBER_WORD})+\b", re.I)
_YEARS_SPELLED = re.compile(rf"\b(?P<lead>over|in|within|across|for|after)\s+(?P<n>{_NUMBER_WORD})\s+years\b", re.I)

_SPAN = re.compile(
    rf"\bfrom\s+(?P<a>{_FIGURE}(?:\s*(?:%|percent))?)\s+(?:in|as of)\s+(?P<x>1\d{{3}}|20\d{{2}})\s*,?\s+"
    rf"to\s+(?P<b>{_FIGURE}(?:\s*(?:%|percent))?)\s+(?:in|by|as of)\s+(?P<y>1\d{{3}}|20\d{{2}})\b", re.I)


def _month(name: str) -> str:
    key = name.lower().rstrip(".")
    return _MONTH_ABBR.get(key[:4] if key.startswith("sept") else key[:3], key).capitalize()


def _date(day: str, month: str, year: str) -> str:
    return f"{int(day)} {month} {year}"


def _dates(text: str) -> str:
    text = _ISO_DATE.sub(lambda m: _date(m["day"], MONTHS[int(m["mon"]) - 1].capitalize(), m["year"]), text)
    text = _MONTH_FIRST.sub(lambda m: _date(m["day"], _month(m["month"]), m["year"])
                            if 1 <= int(m["day"]) <= 31 else m[0], text)
    return _DAY_FIRST.sub(lambda m: _date(m["day"], _month(m["month"]), m["year"])
                          if 1 <= int(m["day"]) <= 31 else m[0], text)


def words_value(phrase: str) -> int | None:
    """The value of number words ("two hundred and fifty thousand" = 250000), None when they do not
    make one number ("three four", "hundred hundred")."""
    total, current, last_mult = 0, 0, None
    seen = False
    for token in re.split(r"[\s-]+", phrase.lower()):
        if token == "and":
            continue
        if token in _UNITS or token in _TENS:
            value = _UNITS.get(token, _TENS.get(token, 0))
            if current and current % 10 and value:  # "three four" is two numbers
                return None
            if current % 100 >= 20 and value >= 10:  # "twenty thirty"
                return None
            current += value
            seen = True
        elif token in _MULTIPLIERS:
            mult = _MULTIPLIERS[token]
            if mult == 100:
                if current >= 100:
                    return None
                current = (current or 1) * 100
            else:
                if last_mult is not None and mult >= last_mult:
                    return None
                total += (current or 1) * mult
                current, last_mult = 0, mult
            seen = True
        else:
            return None
    return total + current if seen else None


def _number_phrases(text: str) -> str:
    def repl(m: re.Match[str]) -> str:
        phrase = m[0]
        if not re.search(r"hundred|thousand|million|billion", phrase, re.I):
            return phrase
        value = words_value(phrase)
        return str(value) if value is not None else phrase
    return _NUMBER_PHRASE.sub(repl, text)


def _spelled_years(text: str) -> str:
    def repl(m: re.Match[str]) -> str:
        value = words_value(m["n"])
        return f"{m['lead']} {value} years" if value is not None else m[0]
    return _YEARS_SPELLED.sub(repl, text)


def _spans(text: str) -> str:
    def repl(m: re.Match[str]) -> str:
        x, y = int(m["x"]), int(m["y"])
        if y <= x:
            return m[0]
        return f"({x} to {y}) from {m['a']} to {m['b']} over {y - x} years"
    return _SPAN.sub(repl, text)


@lru_cache(maxsize=50_000)
def normalise_figures(text: str) -> str:
    """The text with its figures written in one form (see the module's rules)."""
    text = text[:MAX_CHARS]
    if not re.search(r"\d|hundred|thousand|million|billion|years|pct|per cent", text, re.I):
        return text
    text = _dates(text)
    # "3 pct. The next..." keeps its full stop: the abbreviation's dot also ended the sentence
    text = _PERCENT_WORDS.sub(lambda m: f"{m['fig']} percent" + ("." if m["dot"] and m["ends"] is not None else ""),
                              text)
    text = _PLURAL_SCALE.sub(lambda m: f"{m['fig']} {m['scale'].lower()}", text)
    text = _number_phrases(text)
    text = _spelled_years(text)
    return _spans(text)
