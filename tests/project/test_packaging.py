"""What `pip install ragpipe` puts in a team's environment: one top-level name, `ragpipe`, and every package of it.

The Dagster layer lives in ./assets beside ./definitions.py (the code location) and installs as `ragpipe.assets`,
so it cannot shadow, or be shadowed by, a team's own `assets` package."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")  # setuptools' build folder, not the checkout's
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)]
    done = subprocess.run(cmd, cwd=build, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    [path] = list(out.glob("ragpipe-*.whl"))
    return zipfile.ZipFile(path)


@pytest.mark.slow
def test_the_wheel_installs_only_ragpipe_at_top_level(wheel: zipfile.ZipFile) -> None:
    top = {name.split("/")[0] for name in wheel.namelist()}
    assert {t for t in top if not t.endswith(".dist-info")} == {"ragpipe"}


@pytest.mark.slow
def test_the_wheel_holds_every_package_and_the_dagster_layer(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    expected = {f"ragpipe/{p.relative_to(ROOT / 'ragpipe').as_posix()}" for p in (ROOT / "ragpipe").rglob("*.py")}
    expected |= {f"ragpipe/assets/{p.relative_to(ROOT / 'assets').as_posix()}" for p in (ROOT / "assets").rglob("*.py")}
    expected |= {f"ragpipe/{p.relative_to(ROOT / 'ragpipe').as_posix()}" for p in (ROOT / "ragpipe").rglob("*.sql")}
    expected |= {"ragpipe/reading/entailer/layers.safetensors", "ragpipe/reading/entailer/card.json"}  # the reader
    missing = sorted(expected - names)
    assert missing == [], f"add their packages to [tool.setuptools].packages in pyproject.toml: {missing[:10]}"


def test_the_code_location_imports_the_layer_by_its_installed_name() -> None:
    text = (ROOT / "definitions.py").read_text(encoding="utf-8")
    assert "from ragpipe.assets.location import defs" in text
    stray = [
        str(p.relative_to(ROOT))
        for folder in ("ragpipe", "assets", "tests", "bench", "examples")
        for p in (ROOT / folder).rglob("*.py")
        if any(line.lstrip().startswith(("from assets", "import assets")) for line in p.read_text().splitlines())
    ]
    assert stray == []  # `assets` alone would load a second copy of the layer from the working directory


@pytest.mark.slow
@pytest.mark.dagster
def test_a_team_code_location_builds_from_the_installed_layer(tmp_path: Path) -> None:
    """docs/embedding.md's example, run from a folder that is not the checkout (so ./assets is out of reach)."""
    (tmp_path / "assets").mkdir()  # the team's own `assets` package, which ragpipe must not shadow
    (tmp_path / "assets" / "__init__.py").write_text(
        "import dagster as dg\n\n@dg.asset\ndef team_asset() -> int:\n    return 1\n\nmy_assets = [team_asset]\n"
    )
    code = (
        "import sys\nimport dagster as dg\nimport ragpipe\nfrom ragpipe.assets import build_definitions\n"
        "from assets import my_assets\n"
        f"defs = dg.Definitions.merge(build_definitions({str(ROOT / 'ragpipe.toml')!r}), dg.Definitions(assets=my_assets))\n"
        "keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}\n"
        "print(sys.modules['assets'].__file__, 'team_asset' in keys, 'verdicts' in keys)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == [str(tmp_path / "assets" / "__init__.py"), "True", "True"]


def test_the_readme_names_every_module_of_the_dagster_layer() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    unnamed = sorted(
        p.name for p in (ROOT / "assets").glob("*.py") if p.stem != "__init__" and f"`{p.name}`" not in readme
    )
    assert unnamed == [], f"say what these hold in the README's layout: {unnamed}"
