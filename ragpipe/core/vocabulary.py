"""The words the tables, reports, settings and code share: verdicts and stamp statuses, spelled once."""

from typing import Literal, get_args

VerdictName = Literal["pass", "fail", "needs_review", "did_not_run", "error"]
VERDICTS: tuple[VerdictName, ...] = get_args(VerdictName)

StampStatus = Literal["unchanged", "moved", "split", "missing", "new", "no_quote"]
STAMP_STATUSES: tuple[StampStatus, ...] = get_args(StampStatus)
# `ragpipe golden restamp --write` writes new chunk ids for these (the golden file's ids are out of date).
REWRITES_FILE: tuple[StampStatus, ...] = ("moved", "split", "new")
# Listed under STAMPS MOVED in the CI summary: the anchor moved, or it can no longer be found.
NEEDS_ATTENTION: tuple[StampStatus, ...] = ("moved", "split", "missing", "no_quote")
