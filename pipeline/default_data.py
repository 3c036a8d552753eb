"""Build the results the app opens on: the teaching corpus always, ExpertQA when it is found."""

from __future__ import annotations

from typing import Iterator

from pipeline.importers import known_datasets
from pipeline.judges import JUDGES
from pipeline.storage.store import broken_datasets, built_prompt_versions, list_judges, results_unverified

# Judges measured by the default build (against the experts on rand_val, and on the check suite) so
# the Judges page and every reliability line have their figures on a fresh clone: both need nothing.
MEASURED_JUDGES = ("offline", "offline:lexical")


def current_prompt_version(judge: str) -> str | None:
    """The prompt version a judge would label with now, or None for judges whose labels come with
    the data (recorded, human): those results cannot go stale."""
    from pipeline.judges import JudgeError, carries_labels, get_judge

    if carries_labels(judge):
        return None
    try:
        return get_judge(judge, cache=False).prompt_version
    except JudgeError:
        return None


def build_default(force: bool = False, progress: bool = True) -> Iterator[str]:
    """Run the default datasets whose results are missing; yields one line per step."""
    from pipeline.runner import run_dataset

    datasets = known_datasets()
    # The offline judge over all of ExpertQA takes minutes on two cores, so it is not part of the
    # default build: `python -m pipeline run --dataset expertqa --judge offline` adds it.
    plan = [("demo", "recorded"), ("demo", "offline"), ("expertqa", "human")]
    rebuild: set[str] = set()  # datasets whose every judge is built again
    for name, problem in broken_datasets().items():
        if name in datasets:
            rebuild.add(name)
            yield f"note {name}: results not shown ({problem}): rebuilding"
    for name in {n for n, _ in plan} - rebuild:
        if datasets[name].path is not None and results_unverified(name):
            rebuild.add(name)
            yield f"note {name}: results written before result sets were checked: rebuilding"
    for name, judge in plan:
        info = datasets[name]
        if info.path is None:
            yield f"skip {name}: not found here ({info.how_to_get})"
            continue
        have = [] if name in rebuild else list_judges(name)
        # "openai" is built as "openai:<model>"; a registered variant ("offline:lexical") is another judge
        if not force and any(j == judge or (j.startswith(judge + ":") and j not in JUDGES) for j in have):
            # results from an older version of the judge (new prompts or calibration) are rebuilt
            current = current_prompt_version(judge)
            built = built_prompt_versions(name, judge)
            stale = stale_metrics(name, judge)
            if (current is None or current in built) and not stale:
                yield f"ok   {name} ({judge}): results already built"
                continue
            if stale:  # the labels are kept (saved parts, cache): only the scoring runs again
                yield f"note {name} ({judge}): {', '.join(stale[:4])}{' ...' if len(stale) > 4 else ''} scored by an older metric version: rescoring"
            else:
                yield f"note {name} ({judge}): built with {', '.join(sorted(built)) or 'an unknown version'}, now {current}: rebuilding"
        try:
            result = run_dataset(name, judge_name=judge, progress=progress)
        except Exception as exc:  # noqa: BLE001 - one dataset failing must not stop the app from starting
            yield f"fail {name} ({judge}): {type(exc).__name__}: {str(exc)[:200]}"
            continue
        yield f"built {name} ({result.judge}): {result.answers} answers in {result.seconds:.1f} s"
    try:
        yield from build_study_log(force)
    except Exception as exc:  # noqa: BLE001 - the Usability study page searches it itself when missing
        yield f"fail study log: {type(exc).__name__}: {str(exc)[:200]}"
    for judge in MEASURED_JUDGES:
        try:
            yield from build_agreement(force, judge)
        except Exception as exc:  # noqa: BLE001 - the app still starts without the Judges page's numbers
            yield f"fail agreement ({judge}): {type(exc).__name__}: {str(exc)[:200]}"
        try:
            yield from build_checks(force, judge)
        except Exception as exc:  # noqa: BLE001 - the app still starts without the check results
            yield f"fail checks ({judge}): {type(exc).__name__}: {str(exc)[:200]}"


