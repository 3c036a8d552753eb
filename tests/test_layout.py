"""The house's layout holds: no import circle, no arrow back up, no module too long to read.

Modules: every .py file under pipeline/ and dashboard/ by its dotted name (a package by its
`__init__`), pages/*.py as `pages.<name>`, app.py as `app`, and bench/*.py as `bench.<name>` (bench
scripts import their neighbours as top-level modules: `import over_time` inside bench/ is
`bench.over_time`). An import is any `import` or `from ... import` statement anywhere in a file,
inside functions too (a circle closed by a late import is still a circle). `from P import n` is an
arrow to the module `P.n` when that is a module, else to `P`. Importing `a.b.c` also runs `a` and
`a.b`; those implicit arrows to the parent packages are not counted (a package's face naming its own
submodules is not a circle).

The rules:

1. No circle: no module reaches itself through the modules it imports (pipeline/, dashboard/,
   bench/, pages/ and app.py together).
2. No arrow up between areas. The areas, bottom to top: pipeline < dashboard < pages < app.py, with
   bench/ and tests/ above all of them. A module imports only from its own area or areas below it:
   the pipeline never imports the dashboard, the pages, bench or tests; the dashboard never imports
   the pages, app.py, bench or tests; nothing but bench imports bench.
3. No arrow up inside a package tree. A module in a subpackage never imports the modules that drive
   the packages above it: the `cli` and `__main__` of any package it sits in (pipeline.cli,
   pipeline.judges.cli, ...), and pipeline's stage drivers (`DRIVERS`: the runner, the annotate
   stage, the default build), which call into the subpackages; a subpackage that needs one of them
   gets it handed in by the layer above (`aee audit publish` gets `run_dataset` from pipeline.cli).
   The shipped test doubles (`pipeline.testing`) stand outside the tree: they drive the pipeline
   from above, as a test does, and may import its command line.
4. The benchmark's rows stand apart from its runner: no bench module imports bench/run.py.
5. No module over `MAX_LINES` lines in pipeline/, dashboard/, pages/, bench/, tests/ or app.py.

tests/test_layers.py adds the finer layers inside pipeline/ (metrics pure, judges below the stages).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 700
DRIVERS = ("pipeline.runner", "pipeline.annotate", "pipeline.default_data")  # rule 3
AREAS = {"pipeline": 0, "dashboard": 1, "pages": 2, "app": 3, "bench": 4, "tests": 5}  # rule 2, bottom to top
OUTSIDE_THE_TREE = ("pipeline.testing",)  # rule 3


def _name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _files() -> dict[str, Path]:
    out = {_name(p): p for folder in ("pipeline", "dashboard", "bench") for p in (ROOT / folder).rglob("*.py")}
    out.update({_name(p): p for p in (ROOT / "pages").glob("*.py")})
    out["app"] = ROOT / "app.py"
    return out


FILES = _files()


def _resolve(module: str, importer: str) -> str | None:
    """The project module an imported name means, seen from `importer` (None: not ours)."""
    if importer.startswith("bench.") and f"bench.{module.split('.')[0]}" in FILES:
        module = f"bench.{module}"  # a bench script importing a neighbour by its bare name
    while module and module not in FILES:
        module = module.rpartition(".")[0]
    return module or None


def _targets(module: str, path: Path) -> set[str]:
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the importer's package
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, *([base] if base else [])])
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in FILES or _bare_bench(module, base, a.name) else base
                     for a in node.names]
        else:
            continue
        found.update(t for n in names if n and (t := _resolve(n, module)) and t != module)
    return found


def _bare_bench(importer: str, base: str, name: str) -> bool:
    return importer.startswith("bench.") and f"bench.{base}.{name}" in FILES


IMPORTS = {module: _targets(module, path) for module, path in FILES.items()}
PACKAGES = {module for module, path in FILES.items() if path.name == "__init__.py"}


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def test_the_checker_sees_the_house():
    # the graph it checks is the real one: known arrows are found, bench's bare names resolved
    assert "pipeline.records" in IMPORTS["pipeline.annotate"]
    assert "bench.registry" in IMPORTS["bench.run"]
    assert "bench.rows" in IMPORTS["bench.pages_scale"]
    assert len([m for m in FILES if m.startswith("pipeline.")]) > 100


def _circles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(IMPORTS):
        if start in index:
            continue
        work = [(start, iter(sorted(IMPORTS[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(IMPORTS.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_no_import_circles():
    assert not _circles(), "\n".join(" <-> ".join(c) for c in _circles())


def _area(module: str) -> int:
    return AREAS[module.split(".")[0]]


def test_no_arrow_up_between_areas():
    upward = sorted(f"{m} -> {t}" for m, targets in IMPORTS.items() for t in targets if _area(t) > _area(m))
    assert not upward, "\n".join(upward)


def _drivers_above(module: str) -> set[str]:
    """The driver modules of the packages `module` sits in, below their top (rule 3)."""
    parts = module.split(".")
    packages = [".".join(parts[:n]) for n in range(1, len(parts) - (0 if module in PACKAGES else 1) + 1)]
    packages = [p for p in packages if p in PACKAGES]
    own = packages[-1] if packages else ""
    out: set[str] = set()
    for package in packages:
        if package == own:
            continue  # a package's own modules are its siblings: not above it
        out.update(f"{package}.{name}" for name in ("cli", "__main__"))
        out.update(d for d in DRIVERS if d.rpartition(".")[0] == package)
    return out


def test_no_arrow_up_inside_a_package_tree():
    upward = sorted(f"{m} -> {t}" for m, targets in IMPORTS.items() if not any(_within(m, o) for o in OUTSIDE_THE_TREE)
                    for t in targets & _drivers_above(m))
    assert not upward, "\n".join(upward)


def test_the_rule_catches_what_it_should():
    # a subpackage's module reaching for the runner or the top command line is caught; its own
    # package's cli (a sibling) and the shared records are not
    assert {"pipeline.runner", "pipeline.cli", "pipeline.annotate"} <= _drivers_above("pipeline.audit.publish")
    assert "pipeline.audit.cli" not in _drivers_above("pipeline.audit.publish")
    assert "pipeline.records" not in _drivers_above("pipeline.audit.publish")
    assert "pipeline.judges.cli" in _drivers_above("pipeline.judges.offline.judge")
    assert not _drivers_above("pipeline.cli") & {"pipeline.runner"}  # the top may call its own drivers


def test_bench_rows_stand_apart_from_the_runner():
    users = sorted(m for m, targets in IMPORTS.items() if "bench.run" in targets)
    assert not users, users


def test_no_module_over_the_limit():
    files = [p for folder in ("pipeline", "dashboard", "pages", "bench", "tests") for p in (ROOT / folder).rglob("*.py")]
    files.append(ROOT / "app.py")
    long = sorted(f"{p.relative_to(ROOT)}: {n}" for p in files
                  if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES)
    assert not long, long

