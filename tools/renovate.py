#!/usr/bin/env python3
"""Issue 44, the mechanical part (NOT YET RUN on main: written and tried on a copy of main on
2026-11-29, where it collected 2,157 tests before and after; the moves wait for a full suite run): pipeline/'s loose families into packages, tests/ by layer, every
reference rewritten, docs/design/architecture.md's first section written from the result.

    python renovate.py CHECKOUT                  # move, rewrite, then check (compileall, ruff, mypy, collect)
    python renovate.py CHECKOUT --dry-run        # print what would move and which files would change
    python renovate.py CHECKOUT --no-checks      # move and rewrite only
    python renovate.py CHECKOUT --python PY      # the interpreter for the checks (default: CHECKOUT/.venv,
                                                 # else /work/main/.venv, else this one)

Idempotent: every step looks at the tree as it is (a module already in its package is not moved, a
reference already rewritten matches no pattern, a test already in its folder stays), so a second
run prints "nothing to do" and changes nothing. Test files added later at the top of tests/ are
placed by their imports on the next run. Nothing is committed: the lead reviews `git status` and
commits. Each move is printed ("git mv A B") for the closing note.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

# ------------------------------------------------------------------------------------------------
# what moves where
# ------------------------------------------------------------------------------------------------

# package -> (its job in one line, the modules that move into it). Each package's face
# (__init__.py) names its submodules and imports none of them (see FACE below).
FAMILIES: dict[str, tuple[str, list[str]]] = {
    "text": ("Answer text: statements with character spans, citation markers, abbreviations, headings, "
             "how far a citation reaches, and finding pre-split claims in their answer.",
             ["text", "abbreviations", "headings", "citation_scope", "locate"]),
    "fetching": ("Reaching the network safely: fetching a cited page and turning it into text (what a failure "
                 "means, the extractor process, filling missing sources), where a call with the user's API key may "
                 "go, and keeping that key out of everything written or shown.",
                 ["fetch", "fetch_text", "fetch_outcome", "extract_serve", "extract_worker", "outbound", "fill_sources",
                  "redact"]),
    "storage": ("Results on disk: folders, Parquet schemas and writers, records <-> rows, result sets that "
                "change whole, and the named crash points of the write path.",
                ["store", "result_sets", "tables", "paths", "faults"]),
    "injection": ("Text in a source that tries to instruct the model or the judge instead of informing the "
                  "reader, and its disguised rewordings.",
                  ["injection", "injection_variants"]),
    "gold": ("Reference (gold) answers: how they are stored and matched, an answer's similarity with them "
             "(measured in the annotate stage), and `aee compare-gold`.",
             ["gold", "similarity", "compare_gold"]),
    "report": ("One answer's report: every metric with its rating, statements and matrices (`aee score`, "
               "Re-score, the inspector), and the same answer under two judges side by side.",
               ["scoring", "second_opinion"]),
}
MOVES = {m: pkg for pkg, (_, mods) in FAMILIES.items() for m in mods}  # old module -> package

FACE = '''"""{job_wrapped}

