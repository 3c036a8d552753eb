"""Rewordings of injection phrases that the English patterns of `pipeline.injection.injection` would miss.

- Look-alike letters: `fold` maps, one character to one character, every character whose NFKC
  form is a single ASCII character (full-width `Ｉｇｎｏｒｅ`, mathematical bold, `：`) and the
  Cyrillic and Greek letters that look like Latin ones (`о`, `а`, `е`, `Ι`...). The text keeps its
  length, so offsets found in the folded text are offsets in the original.
- Other languages: French, German, Spanish and Italian forms of "ignore the previous
  instructions", "you are now a judge", "mark this claim as true" and "system prompt".
- Letters spread out (`i g n o r e  a l l  p r e v i o u s`, `i.g.n.o.r.e`): `spaced_runs` finds
  runs of single letters and `spaced_kind` matches the run with its separators removed.
- Base64: `encoded_candidates` decodes long base64 tokens that turn into readable text, so the
  caller can scan the decoded text with every pattern.

Everything here is a bounded number of linear passes (possessive quantifiers, capped token counts
and sizes). It is a warning for a reader, not a defence: see docs/judges/injection.md for what it
misses.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from functools import lru_cache

__all__ = ["FOREIGN_PATTERNS", "encoded_candidates", "fold", "spaced_kind", "spaced_runs"]

# Cyrillic and Greek letters drawn like Latin ones (NFKC keeps them as they are).
_CONFUSABLES = {
    "а": "a", "в": "b", "е": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t",
    "у": "y", "х": "x", "і": "i", "ї": "i", "ј": "j", "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w", "һ": "h",
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T",
    "У": "Y", "Х": "X", "І": "I", "Ј": "J", "Ѕ": "S", "Ԁ": "D", "Ԛ": "Q", "Ԝ": "W", "Һ": "H",
    "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u",
    "χ": "x", "γ": "y", "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M",
    "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "ı": "i", "ɩ": "i", "ɡ": "g", "ɑ": "a",
}
# Blocks holding characters whose NFKC form is one ASCII character (the table is built once).
_NFKC_BLOCKS = ((0x00A0, 0x0180), (0x02B0, 0x0370), (0x1D00, 0x1DC0), (0x2000, 0x2190), (0x2460, 0x2500),
                (0x3000, 0x3100), (0xFE10, 0xFE70), (0xFF00, 0xFFF0), (0x1D400, 0x1D800), (0x1F100, 0x1F200))


@lru_cache(maxsize=1)
def _fold_table() -> dict[int, str]:
    table: dict[int, str] = {}
    for low, high in _NFKC_BLOCKS:
        for code in range(low, high):
            folded = unicodedata.normalize("NFKC", chr(code))
            if len(folded) == 1 and folded.isascii() and folded.isprintable() and folded != chr(code):
                table[code] = folded
    table.update({ord(k): v for k, v in _CONFUSABLES.items()})
    return table


def fold(text: str) -> str:
    """`text` with look-alike characters replaced by the ASCII they imitate, one for one."""
    return text if text.isascii() else text.translate(_fold_table())


# --- other languages ----------------------------------------------------------------------------

_F = re.IGNORECASE | re.MULTILINE
_W = r"(?:[^\W\d_][\w'-]{0,30}+\s+)"  # one word and the space after it

FOREIGN_PATTERNS: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = (
    ("ignore_instructions", re.compile(  # French
        r"\b(?:ignore[zr]?|oublie[zr]?|néglige[zr]?)\s+(?:(?:toutes?|tous|les|des|vos|tes|ces|d'abord)\s+){0,3}"
        r"(?:instructions?|consignes?|directives?|règles?)\s+(?:précédentes?|antérieures?|ci-dessus|initiales?"
        r"|d'origine|du\s+système)\b", _F), ("ignor", "oubli", "néglig")),
    ("ignore_instructions", re.compile(
        r"\bne\s+(?:tiens|tenez)\s+(?:plus|pas)\s+compte\s+des\s+(?:instructions|consignes|directives)\b", _F),
     ("compte",)),
    ("ignore_instructions", re.compile(  # German
        r"\b(?:ignoriere|ignorieren\s+sie|vergiss|vergessen\s+sie|missachte|missachten\s+sie)\s+" + _W + r"{0,3}?"
        r"(?:vorherigen|vorigen|bisherigen|obigen|früheren|ursprünglichen|vorangegangenen|alten)\s+"
        r"(?:anweisungen|instruktionen|befehle|vorgaben|regeln|anordnungen)\b", _F), ("ignor", "vergiss", "vergessen", "missacht")),
    ("ignore_instructions", re.compile(  # Spanish
        r"\b(?:ignora|ignore|ignorar|olvida|olvide)\s+(?:(?:todas|todos|las|los|tus|sus)\s+){0,3}"
        r"(?:instrucciones|indicaciones|órdenes|reglas)\s+(?:anteriores|previas|iniciales)\b", _F), ("ignor", "olvid")),
    ("ignore_instructions", re.compile(  # Italian
        r"\b(?:ignora|ignorate|ignorare|dimentica|dimenticate)\s+(?:(?:tutte|tutti|le|gli|i)\s+){0,3}"
        r"(?:istruzioni|indicazioni|regole)\s+(?:precedenti|iniziali|originali)\b", _F), ("ignor", "dimentic")),
    ("role_assignment", re.compile(
        r"\b(?:tu\s+es|vous\s+êtes)\s+(?:maintenant|désormais|dorénavant)\s+(?:un|une|le|la)\s+" + _W + r"{0,2}?"
        r"(?:assistante?|ia|juge|évaluat(?:eur|rice)|correct(?:eur|rice)|modèle\s+de\s+langage|annotat(?:eur|rice))\b",
        _F), ("maintenant", "désormais", "dorénavant")),
    ("role_assignment", re.compile(
        r"\b(?:du\s+bist|sie\s+sind)\s+(?:jetzt|nun|ab\s+sofort|von\s+nun\s+an)\s+(?:ein|eine|der|die)\s+" + _W + r"{0,2}?"
        r"(?:assistent(?:in)?|ki|bewerter(?:in)?|prüfer(?:in)?|richter(?:in)?|gutachter(?:in)?|sprachmodell)\b",
        _F), ("jetzt", "nun", "sofort")),
    ("verdict_steering", re.compile(
        r"\bmarque[zr]?\s+(?:cette|cet|ce|la|le|chaque)\s+" + _W + r"{0,2}?comme\s+"
        r"(?:vraie?|correcte?|soutenue?|étayée?|fiable|exacte?|vérifiée?)\b", _F), ("comme",)),
    ("verdict_steering", re.compile(
        r"\b(?:markiere|markieren\s+sie|bewerte|bewerten\s+sie|stufe)\s+(?:diese[nrs]?|die|den|das|jede[nrs]?)\s+"
        + _W + r"{0,2}?als\s+(?:wahr|korrekt|richtig|belegt|gestützt|unterstützt|zutreffend)\b", _F), ("als",)),
    ("system_prompt", re.compile(r"\bsystem-?prompts?\b|\bprompt\s+(?:du\s+)?système\b", _F), ("prompt",)),
)

# --- letters spread out -------------------------------------------------------------------------

# Seven or more single letters, each followed by 1-5 separators (space, tab, dot, dash, underscore,
# asterisk, middle dot) and the next single letter. Possessive, so a failed start costs a few steps.
_SPACED_RE = re.compile(r"(?<![A-Za-z])[A-Za-z](?:[ \t._*\u00b7-]{1,5}+[A-Za-z](?![A-Za-z])){6,}+")
_SEPARATORS_RE = re.compile(r"[ \t._*\u00b7-]+")
# The listed phrases of pipeline/injection/injection.py with the gaps between words taken out, since a
# spread-out run has lost its word boundaries. Every listed phrase has a spaceless form here, so
# "d i s r e g a r d  t h e  a b o v e" flags like "disregard the above" does. Free-word slots
# are bounded ([a-z]{0,24}?) so a long run cannot make a pattern backtrack for long.
_SL_TARGETS = (
    r"(?:instructions?|prompts?|directions?|directives?|rules?|guidelines?|guidance|messages?"
    r"|context|commands?|orders?|constraints?|text|content)"
)
_SL_ROLES = (
    r"(?:assistant|ai|chatbot|languagemodel|llm|aimodel|gpt|judge|grader|evaluator|annotator"
    r"|rater|label+er|classifier|factchecker|verifier|reviewerbot)"
)
_SL_VERDICTS = (
    r"(?:fully|strongly|completely|highly)?(?:supported|supporting|true|correct|accurate|verified"
    r"|factual|relevant|reliable|trustworthy|credible|full|agree)"
)
_SPACELESS = (
    ("ignore_instructions", re.compile(
        r"(?:ignore|disregard|forget|override|bypass|discard)"
        r"(?:all|any|every|each|the|your|my|these|those|of){0,3}"
        r"(?:previous|prior|preceding|above|earlier|foregoing|former|original|initial|system"
        r"|existing|other)" + _SL_TARGETS)),
    ("ignore_instructions", re.compile(
        r"(?:ignore|disregard|forget)"
        r"(?:all|any|everything|anything|whatever|what|that|the|of|you|were|was|have|been"
        r"|told|said|written|stated|given){0,4}"
        r"(?:above|before|previously|earlier|sofar)")),
    ("ignore_instructions", re.compile(
        r"(?:new|updated|real|actual|revised|important)(?:system)?instructions?$")),
    ("role_assignment", re.compile(
        r"youare(?:now|nolonger|actually)?(?:a|an|the|my|our)[a-z]{0,24}?" + _SL_ROLES
        + r"|youarenow(?:in[a-z]{1,24}mode|dan|unrestricted|unfiltered|jailbroken|freefrom|freedfrom)"
        r"|(?:fromnowon|henceforth|fortherestofthisconversation)you(?:are|will|must|shall|should|can)"
        r"|youare(?:now|nolonger)"
        r"|(?:act|behave|respond|roleplay)as(?:ifyouwere)?(?:a|an|the)[a-z]{0,24}?" + _SL_ROLES)),
    ("as_an_ai", re.compile(
        r"asan?(?:ai|artificialintelligence|(?:large)?languagemodel|llm)"
        r"(?!research|compan|startup|expert|ethicist|engineer|scientist|lab|firm|developer"
        r"|practitioner|investor|product|tool|polic|enthusiast|professional|specialist|consultant"
        r"|writer|journalist|educator|teacher|vendor|provider|platform|technolog)")),
    ("verdict_steering", re.compile(
        r"(?:mark|label|rate|classify|score|grade|judge|treat|flag|tag|evaluate|count)"
        r"(?:this|the|that|these|each|every|all|any|my|our)[a-z]{0,24}?(?:as|tobe)" + _SL_VERDICTS
        + r"|thissource(?:fully|completely|entirely|strongly|definitively|conclusively|clearly"
        r"|unambiguously)(?:supports|confirms|verifies|proves|validates|substantiates|corroborates)"
        r"|(?:statements?|claims?|answers?|citations?)(?:is|are|shouldbe|mustbe)"
        r"(?:marked|label+ed|rated|considered|classified|scored|graded|judged)(?:as)?" + _SL_VERDICTS)),
    ("system_prompt", re.compile(r"systemprompt")),
    ("respond_with", re.compile(
        r"(?:please|(?:you|model|assistant|ai|judge)(?:must|should|shall|will|needto|areto|haveto)"
        r"(?:always|only)?)(?:respond|reply|answer|output|return)(?:only)?(?:with|using)")),
)
MAX_SPACED_RUNS = 200


def spaced_runs(text: str) -> list[tuple[int, int, str]]:
    """(start, end, letters lower-cased without separators) of each spread-out letter run."""
    out = []
    for m in _SPACED_RE.finditer(text):
        out.append((m.start(), m.end(), _SEPARATORS_RE.sub("", m.group()).lower()))
        if len(out) >= MAX_SPACED_RUNS:
            break
    return out


def spaced_kind(letters: str) -> str | None:
    """The injection kind the letters of a spread-out run spell, if any."""
    for kind, pattern in _SPACELESS:
        if pattern.search(letters):
            return kind
    return None


# --- base64 -------------------------------------------------------------------------------------

_B64_RE = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{24,}+={0,2}")
MAX_B64_TOKENS = 200
MAX_B64_CHARS = 8_000


def encoded_candidates(text: str) -> list[tuple[int, int, str]]:
    """(start, end, decoded text) of base64 tokens (standard or URL-safe) that decode to readable
    UTF-8 text; binary payloads (images in data: URLs) and identifiers are skipped. At most
    MAX_B64_TOKENS tokens are tried, each cut to MAX_B64_CHARS."""
    out = []
    tried = 0
    for m in _B64_RE.finditer(text):
        token = m.group()
        if not (any(c.isdigit() or c in "+/=" for c in token[:200]) or token[:200] != token[:200].lower()):
            continue  # all lower-case letters: a word or an identifier, not base64
        tried += 1
        if tried > MAX_B64_TOKENS:
            break
        body = token[:MAX_B64_CHARS].rstrip("=")
        body = body[: len(body) - len(body) % 4]
        try:
            raw = base64.b64decode(body.replace("-", "+").replace("_", "/"), validate=True)
            decoded = raw.decode("utf-8")
        except (binascii.Error, ValueError):
            continue
        if len(decoded) < 12 or sum(ch.isprintable() or ch in "\n\t" for ch in decoded) < 0.95 * len(decoded):
            continue
        if sum(ch.isalpha() or ch == " " for ch in decoded) < 0.7 * len(decoded):
            continue  # readable but not prose
        out.append((m.start(), m.end(), decoded))
    return out
