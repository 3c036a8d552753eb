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


def test_metrics_are_pure():
    offenders = _offenders("pipeline.metrics", ("pipeline.judges", "pipeline.importers", "pipeline.store",
                                                "pipeline.runner", "pipeline.annotate", "pipeline.fetch", "pipeline.tables"))
    # One exception, by name: the BERTScore-style correctness metric reads word-piece vectors from the
    # offline encoder (a fixed model, no labels, no judge call), which lives beside the offline judge.
    allowed = {"pipeline.metrics.correctness": ["pipeline.judges.embedding", "pipeline.judges.embedding.ModelUnavailable",
                                                "pipeline.judges.embedding.token_vectors"]}
    assert offenders == allowed


def test_judges_never_reach_back_into_the_stages_around_them():
    assert not _offenders("pipeline.judges", ("pipeline.annotate", "pipeline.runner", "pipeline.metrics",
                                              "pipeline.tables", "pipeline.store"))


def test_only_the_cli_and_default_build_import_the_runner():
    users = {m for m, targets in IMPORTS.items() if "pipeline.runner" in targets} - {"pipeline.runner"}
    assert users <= {"pipeline.cli", "pipeline.default_data"}, users
