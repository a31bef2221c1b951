"""One test's verdicts over time, each beside the cause of its change since the previous run (verdict_timeline)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import duckdb

from ragpipe.core import RagpipeError


class UnknownTest(RagpipeError, LookupError):
    """No judged run holds a verdict for this question id."""


@dataclass(frozen=True)
class HistoryRow:
    started_at: dt.datetime
    eval_run_id: str
    trigger: str | None
    verdict: str
    anchor_rank: int | None
    unverified: bool
    reason: str
    old_verdict: str | None
    old_anchor_rank: int | None
    old_unverified: bool | None
    cause: str

    @property
    def changed(self) -> bool:
        """The verdict, the unverified flag or the anchor rank differs from the previous run (or this is the first)."""
        return self.cause in ("first run", "new test") or (self.verdict, self.unverified, self.anchor_rank) != (
            self.old_verdict,
            self.old_unverified,
            self.old_anchor_rank,
        )


def history(con: duckdb.DuckDBPyConnection, question_id: str, limit: int | None = None) -> list[HistoryRow]:
    """Oldest first; the newest `limit` runs when given. Raises UnknownTest naming a few ids that do exist."""
    rows = con.execute(
        "SELECT started_at, eval_run_id, trigger, new_verdict, new_anchor_rank, new_unverified, reason, old_verdict, "
        "old_anchor_rank, old_unverified, cause FROM verdict_timeline WHERE question_id = ? ORDER BY started_at",
        [question_id],
    ).fetchall()
    if not rows:
        known = [
            r[0]
            for r in con.execute(
                "SELECT DISTINCT question_id FROM verdicts ORDER BY jaro_winkler_similarity(question_id, ?) DESC LIMIT 5",
                [question_id],
            ).fetchall()
        ]
        hint = f"; closest ids: {', '.join(known)}" if known else "; no run has been judged yet (run `ragpipe ci`)"
        raise UnknownTest(f"no verdict recorded for test {question_id!r}{hint}")
    out = [HistoryRow(*r) for r in rows]
    return out[-limit:] if limit else out
