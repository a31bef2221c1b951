"""How a stage reports progress: a `Log` is any callable taking one line (Dagster's context.log.info, print, a list's
append); `no_log` is the default where nobody listens; `heartbeat` reports long work that has no progress events of
its own."""

from __future__ import annotations

import contextlib
import io
import sys
import threading
import time
from typing import Callable, Iterator, TextIO

Log = Callable[[str], None]


def no_log(line: str) -> None:
    """A Log that drops every line."""


def time_left(done: int, total: int, elapsed_s: float) -> str:
    """ "about 2 min 30 s left" at the rate so far ('' before the first item and after the last)."""
    if not done or done >= total:
        return ""
    left = elapsed_s / done * (total - done)
    return f"about {left / 60:.0f} min {left % 60:.0f} s left" if left >= 60 else f"about {left:.0f} s left"


class _Tee(io.TextIOBase):
    """Writes through to the stream it wraps and keeps the last progress-bar line (tqdm redraws with '\\r')."""

    def __init__(self, stream: TextIO):
        self.stream, self.last = stream, ""

    def write(self, s: str) -> int:
        with contextlib.suppress(ValueError, OSError):
            self.stream.write(s)
        line = s.replace("\n", "\r").split("\r")
        self.last = next((part.strip() for part in reversed(line) if part.strip()), self.last)
        return len(s)

    def flush(self) -> None:
        with contextlib.suppress(ValueError, OSError):
            self.stream.flush()


@contextlib.contextmanager
def heartbeat(log: Log, what: str, every_s: float = 20.0) -> Iterator[None]:
    """Long work without progress events of its own (a library's model build with a terminal progress bar): one line
    every `every_s` while it runs, "building X: 2 min 40 s so far; 45%|... [01:10<01:30]", the bar's latest state
    (its count and estimate) taken from what the work writes to stderr, which still reaches stderr."""
    tee, stop, t0 = _Tee(sys.stderr), threading.Event(), time.perf_counter()

    def beat() -> None:
        while not stop.wait(every_s):
            s = time.perf_counter() - t0
            so_far = f"{s // 60:.0f} min {s % 60:.0f} s" if s >= 60 else f"{s:.0f} s"
            log(f"{what}: {so_far} so far{'; ' + tee.last if tee.last else ''}")

    thread = threading.Thread(target=beat, name="ragpipe-heartbeat", daemon=True)
    with contextlib.redirect_stderr(tee):
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
