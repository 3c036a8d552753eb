"""The one registry of judges and the one factory that builds them.

`get_judge(name, cache=...)` is how the runner, the CLI and the dashboard get a judge: it looks the
name up here (or among plug-ins named in `AEE_JUDGE_PLUGINS`), imports the backend lazily so a light
install never pays for a backend it does not use, and wraps computed judges in the SQLite cache.
A name may carry an argument after a colon (`openai:gpt-4o-mini`), handed to the backend as the
keyword its entry names (`model`). A few variants are registered under a full name with a colon
(`offline:lexical`): that entry wins over the backend's, and takes no argument.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.judges.base import BaseJudge, Judge, JudgeError
from pipeline.judges.cache import CachingJudge

__all__ = ["JUDGES", "JudgeInfo", "Judge", "BaseJudge", "JudgeError", "get_judge", "with_cache", "judge_info",
           "registry_entry", "carries_labels"]


@dataclass(frozen=True)
class JudgeInfo:
    """A registered judge backend."""

    name: str
    target: str  # "module:ClassName", imported on first use
    description: str
    needs_network: bool = False
    carried: bool = False  # labels come with the data: never cached, never called
    argument: str = ""  # keyword that receives the part of the name after ":" ("model"); "" = none allowed
    offline_rules: bool = False  # relevance, stance and confidence by the offline judge's rules (only support is its own)


JUDGES: dict[str, JudgeInfo] = {
    info.name: info
    for info in (
        JudgeInfo("offline", "pipeline.judges.offline.judge:OfflineJudge",
                  "Offline judge: evidence retrieval + calibrated features; no network, no key.", offline_rules=True),
        JudgeInfo("offline:lexical", "pipeline.judges.offline.judge:LexicalOfflineJudge",
                  "The offline judge with its lexical-only support model (word and figure overlap, calibrated on "
                  "ExpertQA like the default one, no embedding model): a second opinion that needs nothing. "
                  "Relevance, stance and confidence are the same rules as `offline`, so only support labels can differ.",
                  offline_rules=True),
        JudgeInfo("openai", "pipeline.judges.backends.openai_judge:OpenAIJudge",
                  "Any OpenAI-compatible chat endpoint (OpenAI, Azure, Ollama, vLLM, llama.cpp).",
                  needs_network=True, argument="model"),
        JudgeInfo("nli", "pipeline.judges.backends.nli:NLIJudge",
                  "Support by a Hugging Face entailment model on the CPU: nli:<model id or folder> (pip install '.[nli]'); "
                  "relevance, stance and confidence by the offline rules.", argument="model", offline_rules=True),
        JudgeInfo("minicheck", "pipeline.judges.backends.minicheck:MiniCheckJudge",
                  "Support by Bespoke-MiniCheck behind an OpenAI-compatible server such as Ollama (AEE_MINICHECK_BASE_URL); "
                  "relevance, stance and confidence by the offline rules.", needs_network=True, argument="model",
                  offline_rules=True),
        JudgeInfo("recorded", "pipeline.judges.carried:CarriedLabels",
                  "Labels recorded in the data (AEE release, canonical `labels`).", carried=True),
        JudgeInfo("human", "pipeline.judges.carried:CarriedLabels",
                  "Human labels carried by the data: the experts' (ExpertQA), the annotators' (HAGRID).", carried=True),
        JudgeInfo("human:audit", "pipeline.judges.carried:AuditLabels",
                  "The labels people gave this dataset's audit samples (`aee audit`, the Audit the judge page), one "
                  "label per item: the majority of the people who labelled it. Items nobody audited, ties and "
                  "\"can't tell\" are unknown, so most metrics are n/a with the judged share. Written by "
                  "`aee audit publish`.", carried=True),
        JudgeInfo("fitted", "pipeline.judges.carried:FittedLabels",
                  "A judge fitted to the people's labels of an audit sample (cross-fitted logistic model over the audited "
                  "judge's signals, the engine, the kind and length of source, figures, citation): support labels learnt "
                  "from the people, relevance, stance and confidence the audited judge's. Every label says what it was "
                  "fitted to. Written by `aee audit fit`.", carried=True),
        JudgeInfo("scripted", "pipeline.judges.scripted:ScriptedJudge",
                  "Deterministic rules for tests and demos (word overlap); its labels mean nothing."),
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


def registry_entry(name: str) -> JudgeInfo | None:
    """The registry entry for a judge name: its own entry when it has one (`offline:lexical`), else
    its backend's (the part before any ":", `openai:gpt-4o` -> `openai`); None when unknown."""
    plugins = _plugin_judges()
    return JUDGES.get(name) or plugins.get(name) or JUDGES.get(name.partition(":")[0]) or plugins.get(name.partition(":")[0])


def judge_info(name: str) -> JudgeInfo:
    """`registry_entry`, with JudgeError when the name is unknown."""
    info = registry_entry(name)
    if info is None:
        known = sorted({*JUDGES, *_plugin_judges()})
        raise JudgeError(f"unknown judge {name!r}; choose one of {', '.join(known)}")
    return info


def carries_labels(name: str) -> bool:
    """True when a judge name stands for labels carried by the data (`recorded`, `human`)."""
    try:
        return judge_info(name).carried
    except JudgeError:
        return False


def get_judge(name: str, *, cache: bool | str | Path = True, **config: Any) -> Judge:
    """Build a judge by registry name; raises JudgeError with a clear message.

    cache: True wraps a computed judge in the SQLite cache at its default place
    (`$AEE_CACHE_DIR/judges.sqlite`), a path puts the cache there, False returns the bare backend.
    Judges that carry their labels are never cached.
    """
    info = judge_info(name)
    base, _, argument = name.partition(":")
    if info.name == name:  # a registered name, variants with a colon included: no argument to hand on
        base, argument = name, ""
    if argument:
        if not info.argument:
            variants = sorted(n for n in JUDGES if n.startswith(base + ":"))
            raise JudgeError(f"judge {base!r} takes no argument after ':' (got {name!r})"
                             + (f"; registered variants: {', '.join(variants)}" if variants else ""))
        config.setdefault(info.argument, argument)
    module_name, _, class_name = info.target.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] in ("pipeline", "dashboard"):
            raise  # our own code is broken: never hide that behind "not available"
        # an optional backend's own dependency (an SDK, transformers) is not installed
        raise JudgeError(f"judge {name!r} is not available: {exc}") from exc
    judge = cls(base) if info.carried else cls(**config)
    return with_cache(judge, cache)


def with_cache(judge: Judge, cache: bool | str | Path = True) -> Judge:
    """Wrap a judge in the SQLite cache (see get_judge); carried and already cached judges are returned as they are."""
    if judge.carries_labels or cache is False or isinstance(judge, CachingJudge):
        return judge
    return CachingJudge(judge, None if cache is True else Path(cache))
