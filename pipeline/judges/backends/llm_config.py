"""Where the OpenAI judge finds its endpoint, key and model, and how the key is kept out of output.

Each setting falls back, in order, to the constructor argument, the `AEE_OPENAI_*` environment
variables, the `OPENAI_*` ones (base URL and key only), and the `[openai]` table of
`.streamlit/secrets.toml` (keys `base_url`, `api_key`, `model`, `json_mode`, `api_version`), looked
up in the working directory and then in the repository root. `json_mode` (send
`response_format={"type": "json_object"}`) defaults to on for api.openai.com and off elsewhere,
since many local servers reject it.

The API key never reaches a verdict, a log line, an exception message or a returned dict: the
judge passes everything it keeps or logs through `pipeline.fetching.redact.redact`, and `EndpointConfig` does not show the
key in its repr.
"""

from __future__ import annotations

import logging
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from pipeline.storage.paths import REPO_ROOT

__all__ = ["DEFAULT_MODEL", "EndpointConfig", "resolve_endpoint"]

log = logging.getLogger(__name__)

DEFAULT_MODEL = "gpt-4o-mini"
_OPENAI_DEFAULT_HOST = "api.openai.com"


def _read_secrets(path: Path | None) -> dict[str, Any]:
    """The `[openai]` table of a Streamlit secrets file, or {} (missing file, bad TOML)."""
    candidates: list[Path] = []
    if path is not None:
        candidates.append(Path(path))
    else:
        candidates += [Path.cwd() / ".streamlit" / "secrets.toml", REPO_ROOT / ".streamlit" / "secrets.toml"]
    for candidate in candidates:
        if candidate.is_file():
            try:
                with candidate.open("rb") as fh:
                    table = tomllib.load(fh).get("openai", {})
                return dict(table) if isinstance(table, Mapping) else {}
            except (OSError, ValueError) as exc:
                log.warning("could not read %s: %s", candidate, type(exc).__name__)
                return {}
    return {}


def _first(*values: Any) -> Any:
    for value in values:
        if value is not None and value != "":
            return value
    return None


def _as_bool(value: Any) -> bool | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class EndpointConfig:
    """The resolved endpoint settings of one judge. `official`: the endpoint is api.openai.com,
    which always needs a key (a local server may not)."""

    base_url: str | None
    api_key: str | None = field(repr=False)
    model: str
    api_version: str | None
    json_mode: bool
    official: bool


def resolve_endpoint(
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    model: str | None = None,
    api_version: str | None = None,
    json_mode: bool | None = None,
    secrets_path: Path | str | None = None,
) -> EndpointConfig:
    """Fill each setting not given from the environment, then from the secrets file."""
    secrets = _read_secrets(Path(secrets_path) if secrets_path else None)
    env = os.environ
    base_url = _first(base_url, env.get("AEE_OPENAI_BASE_URL"), env.get("OPENAI_BASE_URL"), secrets.get("base_url"))
    api_key = _first(api_key, env.get("AEE_OPENAI_API_KEY"), env.get("OPENAI_API_KEY"), secrets.get("api_key"))
    model = str(_first(model, env.get("AEE_OPENAI_MODEL"), secrets.get("model"), DEFAULT_MODEL))
    api_version = _first(api_version, env.get("AEE_OPENAI_API_VERSION"), secrets.get("api_version"))
    flag = _first(json_mode, _as_bool(env.get("AEE_OPENAI_JSON_MODE")), _as_bool(secrets.get("json_mode")))
    official = base_url is None or _OPENAI_DEFAULT_HOST in str(base_url)
    return EndpointConfig(
        base_url=base_url,
        api_key=str(api_key) if api_key else None,
        model=model,
        api_version=api_version,
        json_mode=bool(flag) if flag is not None else (official and api_version is None),
        official=official,
    )
