"""`make ui` stops on SIGTERM sent to make alone, also when it was started as a background job (SIGINT ignored, as
a non-interactive shell leaves it): dagster dev maps SIGTERM onto its SIGINT handler, so the recipe restores SIGINT
first. Without that, SIGTERM and SIGINT did nothing and only SIGKILL stopped it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import ROOT, make_project
from devkit import free_port, group_members, processes_using, trim_project
from test_dagster_dev import write_instance

pytestmark = [pytest.mark.slow, pytest.mark.dagster, pytest.mark.timeout(300)]


def background_job() -> None:
    """A background job of a shell: SIGINT ignored, SIGTERM at its default."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def test_make_ui_started_in_the_background_stops_on_sigterm_to_make(tmp_path: Path) -> None:
    if subprocess.run(["make", "-q", "setup"], cwd=ROOT).returncode != 0:
        pytest.skip("make setup is not done here (make test does it first)")
    p = make_project(tmp_path / "proj")
    trim_project(p)
    home = tmp_path / "home"
    write_instance(home)
    port = free_port()
    log = home / "make-ui.log"
    env = {**os.environ, "RAGPIPE_SETTINGS": str(p.settings_file)}
    with open(log, "wb") as out:
        make = subprocess.Popen(
            ["make", "--no-print-directory", "ui", f"UI_PORT={port}", f"DAGSTER_HOME={home}"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=background_job,
        )
    try:
        deadline = time.monotonic() + 180
        while True:
            assert make.poll() is None, log.read_text(errors="replace")[-3000:]
            with contextlib.suppress(OSError):
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=5).status == 200:
                    break
            assert time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            time.sleep(0.5)
        make.send_signal(signal.SIGTERM)  # to make only, as `kill <pid of make>` does
        make.wait(timeout=60)
        deadline = time.monotonic() + 30
        while (group_members(make.pid) or processes_using(home)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not group_members(make.pid) and not processes_using(home), log.read_text(errors="replace")[-3000:]
        assert "Dagster services shut down" in log.read_text(errors="replace")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(make.pid, signal.SIGKILL)