This package's face: the submodules below are what other code may use, imported by their
full name (`from pipeline.{pkg}.{first} import ...`). This file imports none of them, so importing one
submodule never loads its siblings (the fetcher's extractor process, for one, starts with only what
it needs) and no circle can run through the package's face. A name that starts with `_` stays inside
its submodule.
"""

__all__ = [{names}]
'''

# Test placement: tests/<dir>/ for a test file by what it exercises. Overrides first (basename -> dir;
# "" keeps the file at tests/, where the house-wide tests live beside conftest.py and the helpers).
TEST_OVERRIDES: dict[str, str] = {
    "test_layout.py": "", "test_layers.py": "", "test_docs.py": "", "test_packaging.py": "",
    "test_determinism.py": "", "test_one_story.py": "",
    "test_concurrency.py": "browser",
    "test_bench_smoke.py": "bench", "test_bench_smoke_more.py": "bench", "test_pages_scale_bench.py": "bench",
    "test_sentences_golden.py": "pipeline/text",
    # what each tests, where its imports or its name point elsewhere
    "test_fetch_outcome.py": "pipeline/fetching",  # the fetch failures' words (and the page showing them)
    "test_result_sets.py": "pipeline/storage",
    "test_ray_executor.py": "pipeline/cluster",  # borrows bench's fake LLM server
    "test_compare_over_time.py": "pipeline/consistency",
    "test_engine_hostile.py": "pipeline/importers",
    "test_kill_resume.py": "pipeline",  # the runner killed and resumed
    "test_uncertain_band.py": "pipeline/judges",
    "test_aee_importer.py": "pipeline/importers",  # the AEE release's importer (test_import_refusals borrows from it)  # the judge's uncertain band (and how the app words it)
}
# what nearly every test imports says nothing about what it tests: not counted when placing a test
SHARED_IN_TESTS = {"testing", "records", "errors"}
TEXT_SUFFIXES = {".py", ".md", ".toml", ".ini", ".cfg", ".txt", ".yml", ".yaml", ".sh", ""}
SKIP_DIRS = ("data/", "tests/fixtures/", ".venv/", "answer_engine_audit.egg-info/")

ARCH_START = "<!-- start-here: written by the renovation script from the packages' faces; edit the script -->"
ARCH_END = "<!-- /start-here -->"


def sh(args: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, check=check, capture_output=True, text=True)


def say(line: str) -> None:
    print(line, flush=True)


# ------------------------------------------------------------------------------------------------
# 1. source moves
# ------------------------------------------------------------------------------------------------


def move_sources(root: Path, dry: bool) -> list[str]:
    done = []
    for pkg, (job, mods) in FAMILIES.items():
        folder = root / "pipeline" / pkg
        face = folder / "__init__.py"
        for mod in mods:
            old, new = root / "pipeline" / f"{mod}.py", folder / f"{mod}.py"
            if old.is_file() and not new.exists():
                done.append(f"git mv pipeline/{mod}.py pipeline/{pkg}/{mod}.py")
                say(done[-1])
                if not dry:
                    folder.mkdir(exist_ok=True)
                    sh(["git", "mv", str(old.relative_to(root)), str(new.relative_to(root))], root)
                    fix_file_depth(new, 1)
            elif old.is_file() and new.exists():
                say(f"WARNING: both pipeline/{mod}.py and pipeline/{pkg}/{mod}.py exist; left as they are")
            elif not new.exists():
                say(f"note: pipeline/{mod}.py is not in this tree; nothing to move")
        present = [m for m in mods if (folder / f"{m}.py").is_file() or (dry and (root / "pipeline" / f"{m}.py").is_file())]
        text = FACE.format(job_wrapped=textwrap.fill(job, 100, initial_indent="", subsequent_indent=""), pkg=pkg, first=present[0] if present else mods[0],
                           names=", ".join(f'"{m}"' for m in present))
        if not face.is_file() or (face.read_text(encoding="utf-8") != text and _face_is_ours(face)):
            done.append(f"write pipeline/{pkg}/__init__.py (the package's face: {', '.join(present)})")
            say(done[-1])
            if not dry:
                folder.mkdir(exist_ok=True)
                face.write_text(text, encoding="utf-8")
                sh(["git", "add", str(face.relative_to(root))], root)
    return done


def _face_is_ours(face: Path) -> bool:
    return "This file imports none of them" in face.read_text(encoding="utf-8")


def fix_file_depth(path: Path, deeper: int) -> bool:
    """A file moved `deeper` folders down: its `Path(__file__)...parent` chains reach as far as before."""
    text = path.read_text(encoding="utf-8")

    def repl(m: re.Match) -> str:
        ups = m.group(3).count(".parent") if m.group(3) else int(m.group(4)) + 1
        return f"{m.group(1)}(__file__){m.group(2) or '.resolve()'}.parents[{ups - 1 + deeper}]"

    new = re.sub(r"\b(_?Path)\(__file__\)(\.resolve\(\))?(?:((?:\.parent)+)(?![\w\[])|\.parents\[(\d+)\])", repl, text)
    if new != text:
        path.write_text(new, encoding="utf-8")
        return True
    return False


# ------------------------------------------------------------------------------------------------
# 2. references
# ------------------------------------------------------------------------------------------------


def module_map() -> dict[str, str]:
    return {f"pipeline.{m}": f"pipeline.{pkg}.{m}" for m, pkg in MOVES.items()}


def _dotted_patterns() -> list[tuple[re.Pattern, str]]:
    out = []
    for old, new in module_map().items():
        mod = old.split(".")[1]
        pkg = MOVES[mod]
        guard = ""
        if pkg == mod:  # pipeline.text (the old module) vs pipeline.text.<submodule> (the new package)
            guard = r"(?!\.(?:" + "|".join(FAMILIES[pkg][1]) + r")\b)"
        out.append((re.compile(r"(?<![\w.])" + re.escape(old) + r"(?!\w)" + guard), new))
    for mod, pkg in MOVES.items():  # file paths: pipeline/fetch.py -> pipeline/fetching/fetch.py
        out.append((re.compile(r"(?<![\w/.-])pipeline/" + re.escape(mod) + r"\.py\b"), f"pipeline/{pkg}/{mod}.py"))
    return out


def _import_from_rewrite(node: ast.ImportFrom) -> list[str] | None:
    """New `from ... import ...` statements for one that names moved modules, or None."""
    if node.level or not node.module:
        return None
    names = node.names
    alias = lambda a: a.name + (f" as {a.asname}" if a.asname else "")  # noqa: E731
    if node.module == "pipeline":
        groups: dict[str, list[str]] = {}
        for a in names:
            target = f"pipeline.{MOVES[a.name]}" if a.name in MOVES else "pipeline"
            groups.setdefault(target, []).append(alias(a))
        if list(groups) == ["pipeline"]:
            return None
        return [f"from {mod} import {', '.join(items)}" for mod, items in groups.items()]
    parts = node.module.split(".")
    if len(parts) >= 2 and parts[0] == "pipeline" and parts[1] in MOVES:
        mod = parts[1]
        pkg = MOVES[mod]
        if pkg == mod and len(parts) == 2:
            # `from pipeline.text import X`: X a submodule of the new package (already rewritten) or a
            # name of the old module pipeline.text (to rewrite to pipeline.text.text)
            subs = [a for a in names if a.name in FAMILIES[pkg][1]]
            rest = [a for a in names if a.name not in FAMILIES[pkg][1]]
            if not rest:
                return None
            out = [f"from pipeline.{pkg}.{mod} import {', '.join(alias(a) for a in rest)}"]
            if subs:
                out.insert(0, f"from pipeline.{pkg} import {', '.join(alias(a) for a in subs)}")
            return out
        if pkg == mod and len(parts) >= 3 and parts[2] in FAMILIES[pkg][1]:
            return None  # already pipeline.text.<submodule>
        new = ".".join(["pipeline", pkg, *parts[1:]])
        return [f"from {new} import {', '.join(alias(a) for a in names)}"]
    return None


def rewrite_python(text: str) -> str:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return rewrite_text(text)
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            start, end = node.lineno - 1, (node.end_lineno or node.lineno) - 1
            new = _import_from_rewrite(node)
            if new is None:
                continue
            before = lines[start][: node.col_offset]
            after = lines[end][node.end_col_offset:] if node.end_col_offset is not None else "\n"
            if before.strip() or (after.strip() and not after.strip().startswith("#")):
                continue  # shares its line with other code: left to the text patterns
            indent = before
            stmts = [indent + s for s in new]
            stmts[-1] += after.rstrip("\n")
            edits.append((start, end, [s + "\n" for s in stmts]))
    for start, end, new_lines in sorted(edits, reverse=True):
        lines[start : end + 1] = new_lines
    # the text patterns on every line that is not a `from ... import` statement (recomputed on the
    # edited text: the rewritten statements are right as they are)
    text = "".join(lines)
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level and node.module.split(".")[0] == "pipeline":
            skip.update(range(node.lineno - 1, node.end_lineno or node.lineno))
    return "".join(line if k in skip else rewrite_text(line) for k, line in enumerate(lines))


PATTERNS: list[tuple[re.Pattern, str]] = []


def rewrite_text(text: str) -> str:
    for pattern, new in PATTERNS:
        text = pattern.sub(new, text)
    return text


def candidate_files(root: Path) -> list[Path]:
    listed = sh(["git", "ls-files", "--cached", "--others", "--exclude-standard"], root).stdout.splitlines()
    out = []
    for rel in listed:
        if rel.startswith(SKIP_DIRS):
            continue
        path = root / rel
        name = path.name
        if not path.is_file():
            continue
        if path.suffix in TEXT_SUFFIXES and (path.suffix or name in ("Makefile", "run") or rel.startswith(".ci/")):
            out.append(path)
    return out


def rewrite_references(root: Path, dry: bool, extra: list[tuple[re.Pattern, str]]) -> list[str]:
    changed = []
    faces = {root / "pipeline" / pkg / "__init__.py" for pkg in FAMILIES}
    faces.add(Path(__file__).resolve())  # this script, when it lives in the checkout (tools/renovate.py)
    for path in candidate_files(root):
        if path.resolve() in faces:
            continue  # written by this script, in the new names already
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if path.suffix == ".py":
            new = rewrite_python(text)
        elif path.name == "pyproject.toml":
            # a line of a packages list names a package, never an old module: left alone (a package
            # named like its old module, "pipeline.text", would read as the module)
            new = "".join(line if re.fullmatch(r'\s*"pipeline[\w.]*",?\s*(#.*)?\n?', line) else rewrite_text(line)
                          for line in text.splitlines(keepends=True))
        else:
            new = rewrite_text(text)
        for pattern, repl in extra:
            new = pattern.sub(repl, new)
        if new != text:
            changed.append(str(path.relative_to(root)))
            if not dry:
                path.write_text(new, encoding="utf-8")
    return changed


def update_pyproject(root: Path, dry: bool) -> bool:
    path = root / "pyproject.toml"
    text = path.read_text(encoding="utf-8")
    missing = [f"pipeline.{pkg}" for pkg in FAMILIES if f'"pipeline.{pkg}",' not in text]
    if not missing:
        return False
    anchor = '    "pipeline",\n'
    if anchor not in text:
        say("WARNING: pyproject.toml has no `\"pipeline\",` line in [tool.setuptools] packages; add: " + ", ".join(missing))
        return False
    new = text.replace(anchor, anchor + "".join(f'    "{m}",\n' for m in missing), 1)
    say(f"pyproject.toml: packages += {', '.join(missing)}")
    if not dry:
        path.write_text(new, encoding="utf-8")
    return True


# ------------------------------------------------------------------------------------------------
# 3. tests by layer
# ------------------------------------------------------------------------------------------------


def _packages(root: Path) -> set[str]:
    return {p.name for p in (root / "pipeline").iterdir() if (p / "__init__.py").is_file()}


def place_test(path: Path, root: Path, packages: set[str]) -> str:
    """The folder under tests/ a test file belongs in ("" = tests/ itself)."""
    name = path.name
    if name in TEST_OVERRIDES:
        return TEST_OVERRIDES[name]
    if name.startswith("test_browser"):
        return "browser"
    text = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return ""
    bench_modules = {p.stem for p in (root / "bench").glob("*.py")}
    counts: dict[str, int] = {}
    order: list[str] = []

    def seen(area: str) -> None:
        counts[area] = counts.get(area, 0) + 1
        if area not in order:
            order.append(area)

    for node in ast.walk(tree):
        mods: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            mods = [node.module] if node.module != "pipeline" else [f"pipeline.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        areas = set()
        for mod in mods:
            parts = mod.split(".")
            if parts[0] == "bench" or (parts[0] in bench_modules and parts[0] not in ("pipeline", "dashboard")):
                areas.add("bench")
            elif parts[0] == "dashboard":
                areas.add("dashboard")
            elif parts[0] == "pipeline" and len(parts) > 1 and parts[1] not in SHARED_IN_TESTS:
                top = MOVES.get(parts[1], parts[1])  # an old module name counts for its new package
                areas.add(f"pipeline/{top}" if top in packages else "pipeline")
        for area in sorted(areas):  # one count per import statement
            seen(area)
    if "bench" in counts:
        return "bench"
    if "AppTest" in text or re.search(r"[\"']pages[\"']\s*/\s*[\"']\w+\.py|pages/\w+\.py[\"']", text):
        return "pages"
    named = _named_after(name, root, packages)
    if named:
        return named
    if "dashboard" in counts:
        return "dashboard"
    pipeline = [a for a in order if a.startswith("pipeline")]
    if pipeline:
        best = max(pipeline, key=lambda a: (counts[a], -order.index(a)))
        return best
    return ""


def _named_after(name: str, root: Path, packages: set[str]) -> str:
    """tests/test_<module>[_more].py for a module or package of pipeline/: that one's folder."""
    words = name[len("test_"):-len(".py")].split("_")
    for k in range(len(words), 0, -1):
        stem = "_".join(words[:k])
        if stem in MOVES:
            return f"pipeline/{MOVES[stem]}"
        if stem in packages and stem != "testing":
            return f"pipeline/{stem}"
        if (root / "pipeline" / f"{stem}.py").is_file():
            return "pipeline"
    return ""


