"""Support by any Hugging Face entailment model on the CPU: `nli:<model id or local folder>`.

The model is a sequence-classification head that reads a (premise, hypothesis) pair: MiniCheck
RoBERTa / DeBERTa, DeBERTa or RoBERTa fine-tuned on MNLI/ANLI, and the like. The source is the
premise and the statement (citation markers removed) the hypothesis.

- Windows: a source longer than the model reads is cut into overlapping windows of whole sentences
  that fit beside the statement (`pipeline.judges.backends.windows`); up to `max_windows` of them are scored
  per statement (when a source has more, those sharing the most words with the statement), and the
  best window decides. Its text is the verdict's evidence.
- Score: the probability of the entailment class, found in the model's `id2label` (entailment /
  supported / consistent ...; 3-way and 2-way heads; a single-logit head is read through a sigmoid;
  two unnamed classes "0"/"1" are read as 1 = supported, MiniCheck's convention).
  `AEE_NLI_ENTAILMENT_LABEL` (or `entailment_label=`) names the class when the labels say nothing.
- Label: `SupportThresholds` (full from 0.5, partial from 0.2). Support is never `unknown`: every
  pair gets a number; a source without text or a statement without words scores 0.
- Batches: all (window, statement) pairs of a call are scored together, shortest first, in batches
  of `batch_size`; scores are remembered per pair for the rest of the run.
- Bounds: sources are read up to `max_source_chars`, statements up to `max_statement_tokens`, and
  the model input never exceeds `max_length` tokens or what the model allows.
- Relevance, stance and confidence come from the offline judge's rules (`support_only`).

Nothing here imports transformers or torch until a judge is built; a missing package, a model
that cannot be found, or a model that needs its own code raises `JudgeError` with one line.
The cache key holds the model id, the exact revision (the hub commit, or a digest of a local
folder's files) and every setting that changes a verdict, so two models never share entries.
"""

from __future__ import annotations

import bisect
import hashlib
import importlib.util
import json
import os
import re
import threading
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from pipeline.judges.backends.support_only import SupportOnlyJudge, SupportThresholds, statement_text
from pipeline.judges.backends.windows import char_windows, plan_windows, rank_windows, sentence_starts
from pipeline.judges.base import JudgeError, unchecked_verdicts
from pipeline.records import Answer, Source, Statement, Verdict

__all__ = ["NLIJudge", "entailment_class"]

PROMPT_VERSION = "nli-v1"
MAX_EVIDENCE_CHARS = 3000
MAX_REMEMBERED_PAIRS = 50_000  # scored (window, statement) pairs kept for the rest of a run
INSTALL_HINT = "pip install torch==2.13.0 'answer-engine-audit[nli]' (in a checkout: pip install '.[nli]'); see docs/judges/nli.md"

# Class names that mean "the premise supports the hypothesis", compared lower-case with runs of
# other characters read as "_" ("ENTAILMENT", "Supported", "consistent").
_SUPPORT_NAMES = frozenset({"entailment", "entailed", "entails", "entail", "supported", "supports", "support",
                            "consistent", "factual", "faithful", "true", "yes"})
_UNNAMED_RE = re.compile(r"(label_)?\d+")
# Model types whose position ids start after the padding index, two positions fewer than
# max_position_embeddings.
_OFFSET_POSITIONS = frozenset({"roberta", "xlm-roberta", "camembert", "longformer", "bart", "mbart"})


def _norm(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(label).lower()).strip("_")


def entailment_class(id2label: Mapping[Any, str], override: str | None = None) -> tuple[int, str]:
    """(index of the class that means "supported", how it was recognised) from a model's id2label.

    `override` names the class (its label or its index). A single-logit head is index 0 read
    through a sigmoid. JudgeError when the labels do not say which class is entailment."""
    labels = {int(i): str(name) for i, name in id2label.items()}
    shown = ", ".join(f"{i}={labels[i]}" for i in sorted(labels))
    if override not in (None, ""):
        wanted = str(override).strip()
        if wanted.isdigit() and int(wanted) in labels:
            return int(wanted), f"class {wanted} as configured"
        for i, name in labels.items():
            if _norm(name) == _norm(wanted):
                return i, f"class {name!r} as configured"
        raise JudgeError(f"entailment label {wanted!r} is not one of the model's classes ({shown})")
    if len(labels) == 1:
        return next(iter(labels)), "single-logit head read through a sigmoid"
    found = [i for i, name in labels.items() if _norm(name) in _SUPPORT_NAMES]
    if len(found) == 1:
        return found[0], f"class {labels[found[0]]!r}"
    if len(labels) == 2 and all(_UNNAMED_RE.fullmatch(_norm(name)) for name in labels.values()):
        return 1, "two unnamed classes: class 1 read as supported"
    raise JudgeError(f"cannot tell which class means entailment ({shown}); set AEE_NLI_ENTAILMENT_LABEL to one of them")


