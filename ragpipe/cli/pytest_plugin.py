"""`pytest --ragpipe [SETTINGS]`: the golden set in a team's own pytest run. The graph is brought up to date first (as
`ragpipe ci` does, through Dagster), then each golden test is a pytest item carrying its verdict, so JUnit XML,
pytest-html and every other pytest report include the golden set:

- pass: passed; fail and error: failed, with the question, the answer and the reason;
- did_not_run: skipped, with the reason (its trap or evidence was not retrieved: the test did not run);
- needs_review: failed when [gate].block holds it (the default), else xfailed;
- an unverified test (validated under another embedder) fails when [gate].block holds "unverified".

The session's exit status follows the gate as `ragpipe ci` does: a blocking verdict that pytest shows as skipped (a
test that did not run) still makes the run fail, named in the summary. Registered through the `pytest11` entry point;
nothing happens without --ragpipe.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

_ROWS = pytest.StashKey[list[Any]]()
_BLOCK = pytest.StashKey[tuple[str, ...]]()
_SELECTED = pytest.StashKey[list[Any]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragpipe", "the golden set as pytest items")
    group.addoption(
        "--ragpipe",
        nargs="?",
        const="",
        default=None,
        metavar="SETTINGS",
        help="run the ragpipe golden set (settings file: SETTINGS, else $RAGPIPE_SETTINGS or ./ragpipe.toml) and "
        "report each test as a pytest item",
    )
    group.addoption(
        "--ragpipe-no-update",
        action="store_true",
        help="report the latest verdicts in the warehouse without bringing the graph up to date first",
    )


class GoldenSet(pytest.File):
    """The golden set file; its items come from the latest verdicts, not from parsing."""

    def collect(self) -> list[pytest.Item]:
        from ragpipe.golden import GoldenSetError, load_golden

        try:
            lines = {t.question_id: t.line for t in load_golden(self.path).tests}
        except (GoldenSetError, OSError):
            lines = {}
        block = self.config.stash[_BLOCK]
        return [GoldenTest.from_parent(self, name=row.question_id, row=row, block=block, line=lines.get(row.question_id, 1))
                for row in self.config.stash[_ROWS]]  # fmt: skip


class GoldenVerdict(Exception):
    """A verdict that fails the item; its message is the whole report."""


class GoldenTest(pytest.Item):
    def __init__(self, *, row: Any, block: tuple[str, ...], line: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.row = row
        self.block = block
        self.line = line  # of the test in the golden file: where reports point
        self.user_properties += [("verdict", row.verdict), ("kind", row.kind), ("reason", row.reason)]

    def runtest(self) -> None:
        r = self.row
        if "unverified" in self.block and r.unverified:
            raise GoldenVerdict(self._report(f"unverified under the current embedder (tagged {r.test_embedder_tag})"))
        if r.verdict == "pass":
            return
        try:
            if r.verdict == "did_not_run":
                pytest.skip(f"did not run: {r.reason}")
            if r.verdict == "needs_review" and "needs_review" not in self.block:
                pytest.xfail(f"needs review: {r.reason}")
        except (pytest.skip.Exception, pytest.xfail.Exception) as exc:
            exc._use_item_location = True  # type: ignore[union-attr]  # reported at the test's line, as skip marks are
            raise
        raise GoldenVerdict(self._report(r.verdict))

    def _report(self, verdict: str) -> str:
        r = self.row
        answer = r.answer if len(r.answer) <= 400 else r.answer[:400] + " ..."
        return f"{r.question_id} ({r.kind}): {verdict}\n  question: {r.question}\n  answer:   {answer}\n  reason:   {r.reason}"

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, GoldenVerdict):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.line - 1, f"golden test {self.row.question_id}"


def _evaluate(config: pytest.Config) -> tuple[Path, list[Any], tuple[str, ...]]:
    from ragpipe.cli.common import bring_up_to_date, eval_summary
    from ragpipe.settings import SettingsError, load_settings

    given = config.getoption("ragpipe")
    try:
        settings = load_settings(given or None)
        if settings.golden.path is None:
            raise SettingsError(f"{settings.source}: set [golden].path to the golden set file")
        if not config.getoption("ragpipe_no_update"):
            failures = bring_up_to_date(argparse.Namespace(settings=str(settings.source)), "pytest")
            if failures:
                raise pytest.UsageError("ragpipe: the evaluation failed:\n" + "\n".join(failures))
        summary = eval_summary(settings) if settings.duckdb_path.exists() else None
    except SettingsError as exc:
        raise pytest.UsageError(f"ragpipe: {exc}") from None
    if summary is None:
        raise pytest.UsageError("ragpipe: no evaluation results yet (run without --ragpipe-no-update)")
    return settings.golden.path, summary.rows, settings.gate.block


@pytest.hookimpl(tryfirst=True)  # before -k and -m deselect: the golden tests are selectable like any other
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("ragpipe") is None:
        return
    path, rows, block = _evaluate(config)
    config.stash[_ROWS], config.stash[_BLOCK] = rows, block
    items.extend(GoldenSet.from_parent(session, path=path.resolve()).collect())


def pytest_collection_finish(session: pytest.Session) -> None:
    """The rows of the golden tests this session runs (-k and -m may have left some out)."""
    session.config.stash[_SELECTED] = [item.row for item in session.items if isinstance(item, GoldenTest)]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    rows, block = session.config.stash.get(_SELECTED, []), session.config.stash.get(_BLOCK, ())
    if exitstatus == 0 and "did_not_run" in block and any(r.verdict == "did_not_run" for r in rows):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a test that did not run is not a pass: the gate blocks


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    rows, block = config.stash.get(_SELECTED, []), config.stash.get(_BLOCK, ())
    if not rows:
        return
    blocking = [r for r in rows if r.verdict in block or ("unverified" in block and r.unverified)]
    counts = ", ".join(f"{sum(r.verdict == v for r in rows)} {v}" for v in sorted({r.verdict for r in rows}))
    terminalreporter.section("ragpipe")
    terminalreporter.write_line(f"{len(rows)} golden tests: {counts}; [gate].block = {', '.join(block)}")
    if blocking:
        ids = ", ".join(r.question_id for r in blocking[:20]) + (" ..." if len(blocking) > 20 else "")
        terminalreporter.write_line(f"BLOCKED by {len(blocking)}: {ids}")
