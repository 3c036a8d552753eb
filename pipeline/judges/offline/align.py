"""Contradiction checks of the offline support judge: the statement against the source clauses that
state the same thing.

Each clause of the statement is aligned with the run of one to three consecutive clauses, inside
one of the source's best-matching sentences, that shares the most of its words; the two are then
aligned word by word (a longest common subsequence of their compared words). Only a pair sharing at
least MIN_SHARED words, and at least half of the statement clause's words, is compared, so a "not"
or a "fell" elsewhere on the page changes nothing. The pair conflicts when:

- negation: between two shared words, one side has a negation cue and the other has none, and the
  negated side holds nothing else there, or one other word against at most one ("the drug did not
  reduce deaths" against "the drug reduced deaths", "found little link between coffee and" against
  "found that coffee doubles");
- direction: the words the two sides do not share state opposite directions of the same thing,
  never the same one ("cut" against "raised", "cheaper" against "more expensive"); a pair whose
  negation and direction both differ states the same thing twice flipped and is not a conflict;
- entity: when all the clause's other words match, a statement word and a source word standing in
  the same place, right beside the same shared word, are two different names ("Louis Pasteur
  discovered" against "Alexander Fleming discovered"), or two capitalised words opening their clauses
  of which one is a name ("Croatia won" against "France won");
- figure: in such a place the two sides hold figures of the same sort with different values;
- term (a candidate, settled by the caller): between two shared words the statement has exactly one
  word, found nowhere in the source, where the source has another word beside the same shared word
  ("the tracheal mite" against "the varroa mite", "metallic sodium builds" against "metallic lithium
  builds"). Most such pairs are rewordings ("a big house" / "a large house"), so the caller keeps
  only those whose two words are far apart in meaning (`offline_support.TERM_SWAP_MAX_COSINE`).

A figure the statement states that occurs nowhere in the source while the best window has a figure of
the same sort is a conflict too (`offline_numbers.conflicting_figures`, applied by the caller).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from pipeline.judges.offline.numbers import kin, same_figure
from pipeline.judges.offline.words import CUE_FORMS, NEGATION_TOKEN, Word, clauses, directions, negated, words

GAP_WORDS = 4  # words beside the first or last shared word that may stand in for a statement word
MIN_CLAUSE_WORDS = 2  # a shorter statement clause is joined to the next
MAX_RUN = 3  # source clauses a statement clause may span
MIN_SHARED = 3  # words a statement clause and a source clause share, in order, before they are compared
MIN_SHARE = 0.5  # ... and the share of the statement clause's words that is
SWAP_SHARE = 0.65  # a swapped name or figure: (nearly) all the clause's other words match
MAX_GAP = 6  # a longer stretch between shared words is another statement, not a changed word
WHOLE_STATEMENT_WORDS = 12  # a statement of at most this many words is also compared as one clause
MIN_TERM_CHARS = 3  # shorter words are not compared as swapped terms
SAME_STEM_CHARS = 4  # two words opening with this many same letters are variants, not a swap


@dataclass(frozen=True, slots=True)
class Conflict:
    kind: str  # "negation", "direction", "entity", "figure", or "term" (a candidate: see the module doc)
    detail: str
    pair: tuple[str, ...] = ()  # for "term": the statement's word and the source's, as written


@lru_cache(maxsize=50_000)
def clause_words(sentence: str) -> tuple[tuple[Word, ...], ...]:
    return tuple(words(c) for c in clauses(sentence))


@lru_cache(maxsize=50_000)
def _names(text: str) -> frozenset[str]:
    """The forms of a text's words written as names."""
    return frozenset(w.form for w in words(text) if w.name)


def _content(ws: Sequence[Word]) -> list[Word]:
    return [w for w in ws if w.form not in CUE_FORMS]


def statement_clauses(statement: str) -> list[tuple[Word, ...]]:
    """The statement's clauses; one of at most MIN_CLAUSE_WORDS content words is joined to the next."""
    out: list[tuple[Word, ...]] = []
    carry: tuple[Word, ...] = ()
    for ws in clause_words(statement):
        ws = carry + ws
        if len(_content(ws)) <= MIN_CLAUSE_WORDS:
            carry = ws
            continue
        out.append(ws)
        carry = ()
    if carry:
        if out:
            out[-1] = out[-1] + carry
        elif len(_content(carry)) >= MIN_CLAUSE_WORDS:
            out.append(carry)
    return out


@lru_cache(maxsize=50_000)
def _runs(sentence: str) -> tuple[tuple[frozenset[str], int, int, int], ...]:
    """Every run of up to MAX_RUN consecutive clauses of a sentence, in order: (its word forms, its
    length in words, first clause, last clause). A sentence is read against many statement clauses."""
    parts = clause_words(sentence)
    out = []
    for i in range(len(parts)):
        run: tuple[Word, ...] = ()
        for j in range(i, min(i + MAX_RUN, len(parts))):
            run = run + parts[j]
            out.append((frozenset(w.form for w in run), len(run), i, j))
    return tuple(out)


