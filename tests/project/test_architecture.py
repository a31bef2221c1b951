"""The house rules, checked.

ragpipe/ is a set of packages in pipeline order (ORDER): a package imports only packages before it, and only through
their public names (what its __init__ exports), never their submodules. No import circle; the library imports without
Dagster; importing a package is cheap (the heavy libraries load inside the functions that need them); modules and
functions of a readable size.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

# The pipeline, in order: each unit (a package of ragpipe/, or one of its two top-level modules) imports only units
# listed before it, so no stage imports a later one.
ORDER = [
    "core",  # errors, text, vocabulary, the machine, lazy exports: shared by every stage
    "settings",  # the settings file, one module per section
    "warehouse",  # where everything is kept: DuckDB, object storage, SQL, the Parquet export
    "ingest",  # corpus -> documents -> chunks
    "embed",  # chunks -> embeddings, the LanceDB store
    "reading",  # how an answer is read: refusals and matching (a golden test's kind already needs it)
    "golden",  # the golden set: load, validate, quotes, restamp
    "rag",  # the RAG under test: retrieval, the answerers and their client
    "verdicts",  # the verdict rule, the judge, scoring outside answers
    "evaluate",  # golden set -> stamps -> retrievals -> answers -> verdicts over the warehouse
    "reports",  # the CI summary, one test's history, compare
    "niah",  # the long-context evaluation, built on the stages above
    "monitor",  # the app's production traces: rates per day, judged against the days before
    "versions",  # every stage's code version (reads each stage package)
    "cli",  # the command line; its graph-running commands reach the Dagster layer (assets/) inside the command
]
TOP_LEVEL_MODULES = {"versions"}  # the units that are a module, not a package

MAX_LINES = 400
MAX_FUNCTION_LINES = 80
LONG_BY_EXEMPTION: set[str] = set()  # "path::function" of a function allowed past the limit, with the reason why
HEAVY = ("torch", "sentence_transformers", "lancedb", "unstructured", "transformers", "matplotlib", "pyarrow", "spacy")


DAGSTER_LAYER = "ragpipe.assets"  # ./assets, installed under ragpipe's name (pyproject.toml's package-dir)
DAGSTER_INTERNALS = "ragpipe.assets.dagster_internals"  # the one module allowed to import `dagster._`
PRIVATE_DAGSTER = re.compile(r"^dagster\._\w")


def _modules(folder: str) -> dict[str, Path]:
    """Module name -> file for the .py files under ROOT/folder (./assets is the module ragpipe.assets)."""
    base = ROOT / folder
    prefix = "ragpipe." if folder == "assets" else ""
    return {
        prefix + ".".join(f.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): f
        for f in base.rglob("*.py")
    }


def _imports(path: Path, known: set[str]) -> set[str]:
    """The project modules `path` imports, at any depth (function-level imports count: they run too)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                out.add(full if full in known else node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out & known


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found, state = [], {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for dep in sorted(graph[node]):
            if state.get(dep) == "open":
                found.append(path[path.index(dep) :] + [dep])
            elif dep not in state:
                visit(dep, [*path, dep])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def _unit(module: str) -> str | None:
    """The ORDER unit a ragpipe module belongs to (None: ragpipe's own __init__, the Dagster layer, or not ragpipe)."""
    parts = module.split(".")
    if module == DAGSTER_LAYER or module.startswith(DAGSTER_LAYER + "."):
        return None
    return parts[1] if parts[0] == "ragpipe" and len(parts) > 1 else None


def _public(unit: str) -> set[str]:
    return set(importlib.import_module(f"ragpipe.{unit}").__all__)


def _crossings(path: Path, own: str | None) -> list[tuple[int, str, str, list[str]]]:
    """(line, target unit, how, names) for every import of another ragpipe unit in `path`: how is "from-package"
    (`from ragpipe.embed import x`), "package" (`from ragpipe import embed`, then `embed.x`), or "submodule"."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[tuple[int, str, str, list[str]]] = []
    aliases: dict[str, str] = {}  # a name bound to a unit package -> the unit
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "ragpipe":
                for a in node.names:
                    if a.name != own and a.name in ORDER:
                        aliases[a.asname or a.name] = a.name
                        out.append((node.lineno, a.name, "package", []))
                continue
            unit = _unit(node.module)
            if unit is None or unit == own:
                continue
            depth = len(node.module.split("."))
            how = "from-package" if depth == 2 else "submodule"
            out.append((node.lineno, unit, how, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            for a in node.names:
                unit = _unit(a.name)
                if unit is not None and unit != own:
                    out.append((node.lineno, unit, "package" if a.name.count(".") == 1 else "submodule", []))
    for node in ast.walk(tree):  # what the code reads from a unit bound as a package
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            out.append((node.lineno, aliases[node.value.id], "from-package", [node.attr]))
    return out


def _library_files() -> list[tuple[str, Path]]:
    """(module, file) of the code the rules hold for: ragpipe/, assets/ and definitions.py."""
    files = [*_modules("ragpipe").items(), *_modules("assets").items(), ("definitions", ROOT / "definitions.py")]
    return sorted(files)


def test_order_lists_every_unit_once() -> None:
    units = {p.name for p in (ROOT / "ragpipe").iterdir() if (p / "__init__.py").exists()}
    units |= {p.stem for p in (ROOT / "ragpipe").glob("*.py") if p.stem != "__init__"}
    assert sorted(ORDER) == sorted(units) and len(set(ORDER)) == len(ORDER)
    assert units - set(TOP_LEVEL_MODULES) == {u for u in units if (ROOT / "ragpipe" / u / "__init__.py").exists()}


def test_packages_import_each_other_only_through_their_public_names() -> None:
    bad = []
    for module, path in _library_files():
        for line, unit, how, names in _crossings(path, _unit(module)):
            where = f"{path.relative_to(ROOT)}:{line}"
            if unit in TOP_LEVEL_MODULES:
                bad += [f"{where}: ragpipe.{unit}.{n} is private" for n in names if n.startswith("_")]
            elif how == "submodule":
                bad.append(f"{where}: imports a submodule of ragpipe.{unit}; import its public names from the package")
            else:
                bad += [f"{where}: ragpipe.{unit} does not export {n!r}" for n in names if n not in _public(unit)]
    assert bad == []


def test_no_unit_imports_a_later_one() -> None:
    bad = []
    for module, path in _modules("ragpipe").items():
        own = _unit(module)
        if own is None:
            continue
        for line, unit, _, _ in _crossings(path, own):
            if ORDER.index(unit) > ORDER.index(own):
                bad.append(f"{path.relative_to(ROOT)}:{line}: {own} imports {unit}, which comes after it in ORDER")
    assert bad == []


def test_only_the_cli_reaches_the_dagster_layer() -> None:
    mods = {**_modules("ragpipe"), **_modules("assets")}
    reach = {
        m
        for m, f in _modules("ragpipe").items()
        for dep in _imports(f, set(mods))
        if dep == DAGSTER_LAYER or dep.startswith(DAGSTER_LAYER + ".")
    }
    assert {m for m in reach if _unit(m) != "cli"} == set()


@pytest.mark.parametrize("unit", [u for u in ORDER if u not in TOP_LEVEL_MODULES])
def test_each_package_says_what_it_is_and_exports_names_that_resolve(unit: str) -> None:
    package = importlib.import_module(f"ragpipe.{unit}")
    assert (package.__doc__ or "").strip(), f"ragpipe/{unit}/__init__.py needs a docstring saying what it holds"
    submodules = {p.stem for p in (ROOT / "ragpipe" / unit).glob("*.py")} | {
        p.name for p in (ROOT / "ragpipe" / unit).iterdir() if p.is_dir() and (p / "__init__.py").exists()
    }
    # A public name spelled like a submodule would be shadowed by it once the submodule is imported.
    assert set(package.__all__) & submodules == set()
    missing = [n for n in package.__all__ if not hasattr(package, n)]
    assert missing == []


def test_importing_a_package_loads_no_heavy_library() -> None:
    """Each package alone, every stage's code version (what the code location and `ragpipe status` read), and the
    command line (`ragpipe --help` builds the whole parser), in a fresh process."""
    code = (
        "import importlib, sys\n"
        f"for unit in {[u for u in ORDER if u not in TOP_LEVEL_MODULES]!r}:\n"
        "    importlib.import_module('ragpipe.' + unit)\n"
        "import ragpipe.versions\nimport ragpipe.cli\nragpipe.cli.build_parser()\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("package", ["ragpipe", "assets"])
def test_no_import_circle(package: str) -> None:
    mods = _modules(package)
    graph = {m: _imports(f, set(mods)) - {m} for m, f in mods.items()}
    # a package's __init__ is its own module: a submodule importing it is not a circle unless __init__ imports back
    assert _cycles(graph) == []


def test_only_the_adapter_imports_dagster_private_api() -> None:
    """`dagster._...` is Dagster's private API, free to change in any release: every use sits in one adapter module
    (assets/dagster_internals.py), which names the public alternative of each and is checked by its own tests."""
    bad = []
    for module, path in [*_library_files(), *_modules("tests").items(), *_modules("bench").items()]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names = [node.value]  # a module named in a string: `python -m dagster._daemon`
            if module != DAGSTER_INTERNALS and any(PRIVATE_DAGSTER.match(n) for n in names):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {names}")
    assert bad == []


def test_the_library_imports_without_dagster() -> None:
    """Every ragpipe module imports with `dagster` blocked: only the CLI's graph-running commands reach the Dagster
    layer (assets/), and they import it inside the command."""
    mods = sorted(_modules("ragpipe"))
    code = (
        "import importlib, sys\nsys.modules['dagster'] = None\nbad = []\n"
        f"for m in {mods!r}:\n    try:\n        importlib.import_module(m)\n"
        "    except ImportError as exc:\n        bad.append(f'{m}: {exc}')\nprint('\\n'.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "", out.stdout


def test_modules_stay_readable() -> None:
    sizes = {
        str(f.relative_to(ROOT)): len(f.read_text(encoding="utf-8").splitlines())
        for pkg in ("ragpipe", "assets")
        for f in (ROOT / pkg).rglob("*.py")
    }
    too_big = {f: n for f, n in sizes.items() if n > MAX_LINES}
    assert too_big == {}, f"split these (more than {MAX_LINES} lines): {too_big}"


def test_functions_stay_readable() -> None:
    long = {}
    for pkg in ("ragpipe", "assets"):
        for f in (ROOT / pkg).rglob("*.py"):
            for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    n = node.end_lineno - node.lineno + 1
                    name = f"{f.relative_to(ROOT)}::{node.name}"
                    if n > MAX_FUNCTION_LINES and name not in LONG_BY_EXEMPTION:
                        long[name] = n
    assert long == {}, f"split these where their logic divides (more than {MAX_FUNCTION_LINES} lines): {long}"


def test_each_registry_implements_exactly_the_names_settings_accept() -> None:
    from ragpipe.ingest import CHUNKERS
    from ragpipe.rag import ANSWERERS
    from ragpipe.settings import ANSWERER_KINDS, CHUNKER_STRATEGIES

    assert set(CHUNKERS) == set(CHUNKER_STRATEGIES)
    assert set(ANSWERERS) == set(ANSWERER_KINDS)
