"""Import arrows run one way (docs/design/architecture.md): a newcomer can trust that a metric is
pure, that a judge never reaches back into the stages around it, and that result readers never
walk through the orchestrator."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _imports() -> dict[str, set[str]]:
    """Project module -> project modules (and streamlit) it imports, anywhere in the file."""
    out: dict[str, set[str]] = {}
    for folder in ("pipeline", "dashboard"):
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found: set[str] = set()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    found.add(node.module)
                    found.update(f"{node.module}.{a.name}" for a in node.names)
                elif isinstance(node, ast.Import):
                    found.update(a.name for a in node.names)
            out[module] = {m for m in found if m.split(".")[0] in ("pipeline", "dashboard", "streamlit")}
    return out


IMPORTS = _imports()


def _offenders(importer_prefix: str, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    bad = {}
    for module, targets in IMPORTS.items():
        if module == importer_prefix or module.startswith(importer_prefix + "."):
            hits = sorted(t for t in targets if any(t == f or t.startswith(f + ".") for f in forbidden))
            if hits:
                bad[module] = hits
    return bad


def test_pipeline_never_imports_the_dashboard():
    assert not _offenders("pipeline", ("dashboard", "streamlit"))


METRICS_NEVER_IMPORT = ("pipeline.judges", "pipeline.importers", "pipeline.storage.store", "pipeline.runner", "pipeline.annotate",
                        "pipeline.fetching.fetch", "pipeline.storage.tables", "pipeline.gold.similarity")


def test_metrics_are_pure():
    # no exception: the BERTScore-style correctness metric reads similarities the annotate stage
    # measured (pipeline/gold/similarity.py), it never runs the encoder itself
    assert not _offenders("pipeline.metrics", METRICS_NEVER_IMPORT)


def _reachable(module: str) -> set[str]:
    """Project modules a module imports, directly or through other project modules."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        for target in IMPORTS.get(todo.pop(), ()):
            if target in IMPORTS and target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def test_metrics_do_not_reach_judges_through_other_modules():
    for module in (m for m in IMPORTS if m.startswith("pipeline.metrics")):
        reached = sorted(t for t in _reachable(module) if any(t == f or t.startswith(f + ".") for f in METRICS_NEVER_IMPORT))
        assert not reached, (module, reached)


def test_judges_never_reach_back_into_the_stages_around_them():
    assert not _offenders("pipeline.judges", ("pipeline.annotate", "pipeline.runner", "pipeline.metrics", "pipeline.storage.tables"))
    # the judges proper never touch the result store; measuring them (pipeline.judges.measure) saves
    # its reports there (behavioural checks, agreement), like any other result
    bad = {m: hits for m, hits in _offenders("pipeline.judges", ("pipeline.storage.store",)).items()
           if not m.startswith("pipeline.judges.measure")}
    assert not bad


def test_only_the_cli_and_default_build_import_the_runner():
    users = {m for m, targets in IMPORTS.items() if "pipeline.runner" in targets} - {"pipeline.runner"}
    # `aee audit publish` writes the people's labels as a judge through the runner, which pipeline.cli
    # hands to pipeline.audit.cli: the audit's command line does not import it
    assert users <= {"pipeline.cli", "pipeline.default_data"}, users