def move_tests(root: Path, dry: bool) -> tuple[list[str], list[tuple[re.Pattern, str]]]:
    tests = root / "tests"
    packages = _packages(root)
    if dry:  # the packages the source moves would make
        packages |= set(FAMILIES)
    moves, patterns = [], []
    for path in sorted(tests.glob("test_*.py")):
        folder = place_test(path, root, packages)
        if not folder:
            continue
        target = tests / folder / path.name
        if target.exists():
            say(f"WARNING: {target.relative_to(root)} exists; tests/{path.name} left where it is")
            continue
        moves.append(f"git mv tests/{path.name} tests/{folder}/{path.name}")
        say(moves[-1])
        patterns.append((re.compile(r"(?<![\w/.-])tests/" + re.escape(path.name) + r"\b"), f"tests/{folder}/{path.name}"))
        if not dry:
            target.parent.mkdir(parents=True, exist_ok=True)
            sh(["git", "mv", str(path.relative_to(root)), str(target.relative_to(root))], root)
            fix_file_depth(target, len(Path(folder).parts))
    # a test module imported by another by its bare name must sit in the same folder (or be a helper
    # at tests/): pytest puts only the importing file's own folder and tests/ on sys.path
    where = {q.name: q.parent for q in tests.rglob("test_*.py")}
    for q in sorted(tests.rglob("test_*.py")):
        for m in re.finditer(r"^\s*(?:from|import) (test_\w+)", q.read_text(encoding="utf-8"), re.M):
            other = where.get(f"{m.group(1)}.py")
            if other is not None and other != q.parent and not dry:
                say(f"WARNING: {q.relative_to(root)} imports {m.group(1)} from {other.relative_to(root)}: move the "
                    f"shared part into a helper module at tests/, or place both in one folder (TEST_OVERRIDES)")
    return moves, patterns


