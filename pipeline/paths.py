"""Where things live on disk. Every path can be moved with an environment variable."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """Bundled data (demo corpus, reference figures, examples)."""
    return Path(os.environ.get("AEE_DATA_DIR", REPO_ROOT / "data"))


def results_dir() -> Path:
    """Pipeline outputs the app reads (Parquet per dataset)."""
    return Path(os.environ.get("AEE_RESULTS_DIR", data_dir() / "results"))


def reference_dir() -> Path:
    """Published figures copied from the papers."""
    return data_dir() / "reference"


def cache_dir() -> Path:
    """Judge cache, downloads, fetched pages (gitignored)."""
    path = Path(os.environ.get("AEE_CACHE_DIR", REPO_ROOT / ".cache"))
    return path


def shared_dir() -> Path | None:
    """The team's shared folder (papers, spec, ExpertQA), when present beside the project."""
    candidate = Path(os.environ.get("AEE_SHARED_DIR", REPO_ROOT.parent / "shared"))
    return candidate if candidate.is_dir() else None


def expertqa_dir() -> Path | None:
    """Folder holding ExpertQA's *.jsonl files: $EXPERTQA_DIR, else ../shared/data/expertqa."""
    env = os.environ.get("EXPERTQA_DIR")
    if env:
        path = Path(env)
        return path if path.is_dir() else None
    shared = shared_dir()
    if shared and (shared / "data" / "expertqa").is_dir():
        return shared / "data" / "expertqa"
    return None
