"""The CI recipes a team copies (examples/ci/): their commands run in order, as the runner would, in a fresh directory
holding a project (the bundled example). The steps that are the runner's own (`uses:` actions: checkout, caches,
uploads, the comment) and the install step (ragpipe is already installed here) are left out; everything else runs as
written, with the variables the runner sets."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT, Project, make_project

pytestmark = [pytest.mark.slow, pytest.mark.dagster, pytest.mark.model]
RECIPES = ROOT / "examples" / "ci"


def shell(script: str, cwd: Path, env: dict[str, str]) -> int:
    return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=env, timeout=900).returncode


def runner_env(p: Project, **extra: str) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)  # the installed ragpipe, where the install step would put it
    env = {k: v for k, v in os.environ.items() if k != "RAGPIPE_SETTINGS"}  # a fresh runner: ./ragpipe.toml
    return {**env, "PATH": f"{bin_dir}:{os.environ['PATH']}", "DAGSTER_HOME": str(p.root), **extra}


def reports_are_there(p: Project) -> None:
    cases = list(ET.parse(p.root / "ragpipe-junit.xml").getroot().iter("testcase"))
    assert len(cases) == 43
    assert "ragpipe" in (p.root / "ragpipe-summary.md").read_text()
    assert (p.root / "ragpipe-compare.md").read_text().strip()  # the pull-request comment


def test_the_github_actions_workflow_runs_its_steps_in_order(tmp_path: Path) -> None:
    p = make_project(tmp_path / "repo")
    workflow = yaml.safe_load((RECIPES / "github-actions.yml").read_text())
    steps: list[dict[str, Any]] = workflow["jobs"]["golden-set"]["steps"]
    install = next(s for s in steps if s.get("name") == "Install ragpipe")
    assert "pip install ragpipe" in install["run"]
    assert {s.get("with", {}).get("path") for s in steps if "cache" in s.get("uses", "")} == {".venv", "warehouse"}
    summary, output, path_file = tmp_path / "step-summary.md", tmp_path / "output", tmp_path / "path"
    env = runner_env(p, GITHUB_EVENT_NAME="pull_request", GITHUB_BASE_REF="main", GITHUB_STEP_SUMMARY=str(summary),
                     GITHUB_OUTPUT=str(output), GITHUB_PATH=str(path_file), GITHUB_WORKSPACE=str(p.root))  # fmt: skip
    outcomes: dict[str, str] = {}
    ran = []
    for step in steps:
        if "run" not in step or step is install:
            continue
        condition = step.get("if", "")
        assert condition in ("", "github.event_name == 'pull_request'", "always()"), condition
        script = re.sub(r"\$\{\{\s*steps\.(\w+)\.outcome\s*\}\}", lambda m: outcomes[m.group(1)], step["run"])
        assert "${{" not in script, f"an expression this test does not evaluate: {script}"
        code = shell(script, p.root, env)
        if step.get("id"):
            outcomes[step["id"]] = "success" if code == 0 else "failure"
        ran.append((step.get("name"), code))
        if not step.get("continue-on-error"):
            assert code == 0 or step.get("name") == "Gate", (step.get("name"), code)
    verdicts = dict(p.sql("SELECT question_id, verdict FROM latest_verdicts"))
    blocked = any(v != "pass" for v in verdicts.values())
    assert ran[-1] == ("Gate", 1 if blocked else 0)  # the job fails when the gate blocks, after the reports are out
    assert outcomes["ci"] == ("failure" if blocked else "success")
    reports_are_there(p)
    assert "ragpipe" in summary.read_text()  # the run's page


def test_the_gitlab_job_runs_its_script_in_order(tmp_path: Path) -> None:
    p = make_project(tmp_path / "repo")
    job = yaml.safe_load((RECIPES / "gitlab-ci.yml").read_text())["ragpipe"]
    assert "pip install ragpipe" in job["before_script"][0]
    assert job["artifacts"]["reports"]["junit"] == "ragpipe-junit.xml"
    env = runner_env(p, CI_PROJECT_DIR=str(p.root), CI_MERGE_REQUEST_TARGET_BRANCH_NAME="main")
    code = shell("\n".join(job["script"]), p.root, env)
    verdicts = dict(p.sql("SELECT question_id, verdict FROM latest_verdicts"))
    assert code == (1 if any(v != "pass" for v in verdicts.values()) else 0)
    reports_are_there(p)
    shutil.rmtree(p.root / "warehouse")  # a fresh runner without the cache: the same job works from nothing
    assert shell("\n".join(job["script"]), p.root, env) == code