def stale_metrics(dataset: str, judge: str) -> list[str]:
    """Metrics whose stored per-answer values came from an older version of the metric than the
    registry's (a rule changed, e.g. unknown support no longer counted as unsupported); [] when the
    results are current or cannot be read."""
    import pyarrow.parquet as pq

    from pipeline.metrics import METRICS
    from pipeline.storage.store import table_path

    # "openai" covers "openai:<model>"; a registered variant ("human:audit", "offline:lexical") is another judge
    have = [j for j in list_judges(dataset) if j == judge or (j.startswith(judge + ":") and j not in JUDGES)]
    out: set[str] = set()
    for name in have:
        try:
            rows = pq.read_table(table_path(dataset, "metrics", name), columns=["metric", "metric_version"]).to_pylist()
        except (OSError, ValueError, KeyError):
            continue
        built = {(r["metric"], r["metric_version"]) for r in rows}
        out |= {m for m, v in built if m in METRICS and v != METRICS[m].version}
        try:  # a summary written before pooled values were kept cannot show them: score it again
            if "pooled_value" not in pq.read_schema(table_path(dataset, "summary", name)).names:
                out.add("summary without pooled values")
        except (OSError, ValueError, KeyError):
            pass
    return sorted(out)


def build_study_log(force: bool = False) -> Iterator[str]:
    """Search the Usability study page's simulated log for the seed it opens on (about 4.5 s on two
    cores), so that its first visitor reads it from the cache folder instead of waiting for it."""
    import time

    from pipeline.study.simulate import cached_counts, cached_counts_path

    path = cached_counts_path(0)
    if not force and path.is_file():
        yield "ok   study log (seed 0): already searched"
        return
    if force:
        path.unlink(missing_ok=True)
    started = time.perf_counter()
    log = cached_counts(0)
    yield f"built study log (seed 0): {len(log)} rows in {time.perf_counter() - started:.1f} s"


def build_checks(force: bool = False, judge_name: str = "offline") -> Iterator[str]:
    """Run the behavioural check suite for a judge that needs nothing (a few seconds) and save the
    results for the Judges page, unless results of the current judge version are saved already."""
    import time

    import pyarrow.parquet as pq

    from pipeline.judges import get_judge
    from pipeline.judges.measure.checks import checks_path, load_cases, run_checks, save_checks

    judge = get_judge(judge_name, cache=False)
    saved = checks_path(judge.name)
    if not force and saved.is_file():
        try:
            versions = set(pq.read_table(saved, columns=["prompt_version"]).column("prompt_version").to_pylist())
        except (OSError, ValueError, KeyError):
            versions = set()
        if versions == {judge.prompt_version}:
            yield f"ok   checks ({judge.name}): already run"
            return
    started = time.perf_counter()
    cases = load_cases()
    results = run_checks(judge, cases)
    save_checks(results)
    yield (f"built checks ({judge.name}): {int(results['passed'].sum())} of {len(results)} passed "
           f"in {time.perf_counter() - started:.1f} s")


def build_agreement(force: bool = False, judge_name: str = "offline") -> Iterator[str]:
    """Measure a judge that needs nothing against ExpertQA's experts on the held-out rand_val split."""
    from pipeline.importers.expertqa import load_expertqa
    from pipeline.judges import get_judge
    from pipeline.judges.measure.agreement import agreement_path, evaluate_support, save_agreement

    path = known_datasets()["expertqa"].path
    if path is None:
        yield f"skip agreement ({judge_name}): ExpertQA not found"
        return
    judge = get_judge(judge_name)
    saved = agreement_path("expertqa-rand_val", judge.name)
    if not force and saved.is_file():
        measured = _saved_prompt_version(saved)
        if measured == judge.prompt_version:
            yield f"ok   agreement ({judge.name} vs experts): already measured"
            return
        yield (f"note agreement ({judge.name}): measured with {measured or 'an unknown version'}, "
               f"now {judge.prompt_version}: measuring again")
    answers = [a for a in load_expertqa(path) if a.answer.meta.get("split") == "rand_val"]
    report = evaluate_support(judge, answers)
    report["dataset"], report["split"] = "expertqa", "rand_val"
    save_agreement(report, "expertqa-rand_val", report["judge"])
    s = report["support"]
    fmt = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731 - no scorable pairs gives None
    yield (f"built agreement ({judge.name} vs experts, rand_val): n={s['n']} AUC={fmt(s['auc'])} "
           f"balanced accuracy={fmt(s['balanced_accuracy'])}")


def _saved_prompt_version(path) -> str | None:
    """The judge prompt version an agreement Parquet was measured with (None if unreadable)."""
    import json

    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path, columns=["metric", "value_json"]).to_pylist()
        row = next((r for r in table if r["metric"] == "prompt_version"), None)
        return json.loads(row["value_json"]) if row else None
    except (OSError, ValueError, KeyError):
        return None