# ------------------------------------------------------------------------------------------------
# 4. docs/design/architecture.md's first section
# ------------------------------------------------------------------------------------------------


def _first_sentence(doc: str | None) -> str:
    doc = " ".join((doc or "").strip().split())
    m = re.match(r"(.+?[.!?])(\s|$)", doc)
    return (m.group(1) if m else doc) or "(no docstring)"


def start_here(root: Path) -> str:
    rows = []
    for folder in sorted(p for p in (root / "pipeline").iterdir() if (p / "__init__.py").is_file()):
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8")))
        rows.append(f"| `pipeline/{folder.name}/` | {_first_sentence(doc)} |")
    tops = []
    for path in sorted((root / "pipeline").glob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        tops.append(f"| `pipeline/{path.name}` | {_first_sentence(doc)} |")
    others = []
    for rel in ("dashboard", "pages", "bench", "tests"):
        others.append(rel)
    return f"""{ARCH_START}
## Start here

Read this section first; the rest of the page follows one number's route in detail.

**The stages, in order.** An answer file enters through an importer (`pipeline/importers/`), which
yields typed records (`pipeline/records.py`) with the answer's statements split by
`pipeline/text/`; sources without text may be fetched (`pipeline/fetching/`). The annotate stage
(`pipeline/annotate.py`, the only caller of a judge from `pipeline/judges/`) labels each statement
and each statement x source pair; the metrics (`pipeline/metrics/`, pure functions) turn labels into
numbers; `pipeline/storage/` writes them as Parquet tables in a result set; `pipeline/aggregate.py`
sums a dataset up per engine and query type. `pipeline/runner.py` drives these stages chunk by chunk
(`aee run`, through `pipeline/executor.py` locally or `pipeline/cluster/` on Ray); `pipeline/cli.py`
is the command line over all of it. The dashboard (`dashboard/`, the pages in `pages/`) only reads
the tables.

**Where a number on a page comes from.** A page (`pages/<name>.py`) asks `dashboard/data.py` for a
table of the chosen dataset and judge; `pipeline/storage/store.py` finds it in the dataset's current
result set; the table was written by `pipeline/runner.py` from the metric values of
`pipeline/metrics/` (one row per answer and metric, their mean and interval in the summary table of
`pipeline/aggregate.py`), computed from the judge's labels of `pipeline/annotate.py`. One answer
scored live (`aee score`, Re-score, the inspector) takes the same metrics through
`pipeline/report/scoring.py`, so both routes show the same numbers.

**The packages of `pipeline/`** (each `__init__.py` names what others may use):

| package | its job |
|---|---|
{chr(10).join(rows)}

**The modules at the top of `pipeline/`**: the stages and what every stage shares.

| module | its job |
|---|---|
{chr(10).join(tops)}

Beside the pipeline: `dashboard/` (the app's shared code: loaders, charts, rendering), `pages/` (one
script per page, registered in `dashboard/pages_registry.py`), `bench/` (the benchmark: each row
registers itself in a `bench/*_rows.py` module, `bench/run.py` runs them), `tests/` (mirrors the
source: `tests/pipeline/<package>/`, `tests/dashboard/`, `tests/pages/`, `tests/bench/`,
`tests/browser/`; the shared fixtures and helpers in `tests/` itself, `tests/conftest.py` first).
Imports only go down: tests/test_layout.py and tests/test_layers.py say how and check it.
{ARCH_END}
"""


# sentences of the page that the moves make false, and what they say instead
ARCH_FIXES = (
    ("- Tests live in `tests/`, one file per module (`tests/test_<module>.py`);",
     "- Tests live in `tests/`, mirroring the source (`tests/pipeline/<package>/test_<module>.py`, `tests/dashboard/`,\n"
     "  `tests/pages/`, `tests/bench/`, `tests/browser/`; the house-wide ones and the shared fixtures and helpers in\n"
     "  `tests/` itself);"),
)


def write_architecture(root: Path, dry: bool) -> bool:
    path = root / "docs" / "design" / "architecture.md"
    text = path.read_text(encoding="utf-8") if path.is_file() else "# Architecture\n"
    original = text
    for old, new_text in ARCH_FIXES:
        text = text.replace(old, new_text)
    block = start_here(root) if not dry else "(start-here section)"
    if ARCH_START in text and ARCH_END in text:
        i, j = text.index(ARCH_START), text.index(ARCH_END) + len(ARCH_END) + 1
        new = text[:i] + block + text[j:]
    else:
        lines = text.split("\n", 1)
        new = lines[0] + "\n\n" + block + ("\n" + lines[1].lstrip("\n") if len(lines) > 1 else "")
    if new == original:
        return False
    say("docs/design/architecture.md: the start-here section " + ("rewritten" if ARCH_START in original else "added"))
    if not dry:
        path.write_text(new, encoding="utf-8")
    return True


# ------------------------------------------------------------------------------------------------
# 5. checks
# ------------------------------------------------------------------------------------------------


def collect_count(root: Path, python: str) -> tuple[int | None, str]:
    proc = subprocess.run([python, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly"], cwd=root,
                          capture_output=True, text=True)
    m = re.search(r"(\d+) tests? collected", proc.stdout) or re.search(r"^(\d+) tests?", proc.stdout, re.M)
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-3:])
    return (int(m.group(1)) if m else None), tail


