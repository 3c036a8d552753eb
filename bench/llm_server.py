"""The fake OpenAI-compatible server rows a, b and c of bench/run.py talk to, and its deterministic
handler: every prompt kind gets a well-formed reply whose labels depend only on the statement text,
so the pairwise and batched judges see the same answers and the cached run can be checked for zero
requests. 127.0.0.1 only (pipeline/testing/fake_openai.py)."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path
from typing import Any

_ID_RE = re.compile(r'^\{"id": (\d+), "text": (".*")\}', re.MULTILINE)
_SUPPORT_LABELS = ("full", "partial", "none")
_SOURCES_RE = re.compile(r"^Sources to check each statement against: ((?:S\d+(?:, )?)+)\.", re.MULTILINE)


def deterministic_reply(request: Any) -> str:
    """A well-formed reply for every prompt kind; labels depend only on the statement text."""
    messages = request.messages
    system = messages[0]["content"] if messages else ""
    user = next((m["content"] for m in messages if m.get("role") == "user"), "")
    if "confidently" in system:
        return json.dumps({"level": 4, "cue": ""})
    rows = []
    packed = _SOURCES_RE.search(user)
    for sid, text in _ID_RE.findall(user):
        h = zlib.crc32(text.encode("utf-8"))
        if "fact-checker" in system and packed:
            rows.extend({"id": int(sid), "source": src, "label": _SUPPORT_LABELS[h % 3], "passage": "P1", "quote": ""}
                        for src in packed.group(1).split(", "))
        elif "fact-checker" in system:
            rows.append({"id": int(sid), "label": _SUPPORT_LABELS[h % 3], "passage": "P1", "quote": ""})
        elif "debate questions" in system:
            rows.append({"id": int(sid), "label": "neutral"})
        else:  # relevance
            rows.append({"id": int(sid), "label": "filler" if h % 7 == 0 else "core"})
    return json.dumps({"results": rows})


def fake_server() -> Any:
    """The test suite's fake server, answering from `deterministic_reply`, with TCP_NODELAY on its
    connections: without it every reply waits ~40 ms for a delayed ACK (the handler writes headers
    and body separately), which would make the cold side of row c look slower than it is."""
    import socket

    from pipeline.testing.fake_openai import FakeOpenAIServer

    server = FakeOpenAIServer().start()
    server.handler = deterministic_reply
    httpd = getattr(server, "_httpd", None)
    if httpd is not None:
        accept = httpd.get_request

        def get_request() -> Any:
            conn, addr = accept()
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return conn, addr

        httpd.get_request = get_request
    return server


def llm_judge(cls: Any, server: Any, tmp: Path) -> Any:
    return cls(base_url=server.base_url, api_key="bench-not-a-key", model="fake-model", timeout=30.0,
               max_retries=1, backoff_base=0.01, backoff_max=0.05, json_mode=False, concurrency=4,
               secrets_path=tmp / "no-secrets.toml")


def log_totals(server: Any) -> tuple[int, int]:
    """(chat requests, input tokens as chars/4 of the messages) seen by the server so far."""
    reqs = server.chat_requests
    return len(reqs), sum(len(r.prompt_text) for r in reqs) // 4


class Server:
    """`with Server() as server:` a started fake server, stopped on exit."""


    def __enter__(self) -> Any:
        self.server = fake_server()
        return self.server

    def __exit__(self, *exc: object) -> None:
        self.server.stop()
