"""Which Dagster instance the CLI uses: the user's DAGSTER_HOME, else the project's own, per project."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write_settings

from ragpipe.cli import common as cli
from ragpipe.settings import load_settings


def _project(root: Path) -> Path:
    root.mkdir()
    write_settings(root / "ragpipe.toml", {"warehouse": {"dir": "warehouse"}, "corpus": {"dir": "corpus"}})
    (root / "corpus").mkdir()
    return root / "ragpipe.toml"


def test_each_project_gets_its_own_instance_unless_the_user_chose_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.setattr(cli, "_HOME_SET_HERE", [])
    a, b = (load_settings(_project(tmp_path / n)) for n in ("a", "b"))
    cli.instance(a)
    home_a = cli.os.environ["DAGSTER_HOME"]
    cli.instance(b)  # main() run again in the same process for another project: not a's history
    assert (Path(home_a), Path(cli.os.environ["DAGSTER_HOME"])) == (a.source.parent, b.source.parent)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "a"))  # the user's choice wins
    monkeypatch.setattr(cli, "_HOME_SET_HERE", [])
    cli.instance(b)
    assert cli.os.environ["DAGSTER_HOME"] == str(tmp_path / "a")