def tool(python: str, name: str) -> list[str]:
    exe = Path(python).parent / name
    return [str(exe)] if exe.is_file() else [python, "-m", name]


def checks(root: Path, python: str, before: int | None) -> bool:
    ok = True
    steps = [
        ("compileall", [python, "-m", "compileall", "-q", "pipeline", "dashboard", "pages", "bench", "tests", "app.py"]),
        ("ruff", [*tool(python, "ruff"), "check", "pipeline", "dashboard", "pages", "app.py", "bench", "tests"]),
        ("mypy", tool(python, "mypy")),
    ]
    for label, cmd in steps:
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
        out = (proc.stdout + proc.stderr).strip().splitlines()
        say(f"check {label}: exit {proc.returncode}" + (f"; {out[-1]}" if out else ""))
        if proc.returncode:
            ok = False
            for line in out[-30:]:
                say("    " + line)
    after, tail = collect_count(root, python)
    same = before is not None and after == before
    say(f"check collect-only: {before} tests before, {after} after" + ("" if same else f" (DIFFERENT)\n    {tail}"))
    return ok and same


def _line_limit(root: Path) -> int:
    m = re.search(r"^line-length\s*=\s*(\d+)", (root / "pyproject.toml").read_text(encoding="utf-8"), re.M)
    return int(m.group(1)) if m else 150


