"""Quantities for the offline judge: find the figures a text states and compare them across texts.

A figure is read with what changes its meaning: a scale word ("1.2 million" = 1,200,000), a percent
sign or word ("35%" = "35 percent" = "35 per cent"), a currency, the unit written after it ("3 km" =
"three kilometres"), number words ("sixty thousand", "between eight and ten"), thousands separators
("1,200,000", "300 000"), times ("7:50") and decades ("the 1930s"). A range is its two ends, so "10 to
19", "10-19" and "between 10 and 19" state the same two figures.

Two figures are the same when their values differ by no more than the rounding of the less precise
one (78.15 matches 78.1; "1.2 million" matches 1,234,000; 1925 never matches 1889), and a
percentage only matches a percentage. `figure_token` gives the token a figure stands for in the
support judge's word lists, so that coverage counts "1.2 million" and "1,200,000" as one word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

MAX_TEXT_CHARS = 200_000

_UNITS = {
    "km": "kilometre", "kilometer": "kilometre", "kilometre": "kilometre", "kms": "kilometre",
    "m": "metre", "meter": "metre", "metre": "metre", "cm": "centimetre", "centimeter": "centimetre",
    "centimetre": "centimetre", "mm": "millimetre", "millimeter": "millimetre", "millimetre": "millimetre",
    "mi": "mile", "mile": "mile", "ft": "foot", "foot": "foot", "feet": "foot", "in": "inch", "inch": "inch",
    "kg": "kilogram", "kilo": "kilogram", "kilogram": "kilogram", "kilogramme": "kilogram", "g": "gram",
    "gram": "gram", "gramme": "gram", "mg": "milligram", "milligram": "milligram", "lb": "pound",
    "lbs": "pound", "t": "tonne", "tonne": "tonne", "ton": "tonne",
    "l": "litre", "liter": "litre", "litre": "litre", "ml": "millilitre", "milliliter": "millilitre",
    "millilitre": "millilitre",
    "h": "hour", "hr": "hour", "hrs": "hour", "hour": "hour", "min": "minute", "mins": "minute",
    "minute": "minute", "s": "second", "sec": "second", "secs": "second", "second": "second",
    "yr": "year", "yrs": "year", "year": "year", "day": "day", "week": "week", "month": "month",
    "decade": "decade", "century": "century",
    "°c": "celsius", "celsius": "celsius", "degree": "degree", "°f": "fahrenheit", "fahrenheit": "fahrenheit",
    "mph": "mph", "kph": "kph", "km/h": "kph", "km/s": "kps", "kw": "kilowatt", "kilowatt": "kilowatt",
    "mw": "megawatt", "megawatt": "megawatt", "gw": "gigawatt", "gigawatt": "gigawatt", "kwh": "kwh",
    "twh": "twh", "mmhg": "mmhg",
    "dollar": "dollar", "usd": "dollar", "euro": "euro", "eur": "euro", "pound sterling": "pound",
    "gbp": "pound", "yen": "yen", "kroner": "krone", "krone": "krone", "kronor": "krone", "krona": "krone",
    "crown": "krone", "franc": "franc", "rupee": "rupee", "yuan": "yuan",
    "people": "person", "person": "person", "persons": "person",
    "resident": "person", "inhabitant": "person",  # a head count, however the source names the heads
}
_CURRENCY_SIGNS = {"$": "dollar", "€": "euro", "£": "pound", "¥": "yen"}
_SCALES = {"thousand": 1e3, "million": 1e6, "mn": 1e6, "billion": 1e9, "bn": 1e9, "trillion": 1e12}
_SCALES_AFTER_CURRENCY = {"k": 1e3, "m": 1e6, "b": 1e9}
_WORD_VALUES = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "dozen": 12,
}
_TENS = {"twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"}

# One regex pass: a time, a figure in digits, a word (number words, scale words, units), a sign.
_TOKEN_RE = re.compile(
    r"(?P<time>(?<![\d:])\d{1,2}:\d{2}(?![\d:]))"
    r"|(?P<num>(?<![\w.,])(?<![A-Za-z]-)\d{1,3}(?:(?:,\d{3})+|(?:[ \u00a0\u202f]\d{3})+(?![\d]))(?:\.\d+)?(?![\d])"
    r"|(?<![\w.,])(?<![A-Za-z]-)\d+(?:\.\d+)?(?![\d]))(?P<decade>s\b)?"
    r"|(?P<word>°[cf]\b|km/[hs]\b|[a-z]+(?:-[a-z]+)?)"
    r"|(?P<sign>[%$€£¥])",
    re.I,
)
_NOT_UNITS = frozenset("""a an the of and or to in on at by for from with than as per each every about around
    some more less over under nearly almost roughly approximately between among up down is are was were be
    been has have had that which who this these those its their his her our your it they he she we you""".split())


@dataclass(frozen=True, slots=True)
class Figure:
    """One figure a text states."""

    value: float
    tol: float  # rounding: another value within this distance is the same figure
    kind: str  # "percent", "year", "time", "decade", "money" or "" (a plain count or measure)
    unit: str  # the canonical unit written after it (or the currency), "" when none
    raw: str  # as written (bounded)
    digits: int  # integer digits as written in digits (0 for number words)
    small: bool  # a bare one-digit whole number with no unit or kind: list positions, "Stage 3"

    def label(self) -> str:
        return self.raw


def _unit_word(word: str) -> str:
    w = word.lower()
    if w in _UNITS:
        return _UNITS[w]
    if w.endswith("s") and w[:-1] in _UNITS:
        return _UNITS[w[:-1]]
    if w.endswith("es") and w[:-2] in _UNITS:
        return _UNITS[w[:-2]]
    return ""


def _plain_unit(word: str) -> str:
    """Any other word right after a figure ("12,000 people", "450 species"), singular-ish."""
    if not word.isalpha() or len(word) <= 2:
        return ""
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 3 else word


def _tolerance(text_value: str, scale: float) -> float:
    _, _, decimals = text_value.partition(".")
    return 0.5 * 10 ** -len(decimals) * scale


@lru_cache(maxsize=50_000)
def figures(text: str) -> tuple[Figure, ...]:
    """Every figure in the text, in order."""
    text = text[:MAX_TEXT_CHARS]
    toks = list(_TOKEN_RE.finditer(text))
    out: list[Figure] = []
    ends: list[tuple[int, int, float]] = []  # span and scale of each figure, for ranges
    i = 0
    while i < len(toks):
        m = toks[i]
        currency = ""
        if m.group("sign") and m.group("sign") in _CURRENCY_SIGNS and i + 1 < len(toks) and toks[i + 1].group("num"):
            currency = _CURRENCY_SIGNS[m.group("sign")]
            i += 1
            m = toks[i]
        start = m.start()
        if m.group("time"):
            h, mm = m.group("time").split(":")
            out.append(Figure(int(h) + int(mm) / 60, 1e-6, "time", "", m.group("time"), 0, False))
            ends.append((m.start(), m.end(), 1.0))
            i += 1
            continue
        if m.group("num"):
            digits_text = re.sub(r"[,\s\u00a0\u202f]", "", m.group("num"))
            value, scale = float(digits_text), 1.0
            whole = digits_text.partition(".")[0]
            n_digits = len(whole)
            grouped = digits_text != m.group("num")
            decade = bool(m.group("decade"))
            j = i + 1
        elif m.group("word") and m.group("word").lower() in _WORD_VALUES:
            word = m.group("word").lower()
            if "-" in word:
                i += 1
                continue
            value = float(_WORD_VALUES[word])
            j = i + 1
            if word in _TENS and j < len(toks) and (toks[j].group("word") or "").lower() in _WORD_VALUES \
                    and _WORD_VALUES[toks[j].group("word").lower()] < 10 and toks[j].start() - toks[i].end() <= 1:
                value += _WORD_VALUES[toks[j].group("word").lower()]  # "twenty five" (the hyphen form is one word)
                j += 1
            digits_text, scale, n_digits, grouped, decade = str(int(value)), 1.0, 0, False, False
        elif m.group("word") and re.fullmatch(r"(twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)-[a-z]+",
                                              m.group("word").lower()):
            tens, _, ones = m.group("word").lower().partition("-")
            if ones not in _WORD_VALUES or _WORD_VALUES[ones] >= 10:
                i += 1
                continue
            value = float(_WORD_VALUES[tens] + _WORD_VALUES[ones])
            digits_text, scale, n_digits, grouped, decade, j = str(int(value)), 1.0, 0, False, False, i + 1
        else:
            i += 1
            continue
        kind = "money" if currency else ""
        unit = currency
        # what follows the figure: "hundred", a scale word, a percent, then a unit
        if j < len(toks) and (toks[j].group("word") or "").lower() == "hundred":
            value *= 100
            scale *= 100
            j += 1
        if j < len(toks) and toks[j].group("word"):
            w = toks[j].group("word").lower()
            if w in _SCALES:
                value *= _SCALES[w]
                scale *= _SCALES[w]
                j += 1
            elif currency and w in _SCALES_AFTER_CURRENCY and toks[j].start() == toks[j - 1].end():
                value *= _SCALES_AFTER_CURRENCY[w]
                scale *= _SCALES_AFTER_CURRENCY[w]
                j += 1
        if j < len(toks) and toks[j].group("sign") == "%":
            kind, j = "percent", j + 1
        elif j < len(toks) and (toks[j].group("word") or "").lower() in ("percent", "pc", "percentage"):
            kind, j = "percent", j + 1
        elif (j + 1 < len(toks) and (toks[j].group("word") or "").lower() == "per"
              and (toks[j + 1].group("word") or "").lower() == "cent"):
            kind, j = "percent", j + 2
        if kind != "percent" and j < len(toks) and toks[j].group("word"):
            w = toks[j].group("word").lower()
            if w == "degrees" or w == "degree":
                nxt = (toks[j + 1].group("word") or "").lower() if j + 1 < len(toks) else ""
                unit = {"celsius": "celsius", "c": "celsius", "fahrenheit": "fahrenheit", "f": "fahrenheit"}.get(nxt, "degree")
            elif w not in _NOT_UNITS and toks[j].start() - toks[j - 1].end() <= 1:
                unit = _unit_word(w) or (_plain_unit(w) if not currency else unit)
        if decade:
            kind = "decade"
        elif not kind and scale == 1.0 and not grouped and "." not in digits_text and 1000 <= value <= 2100 \
                and n_digits == 4 and unit in ("", "year"):
            kind = "year"
        if kind == "decade":  # "the 1930s": any year from 1930 to 1939
            value, tol = value + 4.5, 4.5
        else:
            tol = _tolerance(digits_text, scale)
        small = (not kind and not unit and scale == 1.0 and value < 10 and value == int(value))
        raw = text[start : toks[j - 1].end()][:40]
        out.append(Figure(value, tol, kind, unit, raw, n_digits, small))
        ends.append((start, toks[j - 1].end(), scale))
        i = j
    return _ranges(text, out, ends)


_RANGE_GAP_RE = re.compile(r"\s*(?:-|\u2013|\u2014|to|and)\s*$", re.I)


def _ranges(text: str, found: list[Figure], ends: list[tuple[int, int, float]]) -> tuple[Figure, ...]:
    """The first end of a range takes the kind, unit and scale written after the second: "50-55%",
    "between eight and ten hours", "1 to 2 million"."""
    out = list(found)
    for k in range(len(out) - 1):
        a, b = out[k], out[k + 1]
        gap = text[ends[k][1] : ends[k + 1][0]]
        if len(gap) > 7 or not _RANGE_GAP_RE.match(gap) or a.kind or a.unit or ends[k][2] != 1.0:
            continue
        if b.kind in ("time", "year", "decade") or not (b.kind or b.unit or ends[k + 1][2] != 1.0):
            continue
        scale = ends[k + 1][2] if b.value >= a.value * ends[k + 1][2] else 1.0
        value = a.value * scale
        out[k] = Figure(value, a.tol * scale, b.kind, b.unit, a.raw, a.digits, False)
    return tuple(out)


def same_figure(a: Figure, b: Figure) -> bool:
    """Equal up to the rounding of the less precise of the two; a percentage only equals a percentage."""
    if (a.kind == "percent") != (b.kind == "percent"):
        return False
    if a.kind == "time" or b.kind == "time":
        return a.kind == b.kind and abs(a.value - b.value) < 1e-6
    return abs(a.value - b.value) <= max(a.tol, b.tol) + 1e-9 * max(1.0, abs(a.value))


def kin(a: Figure, b: Figure, aligned: bool = False) -> bool:
    """Figures of the same sort, so that a different value is a different claim: the same unit when
    both have one, else the same kind (percent, year, time, decade, money), else two plain numbers
    written with as many integer digits. Two figures standing in the same place of two aligned
    clauses (`aligned`) need only agree on units and on being percentages or not: "13C" against
    "130C" or 1999 against 19990 is a changed figure whatever the digit count."""
    if a.small or b.small:
        return False
    if a.unit and b.unit:
        return a.unit == b.unit
    if aligned:
        return (a.kind == "percent") == (b.kind == "percent") and (a.kind == "time") == (b.kind == "time")
    if a.kind or b.kind:
        kinds = {a.kind, b.kind}
        return a.kind == b.kind or kinds == {"year", "decade"}
    if a.unit or b.unit:
        return False
    return a.digits == b.digits and a.digits > 0


def figure_token(f: Figure) -> str:
    """The token a figure stands for in word lists: its value (and % for a percentage)."""
    if f.kind == "time":
        return f"#{f.raw}"
    if f.kind == "decade":
        return f"#{f.value - 4.5:.0f}s"
    return f"#{f.value:.6g}{'%' if f.kind == 'percent' else ''}"


def figure_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, token) of every figure, for replacing figures by their tokens in a word list."""
    out = []
    text = text[:MAX_TEXT_CHARS]
    pos = 0
    for f in figures(text):
        start = text.find(f.raw, pos)
        if start < 0:
            continue
        out.append((start, start + len(f.raw), figure_token(f)))
        pos = start + len(f.raw)
    return out


def conflicting_figures(statement: tuple[Figure, ...], source: tuple[Figure, ...], window: tuple[Figure, ...]) -> list[str]:
    """Figures the statement states where the matching passage states a different one: the
    statement's figure equals no figure anywhere in the source, and the window has figures of its
    sort (`kin`) none of which equals it. Returns "claim (source: ...)" strings."""
    out = []
    for f in statement:
        if f.small or any(same_figure(f, g) for g in source):
            continue
        kindred = [g for g in window if kin(f, g)]
        if kindred:
            out.append(f"{f.raw} (source: {', '.join(sorted({g.raw for g in kindred}))})")
    return out
