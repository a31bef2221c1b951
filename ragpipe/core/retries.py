"""How long to wait before calling a server again: what its `Retry-After` asks (seconds or an HTTP date, at most a
minute), else exponential backoff with jitter. Shared by every HTTP client of ragpipe (the app under test, the
OpenAI-compatible answerer and judge, the embeddings API)."""

from __future__ import annotations

import email.utils
import random
import time


def retry_after(value: str | None) -> float | None:
    """Seconds a `Retry-After` header asks for ("120" or an HTTP date), or None when absent or unreadable."""
    if not value:
        return None
    if value.strip().isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_s(attempt: int, asked: float | None = None) -> float:
    """The wait before attempt `attempt + 1`: `asked` (a Retry-After) up to 60 s, else 0.25 s doubling up to 8 s,
    times a jitter between 0.5 and 1.5."""
    if asked is not None:
        return min(60.0, asked)
    return min(8.0, 0.25 * 2**attempt) * (0.5 + random.random())
