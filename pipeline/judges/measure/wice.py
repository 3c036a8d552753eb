"""WiCE (Kamoi et al., EMNLP 2023) as support pairs: Wikipedia claims judged against the pages they cite.

Each claim is a sentence a Wikipedia editor wrote in their own words, judged by crowd workers against
the sentences of the web page it cites: `supported`, `partially_supported` or `not_supported`, with
the minimal sets of page sentences that support it. The files are read from `$WICE_DIR`,
`../shared/data/wice` or `.cache/wice` (`claim_dev.jsonl`, `claim_test.jsonl`); `download_wice` (or
`aee judges calibrate --fetch-wice`) puts the files of one pinned commit there once, checked by their
sha256. Nothing of them is copied into the project. The support judge is fitted on dev and never on
test (`calibration`).

Pairs made from a claim:

- `page`: the claim against the whole page (what a support matrix asks of a cited source), labelled
  as the crowd did: supported = Complete, partially = Partial, not = Incomplete;
- `support_set`: the claim against the sentences of its first minimal supporting set only (a short
  source that states it, in other words), labelled as the claim;
- `near`: the claim against a window of the same page that belongs to no supporting set and lies
  away from every one (on the topic of the claim, not its support): Incomplete.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import InputError
from pipeline.judges.offline.support import PairInput

LABELS = {"supported": "Complete", "partially_supported": "Partial", "not_supported": "Incomplete"}
SPLITS = ("dev", "test")
WICE_REPO = "ryokamoi/wice"
WICE_COMMIT = "ddeb6c183665e2a20c5f03c5aa07f03888b9870f"
RAW_URL = "https://raw.githubusercontent.com/{repo}/{commit}/data/entailment_retrieval/claim/{name}.jsonl"
# The pinned files' sha256: a download that differs is refused (a moved or altered file would
# silently change the fit)
SHA256 = {
    "claim_dev": "67531ca79bde4c81d3752fb69d9cb0d3d6763de5c3028f548b83ef053a6f8042",
    "claim_test": "4c91b9e9590cfcd8f8a0f7288b5ff315af8ade946d7bf26f50fbd671bb86dbe8",
}


def wice_dir() -> Path | None:
    """Where the WiCE claim files are: $WICE_DIR, else ../shared/data/wice beside the project, else
    the download cache (`download_wice`)."""
    from pipeline.storage.paths import cache_dir

    env = os.environ.get("WICE_DIR")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[3].parent / "shared" / "data" / "wice")
    candidates.append(cache_dir() / "wice")
    for c in candidates:
        if (c / "claim_dev.jsonl").is_file() and (c / "claim_test.jsonl").is_file():
            return c
    return None


def download_wice(dest: Path | None = None, *, timeout: float = 60.0, url: str = RAW_URL) -> Path:
    """Download WiCE's two claim files of the pinned commit once into `dest` (default
    `.cache/wice`), check each against its sha256 (a file that differs is removed and refused) and
    return the folder. Raises InputError with one clear line when offline."""
    from pipeline.importers.dataset_files import download_splits
    from pipeline.storage.paths import cache_dir

    folder = Path(dest) if dest is not None else cache_dir() / "wice"
    download_splits(folder, tuple(SHA256), lambda name: url.format(repo=WICE_REPO, commit=WICE_COMMIT, name=name),
                    lambda exc: (f"could not download WiCE ({exc}); are you offline? Put claim_dev.jsonl and "
                                 f"claim_test.jsonl in a folder and point WICE_DIR at it instead"),
                    timeout=timeout)
    for name, want in SHA256.items():
        path = folder / f"{name}.jsonl"
        got = hashlib.sha256(path.read_bytes()).hexdigest()
        if got != want:
            path.unlink()
            raise InputError(f"downloaded {name}.jsonl has sha256 {got[:12]}..., not the pinned {want[:12]}...; removed",
                             record=url.format(repo=WICE_REPO, commit=WICE_COMMIT, name=name))
    return folder


@dataclass(frozen=True)
class WicePair:
    pair: PairInput
    gold: str  # Complete / Partial / Incomplete
    kind: str  # page / support_set / near
    claim_id: str


def _page_sentences(evidence: list[str]) -> list[str]:
    """The page's sentences without WiCE's metadata line."""
    return [s for s in evidence if not s.startswith("(meta data)")]


def _question(row: dict) -> str:
    """What the claim answers, as far as WiCE says: the article and section it belongs to."""
    meta = row.get("meta") or {}
    return " - ".join(x for x in (meta.get("claim_title", ""), (meta.get("claim_section") or "").rstrip(".")) if x)


def load_rows(split: str, folder: Path | None = None) -> list[dict]:
    folder = folder or wice_dir()
    if folder is None:
        raise FileNotFoundError("WiCE not found: set WICE_DIR or place it at ../shared/data/wice")
    path = Path(folder) / f"claim_{split}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def pairs(split: str, folder: Path | None = None, kinds: tuple[str, ...] = ("page",), seed: int = 7) -> list[WicePair]:
    """The pairs of one split (see the module doc for the kinds)."""
    rng = random.Random(seed)
    out: list[WicePair] = []
    for row in load_rows(split, folder):
        gold = LABELS[row["label"]]
        claim_id = (row.get("meta") or {}).get("id", "")
        evidence = row["evidence"]
        page = " ".join(_page_sentences(evidence))
        q = _question(row)
        if "page" in kinds and page.strip():
            out.append(WicePair(PairInput(row["claim"], page, (), q), gold, "page", claim_id))
        sets = [s for s in row.get("supporting_sentences") or [] if s]
        if "support_set" in kinds and sets and gold != "Incomplete":
            text = " ".join(evidence[i] for i in sorted(sets[0]) if 0 <= i < len(evidence))
            if text.strip():
                out.append(WicePair(PairInput(row["claim"], text, (), q), gold, "support_set", claim_id))
        if "near" in kinds and sets:
            used = {i for s in sets for i in s}
            free = [i for i in range(1, len(evidence) - 1)
                    if not any(abs(i - j) <= 2 for j in used) and not evidence[i].startswith("(meta data)")]
            if free:
                i = rng.choice(free)
                text = " ".join(evidence[i : i + 2])
                out.append(WicePair(PairInput(row["claim"], text, (), q), "Incomplete", "near", claim_id))
    return out
