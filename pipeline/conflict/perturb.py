"""Paragraph perturbations for the convincingness probe, written for this project.

Each perturbation edits one paragraph's text (the question is given for the relevance prefix).
They follow the kinds of change in Wan et al.'s counterfactual study, but the wording is our own
and the tone rewrites are deterministic word substitutions, not a model's rewrite:

- `control`: appends an irrelevant sentence. Every other perturbation is compared with it, so a
  change that merely lengthens the text is not mistaken for persuasion.
- `relevance_prefix`: opens the paragraph with a line saying it is about the question.
- `references`: appends a short, generic reference list (the form of citations, no new content).
- `neutral`: removes emphatic words and exclamation marks and softens absolute verbs.
- `confident`: turns hedges into certainties and ends with a sentence asserting the evidence is
  settled.

Only the text changes; the paragraph's stance stays. Substitutions touch lower-case words only
(so "May" the month is left alone) and never touch negations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

CONTROL_SENTENCE = "We hope you found this page easy to read."
RELEVANCE_PREFIX = "This passage is about the question: {question}"
REFERENCES_BLOCK = (
    "References\n"
    "1. A peer-reviewed study published in a scientific journal (2021).\n"
    "2. A systematic review of the published research (2022).\n"
    "3. A report by a national research institute (2023)."
)
CONFIDENT_SENTENCE = "The evidence on this point is settled."

_EMPHATIC = ("without any doubt", "without doubt", "it is clear that", "of course", "clearly", "certainly", "undoubtedly",
             "obviously", "definitely", "absolutely", "undeniably", "unquestionably", "extremely", "truly")
_SOFTER = {"proves": "indicates", "proved": "indicated", "proven": "reported", "always": "usually", "must": "should",
           "guarantees": "supports", "guaranteed": "expected"}
_SURER = {"may": "will", "might": "will", "could": "will", "possibly": "certainly", "perhaps": "certainly",
          "probably": "certainly", "suggests": "shows", "suggest": "show", "suggested": "showed",
          "appears to": "is shown to", "seems to": "is shown to", "some evidence": "strong evidence",
          "may be": "is", "might be": "is", "could be": "is"}


def _sub_words(text: str, table: dict[str, str]) -> str:
    """Replace phrases, longest first (so "may be" wins over "may"): in lower case anywhere, and
    capitalised only at the start of a sentence ("May it..." yes, "in May" no)."""
    for phrase in sorted(table, key=len, reverse=True):
        new = table[phrase]
        capital = new[0].upper() + new[1:]
        text = re.sub(r"(^|[.!?]\s+)" + re.escape(phrase[0].upper() + phrase[1:]) + r"(?![A-Za-z])",
                      lambda m: m.group(1) + capital, text)  # noqa: B023 - used at once, inside this iteration
        text = re.sub(r"(?<![A-Za-z])" + re.escape(phrase) + r"(?![A-Za-z])", new, text)
    return text


def _tidy(text: str) -> str:
    text = re.sub(r"[ \t]{2,}", " ", text)
    text = re.sub(r" +([,.;:!?])", r"\1", text)
    text = re.sub(r"(^|[.!?]\s+),\s*", r"\1", text)  # a sentence left starting with a comma
    return re.sub(r"(^|[.!?]\s+)([a-z])", lambda m: m.group(1) + m.group(2).upper(), text)


def control(text: str, question: str) -> str:
    return f"{text.rstrip()} {CONTROL_SENTENCE}"


def relevance_prefix(text: str, question: str) -> str:
    return f"{RELEVANCE_PREFIX.format(question=question.strip())}\n{text.lstrip()}"


def references(text: str, question: str) -> str:
    return f"{text.rstrip()}\n\n{REFERENCES_BLOCK}"


def neutral(text: str, question: str) -> str:
    out = re.sub(r"\b([A-Z]{4,})\b", lambda m: m.group(1).lower(), text)  # SHOUTING
    for phrase in _EMPHATIC:
        out = re.sub(r"(?<![A-Za-z])" + re.escape(phrase) + r"(?![A-Za-z]),?\s*", "", out, flags=re.I)
    out = _sub_words(out, _SOFTER)
    out = re.sub(r"!+", ".", out)
    return _tidy(out)


def confident(text: str, question: str) -> str:
    return f"{_sub_words(text, _SURER).rstrip()} {CONFIDENT_SENTENCE}"


@dataclass(frozen=True)
class Perturbation:
    name: str
    kind: str  # "control" | "relevance" | "style"
    description: str
    apply: Callable[[str, str], str]


PERTURBATIONS: dict[str, Perturbation] = {
    p.name: p
    for p in (
        Perturbation("control", "control", f"appends an irrelevant sentence ({CONTROL_SENTENCE!r})", control),
        Perturbation("relevance_prefix", "relevance", "opens with a line saying the paragraph is about the question",
                     relevance_prefix),
        Perturbation("references", "style", "appends a generic list of three references", references),
        Perturbation("neutral", "style", "removes emphatic words and exclamation marks, softens absolute verbs", neutral),
        Perturbation("confident", "style", "turns hedges into certainties and asserts the evidence is settled", confident),
    )
}
CONTROL = "control"
ORIGINAL = "original"  # the unperturbed variant (not a perturbation)


def parse_perturbations(spec: str | None) -> list[str]:
    """Names from a comma list ("all" for every one); the control is added whenever any is asked.
    Raises ValueError naming the unknown ones."""
    if not spec:
        return []
    names = list(PERTURBATIONS) if spec.strip() == "all" else [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in PERTURBATIONS]
    if unknown:
        raise ValueError(f"unknown perturbation {', '.join(unknown)}; choose from {', '.join(PERTURBATIONS)} or all")
    return [CONTROL] + [n for n in dict.fromkeys(names) if n != CONTROL]
