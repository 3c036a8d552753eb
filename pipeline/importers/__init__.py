"""The one registry of importers and of the datasets `run --dataset NAME` knows by name."""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from pipeline.errors import InputError
from pipeline.importers.engines import FORMATS as ENGINE_FORMATS
from pipeline.importers.engines import first_format
from pipeline.importers.refusals import Refusals, refuse_or_raise
from pipeline.records import AnnotatedAnswer
from pipeline.storage.paths import data_dir, expertqa_dir, hagrid_dir


@dataclass(frozen=True)
class ImporterInfo:
    """An input format: how to load it and which judge's labels it carries."""

    name: str
    # "module:function" taking a path and returning the answers; a generator where the format can
    # be read record by record, so the runner never holds a whole corpus in memory
    target: str
    carried_judge: str  # judge id of the labels in the data ("" when none)
    description: str
    # engine responses: the loader takes ImportOptions (query, engine, query type of bare responses)
    takes_options: bool = False

    def iter(self, path: str | Path, options: Any = None, refusals: Refusals | None = None) -> Iterator[AnnotatedAnswer]:
        """The answers of a file or folder in this format, one at a time (InputError on bad input,
        an answer larger than `canonical.check_answer_size` allows included). With `refusals`
        (`pipeline.importers.refusals`), each bad record is refused and the rest read."""
        module, _, func = self.target.partition(":")
        loader: Callable[..., Iterable[AnnotatedAnswer]] = getattr(importlib.import_module(module), func)
        extra = {} if refusals is None else {"refusals": refusals}
        file = Path(path).name if Path(path).is_file() else ""
        return _checked(loader(path, options, **extra) if self.takes_options else loader(path, **extra), refusals, file)

    def load(self, path: str | Path, options: Any = None, refusals: Refusals | None = None) -> list[AnnotatedAnswer]:
        """Every answer of a file or folder in this format."""
        return list(self.iter(path, options, refusals))


def _checked(answers: Iterable[AnnotatedAnswer], refusals: Refusals | None = None, file: str = "") -> Iterator[AnnotatedAnswer]:
    from pipeline.importers.canonical import check_answer_size

    for annotated in answers:
        try:
            check_answer_size(annotated)
        except InputError as exc:
            refuse_or_raise(refusals, exc, annotated.answer.meta.get("source_file") or file)
            continue
        yield annotated


IMPORTERS: dict[str, ImporterInfo] = {
    info.name: info
    for info in (
        ImporterInfo("canonical", "pipeline.importers.canonical:iter_canonical", "recorded",
                     "The project's canonical JSON / JSONL answer format."),
        ImporterInfo("aee", "pipeline.importers.aee:load_aee", "recorded",
                     "The AEE release (ans_eng_eval_0.1.json + _support_results.jsonl), GPT-4o labels."),
        ImporterInfo("expertqa", "pipeline.importers.expertqa:iter_expertqa", "human",
                     "ExpertQA long-form answers with expert claim labels (MIT licence)."),
        ImporterInfo("hagrid", "pipeline.importers.hagrid:iter_hagrid", "human",
                     "HAGRID: GPT-3.5 answers citing MIRACL passages, with human sentence labels (Apache-2.0)."),
        ImporterInfo("auto", "pipeline.importers.engines:iter_auto", "", "Any format below, recognised object by object "
                     "(engine responses and capture envelopes by their shape, anything else as canonical).", True),
        *(ImporterInfo(f.name, f"pipeline.importers.engines:iter_{f.name.replace('-', '_')}", "", f.description, True)
          for f in ENGINE_FORMATS.values()),
    )
}
COMPUTED_DEFAULT_JUDGE = "offline"  # engine responses carry no labels: the offline judge gives them


@dataclass(frozen=True)
class DatasetInfo:
    """A dataset the runner knows by name: its format, where it is, and its illustrative status."""

    name: str
    importer: str
    path: Path | None
    default_judge: str
    illustrative: bool = False
    how_to_get: str = ""
    title: str = ""  # what the dashboard calls it ("Teaching corpus"); the name stays the id


def known_datasets() -> dict[str, DatasetInfo]:
    """Datasets known by name on this machine (paths resolved now, from env vars and defaults)."""
    demo = data_dir() / "demo" / "answers.jsonl"
    aee = os.environ.get("AEE_RELEASE_PATH")
    return {
        "demo": DatasetInfo("demo", "canonical", demo if demo.exists() else None, "recorded", illustrative=True,
                            how_to_get="bundled with the project (data/demo/answers.jsonl)", title="Teaching corpus"),
        "expertqa": DatasetInfo("expertqa", "expertqa", expertqa_dir(), "human",
                                how_to_get="set EXPERTQA_DIR, or run `aee import expertqa "
                                           "https://github.com/chaitanyamalaviya/ExpertQA` (downloads the pinned "
                                           "annotated files)", title="ExpertQA"),
        "hagrid": DatasetInfo("hagrid", "hagrid", hagrid_dir(), "human",
                              how_to_get="set HAGRID_DIR, or run `aee import hagrid "
                                         "https://huggingface.co/datasets/miracl/hagrid` (downloads the pinned dev and train splits)",
                              title="HAGRID"),
        "aee": DatasetInfo("aee", "aee", Path(aee) if aee else None, "recorded",
                           how_to_get="download the AEE release and set AEE_RELEASE_PATH to ans_eng_eval_0.1.json",
                           title="AEE release"),
    }


def resolve_dataset(name: str, path: str | Path | None = None, importer: str | None = None) -> DatasetInfo:
    """The dataset to run: a known name, or any name with an explicit path (canonical by default)."""
    known = known_datasets()
    if name in known:
        info = known[name]
        if path is not None:
            info = DatasetInfo(info.name, importer or info.importer, Path(path), info.default_judge, info.illustrative,
                               info.how_to_get, info.title)
        if info.path is None:
            raise InputError(f"dataset {name!r} was not found on this machine; {info.how_to_get}", field="--path")
        return info
    if path is None:
        raise InputError(f"unknown dataset {name!r}: give --path (known: {', '.join(sorted(known))})", field="--dataset")
    fmt = importer or "auto"
    if fmt not in IMPORTERS:
        raise InputError(f"unknown format {fmt!r}; choose one of {', '.join(sorted(IMPORTERS))}", field="--format")
    return DatasetInfo(name, fmt, Path(path), default_judge(fmt, path))


def default_judge(fmt: str, path: str | Path) -> str:
    """The judge a run uses when none is named: the labels the data carries, else the offline
    judge (engine responses carry none). `auto` looks at the first object of the input."""
    if fmt == "auto":
        found = first_format(path)
        fmt = "canonical" if found in (None, "canonical") else found
    return IMPORTERS[fmt].carried_judge or COMPUTED_DEFAULT_JUDGE
