"""Planning the LLM judge's source-stance calls (prompt `source_stance`).

A source's stance is about the question, not about any one statement, so each source is cut to the
passages closest to the query (BM25, as for support) within `SOURCE_CHARS`, and several sources
share one call while their passages fit `CALL_CHARS` (at most `max_sources_per_call`). Sources are
named S1, S2, ... inside a call and fenced as untrusted data. The planner renders the messages
without sending anything, so the judge and the dry-run estimate count the same prompts.
"""

from __future__ import annotations

import json
from typing import Sequence

from pipeline.judges.backends.llm_requests import JudgeRequest, RequestSettings, _document_block, prompt_parts
from pipeline.judges.backends.passages import Passage, select_passages
from pipeline.prompts import render_prompt
from pipeline.records import Answer, Source

__all__ = ["SOURCE_CHARS", "CALL_CHARS", "plan_source_stance", "OUTPUT_TOKENS"]

SOURCE_CHARS = 2500  # passage characters sent per source
CALL_CHARS = 12000  # passage characters per call, across its sources
OUTPUT_TOKENS = (10, 40)  # dry-run allowance: fixed per call, per source (label and a short quote)


def plan_source_stance(settings: RequestSettings, answer: Answer, sources: Sequence[Source]) -> list[JudgeRequest]:
    """Calls that label every source with text; `positions` index into `sources`."""
    system, user, prompt_id = prompt_parts("source_stance")
    chosen: list[tuple[int, list[Passage], int]] = []
    for k, source in enumerate(sources):
        if (source.text or "").strip():
            passages, total = select_passages(source.text, [answer.query], min(SOURCE_CHARS, settings.max_passage_chars),
                                              settings.passage_chars)
            chosen.append((k, passages, total))
    groups: list[list[tuple[int, list[Passage], int]]] = []
    used = 0
    for item in chosen:
        size = sum(len(p.text) for p in item[1])
        if groups and len(groups[-1]) < settings.max_sources_per_call and used + size <= CALL_CHARS:
            groups[-1].append(item)
            used += size
        else:
            groups.append([item])
            used = size
    requests = []
    for group in groups:
        blocks = [f"Source S{n} (listed as [{sources[k].index}] in the answer):\n{_document_block(passages, total)}"
                  for n, (k, passages, total) in enumerate(group, start=1)]
        content = render_prompt(
            user,
            query=json.dumps(answer.query, ensure_ascii=False),
            documents="\n\n".join(blocks),
            source_ids=", ".join(f"S{n}" for n in range(1, len(group) + 1)),
        )
        requests.append(JudgeRequest("source_stance", prompt_id,
                                     [{"role": "system", "content": system}, {"role": "user", "content": content}],
                                     [k for k, _, _ in group]))
    return requests
