"""`pytest --ragpipe`: the bundled example's golden set in a team's own pytest run, through a real pytest process:
one item per test with the verdict of `ragpipe ci`, in pytest's JUnit XML, and the exit status of the gate."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import Project, make_project

pytestmark = [pytest.mark.slow, pytest.mark.dagster, pytest.mark.model]


def pytest_run(p: Project, *args: str) -> tuple[int, str]:
    env = {**os.environ, "DAGSTER_HOME": str(p.root)}
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--ragpipe", str(p.settings_file), *args]
    done = subprocess.run(argv, cwd=p.root, env=env, capture_output=True, text=True, timeout=900)
    return done.returncode, done.stdout + done.stderr


def junit(path: Path) -> dict[str, str]:
    """test name -> passed | failure | skipped | xfail, as pytest's JUnit XML says."""
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        kinds = [c.tag for c in case if c.tag in ("failure", "error", "skipped")]
        skipped = case.find("skipped")
        xfail = skipped is not None and skipped.get("type") == "pytest.xfail"
        out[case.get("name", "")] = "xfail" if xfail else (kinds[0] if kinds else "passed")
    return out


def test_each_golden_test_is_a_pytest_item_with_its_verdict_and_the_gate_decides_the_exit(tmp_path: Path) -> None:
    p = make_project(tmp_path / "proj")
    code, out = pytest_run(p, "--junitxml", str(tmp_path / "report.xml"))
    verdicts = dict(p.sql("SELECT question_id, verdict FROM latest_verdicts"))
    assert len(verdicts) == 43 and "43 golden tests:" in out
    expected = {"pass": "passed", "fail": "failure", "error": "failure", "needs_review": "failure",
                "did_not_run": "skipped"}  # fmt: skip
    assert junit(tmp_path / "report.xml") == {q: expected[v] for q, v in verdicts.items()}
    blocked = any(v != "pass" for v in verdicts.values())
    assert code == (1 if blocked else 0), out
    # the latest verdicts, without running the graph again; -k selects golden tests like any other
    not_run = sorted(q for q, v in verdicts.items() if v == "did_not_run")
    if not_run:
        code, out = pytest_run(p, "--ragpipe-no-update", "-rs", "-k", not_run[0])
        assert code == 1 and "1 skipped, 42 deselected" in out  # skipped, yet a test that did not run blocks
        assert "golden.jsonl:" in out and "did not run: " in out and f"BLOCKED by 1: {not_run[0]}" in out
    passing = sorted(q for q, v in verdicts.items() if v == "pass")
    code, out = pytest_run(p, "--ragpipe-no-update", "-k", passing[0])
    assert code == 0 and "1 passed, 42 deselected" in out
    # needs_review is a failure while [gate].block holds it; out of the gate it is xfailed
    settings = p.settings_file.read_text()
    p.settings_file.write_text(settings + '\n[gate]\nblock = ["fail", "did_not_run", "error"]\n')
    code, out = pytest_run(p, "--ragpipe-no-update", "--junitxml", str(tmp_path / "lenient.xml"))
    review = [q for q, v in verdicts.items() if v == "needs_review"]
    assert all(junit(tmp_path / "lenient.xml")[q] == "xfail" for q in review)


def test_a_project_that_cannot_run_is_a_usage_error_naming_the_file(tmp_path: Path) -> None:
    p = make_project(tmp_path / "proj")
    p.settings_file.write_text(p.settings_file.read_text().replace("[golden]", "[golden]\nbogus = 1"))
    code, out = pytest_run(p)
    assert code == 4 and str(p.settings_file) in out and "bogus" in out  # pytest's usage-error status
