"""Planning the chat requests of the OpenAI judge: which prompt, which statements, which passages.

Support is batched: all statements of an answer against one source go in one call (more only
beyond `max_statements_per_call`). Long sources are cut into passages and only the passages that
best match the statements are sent, so a call holds at most `max_passage_chars` characters of one
document. Short sources share a call (the `support_pack` prompt): sources whose selected passages
together fit `max_pack_chars` (at most `max_sources_per_call` of them) go in one request as S1,
S2, ...; a source alone in its pack gets exactly the single-source request. Documents (and the
answer, for confidence) are fenced as untrusted data; statements and the query are JSON-encoded.

The planner renders the messages without sending anything, so the judge and the dry-run cost
estimate (`pipeline.judges.backends.cost`) send or count exactly the same prompts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Sequence

from pipeline.judges.backends.fencing import fence
from pipeline.judges.backends.passages import Passage, select_passages, split_passages
from pipeline.prompts import load_prompt, render_prompt, split_prompt
from pipeline.records import Answer, Source, Statement

__all__ = [
    "PROMPT_NAMES",
    "PROMPT_FILES",
    "RequestSettings",
    "JudgeRequest",
    "prompt_parts",
    "plan_labels",
    "plan_confidence",
    "plan_support",
    "plan_support_many",
    "plan_support_set",
]

PROMPT_NAMES = ("relevance", "stance", "confidence", "support", "source_stance")  # the label kinds an LLM judge gives
# support_pack: several short sources in one call; support_set: several sources taken together
PROMPT_FILES = (*PROMPT_NAMES, "support_pack", "support_set")


@dataclass(frozen=True)
class RequestSettings:
    """How calls are cut: character budgets, statements per call, pairwise or batched, packing."""

    max_passage_chars: int = 6000
    passage_chars: int = 1000
    max_statements_per_call: int = 20
    max_label_statements: int = 80
    max_answer_chars: int = 12000
    pairwise: bool = False
    # packing: sources whose selected passages together fit max_pack_chars share one call
    max_sources_per_call: int = 8
    max_pack_chars: int = 8000


@dataclass
class JudgeRequest:
    """One planned chat call: the rendered messages and what they cover."""

    kind: str
    prompt_id: str
    messages: list[dict[str, str]]
    positions: list[int]  # statement positions (into the statements argument) covered by this call
    passages: list[Passage] = field(default_factory=list)
    # a packed support call: (source, its selected passages) for S1, S2, ... in this order
    pack: list[tuple[Source, list[Passage]]] = field(default_factory=list)
    source: Source | None = None  # the one source of a single-source support call


def prompt_parts(kind: str) -> tuple[str, str, str]:
    """(system text, user template, prompt id such as "support_v1") of a prompt file."""
    text, version = load_prompt(kind)
    system, user = split_prompt(text)
    return system, user, f"{kind}_{version}"


def _statements_json(statements: Sequence[Statement], positions: Sequence[int]) -> str:
    rows = [json.dumps({"id": p + 1, "text": statements[p].text}, ensure_ascii=False) for p in positions]
    return "[\n" + ",\n".join(rows) + "\n]"


def _chunks(n: int, size: int) -> list[list[int]]:
    size = max(1, size)
    return [list(range(i, min(n, i + size))) for i in range(0, n, size)]


def plan_labels(kind: str, settings: RequestSettings, answer: Answer, statements: Sequence[Statement]) -> list[JudgeRequest]:
    system, user, prompt_id = prompt_parts(kind)
    requests = []
    for positions in _chunks(len(statements), settings.max_label_statements):
        content = render_prompt(
            user,
            query=json.dumps(answer.query, ensure_ascii=False),
            statements_json=_statements_json(statements, positions),
        )
        requests.append(JudgeRequest(kind, prompt_id, [{"role": "system", "content": system}, {"role": "user", "content": content}], positions))
    return requests


def plan_confidence(settings: RequestSettings, answer: Answer) -> JudgeRequest:
    system, user, prompt_id = prompt_parts("confidence")
    text = answer.text
    if len(text) > settings.max_answer_chars:
        text = text[: settings.max_answer_chars] + "\n[answer truncated]"
    content = render_prompt(user, query=json.dumps(answer.query, ensure_ascii=False), answer=fence(text))
    return JudgeRequest("confidence", prompt_id, [{"role": "system", "content": system}, {"role": "user", "content": content}], [])


def _document_block(passages: Sequence[Passage], total: int) -> str:
    body = "\n\n".join(f"[{p.pid}] {p.text}" for p in passages)
    note = (
        f"({len(passages)} of {total} passages of a longer document, chosen as most related to the statements)\n"
        if len(passages) < total
        else ""
    )
    return note + fence(body)


def plan_support(settings: RequestSettings, answer: Answer, statements: Sequence[Statement], source: Source) -> list[JudgeRequest]:
    system, user, prompt_id = prompt_parts("support")
    if settings.pairwise:
        groups = [[i] for i in range(len(statements))]
    else:
        groups = _chunks(len(statements), settings.max_statements_per_call)
    requests = []
    for positions in groups:
        if settings.pairwise:
            passages = split_passages(source.text, settings.passage_chars)
            total = len(passages)
        else:
            passages, total = select_passages(
                source.text, [statements[p].text for p in positions], settings.max_passage_chars, settings.passage_chars
            )
        content = render_prompt(
            user,
            query=json.dumps(answer.query, ensure_ascii=False),
            statements_json=_statements_json(statements, positions),
            document=_document_block(passages, total),
        )
        requests.append(
            JudgeRequest("support", prompt_id, [{"role": "system", "content": system}, {"role": "user", "content": content}], positions,
                         passages, source=source)
        )
    return requests


def _pack_sources(settings: RequestSettings, selections: Sequence[tuple[Source, list[Passage], int]]) -> list[list[int]]:
    """Group sources (in order) into packs: a pack holds at most `max_sources_per_call` sources
    whose selected passages total at most `max_pack_chars`; a source too big for that is alone."""
    packs: list[list[int]] = []
    current: list[int] = []
    used = 0
    for k, (_, passages, _) in enumerate(selections):
        size = sum(len(p.text) for p in passages)
        if current and (len(current) >= settings.max_sources_per_call or used + size > settings.max_pack_chars):
            packs.append(current)
            current, used = [], 0
        current.append(k)
        used += size
    if current:
        packs.append(current)
    return packs


def plan_support_many(settings: RequestSettings, answer: Answer, statements: Sequence[Statement],
                      sources: Sequence[Source]) -> list[JudgeRequest]:
    """Support calls for all statements against several sources. Short sources share a call (the
    support_pack prompt); a source alone in its pack gets exactly the single-source call."""
    sources = [s for s in sources if (s.text or "").strip()]
    if settings.pairwise or settings.max_sources_per_call <= 1 or len(sources) <= 1:
        return [r for s in sources for r in plan_support(settings, answer, statements, s)]
    system, user, prompt_id = prompt_parts("support_pack")
    requests: list[JudgeRequest] = []
    for positions in _chunks(len(statements), settings.max_statements_per_call):
        texts = [statements[p].text for p in positions]
        # the per-source budget stays max_passage_chars, as in a single-source call
        selections = [(s, *select_passages(s.text, texts, settings.max_passage_chars, settings.passage_chars)) for s in sources]
        for pack in _pack_sources(settings, selections):
            if len(pack) == 1:
                source = selections[pack[0]][0]
                requests.extend(r for r in plan_support(settings, answer, statements, source)
                                if r.positions == positions)
                continue
            blocks = []
            for k, i in enumerate(pack, start=1):
                source, passages, total = selections[i]
                blocks.append(f"Source S{k} (listed as [{source.index}] in the answer):\n{_document_block(passages, total)}")
            content = render_prompt(
                user,
                query=json.dumps(answer.query, ensure_ascii=False),
                statements_json=_statements_json(statements, positions),
                documents="\n\n".join(blocks),
                source_ids=", ".join(f"S{k}" for k in range(1, len(pack) + 1)),
            )
            requests.append(JudgeRequest("support", prompt_id, [{"role": "system", "content": system}, {"role": "user", "content": content}],
                                         list(positions), pack=[(selections[i][0], selections[i][1]) for i in pack]))
    return requests


def plan_support_set(settings: RequestSettings, answer: Answer, statements: Sequence[Statement],
                     sources: Sequence[Source]) -> list[JudgeRequest]:
    """Calls asking whether several sources TAKEN TOGETHER back each statement up (the
    support_set prompt): the statements that cite exactly this set of sources, with the best
    passages of every source of the set as D1, D2, ... Each source keeps an equal share of
    `max_passage_chars` (at least one passage)."""
    sources = [s for s in sources if (s.text or "").strip()]
    if not sources or not statements:
        return []
    system, user, prompt_id = prompt_parts("support_set")
    budget = max(settings.passage_chars, settings.max_passage_chars // len(sources))
    requests = []
    for positions in _chunks(len(statements), settings.max_statements_per_call):
        texts = [statements[p].text for p in positions]
        blocks = []
        for k, source in enumerate(sources, start=1):
            passages, total = select_passages(source.text, texts, budget, settings.passage_chars)
            blocks.append(f"Document D{k} (listed as [{source.index}] in the answer):\n{_document_block(passages, total)}")
        content = render_prompt(
            user,
            query=json.dumps(answer.query, ensure_ascii=False),
            statements_json=_statements_json(statements, positions),
            documents="\n\n".join(blocks),
        )
        requests.append(JudgeRequest("support_set", prompt_id, [{"role": "system", "content": system}, {"role": "user", "content": content}],
                                     list(positions)))
    return requests
