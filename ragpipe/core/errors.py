"""The errors users meet, and the exit codes the CLI gives them (`ragpipe --help` lists them).

Library functions raise these (each message names the file, line, field or setting and what to do); only the CLI
prints them and picks the exit code.
"""

import os

EXIT_OK = 0
EXIT_BLOCKED = 1  # the gate blocked (a blocking verdict, or an evaluation that failed for another reason)
EXIT_INPUT = 2  # a usage, settings or golden set file error: fix the input
EXIT_BUSY = 3  # the warehouse stayed locked by a writer longer than --wait


class RagpipeError(Exception):
    """Base of every error that is the user's to fix."""


class InputError(RagpipeError):
    """The user's input is wrong (a settings file, a golden set, a storage URI, an export request): the same input
    fails the same way, so it is never retried, and the CLI exits EXIT_INPUT. The Dagster layer classifies a failed
    step by this type (ragpipe.assets.errors), never by the class's name."""


class NotUtf8Error(InputError, ValueError):
    """A file the user wrote that is not UTF-8: the message names the file, the line and the byte."""

    def __init__(self, path: os.PathLike[str] | str, line: int, byte: int, found: bytes, what: str):
        self.path, self.line = str(path), line
        self.detail = f"byte {byte} ({found!r}) is not UTF-8; save the {what} as UTF-8"
        super().__init__(f"{path}: line {line}: {self.detail}")


def read_user_text(path: os.PathLike[str] | str, what: str) -> str:
    """A file the user wrote, as text; one that is not UTF-8 raises NotUtf8Error (an encoding the user's editor
    chose is theirs to fix, and no crash)."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise NotUtf8Error(path, line, exc.start, data[exc.start : exc.start + 1], what) from None