def best_run(clause: tuple[Word, ...], sentences: Sequence[str]) -> tuple[int, tuple[Word, ...], tuple[Word, ...]]:
    """The run of up to MAX_RUN consecutive clauses of one sentence sharing the most content words
    with `clause` (the shortest on ties), how many it shares, and the run with one more clause of
    its sentence on each side (where a word standing in for one of the statement's may sit)."""
    want = {w.form for w in _content(clause)}
    best_shared, best_len, at = 0, 0, ("", 0, 0)
    for sentence in sentences:
        for forms, n, i, j in _runs(sentence):
            shared = len(want & forms)
            if shared > best_shared or (shared == best_shared and shared and -n > best_len):
                best_shared, best_len, at = shared, -n, (sentence, i, j)
    if not best_shared:
        return 0, (), ()
    parts = clause_words(at[0])
    i, j = at[1], at[2]
    return best_shared, sum(parts[i : j + 1], ()), sum(parts[max(0, i - 1) : j + 2], ())


def _lcs_anchors(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence of two short word lists."""
    n, m = len(a), len(b)
    if not n or not m:
        return []
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, nxt = table[i], table[i + 1]
        for j in range(m - 1, -1, -1):
            row[j] = nxt[j + 1] + 1 if a[i] == b[j] else max(nxt[j], row[j + 1])
    out, i, j = [], 0, 0
    while i < n and j < m:
        if a[i] == b[j]:
            out.append((i, j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return out


Gap = tuple[list[Word], list[Word], bool]


def _gaps(a: Sequence[Word], b: Sequence[Word]) -> tuple[int, list[Gap]]:
    """How many content words two clauses share in order, and where they differ: (statement words,
    source words, inside) for each stretch between shared words; the stretches before the first and
    after the last shared word are limited to GAP_WORDS words beside it and are not `inside`."""
    anchors = _lcs_anchors([w.form for w in a], [w.form for w in b])
    if not anchors:
        return 0, []
    out: list[Gap] = [(list(a[max(0, anchors[0][0] - GAP_WORDS) : anchors[0][0]]),
                       list(b[max(0, anchors[0][1] - GAP_WORDS) : anchors[0][1]]), False)]
    for (i0, j0), (i1, j1) in zip(anchors, anchors[1:]):
        out.append((list(a[i0 + 1 : i1]), list(b[j0 + 1 : j1]), True))
    i_last, j_last = anchors[-1]
    out.append((list(a[i_last + 1 : i_last + 1 + GAP_WORDS]), list(b[j_last + 1 : j_last + 1 + GAP_WORDS]), False))
    shared = sum(1 for i, _ in anchors if a[i].form not in CUE_FORMS)
    return shared, out


def _n_words(ws: Sequence[Word]) -> int:
    return sum(1 for w in ws if w.form not in CUE_FORMS)


def _is_name(w: Word, names: set[str]) -> bool:
    return w.name or w.form in names


def _swap(x: Word, y: Word, first: bool, gap_has_name: bool, stmt_forms: set[str], names: set[str]) -> Conflict | None:
    """A statement word and a source word standing in the same place that state different things
    (see the module doc)."""
    if x.figure is not None and y.figure is not None:
        if kin(x.figure, y.figure, aligned=True) and not same_figure(x.figure, y.figure):
            return Conflict("figure", f"{x.figure.raw} where the source says {y.figure.raw}")
        return None
    if x.figure is not None or y.figure is not None or not (x.capital and y.capital) or y.form in stmt_forms:
        return None
    if (_is_name(x, names) and _is_name(y, names)) or (
            first and (_is_name(x, names) or _is_name(y, names) or gap_has_name)):
        return Conflict("entity", f"{x.form} where the source names {y.form}")
    return None


def _polarity_and_direction(gaps: list[Gap]) -> Conflict | None:
    negation = direction = None
    for gap_stmt, gap_src, inside in gaps:
        # a "not" after the last shared word belongs to another statement, and one before the first
        # counts only when it is all that stands there ("It is not important" / "It is important");
        # between shared words the negated side holds the cue alone ("did not reduce"), or the cue and
        # one word against at most one word ("found little link" / "found that"): more words say
        # something else
        if not inside:
            if gap_stmt is gaps[0][0] and negated(gap_stmt) != negated(gap_src):
                cued = gap_stmt if negated(gap_stmt) else gap_src
                if [w.form for w in cued] == [NEGATION_TOKEN]:
                    negation = Conflict("negation", "negated in one text only")
            continue
        if negated(gap_stmt) != negated(gap_src):
            plain, cued = (gap_src, gap_stmt) if negated(gap_stmt) else (gap_stmt, gap_src)
            if _n_words(cued) == 0 or (_n_words(cued) == 1 and _n_words(plain) <= 1):
                negation = Conflict("negation", "negated in one text only")
    # the directions stated by the words the two sides do not share, inside the aligned stretch
    ours = directions([w for g in gaps for w in g[0]])
    theirs = directions([w for g in gaps if len(g[1]) <= MAX_GAP for w in g[1]])
    opposed = sorted(d for d, sign in ours if (d, -sign) in theirs and (d, sign) not in theirs)
    if opposed:
        direction = Conflict("direction", f"opposite {opposed[0]}")
    if negation and direction:  # both flipped: the same statement said the other way round
        return None
    return negation or direction


def _term_candidate(x: Word, y: Word, stmt_side: list[Word], source_forms: frozenset[str], stmt_forms: set[str]) -> Conflict | None:
    """A lower-case word standing in for another between two shared words (module doc: term)."""
    if len(stmt_side) != 1 or x.figure is not None or y.figure is not None or x.form in source_forms:
        return None
    if y.form in stmt_forms or x.form in CUE_FORMS or y.form in CUE_FORMS or x.form[:1] in "^#" or y.form[:1] in "^#":
        return None
    if min(len(x.text), len(y.text)) < MIN_TERM_CHARS or x.form[:SAME_STEM_CHARS] == y.form[:SAME_STEM_CHARS]:
        return None
    return Conflict("term", f"{x.text} where the source says {y.text}", (x.text, y.text))


def _swapped(gaps: list[Gap], content: list[Word], wide: Sequence[Word], want: set[str], names: set[str],
             source_forms: frozenset[str]) -> Conflict | None:
    first_stmt = content[0] if content else None
    wide_content = _content(wide)
    first_src = wide_content[0] if wide_content else None
    last = len(gaps) - 1
    candidate: Conflict | None = None
    for k, (gap_stmt, gap_src, inside) in enumerate(gaps):
        stmt_side = _content(gap_stmt)
        src_side = _content(gap_src)
        if not inside and len(stmt_side) > 2:
            continue  # many statement words before the first or after the last shared one: not a swap
        gap_has_name = any(_is_name(w, names) for w in src_side)
        # the words right beside the same shared word: before the first, after the last, and
        # both ends of a stretch between two
        pairs = []
        if k != last:
            pairs.append((stmt_side[-1:], src_side[-1:]))
        if k != 0:
            pairs.append((stmt_side[:1], src_side[:1]))
        for xs, ys in pairs:
            for x in xs:
                for y in ys:
                    # before the first shared word both sides open their clauses, so the statement's
                    # opening word against the source word beside the shared one is an opening pair
                    # too ("Michelangelo painted" / "Leonardo da Vinci painted")
                    opening = x is first_stmt and (y is first_src or (k == 0 and not inside))
                    found = _swap(x, y, opening, gap_has_name, want, names)
                    if found is not None:
                        return found
                    if candidate is None and inside and not (x.capital and y.capital):
                        candidate = _term_candidate(x, y, stmt_side, source_forms, want)
    return candidate  # a definite swap anywhere wins over a candidate


def clause_conflicts(statement: str, sentences: Sequence[str], source_forms: frozenset[str] | None = None) -> list[Conflict]:
    """Conflicts between the statement's clauses and the source clauses aligned with them (module doc).
    `source_forms`: every word form of the whole source (a swapped term must occur nowhere in it);
    by default those of `sentences`."""
    if source_forms is None:
        source_forms = frozenset(w.form for sentence in sentences for w in words(sentence))
    out: list[Conflict] = []
    # a word written as a name anywhere in either text is a name where it opens a sentence too
    names = set(_names(statement))
    for sentence in sentences:
        names.update(_names(sentence))
    parts = statement_clauses(statement)
    whole = tuple(w for ws in clause_words(statement) for w in ws)
    if len(parts) > 1 and len(_content(whole)) <= WHOLE_STATEMENT_WORDS:
        # a short statement is also read as one clause: cut at its commas, an appositive leaves
        # each piece too few shared words to be compared ("The tallest building, the Burj
        # Khalifa, is in Abu Dhabi" against "..., the Burj Khalifa, is in Dubai")
        parts = [*parts, whole]
    for clause in parts:
        content = _content(clause)
        want = {w.form for w in content}
        _, _, wide = best_run(clause, sentences)
        shared, gaps = _gaps(clause, wide)
        if shared < MIN_SHARED or shared < MIN_SHARE * len(want):
            continue
        found = _polarity_and_direction(gaps)
        if found is not None:
            out.append(found)
        if shared >= SWAP_SHARE * (len(want) - 1):
            swapped = _swapped(gaps, content, wide, want, names, source_forms)
            if swapped is not None:
                out.append(swapped)
    return list(dict.fromkeys(out))  # the whole statement may find what one of its clauses found
