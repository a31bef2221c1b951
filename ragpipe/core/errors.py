"""The errors users meet, and the exit codes the CLI gives them (`ragpipe --help` lists them).

Library functions raise these (each message names the file, line, field or setting and what to do); only the CLI
prints them and picks the exit code.
"""

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