def _require_packages() -> None:
    missing = [name for name in ("torch", "transformers") if importlib.util.find_spec(name) is None]
    if missing:
        raise JudgeError(f"the nli judge needs {' and '.join(missing)}: {INSTALL_HINT}")


def _folder_digest(folder: Path) -> str:
    """A digest of a local model folder: names, sizes and contents of its files (for files above
    4 MiB, their first and last MiB), so a folder whose model was replaced gets a new digest."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        size = path.stat().st_size
        h.update(f"{path.name}\0{size}\0".encode())
        with path.open("rb") as fh:
            if size <= 4 << 20:
                h.update(fh.read())
            else:
                h.update(fh.read(1 << 20))
                fh.seek(size - (1 << 20))
                h.update(fh.read(1 << 20))
    return h.hexdigest()[:16]


def _locate(model: str) -> tuple[str, str | None, str]:
    """(what to load from, hub revision to pin, identity for the cache key) for a model name:
    a local folder, or a hub id with an optional `@revision`."""
    folder = Path(model).expanduser()
    if folder.is_dir():
        return str(folder.resolve()), None, f"folder:{_folder_digest(folder)}"
    repo, _, revision = model.partition("@")
    if not re.fullmatch(r"[\w.\-]+(/[\w.\-]+)?", repo):
        raise JudgeError(f"no model folder at {model!r} (and it is not a Hugging Face model id)")
    try:
        from huggingface_hub import hf_hub_download

        config_file = hf_hub_download(repo, "config.json", revision=revision or None)
    except Exception as exc:  # noqa: BLE001 - offline, unknown repo, gated repo: all mean "not available here"
        reason = " ".join(str(exc).split())[:160]
        raise JudgeError(f"model {repo!r} is neither a local folder nor available from the Hugging Face hub or its "
                         f"cache ({type(exc).__name__}: {reason}); download it where there is network and pass its folder") from exc
    commit = Path(config_file).parent.name  # the cache keeps files under snapshots/<commit>/
    return repo, commit, f"commit:{commit}"


class NLIJudge(SupportOnlyJudge):
    """Support from a Hugging Face sequence-classification entailment model (see the module doc).

    Config: `model` (hub id, `id@revision`, or local folder), `entailment_label`, `batch_size=8`,
    `max_length=512`, `window_overlap=64` (tokens), `max_windows=8`, `max_statement_tokens=128`,
    `max_source_chars=100_000`, `full_threshold=0.5`, `partial_threshold=0.2`."""

    prompt_version = PROMPT_VERSION

    def __init__(self, model: str = "", *, entailment_label: str | None = None, batch_size: int = 8,
                 max_length: int = 512, window_overlap: int = 64, max_windows: int = 8,
                 max_statement_tokens: int = 128, max_source_chars: int = 100_000,
                 full_threshold: float = 0.5, partial_threshold: float = 0.2) -> None:
        if not model:
            raise JudgeError("the nli judge needs a model: nli:<Hugging Face model id or local folder>, "
                             "e.g. nli:lytang/MiniCheck-RoBERTa-Large (see docs/judges/nli.md)")
        _require_packages()
        self.model = model
        self.name = f"nli:{model}"
        self.batch_size = max(1, int(batch_size))
        self.max_length = max(16, int(max_length))
        self.window_overlap = max(0, int(window_overlap))
        self.max_windows = max(1, int(max_windows))
        self.max_statement_tokens = max(4, int(max_statement_tokens))
        self.max_source_chars = max(1000, int(max_source_chars))
        self.thresholds = SupportThresholds(float(full_threshold), float(partial_threshold))
        self._load_from, self._revision, self.revision = _locate(model)
        config = self._config()
        if getattr(config, "auto_map", None):
            raise JudgeError(f"model {model!r} needs its own code (trust_remote_code), which the nli judge does not run; "
                             "pick a standard sequence-classification model (docs/judges/nli.md)")
        self.id2label = {int(i): str(name) for i, name in (config.id2label or {}).items()}
        self.entail_index, self.entail_rule = entailment_class(
            self.id2label, entailment_label if entailment_label is not None else os.environ.get("AEE_NLI_ENTAILMENT_LABEL"))
        super().__init__()
        self.cache_fingerprint = self._fingerprint()
        self._lock = threading.Lock()
        self._net: Any = None
        self._tokenizer: Any = None
        self._limit = 0  # tokens the model reads at once, known once loaded
        self._memo: dict[tuple[str, str], np.ndarray] = {}  # (window, statement) -> class probabilities
        self.stats: dict[str, int] = {"pairs": 0, "batches": 0, "largest_batch": 0}  # model work done so far

    def __repr__(self) -> str:
        return f"NLIJudge(model={self.model!r}, revision={self.revision!r})"

    def _config(self) -> Any:
        from transformers import AutoConfig

        try:
            return AutoConfig.from_pretrained(self._load_from, revision=self._revision)
        except (OSError, ValueError, KeyError) as exc:
            reason = " ".join(str(exc).split())[:200]
            raise JudgeError(f"cannot read the configuration of model {self.model!r}: {reason}") from exc

    def _fingerprint(self) -> str:
        parts = {
            "revision": self.revision, "entailment": self.entail_index, "labels": self.id2label,
            "thresholds": [self.thresholds.full, self.thresholds.partial], "max_length": self.max_length,
            "overlap": self.window_overlap, "max_windows": self.max_windows,
            "statement_tokens": self.max_statement_tokens, "source_chars": self.max_source_chars,
            "rules": self.rules_version,
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]

    # ------------------------------------------------------------------ model
    def _load(self) -> None:
        if self._net is not None:
            return
        import torch  # noqa: F401 - fail here, with the install hint, rather than inside transformers
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(self._load_from, revision=self._revision)
            net = AutoModelForSequenceClassification.from_pretrained(self._load_from, revision=self._revision)
        except (OSError, ValueError, KeyError, ImportError) as exc:
            reason = " ".join(str(exc).split())[:200]
            raise JudgeError(f"cannot load model {self.model!r}: {reason}") from exc
        net.eval()
        limits = [self.max_length]
        tok_limit = getattr(tokenizer, "model_max_length", None)
        if isinstance(tok_limit, int) and 0 < tok_limit < 1_000_000:
            limits.append(tok_limit)
        positions = getattr(net.config, "max_position_embeddings", None)
        if isinstance(positions, int) and positions > 0:
            limits.append(positions - (2 if net.config.model_type in _OFFSET_POSITIONS else 0))
        self._limit = min(limits)
        self._tokenizer, self._net = tokenizer, net

    def _probabilities(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Score the (window, statement) pairs not yet remembered, shortest first, in batches."""
        import torch

        needed = dict.fromkeys(pairs)
        todo = sorted((p for p in needed if p not in self._memo), key=lambda p: len(p[0]) + len(p[1]))
        if len(self._memo) + len(todo) > MAX_REMEMBERED_PAIRS:  # bounded memory over a long run
            self._memo = {p: self._memo[p] for p in needed if p in self._memo}
        for k in range(0, len(todo), self.batch_size):
            batch = todo[k : k + self.batch_size]
            enc = self._tokenizer([w for w, _ in batch], [s for _, s in batch], truncation="only_first",
                                  max_length=self._limit, padding=True, return_tensors="pt")
            with torch.inference_mode():
                logits = self._net(**enc).logits.float()
            if logits.shape[-1] == 1:
                probs = torch.sigmoid(logits)
            else:
                probs = torch.softmax(logits, dim=-1)
            for pair, row in zip(batch, probs.numpy()):
                self._memo[pair] = row
            self.stats["pairs"] += len(batch)
            self.stats["batches"] += 1
            self.stats["largest_batch"] = max(self.stats["largest_batch"], len(batch))

    # ------------------------------------------------------------------ inputs
    def _statement(self, statement: Statement) -> tuple[str, int, bool]:
        """(text the model reads, its token count, whether it was cut to max_statement_tokens)."""
        text = statement_text(statement)
        cap = min(self.max_statement_tokens, self._limit // 3)
        if not text:
            return "", 0, False
        if not self._tokenizer.is_fast:  # no offsets: cut by characters, about 4 per token
            cut = text[: cap * 4]
            return cut, min(len(self._tokenizer.tokenize(cut)), cap), cut != text
        enc = self._tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        offsets = enc["offset_mapping"]
        if len(offsets) <= cap:
            return text, len(offsets), False
        return text[: offsets[cap - 1][1]], cap, True

    def _windows(self, text: str, budget: int) -> list[tuple[int, int]]:
        """Character spans of the windows of a source text (already cut to max_source_chars)."""
        overlap = min(self.window_overlap, budget // 2)
        if not self._tokenizer.is_fast:
            return char_windows(text, budget * 4, overlap * 4)  # truncation keeps each one in bounds
        offsets = self._tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        if not offsets:
            return []
        token_starts = [s for s, _ in offsets]
        breaks = [bisect.bisect_left(token_starts, c) for c in sentence_starts(text)]
        return [(offsets[a][0], offsets[b - 1][1]) for a, b in plan_windows(len(offsets), breaks, budget, overlap)]

    # ------------------------------------------------------------------ Judge protocol
    def support(self, answer: Answer, statements: Sequence[Statement], source: Source) -> list[Verdict]:
        return self.support_many(answer, statements, [source])

    def support_many(self, answer: Answer, statements: Sequence[Statement], sources: Sequence[Source]) -> list[Verdict]:
        """Every statement against every source, all pairs scored in shared batches; verdicts come
        grouped by source, in the order of `sources`."""
        if not statements or not sources:
            return []
        with self._lock:
            self._load()
            claims = [self._statement(st) for st in statements]
            specials = self._tokenizer.num_special_tokens_to_add(pair=True)
            budget = max(8, self._limit - specials - max(n for _, n, _ in claims))
            plans: list[tuple[Source, str, list[tuple[int, int]], list[list[int]]]] = []
            pairs: list[tuple[str, str]] = []
            for source in sources:
                text = (source.text or "")[: self.max_source_chars]
                spans = self._windows(text, budget) if text.strip() else []
                texts = [text[s:e] for s, e in spans]
                chosen = [rank_windows(claim, texts, self.max_windows) if claim and spans else [] for claim, _, _ in claims]
                pairs.extend((texts[j], claim) for (claim, _, _), js in zip(claims, chosen) for j in js)
                plans.append((source, text, spans, chosen))
            self._probabilities(pairs)
            out = []
            for source, text, spans, chosen in plans:
                for st, (claim, n_tokens, cut), js in zip(statements, claims, chosen):
                    out.append(self._verdict(answer, st, source, text, claim, n_tokens if cut else 0, spans, js))
            return out

    def _verdict(self, answer: Answer, statement: Statement, source: Source, text: str, claim: str, cut_to: int,
                 spans: list[tuple[int, int]], chosen: list[int]) -> Verdict:
        """The verdict of one (statement, source); `cut_to`: the tokens the statement was cut to (0: not cut)."""
        raw: dict[str, Any] = {"model": self.model, "revision": self.revision, "entailment": self.entail_rule,
                               "thresholds": {"full": self.thresholds.full, "partial": self.thresholds.partial}}
        if len(source.text or "") > self.max_source_chars:
            raw["source_read_chars"] = self.max_source_chars
        if cut_to:
            raw["statement_cut_to_tokens"] = cut_to
        if not spans:  # a source without text: nothing read, so not checked (never "none")
            return unchecked_verdicts(self, answer, [statement], source)[0]
        if not chosen:
            raw["note"] = "statement has no words"
            return Verdict(answer.answer_id, "support", self.thresholds.label(0.0), self.name, self.prompt_version,
                           raw=json.dumps(raw, sort_keys=True), statement_index=statement.index,
                           source_index=source.index, score=0.0)
        scored = [(float(self._memo[text[spans[j][0] : spans[j][1]], claim][self.entail_index]), j) for j in chosen]
        p, best = max(scored, key=lambda t: (t[0], -t[1]))
        s, e = spans[best]
        probs = self._memo[text[s:e], claim]
        raw.update({
            "p_support": round(p, 4),
            "classes": {self.id2label.get(i, str(i)): round(float(q), 4) for i, q in enumerate(probs)},
            "window": [s, e], "window_number": best + 1, "windows_in_source": len(spans), "windows_scored": len(chosen),
        })
        if len(chosen) < len(spans):
            raw["windows_chosen_by"] = "shared words with the statement"
        return Verdict(answer.answer_id, "support", self.thresholds.label(p), self.name, self.prompt_version,
                       raw=json.dumps(raw, sort_keys=True, ensure_ascii=False), statement_index=statement.index,
                       source_index=source.index, score=p, evidence=text[s:e][:MAX_EVIDENCE_CHARS])