def wrap_long_lines(root: Path, files: list[str]) -> list[str]:
    """Lines a rewrite made longer than ruff allows, broken after a comma; a break is kept only when
    the file's syntax tree is the same with it (so only a line's layout changes). Returns the lines
    left too long."""
    limit = _line_limit(root)
    left = []
    for rel in files:
        path = root / rel
        if path.suffix != ".py" or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        try:
            before = ast.dump(ast.parse(text))
        except SyntaxError:
            continue
        lines = text.splitlines(keepends=True)
        changed = False
        k = 0
        while k < len(lines):
            line = lines[k]
            if len(line.rstrip("\n")) <= limit:
                k += 1
                continue
            done = False
            for cut in sorted((m.start() for m in re.finditer(", ", line[: limit - 1])), reverse=True):
                depth, opener = 0, None
                for j in range(cut, -1, -1):
                    ch = line[j]
                    if ch in ")]}":
                        depth += 1
                    elif ch in "([{":
                        if depth == 0:
                            opener = j
                            break
                        depth -= 1
                indent = " " * (opener + 1) if opener is not None else line[: len(line) - len(line.lstrip())]
                trial = lines[:k] + [line[: cut + 1] + "\n", indent + line[cut + 2 :]] + lines[k + 1 :]
                try:
                    if ast.dump(ast.parse("".join(trial))) == before:
                        lines, done, changed = trial, True, True
                        break
                except SyntaxError:
                    continue
            if not done:
                left.append(f"{rel}:{k + 1}")
            k += 1
        if changed:
            path.write_text("".join(lines), encoding="utf-8")
    return left


