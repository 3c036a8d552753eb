"""Where things live on disk. Every path can be moved with an environment variable.

Two layouts are supported. In a checkout (the normal case: `make run`, `pip install -e .`), the
bundled data sits in `data/` at the top of the project and results, caches and studies are written
beside it. In an installed wheel (`pip install .`), the bundled data travels inside the package
(`pipeline/bundled_data`, read-only) and everything the toolkit writes goes under the current
working directory (`./aee-results`, `./.aee-cache`), never into site-packages.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
_BUNDLED = Path(__file__).resolve().parents[1] / "bundled_data"


def is_checkout() -> bool:
    """True when running from a source checkout (the project's pyproject.toml and data/ beside us)."""
    return (REPO_ROOT / "pyproject.toml").is_file() and (REPO_ROOT / "data").is_dir()


def data_dir() -> Path:
    """Bundled data (teaching corpus, reference figures, examples, judge checks)."""
    env = os.environ.get("AEE_DATA_DIR")
    if env:
        return Path(env)
    return REPO_ROOT / "data" if is_checkout() or not _BUNDLED.is_dir() else _BUNDLED


def results_dir() -> Path:
    """Pipeline outputs the app reads (Parquet per dataset)."""
    env = os.environ.get("AEE_RESULTS_DIR")
    if env:
        return Path(env)
    if os.environ.get("AEE_DATA_DIR"):
        return data_dir() / "results"
    return REPO_ROOT / "data" / "results" if is_checkout() else Path.cwd() / "aee-results"


def user_data_dir() -> Path:
    """Where the app writes what a person chose to keep (saved answers under `user/`, recorded studies
    under `studies/`): AEE_DATA_DIR when set, else the folder that holds the results when
    AEE_RESULTS_DIR moves them (one variable moves everything the toolkit writes but its cache), else `data/` in a checkout and
    `./aee-data` for an installed package, never inside the package itself."""
    env = os.environ.get("AEE_USER_DIR")
    if env:
        return Path(env)
    if os.environ.get("AEE_DATA_DIR"):  # a data folder of one's own holds its results too (results_dir)
        return data_dir()
    if os.environ.get("AEE_RESULTS_DIR"):
        return results_dir().parent
    return REPO_ROOT / "data" if is_checkout() else Path.cwd() / "aee-data"


def studies_dir() -> Path:
    """Recorded usability studies: AEE_STUDIES_DIR, else `studies/` in the user folder (beside the
    results; see `user_data_dir`)."""
    env = os.environ.get("AEE_STUDIES_DIR")
    return Path(env) if env else user_data_dir() / "studies"


def reference_dir() -> Path:
    """Published figures copied from the papers."""
    return data_dir() / "reference"


def cache_dir() -> Path:
    """Judge cache, downloads, fetched pages (gitignored)."""
    env = os.environ.get("AEE_CACHE_DIR")
    if env:
        return Path(env)
    return REPO_ROOT / ".cache" if is_checkout() else Path.cwd() / ".aee-cache"


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


def hagrid_dir() -> Path | None:
    """Folder holding HAGRID's *.jsonl files: $HAGRID_DIR, else the download cache
    (`cache_dir()/hagrid`, filled by `aee import hagrid URL`) when it holds any."""
    env = os.environ.get("HAGRID_DIR")
    if env:
        path = Path(env)
        return path if path.is_dir() else None
    cached = cache_dir() / "hagrid"
    return cached if cached.is_dir() and any(cached.glob("*.jsonl")) else None
