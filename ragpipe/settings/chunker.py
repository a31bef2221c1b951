"""[chunker]: the strategy and its sizes (chunk ids and the chunker tag derive from every parameter)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragpipe.settings.base import SettingsError, names

# Registered under the same names in ragpipe.ingest.CHUNKERS (a test keeps the two equal).
CHUNKER_STRATEGIES = {
    "by_title": "a chunk never spans a section title and never cuts an element (the default)",
    "basic": "packs whole elements up to max_characters",
    "sentences": "packs whole sentences up to max_characters across element and title boundaries",
}


@dataclass(frozen=True)
class ChunkerSettings:
    strategy: str = "by_title"
    max_characters: int = 800
    new_after_n_chars: int = 600
    overlap: int = 0
    combine_text_under_n_chars: int = 200


def check(c: ChunkerSettings, src: Path) -> None:
    if c.strategy not in CHUNKER_STRATEGIES:
        raise SettingsError(f"{src}: [chunker].strategy must be {names(CHUNKER_STRATEGIES)}, got {c.strategy!r}")
    if c.max_characters < 50:
        raise SettingsError(f"{src}: [chunker].max_characters must be at least 50")
    if not 0 <= c.overlap < c.max_characters:
        raise SettingsError(f"{src}: [chunker].overlap must be >= 0 and below max_characters")
