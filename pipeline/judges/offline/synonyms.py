"""Words that mean the same, and words that name a kind of something: a table made from WordNet.

A faithful rewording trades words for their synonyms ("bought" / "purchased", "physician" /
"doctor"), for another part of speech of the same idea ("decided" / "decision"), or for a more
general word ("the dog" / "the animal"). Word-form alignment misses all three, so the support judge
read a paraphrase as a statement half of whose words the source never states.

The table (`synonyms.json.gz`, beside this file) is made once from WordNet 3.0 by

    python -m pipeline.judges.offline.synonyms --wordnet /usr/share/wordnet   # Debian's wordnet-base

and ships in the package, so the judge needs no download and gives the same labels everywhere. Each
word of at least MIN_ZIPF (wordfreq) keeps the synsets of its MAX_SENSES most frequent senses per part
of speech and those linked to them as derived forms ("+" pointers), as small integers (`same`), and
the hypernyms one or two levels above those senses (`up`): a statement word whose meaning lies above a
source word's ("animal" against "dog") is a generalisation the source entails. Senses beyond the
first few are rare readings that make almost any two common words look alike ("run" has 41 verb
senses), so they are left out.

WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved. Used under the WordNet 3.0
licence (permission to use, copy, modify and distribute with this notice; see LICENSE-WordNet in
this folder). THE DATABASE IS PROVIDED "AS IS" WITHOUT WARRANTY.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Iterable

TABLE_PATH = Path(__file__).with_name("synonyms.json.gz")
TABLE_VERSION = "wn30-syn-v2"
MAX_SENSES = 3  # per part of speech, most frequent first (WordNet's index order)
MIN_ZIPF = 2.0  # words rarer than this (about one in 100 million) are left out of the table
HYPERNYM_LEVELS = 2
POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
_WORD_RE = re.compile(r"^[a-z][a-z'-]*[a-z]$")
# phrases of two or three common words ("high_blood_pressure", "heart_attack"), looked up as word
# sequences: a rewording often trades one for a single word ("hypertension")
_PHRASE_RE = re.compile(r"^[a-z]+(?:_[a-z]+){1,2}$")
MIN_PHRASE_WORD_ZIPF = 3.0


# --------------------------------------------------------------------------------------------
# building the table (needs WordNet's dict files; run once, output shipped)
# --------------------------------------------------------------------------------------------


def _read_data(folder: Path, pos: str) -> dict[int, tuple[list[str], list[tuple[str, int]]]]:
    """synset offset -> (its words, its pointers (symbol, target key)) for one part of speech;
    a target key is offset * 4 + part-of-speech number, unique across the four files."""
    pos_no = {"n": 0, "v": 1, "a": 2, "s": 2, "r": 3}
    out: dict[int, tuple[list[str], list[tuple[str, int]]]] = {}
    for line in (folder / f"data.{POS_FILES[pos]}").read_text(encoding="latin-1").splitlines():
        if not line or line.startswith(" "):
            continue
        fields = line.split(" | ")[0].split()
        offset, n_words = int(fields[0]), int(fields[3], 16)
        words = [fields[4 + 2 * i].lower() for i in range(n_words)]
        k = 4 + 2 * n_words
        n_ptr = int(fields[k])
        ptrs = []
        for i in range(n_ptr):
            sym, target, tpos = fields[k + 1 + 4 * i], int(fields[k + 2 + 4 * i]), fields[k + 3 + 4 * i]
            ptrs.append((sym, target * 4 + pos_no[tpos]))
        out[offset * 4 + pos_no[pos]] = ([re.sub(r"\(.*\)$", "", w) for w in words], ptrs)
    return out


def build_table(folder: Path) -> dict[str, object]:
    """The table as JSON-ready data: {"version", "same": {word: [ids]}, "up": {word: [ids]}}."""
    from wordfreq import zipf_frequency

    synsets: dict[int, tuple[list[str], list[tuple[str, int]]]] = {}
    for pos in POS_FILES:
        synsets.update(_read_data(folder, pos))
    senses: dict[str, list[int]] = {}
    pos_no = {"n": 0, "v": 1, "a": 2, "r": 3}
    for pos, name in POS_FILES.items():
        for line in (folder / f"index.{name}").read_text(encoding="latin-1").splitlines():
            if not line or line.startswith(" "):
                continue
            f = line.split()
            word = f[0]
            if _PHRASE_RE.match(word):
                if any(zipf_frequency(part, "en") < MIN_PHRASE_WORD_ZIPF for part in word.split("_")):
                    continue
            elif not _WORD_RE.match(word) or zipf_frequency(word, "en") < MIN_ZIPF:
                continue
            n_senses = int(f[2])
            offsets = [int(x) * 4 + pos_no[pos] for x in f[len(f) - n_senses:]][:MAX_SENSES]
            senses.setdefault(word, []).extend(offsets)
    ids: dict[int, int] = {}

    def small(key: int) -> int:
        return ids.setdefault(key, len(ids))

    same: dict[str, list[int]] = {}
    up: dict[str, list[int]] = {}
    for word, keys in sorted(senses.items()):
        s: set[int] = set()
        u: set[int] = set()
        for key in keys:
            s.add(small(key))
            _, ptrs = synsets.get(key, ([], []))
            s.update(small(t) for sym, t in ptrs if sym in ("+", "&", "\\", "<"))  # derived, similar, pertainym, participle
            frontier = [t for sym, t in ptrs if sym in ("@", "@i")]
            for _ in range(HYPERNYM_LEVELS):
                u.update(small(t) for t in frontier)
                frontier = [t2 for t in frontier for sym, t2 in synsets.get(t, ([], []))[1] if sym in ("@", "@i")]
        same[word] = sorted(s)
        up[word] = sorted(u - s)
    # irregular forms ("bought" -> "buy", "mice" -> "mouse") from WordNet's exception lists
    irregular: dict[str, list[str]] = {}
    for name in ("noun", "verb", "adj"):
        for line in (folder / f"{name}.exc").read_text(encoding="latin-1").splitlines():
            f = line.split()
            if len(f) >= 2 and _WORD_RE.match(f[0]):
                irregular.setdefault(f[0], []).extend(b for b in f[1:] if b in same and b not in irregular.get(f[0], []))
    return {"version": TABLE_VERSION, "max_senses": MAX_SENSES, "min_zipf": MIN_ZIPF, "same": same,
            "up": {w: v for w, v in up.items() if v}, "irregular": {w: v for w, v in sorted(irregular.items()) if v}}


def write_table(folder: Path, out: Path = TABLE_PATH) -> Path:
    data = build_table(folder)
    raw = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    out.write_bytes(gzip.compress(raw, compresslevel=9, mtime=0))  # mtime 0: the same bytes every build
    return out


# --------------------------------------------------------------------------------------------
# using it
# --------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def table() -> tuple[dict[str, frozenset[int]], dict[str, frozenset[int]], dict[str, tuple[str, ...]]]:
    """(word -> meaning ids, word -> ids of what it is a kind of, irregular form -> dictionary
    forms); empty when the file is missing."""
    try:
        data = json.loads(gzip.decompress(TABLE_PATH.read_bytes()))
    except (OSError, ValueError):
        return {}, {}, {}
    return ({w: frozenset(v) for w, v in data["same"].items()}, {w: frozenset(v) for w, v in data["up"].items()},
            {w: tuple(v) for w, v in data.get("irregular", {}).items()})


def available() -> bool:
    return bool(table()[0])


_SUFFIXES = (("ies", "y"), ("ves", "f"), ("sses", "ss"), ("ses", "s"), ("xes", "x"), ("ches", "ch"), ("shes", "sh"),
             ("s", ""), ("ied", "y"), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", ""), ("er", ""), ("est", ""),
             ("er", "e"), ("est", "e"), ("ly", ""))


@lru_cache(maxsize=50_000)
def lemmas(word: str) -> tuple[str, ...]:
    """The word and its dictionary forms found in the table ("purchased" -> "purchase"), by
    WordNet-style suffix rules (a doubled consonant undone: "stopped" -> "stop")."""
    same, _, irregular = table()
    w = word.lower()
    out = [w] if w in same else []
    out += [b for b in irregular.get(w, ()) if b not in out]
    for suffix, repl in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 2:
            base = w[: len(w) - len(suffix)] + repl
            if base in same and base not in out:
                out.append(base)
            if repl == "" and len(base) > 2 and base[-1] == base[-2] and base[:-1] in same and base[:-1] not in out:
                out.append(base[:-1])
    return tuple(out)


@lru_cache(maxsize=50_000)
def meanings(word: str) -> frozenset[int]:
    """Meaning ids of a word through its dictionary forms (empty when unknown)."""
    same = table()[0]
    return frozenset().union(*(same[lemma] for lemma in lemmas(word))) if lemmas(word) else frozenset()


@lru_cache(maxsize=50_000)
def kinds_above(word: str) -> frozenset[int]:
    """Ids of the meanings a word is a kind of (one or two levels up)."""
    up = table()[1]
    return frozenset().union(*(up.get(lemma, frozenset()) for lemma in lemmas(word))) if lemmas(word) else frozenset()


@lru_cache(maxsize=100_000)
def phrases_in(tokens: tuple[str, ...]) -> tuple[tuple[int, int, str], ...]:
    """(start, end, phrase) of every two- or three-word phrase of the table in a token sequence
    (remembered: a statement is looked up once per source it is judged against)."""
    same = table()[0]
    out = []
    for n in (3, 2):
        for i in range(len(tokens) - n + 1):
            key = "_".join(tokens[i : i + n])
            if key in same:
                out.append((i, i + n, key))
    return tuple(out)


def source_meanings(words: Iterable[str]) -> tuple[frozenset[int], frozenset[int]]:
    """What a source's words mean, and what they are kinds of: a statement word matches the source
    by meaning when its ids meet the first, and is a generalisation when they meet the second."""
    ws = list(words)
    return frozenset().union(*map(meanings, ws)), frozenset().union(*map(kinds_above, ws))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Build the synonym table the offline judge ships (from WordNet 3.0's dict files).")
    ap.add_argument("--wordnet", default="/usr/share/wordnet", help="folder of WordNet's data.* and index.* files")
    ap.add_argument("--out", default=str(TABLE_PATH))
    args = ap.parse_args(argv)
    path = write_table(Path(args.wordnet), Path(args.out))
    table.cache_clear()
    same, up, _ = table() if Path(args.out) == TABLE_PATH else ({}, {}, {})
    print(f"wrote {path} ({path.stat().st_size:,} bytes; {len(same):,} words, {len(up):,} with kinds above)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
