"""Fixtures and helpers shared by the OpenAI judge and judge cache tests.

Import the fixtures into a test module (`from openai_fixtures import fake_openai, make_judge`);
pytest then finds them there. This file is not a conftest on purpose.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

from pipeline.records import Answer, Source, Statement
from pipeline.testing.fake_openai import FakeOpenAIServer, FakeResponse, LoggedRequest

TEST_KEY = "sk-test-DoNotLeak-7f3a9c2e5b1d"

SOURCE_ZOOS = (
    "Zoos and conservation.\n\n"
    "Modern accredited zoos run breeding programmes for endangered species such as the Amur leopard. "
    "Several species, including the Arabian oryx, were reintroduced to the wild after captive breeding.\n\n"
    "Critics argue that large carnivores suffer in captivity because enclosures are far smaller than "
    "their natural ranges. Studies of polar bears report repetitive pacing behaviour."
)
SOURCE_OTHER = (
    "A short note on aquariums. Public aquariums attract millions of visitors each year and fund "
    "marine research."
)


def sample_answer(n_statements: int = 3, sources: tuple[Source, ...] | None = None, query_type: str = "debate") -> tuple[Answer, list[Statement]]:
    texts = [
        "Zoos run breeding programmes for endangered species [1].",
        "The Arabian oryx was reintroduced to the wild after captive breeding [1].",
        "Large carnivores such as polar bears show repetitive pacing in captivity [1].",
        "Zoos are loved by children everywhere.",
        "Aquariums fund marine research [2].",
        "Here is a summary of the arguments.",
        "Overall, the question remains debated.",
    ]
    chosen = [texts[i % len(texts)] for i in range(n_statements)]
    if sources is None:
        sources = (Source(1, "https://example.org/zoos", "Zoos", SOURCE_ZOOS), Source(2, "https://example.org/aq", "Aq", SOURCE_OTHER))
    answer = Answer(
        answer_id="a1", engine="test", query="Why should zoos be abolished?", query_type=query_type,  # type: ignore[arg-type]
        text=" ".join(chosen) + " Zoos are clearly useful.", sources=sources, dataset="test",
    )
    statements = [Statement("a1", i, t) for i, t in enumerate(chosen)]
    return answer, statements


# ---------------------------------------------------------------- reading requests


def request_kind(req: LoggedRequest) -> str:
    system = req.messages[0]["content"] if req.messages else ""
    if "fact-checker" in system:
        return "support"
    if "classify web documents" in system:
        return "source_stance"
    if "core statement" in system:
        return "relevance"
    if "debate questions" in system:
        return "stance"
    if "confidently" in system:
        return "confidence"
    return "unknown"


def request_ids(req: LoggedRequest) -> list[int]:
    """Statement ids listed in the first user message of a request."""
    user = next((m["content"] for m in req.messages if m.get("role") == "user"), "")
    return [int(x) for x in re.findall(r'^\{"id": (\d+), "text":', user, re.MULTILINE)]


def request_source_ids(req: LoggedRequest) -> list[str]:
    """Source ids (S1, S2, ...) of a packed support request; [] for a single-source one."""
    user = next((m["content"] for m in req.messages if m.get("role") == "user"), "")
    m = re.search(r"^Sources to check each statement against: ((?:S\d+(?:, )?)+)\.", user, re.MULTILINE)
    return m.group(1).split(", ") if m else []


def smart_reply(labels: dict[str, str] | None = None, quote: str = "breeding programmes for endangered species") -> Callable[[LoggedRequest], str]:
    """A handler that answers every request correctly shaped, with a fixed label per kind."""
    labels = {"support": "full", "relevance": "core", "stance": "agree", "source_stance": "disagree", **(labels or {})}

    def handler(req: LoggedRequest) -> str:
        kind = request_kind(req)
        if kind == "confidence":
            return json.dumps({"level": 4, "cue": "clearly useful"})
        if kind == "source_stance":
            user = next((m["content"] for m in req.messages if m.get("role") == "user"), "")
            ids = re.search(r"^Sources to classify: ((?:S\d+(?:, )?)+)\.", user, re.MULTILINE)
            return json.dumps({"results": [{"id": i, "label": labels[kind], "quote": ""}
                                           for i in (ids.group(1).split(", ") if ids else [])]})
        rows = []
        for source in request_source_ids(req) or [None]:
            for i in request_ids(req):
                row: dict[str, Any] = {"id": i, "label": labels[kind]}
                if kind == "support":
                    row.update(passage="P1", quote=quote)
                if source:
                    row["source"] = source
                rows.append(row)
        return json.dumps({"results": rows})

    return handler


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def _server_module():
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def fake_openai(_server_module: FakeOpenAIServer) -> FakeOpenAIServer:
    """A running fake server, with an empty script and request log for each test."""
    _server_module.reset()
    yield _server_module
    _server_module.reset()


@pytest.fixture
def make_judge(fake_openai: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Factory for an OpenAIJudge pointed at the fake server with fast retry settings."""
    for var in ("AEE_OPENAI_BASE_URL", "OPENAI_BASE_URL", "AEE_OPENAI_API_KEY", "OPENAI_API_KEY",
                "AEE_OPENAI_MODEL", "AEE_OPENAI_JSON_MODE", "AEE_OPENAI_API_VERSION"):
        monkeypatch.delenv(var, raising=False)

    def make(cls: Any = None, **overrides: Any):
        from pipeline.judges.backends.openai_judge import OpenAIJudge

        cls = cls or OpenAIJudge
        config: dict[str, Any] = dict(
            base_url=fake_openai.base_url, api_key=TEST_KEY, model="fake-model", timeout=2.0,
            max_retries=2, backoff_base=0.01, backoff_max=0.05, json_mode=False,
            secrets_path=tmp_path / "no-secrets.toml",
        )
        config.update(overrides)
        return cls(**config)

    return make


__all__ = [
    "FakeOpenAIServer", "FakeResponse", "LoggedRequest", "TEST_KEY", "SOURCE_ZOOS", "SOURCE_OTHER",
    "sample_answer", "request_kind", "request_ids", "request_source_ids", "smart_reply", "fake_openai", "_server_module", "make_judge",
]
