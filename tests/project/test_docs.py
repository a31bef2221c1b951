"""The docs kept true: the CLI reference is the parser's own help, and every command, settings section, asset, check,
job, sensor and schedule a user meets is named somewhere in the README or docs/."""

from __future__ import annotations

import importlib.util

from conftest import ROOT

from ragpipe.settings import SECTIONS

DAGSTER_OWN = {"__ASSET_JOB"}  # Dagster's implicit job, not ragpipe's


def _docs() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")])


def test_the_cli_reference_is_the_parsers_help() -> None:
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "docs" / "cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.render() == (ROOT / "docs" / "cli.md").read_text(encoding="utf-8"), (
        "run `python docs/cli_reference.py` (or make fmt) and commit docs/cli.md"
    )


def test_every_settings_section_is_documented() -> None:
    docs = _docs()
    assert [s for s in SECTIONS if f"[{s}]" not in docs] == []


def test_every_name_of_the_code_location_is_documented() -> None:
    """The names come from the snapshot that tests/assets/test_dagster_layer.py keeps equal to the definitions."""
    docs = _docs()
    names = [line.split()[1] for line in (ROOT / "tests" / "snapshots" / "definitions.txt").read_text().splitlines()]
    undocumented = [
        n for n in names if n not in DAGSTER_OWN and f"`{n}`" not in docs and f"`{n.split(':')[-1]}`" not in docs
    ]
    assert undocumented == []
