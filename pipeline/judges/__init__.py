"""The one registry of judges. Backends are imported lazily so a light install never pays for a
backend it does not use."""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Any

from pipeline.judges.base import Judge, JudgeError

__all__ = ["JUDGES", "JudgeInfo", "Judge", "JudgeError", "get_judge", "CARRIED_JUDGES"]


@dataclass(frozen=True)
class JudgeInfo:
    """A registered judge backend."""

    name: str
    target: str  # "module:ClassName", imported on first use; "" for labels carried by the data
    description: str
    needs_network: bool = False


JUDGES: dict[str, JudgeInfo] = {
    info.name: info
    for info in (
        JudgeInfo(
            "offline",
            "pipeline.judges.offline:OfflineJudge",
            "Offline judge: evidence retrieval + calibrated features; no network, no key.",
        ),
        JudgeInfo(
            "openai",
            "pipeline.judges.openai_judge:OpenAIJudge",
            "Any OpenAI-compatible chat endpoint (OpenAI, Azure, Ollama, vLLM, llama.cpp).",
            needs_network=True,
        ),
        JudgeInfo("recorded", "", "Labels recorded in the data (AEE release, canonical `labels`)."),
        JudgeInfo("human", "", "Expert human labels carried by the data (ExpertQA)."),
    )
}

def _plugin_judges() -> dict[str, JudgeInfo]:
    """Extra judges named in AEE_JUDGE_PLUGINS="name=module:Class,..." (your own backends)."""
    out = {}
    for item in os.environ.get("AEE_JUDGE_PLUGINS", "").split(","):
        name, _, target = item.strip().partition("=")
        if name and ":" in target:
            out[name] = JudgeInfo(name, target, f"Plug-in judge {target}")
    return out


# Judges whose verdicts come with the data instead of being computed.
CARRIED_JUDGES = frozenset({"recorded", "human"})


def get_judge(name: str, **config: Any) -> Judge:
    """Build a judge backend by registry name; raises JudgeError with a clear message."""
    info = JUDGES.get(name) or _plugin_judges().get(name)
    if info is None:
        raise JudgeError(f"unknown judge {name!r}; choose one of {', '.join(sorted(JUDGES))}")
    if not info.target:
        raise JudgeError(f"judge {name!r} uses labels carried by the data; it has no backend to build")
    module_name, _, class_name = info.target.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except ImportError as exc:
        raise JudgeError(f"judge {name!r} is not available: {exc}") from exc
    return cls(**config)
