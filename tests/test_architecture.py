"""The house rules, checked: no import circle, a library that imports without Dagster, modules of a readable size."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

MAX_LINES = 500
BIG_BY_DESIGN = {"ragpipe/cli.py"}  # one command per function; the argparse tree with its help texts


def _modules(package: str) -> dict[str, Path]:
    base = ROOT / package
    return {
        ".".join(f.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): f for f in base.rglob("*.py")
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


@pytest.mark.parametrize("package", ["ragpipe", "assets"])
def test_no_import_circle(package: str) -> None:
    mods = _modules(package)
    graph = {m: _imports(f, set(mods)) - {m} for m, f in mods.items()}
    # a package's __init__ is its own module: a submodule importing it is not a circle unless __init__ imports back
    assert _cycles(graph) == []


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
    too_big = {f: n for f, n in sizes.items() if n > MAX_LINES and f not in BIG_BY_DESIGN}
    assert too_big == {}, f"split these (more than {MAX_LINES} lines): {too_big}"


def test_each_registry_implements_exactly_the_names_settings_accept() -> None:
    from ragpipe.ingest import CHUNKERS
    from ragpipe.rag import ANSWERERS
    from ragpipe.settings import ANSWERER_KINDS, CHUNKER_STRATEGIES

    assert set(CHUNKERS) == set(CHUNKER_STRATEGIES)
    assert set(ANSWERERS) == set(ANSWERER_KINDS)