def sort_imports(root: Path, python: str, files: list[str]) -> None:
    """The rewritten imports sorted the way the project's ruff config wants (isort rules only)."""
    py = [f for f in files if f.endswith(".py") and (root / f).is_file()]
    if py:
        subprocess.run([*tool(python, "ruff"), "check", "--select", "I", "--fix", "-q", *py], cwd=root, capture_output=True)


# ------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--no-checks", action="store_true")
    parser.add_argument("--python", help="interpreter with pytest, ruff and mypy (default: the checkout's .venv)")
    args = parser.parse_args(argv)
    root = args.checkout.resolve()
    if not (root / "pipeline" / "__init__.py").is_file():
        parser.error(f"{root} is not a checkout of the project")
    python = args.python or next((str(p) for p in (root / ".venv/bin/python", Path("/work/main/.venv/bin/python"))
                                  if p.is_file()), sys.executable)
    os.chdir(root)
    before = None
    if not args.no_checks and not args.dry_run:
        before, tail = collect_count(root, python)
        say(f"before: {before} tests collected")

    PATTERNS[:] = _dotted_patterns()
    say("== 1. pipeline/'s families into packages")
    source_moves = move_sources(root, args.dry_run)
    say("== 2. tests/ by layer")
    test_moves, test_patterns = move_tests(root, args.dry_run)
    test_patterns.append((re.compile(r"(?<![\w/.-])tests/test_browser\*\.py"), "tests/browser/test_browser*.py"))
    say("== 3. references (imports, module paths, file paths) in code, docs, configs")
    changed = rewrite_references(root, args.dry_run, test_patterns)
    for rel in changed:
        say(f"rewrote {rel}")
    pyproject = update_pyproject(root, args.dry_run)
    if changed and not args.dry_run:
        sort_imports(root, python, changed)
        for where in wrap_long_lines(root, changed):
            say(f"note: {where} is longer than ruff's limit after the rewrite and has no safe break (ruff below decides: it exempts some lines)")
    say("== 4. docs/design/architecture.md")
    arch = write_architecture(root, args.dry_run)
    if not (source_moves or test_moves or changed or pyproject or arch):
        say("nothing to do: the tree is already renovated")
    say(f"summary: {len(source_moves)} source steps, {len(test_moves)} test moves, {len(changed)} files rewritten")
    if args.no_checks or args.dry_run:
        return 0
    say("== 5. checks")
    return 0 if checks(root, python, before) else 1


if __name__ == "__main__":
    raise SystemExit(main())
