"""`ragpipe init` in a directory that has documents and nothing of ragpipe: the files it writes, what it finds, and
its printed next commands taking the directory to a first `ragpipe ci` with no file written by hand."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT

from ragpipe.cli import main
from ragpipe.cli.init import DAGSTER_YAML
from ragpipe.settings import load_settings
from ragpipe.warehouse import connect

pytestmark = [pytest.mark.slow, pytest.mark.dagster, pytest.mark.model]


def new_repo(root: Path) -> Path:
    """A team's repository: documents in a folder among other files, no ragpipe file."""
    for part in ("reports", "policies"):
        shutil.copytree(EXAMPLES / "corpus" / part, root / "knowledge" / part)
    (root / "README.md").write_text("# Our assistant\n", encoding="utf-8")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('hi')\n", encoding="utf-8")
    (root / ".gitignore").write_text("__pycache__/\n", encoding="utf-8")
    return root


def next_commands(out: str) -> list[str]:
    return [m.group(1).split("    #")[0].strip() for m in re.finditer(r"^  \d\. (ragpipe .*)$", out, re.M)]


def test_init_drafts_a_golden_set_and_its_next_commands_reach_a_first_ci(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = new_repo(tmp_path / "repo")
    monkeypatch.chdir(root)
    monkeypatch.setenv("DAGSTER_HOME", str(root))
    monkeypatch.delenv("RAGPIPE_SETTINGS", raising=False)  # the printed commands read ./ragpipe.toml
    assert main(["init", "--negatives", "6"]) == 0
    out = capsys.readouterr().out
    settings = load_settings(root / "ragpipe.toml")
    assert settings.corpus.dir == root / "knowledge" and settings.golden.path == root / "golden.jsonl"
    assert "(corpus: knowledge, 17 documents; golden set: golden.jsonl)" in out
    assert (root / ".gitignore").read_text().splitlines()[:2] == ["__pycache__/", "# ragpipe"]
    assert "warehouse/" in (root / ".gitignore").read_text()
    steps = next_commands(out)
    assert len(steps) == 2 and steps[0].startswith("ragpipe golden suggest --accept sug_") and steps[1] == "ragpipe ci"
    assert "warehouse/suggestions.md" in out  # the review sheet, step 1
    for command in steps:
        assert main(shlex.split(command)[1:]) in (0, 1)  # ci: 1 when the gate blocks
    with connect(settings.duckdb_path, read_only=True) as con:
        judged = con.execute("SELECT count(*) FROM latest_verdicts").fetchone()[0]
    assert judged == len(steps[0].split()) - 4 > 0  # every accepted draft test judged
    assert main(["init"]) == 2 and "exists; `ragpipe init --force`" in capsys.readouterr().err


def test_init_finds_another_tools_golden_set_and_imports_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = new_repo(tmp_path / "repo")
    shutil.copytree(EXAMPLES / "corpus", root / "knowledge", dirs_exist_ok=True)
    (root / "evals").mkdir()
    shutil.copy(ROOT / "tests" / "fixtures" / "imports" / "ragas_testset.jsonl", root / "evals" / "testset.jsonl")
    monkeypatch.chdir(root)
    monkeypatch.setenv("DAGSTER_HOME", str(root))
    monkeypatch.delenv("RAGPIPE_SETTINGS", raising=False)  # the printed commands read ./ragpipe.toml
    assert main(["init"]) == 0
    out = capsys.readouterr().out
    assert "ragas golden set found: evals/testset.jsonl" in out
    steps = next_commands(out)
    assert steps == ["ragpipe golden import evals/testset.jsonl --from ragas --write", "ragpipe ci",
                     "ragpipe golden revalidate --write"]  # fmt: skip
    assert main(shlex.split(steps[0])[1:]) == 2  # 7 of 8 imported; the one it cannot anchor is named
    assert main(shlex.split(steps[1])[1:]) in (0, 1)
    with connect(load_settings(root / "ragpipe.toml").duckdb_path, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM latest_verdicts").fetchone()[0] == 7


def test_init_says_what_to_pass_when_it_finds_no_documents_and_nobody_can_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["init", str(tmp_path / "empty")]) == 2
    assert "Folder of the documents not found; pass --corpus DIR" in capsys.readouterr().err
    assert not (tmp_path / "empty" / "ragpipe.toml").exists()


def test_the_dagster_yaml_init_writes_is_the_projects_own() -> None:
    assert DAGSTER_YAML.format(dir="warehouse") == (ROOT / "dagster.yaml").read_text()