# ---- layers and circles ------------------------------------------------------------------------
# Each module sits on one layer and imports only from its own layer or lower ones, so the house can
# be read bottom-up: records and text, then input and storage, then the judges (their shared top,
# then the offline judge, the model backends, the code that measures judges), then the metrics, the
# stages, the orchestration, the command line and the dashboard. Longest prefix wins.
LAYERS: dict[str, int] = {
    # 0 core: records, text, small shared helpers
    "pipeline": 0, "pipeline.__init__": 0, "pipeline.records": 0, "pipeline.errors": 0, "pipeline.storage.paths": 0,
    "pipeline.fetching.redact": 0, "pipeline.text.text": 0, "pipeline.text.locate": 0, "pipeline.matrices": 0, "pipeline.sources": 0,
    "pipeline.injection.injection": 0, "pipeline.injection.injection_variants": 0, "pipeline.gold.gold": 0, "pipeline.set_support": 0,
    "pipeline.prompts": 0,
    "pipeline.storage.faults": 0,
    # 1 input and storage
    "pipeline.importers": 1, "pipeline.fetching.fetch": 1, "pipeline.fetching.fetch_text": 1, "pipeline.storage.store": 1,
    "pipeline.fetching.fill_sources": 1,
    "pipeline.fetching.fetch_outcome": 1,
    "pipeline.storage.result_sets": 1,
    # where a keyed API call may go (collect, the LLM judges, the probe), and the extractor process
    "pipeline.fetching.outbound": 1, "pipeline.fetching.extract_worker": 1, "pipeline.fetching.extract_serve": 1,
    # 2-5 judges: the factory, protocol and cache; the offline judge; model backends; measuring judges
    "pipeline.judges": 2, "pipeline.judges.offline": 3, "pipeline.judges.backends": 4, "pipeline.judges.measure": 5,
    # 2 metrics: pure, beside the judges' top (test_metrics_are_pure keeps them away from judges)
    "pipeline.metrics": 2,
    # 6 stages around the judges and metrics
    "pipeline.annotate": 6, "pipeline.gold.similarity": 6, "pipeline.report.scoring": 6, "pipeline.report.second_opinion": 6,
    "pipeline.storage.tables": 6, "pipeline.aggregate": 6, "pipeline.gold.compare_gold": 6,
    "pipeline.storage.record_reads": 6,  # one answer rebuilt from its rows through the pages' records (beside tables)
    "pipeline.executor": 6,  # where the annotate stage runs: the local executor and the seam the runner hands chunks to
    # 7 orchestration and workflows
    "pipeline.runner": 7, "pipeline.collect": 7, "pipeline.conflict": 7, "pipeline.study": 7, "pipeline.default_data": 7,
    # the audit of a judge by people: samples, the label store, agreement, prediction-powered estimates
    "pipeline.audit": 7,
    # repeats and waves: how answers, sources and metrics change between askings (the runner writes
    # them); beside the audit, whose labels correct a difference for the judge's measured error
    "pipeline.consistency": 7,
    "pipeline.room": 7,  # serving a room: join codes and who may write, beside the audit's label store it guards
    "pipeline.cluster": 7,  # the annotate stage on Ray (optional extra), beside the runner it serves, never importing it
    "pipeline.page_records": 7,  # what the dashboard's pages open, written by the runner beside the tables
    # 8 interfaces: the command lines and the shipped test doubles
    "pipeline.cli": 8, "pipeline.__main__": 8, "pipeline.judges.cli": 8, "pipeline.testing": 8, "pipeline.audit.cli": 8,
    "pipeline.consistency.cli": 8,
    # 9 the dashboard
    "dashboard": 9,
}


def layer(module: str) -> int:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in LAYERS:
            return LAYERS[prefix]
    raise AssertionError(f"{module} has no layer: add it to LAYERS in tests/test_layers.py")


def test_every_module_has_a_layer():
    for module in IMPORTS:
        layer(module)


def test_imports_only_go_down_or_sideways():
    upward = sorted(f"{module} ({layer(module)}) -> {target} ({layer(target)})"
                    for module, targets in IMPORTS.items() for target in targets
                    if target in IMPORTS and layer(target) > layer(module))
    assert not upward, "\n".join(upward)


def test_no_import_circles():
    # a module is in a circle when it can reach itself through other modules (a package naming its own
    # submodules, `from pipeline.metrics import aee` inside pipeline/metrics/__init__.py, is not a circle)
    def reachable(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [t for t in IMPORTS[start] if t != start]
        while todo:
            module = todo.pop()
            if module in IMPORTS and module not in seen:
                seen.add(module)
                todo.extend(t for t in IMPORTS[module] if t != module)
        return seen

    circles = sorted(module for module in IMPORTS if module in reachable(module))
    assert not circles, circles
