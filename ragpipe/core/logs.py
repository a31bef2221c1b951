"""How a stage reports progress: a `Log` is any callable taking one line (Dagster's context.log.info, print, a list's
append); `no_log` is the default where nobody listens."""

from __future__ import annotations

from typing import Callable

Log = Callable[[str], None]


def no_log(line: str) -> None:
    """A Log that drops every line."""
