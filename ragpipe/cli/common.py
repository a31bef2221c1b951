"""What every command shares: its settings, the project's Dagster instance, running the graph through the runner
(assets/runner.py, imported only when a command runs it), one line per failed step, and the exit codes and wording of
the errors users meet (`run`)."""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from ragpipe.core import EXIT_BLOCKED, EXIT_BUSY, EXIT_INPUT, RagpipeError
from ragpipe.settings import Settings, load_settings
from ragpipe.warehouse import WarehouseBusy


def settings_from(args: argparse.Namespace) -> Settings:
    return load_settings(args.settings)


def project_root(settings: Settings) -> Path:
    return settings.source.parent


_HOME_SET_HERE: list[str] = []  # DAGSTER_HOME values this process chose itself (one per project it ran)


def instance(settings: Settings) -> Any:
    # A DAGSTER_HOME the user set wins. One this process set for an earlier project (main() called again with
    # another settings file) does not: that project's run history would make this one's assets look fresh.
    home = os.environ.get("DAGSTER_HOME")
    if home is None or home in _HOME_SET_HERE:
        os.environ["DAGSTER_HOME"] = str(project_root(settings))
        _HOME_SET_HERE.append(os.environ["DAGSTER_HOME"])
    from ragpipe.assets.runner import project_instance  # the Dagster layer, imported only when running the graph

    return project_instance(project_root(settings))


class WithoutStackTraces:
    """stderr with Dagster's stack traces left out (its console logger prints one per failed step, twice): the
    error's own message stays; `--verbose` shows everything."""

    _RECORD = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")

    def __init__(self, stream: Any):
        self._stream = stream
        self._skipping = False
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            if self._RECORD.match(line):
                self._skipping = False
            elif line.strip() == "Stack Trace:" or "DagsterExecutionStepExecutionError" in line:
                self._skipping = line.strip() == "Stack Trace:" or self._skipping
                continue
            if not self._skipping:
                self._stream.write(line + "\n")
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class Failures(list[str]):
    """One line per failed step; `input_error` when a step failed on the user's input (a broken golden set file,
    settings), as the Dagster layer's door marks it: fix the input, rerunning will not."""

    input_error: bool = False


def failure_lines(result: Any) -> Failures:
    """One line per failed step: the asset and its error's own message (a GoldenSetError lists its problems)."""
    from ragpipe.assets.errors import is_input_failure
    from ragpipe.assets.runner import step_error

    out = Failures()
    for ev in result.all_events:
        if ev.is_step_failure and ev.step_failure_data and ev.step_failure_data.error:
            cls, message = step_error(ev.step_failure_data.error)
            out.append(f"{ev.step_key} failed: {cls}: {message}")
            out.input_error = out.input_error or is_input_failure(ev.step_failure_data)
    if out:
        return out
    for ev in result.all_events:  # the run itself failed (e.g. its executor could not start): that error, one line
        error = getattr(ev.event_specific_data, "error", None) if ev.event_type_value == "PIPELINE_FAILURE" else None
        if error is not None:
            cls, message = step_error(error)
            return Failures([f"run {result.run_id} failed before any step ran: {cls}: {' '.join(message.split())}"])
    return Failures([f"run {result.run_id} failed before any step ran"])


def failure_code(failures: list[str]) -> int:
    """EXIT_INPUT when a step failed on bad input: fix it, rerunning will not; else EXIT_BLOCKED."""
    return EXIT_INPUT if getattr(failures, "input_error", False) else EXIT_BLOCKED


def report_failure(result: Any, verbose: bool = False) -> Failures:
    lines = failure_lines(result)
    for line in lines:
        print(f"ragpipe: {line}", file=sys.stderr)
    if verbose:
        for ev in result.all_events:
            if ev.is_step_failure and ev.step_failure_data and ev.step_failure_data.error:
                print(ev.step_failure_data.error.to_string(), file=sys.stderr)
    print(
        f"run {result.run_id} failed{'' if verbose else ' (--verbose for the stack trace; the run page in the UI has it too)'}",
        file=sys.stderr,
    )
    return lines


def check_store(settings: Settings) -> None:
    """Fail before running the graph when the object store is unusable (missing bucket, dead endpoint), rather than
    after parsing the whole corpus; raises ObjectStoreError naming the URI and what to do."""
    if settings.lancedb_is_remote:
        from ragpipe.embed import open_store

        open_store(settings)


def bring_up_to_date(args: argparse.Namespace, trigger: str) -> list[str]:
    """Materialize what is missing or stale through the Dagster graph (the run appears in the UI's history).
    Returns the failures, one line each (empty when the run succeeded)."""
    from ragpipe.assets.runner import materialize_stale

    settings = settings_from(args)
    check_store(settings)
    verbose = getattr(args, "verbose", False)
    t0 = time.perf_counter()
    stderr = sys.stderr
    sys.stderr = stderr if verbose else WithoutStackTraces(stderr)
    try:
        selected, result = materialize_stale(
            str(settings.source),
            instance(settings),
            tags={"ragpipe/trigger": trigger},
            multiprocess=getattr(args, "multiprocess", False),
        )
    finally:
        sys.stderr = stderr
    secs = time.perf_counter() - t0
    if result is None:
        print(f"everything is up to date ({secs:.1f} s)")
        return []
    if not result.success:
        return report_failure(result, verbose)
    print(f"materialized {', '.join(selected)} in run {result.run_id} ({secs:.1f} s)")
    return []


def eval_summary(settings: Settings) -> Any:
    from ragpipe.reports import load_summary
    from ragpipe.warehouse import connect

    with connect(settings.duckdb_path, read_only=True) as con:
        return load_summary(con)


def run(args: argparse.Namespace) -> int:
    """The command's exit code; an error that is the user's to fix is one line on stderr, never a stack trace."""
    try:
        return int(args.func(args) or 0)
    except WarehouseBusy as exc:
        print(f"ragpipe: {exc}", file=sys.stderr)
        return EXIT_BUSY
    except (RagpipeError, FileNotFoundError) as exc:
        print(f"ragpipe: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except BrokenPipeError:  # `ragpipe score ... | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
