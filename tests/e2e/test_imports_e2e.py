"""A team's golden set from another tool, through the CLI on the bundled example: each file written by its own
library imported and anchored in the ingested corpus (the row that cannot be is named), run by `ragpipe ci`, and the
verdicts exported back in Ragas' and promptfoo's formats, which import again as the same tests."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import ROOT, Project, copied_project, make_project, run_in_project

from ragpipe.cli import main
from ragpipe.golden import load_golden

pytestmark = [pytest.mark.slow, pytest.mark.dagster, pytest.mark.model]
FIXTURES = ROOT / "tests" / "fixtures" / "imports"
FILES = [("ragas_testset.jsonl", "ragas"), ("ragas_testset.csv", "ragas"), ("deepeval_goldens.json", "deepeval"),
         ("deepeval_goldens.csv", "deepeval"), ("promptfooconfig.yaml", "promptfoo"),
         ("phoenix_dataset.csv", "langsmith"), ("phoenix_dataset.jsonl", "langsmith")]  # fmt: skip


def cli(p: Project, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["--settings", str(p.settings_file), *args])
    return code, capsys.readouterr().out


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("imports") / "proj"
    assert run_in_project(make_project(root, with_golden=False), "ingest") == 0
    return root


@pytest.fixture
def proj(ingested: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    return copied_project(ingested, tmp_path / "proj", monkeypatch)


def test_each_tools_file_is_imported_anchored_and_the_row_it_cannot_anchor_is_named(
    proj: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    imported = {}
    for name, fmt in FILES:
        out_file = proj.root / f"{name}.golden.jsonl"
        code, out = cli(proj, capsys, "golden", "import", str(FIXTURES / name), "--from", fmt, "--out", str(out_file),
                        "--write")  # fmt: skip
        assert code == 2, out  # one row was not imported: exit 2, the rest written
        assert re.search(r"positive -\s+not imported: its reference context is not in the corpus.*'Two years'", out)
        assert f"7 of 8 tests of {FIXTURES / name} imported (5 positive, 2 negative" in out
        golden = load_golden(out_file)
        imported[name] = [(t.kind, t.question, t.quote, t.source) for t in golden.tests]
        for t in golden.tests:
            assert t.anchor_ids and t.quote, t  # stamped with its chunk, its quote as the corpus words it
            if t.kind == "positive":
                assert any(part in t.quote for part in t.expected_answer.replace(" in cash", "").split(", 20")), t
    first = imported.pop("ragas_testset.jsonl")
    assert all(tests == first for tests in imported.values())  # the same tests, whichever tool's file they came from
    assert (
        "negative",
        "What was Halvorsen Robotics' revenue in the third quarter of 2022?",
        "Halvorsen Robotics reported revenue of $48.7 million for the third quarter of 2023.",
        "reports/q3-2023.md",
    ) in first  # fmt: skip  (the trap proposed: the same figure, another quarter)


def test_imported_tests_run_and_their_verdicts_go_back_to_ragas_and_promptfoo(
    proj: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = cli(
        proj, capsys, "golden", "import", str(FIXTURES / "ragas_testset.jsonl"), "--from", "ragas", "--write"
    )
    assert code == 2 and proj.golden.is_file()  # [golden].path, created
    assert cli(proj, capsys, "ci")[0] in (0, 1)
    verdicts = dict(proj.sql("SELECT question_id, verdict FROM latest_verdicts"))
    assert sorted(verdicts) == ["neg_01", "neg_02", "pos_01", "pos_02", "pos_03", "pos_04", "pos_05"]
    ragas, promptfoo = proj.root / "verdicts.jsonl", proj.root / "results.json"
    assert cli(proj, capsys, "export", "--format", "ragas", "--to", str(ragas))[0] == 0
    rows = [json.loads(line) for line in ragas.read_text().splitlines()]
    assert {r["ragpipe_question_id"]: r["ragpipe_verdict"] for r in rows} == verdicts
    assert all(r["retrieved_contexts"] and isinstance(r["response"], str) for r in rows)
    # the export reads back as the same tests: every line already in the golden set, nothing new
    code, out = cli(proj, capsys, "golden", "import", str(ragas), "--from", "ragas")
    assert code == 0 and out.count("already in golden.jsonl as") == 7 and "0 of 7 tests" in out
    assert cli(proj, capsys, "export", "--format", "promptfoo", "--to", str(promptfoo))[0] == 0
    results = json.loads(promptfoo.read_text())["results"]
    counts = [sum(v == "pass" for v in verdicts.values()),
              sum(v in ("did_not_run", "error") for v in verdicts.values())]  # fmt: skip
    assert [results["stats"]["successes"], results["stats"]["errors"]] == counts
    assert results["stats"]["successes"] + results["stats"]["failures"] + results["stats"]["errors"] == 7


def test_the_same_question_twice_in_a_file_is_imported_once(proj: Project, capsys: pytest.CaptureFixture[str]) -> None:
    first = (FIXTURES / "ragas_testset.jsonl").read_text().splitlines()[0]
    twice = proj.root / "twice.jsonl"
    twice.write_text(f"{first}\n{first}\n")
    code, out = cli(
        proj, capsys, "golden", "import", str(twice), "--from", "ragas", "--out", str(proj.root / "g.jsonl")
    )
    assert code == 0 and "line 2" in out and "already on line 1 of twice.jsonl" in out
    assert "1 of 2 tests" in out and "1 already there (listed)" in out
