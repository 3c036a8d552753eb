"""The engines `aee collect` can ask: endpoint, authentication, request body, response format, and a
rough price per call for `--dry-run`.

Settings for engine NAME, first found wins:
- base URL: `AEE_COLLECT_<NAME>_BASE_URL`, then `base_url` in the `[NAME]` table of
  `.streamlit/secrets.toml` (working directory, then the repository root), then the provider's own;
- key: the provider's usual environment variables (below), then `api_key` in that same table.

The key goes into one request header and nowhere else: never into the envelope written to disk
(its `request` is the JSON body only), a log line, an error message or the run summary (every
message passes through `redact` with the key).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import quote

from pipeline.storage.paths import REPO_ROOT

# Rough list prices in USD per answer (request or search fee plus typical tokens for a one-question
# answer), as published by the providers in late 2025. For planning only: check the provider's
# pricing page, or pass --price-per-call.
PRICES_NOTE = "rough late-2025 list prices per answer (search/request fee + typical tokens); check the provider's pricing page"


@dataclass(frozen=True)
class Provider:
    """One engine's API as `collect` calls it."""

    name: str
    response_format: str  # the importer format of its responses (pipeline.importers.engines.FORMATS)
    base_url: str
    key_env: tuple[str, ...]
    default_model: str
    price_per_call: float
    price_basis: str
    extra_headers: Mapping[str, str] = field(default_factory=dict)

    def request(self, query: str, model: str) -> tuple[str, dict[str, str], dict[str, Any]]:
        """(path, auth-free headers, JSON body) of one question."""
        body: dict[str, Any]
        if self.name == "perplexity":
            return "/chat/completions", {}, {"model": model, "messages": [{"role": "user", "content": query}]}
        if self.name == "openai":
            return "/v1/responses", {}, {"model": model, "tools": [{"type": "web_search"}], "input": query}
        if self.name == "anthropic":
            body = {"model": model, "max_tokens": 2048, "messages": [{"role": "user", "content": query}],
                    "tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": 5}]}
            return "/v1/messages", {"anthropic-version": "2023-06-01"}, body
        if self.name == "gemini":
            body = {"contents": [{"role": "user", "parts": [{"text": query}]}], "tools": [{"google_search": {}}]}
            return f"/v1beta/models/{quote(model, safe='')}:generateContent", {}, body
        if self.name == "you":
            return "/v1/answer", {}, {"query": query}
        if self.name == "exa":
            body = {"query": query, "text": True}
            if model:
                body["model"] = model
            return "/answer", {}, body
        raise ValueError(self.name)

    def auth_headers(self, key: str) -> dict[str, str]:
        """The one place the key is used."""
        if self.name in ("perplexity", "openai"):
            return {"Authorization": f"Bearer {key}"}
        if self.name == "anthropic":
            return {"x-api-key": key}
        if self.name == "gemini":
            return {"x-goog-api-key": key}
        if self.name == "you":
            return {"X-API-Key": key}
        return {"x-api-key": key}


PROVIDERS: dict[str, Provider] = {p.name: p for p in (
    Provider("perplexity", "perplexity", "https://api.perplexity.ai", ("PERPLEXITY_API_KEY", "PPLX_API_KEY"), "sonar",
             0.006, "sonar: $5 per 1,000 requests + $1 per million tokens in and out"),
    Provider("openai", "openai-responses", "https://api.openai.com", ("OPENAI_API_KEY",), "gpt-4.1-mini",
             0.012, "web search tool call ($10 per 1,000) + gpt-4.1-mini tokens"),
    Provider("anthropic", "anthropic", "https://api.anthropic.com", ("ANTHROPIC_API_KEY",), "claude-sonnet-4-5",
             0.045, "web search ($10 per 1,000 searches) + Claude Sonnet tokens (search results count as input)"),
    Provider("gemini", "gemini", "https://generativelanguage.googleapis.com", ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
             "gemini-2.5-flash", 0.036, "grounded prompt ($35 per 1,000 beyond the free tier) + gemini-2.5-flash tokens"),
    Provider("you", "you", "https://api.you.com", ("YDC_API_KEY", "YOU_API_KEY"), "", 0.005, "Answer API: $5 per 1,000 calls"),
    Provider("exa", "exa", "https://api.exa.ai", ("EXA_API_KEY",), "", 0.005, "/answer: $5 per 1,000 answers"),
)}


def _secrets_table(name: str, path: Path | None = None) -> dict[str, Any]:
    """The `[name]` table of the Streamlit secrets file ({} when absent or unreadable)."""
    candidates = [path] if path else [Path.cwd() / ".streamlit" / "secrets.toml", REPO_ROOT / ".streamlit" / "secrets.toml"]
    for candidate in candidates:
        if candidate is not None and candidate.is_file():
            try:
                with candidate.open("rb") as fh:
                    table = tomllib.load(fh).get(name, {})
            except (OSError, ValueError):
                return {}
            return dict(table) if isinstance(table, Mapping) else {}
    return {}


@dataclass(frozen=True)
class Endpoint:
    """Where to send and with which key (the key stays out of repr)."""

    provider: Provider
    base_url: str
    key: str | None = field(repr=False)

    def url(self, path: str) -> str:
        """base + path, without doubling a version segment (a base URL given as ".../v1" is common)."""
        base = self.base_url
        for version in ("/v1", "/v1beta"):
            if base.endswith(version) and path.startswith(version + "/"):
                return base + path[len(version):]
        return base + path


def resolve(name: str, secrets_path: Path | None = None) -> Endpoint:
    """The base URL and key for one engine, from the environment or the secrets file."""
    provider = PROVIDERS[name]
    table = _secrets_table(name, secrets_path)
    base = os.environ.get(f"AEE_COLLECT_{name.upper()}_BASE_URL") or table.get("base_url") or provider.base_url
    key = next((os.environ[v] for v in provider.key_env if os.environ.get(v)), None) or table.get("api_key")
    return Endpoint(provider, str(base).rstrip("/"), str(key) if key else None)
