"""Where haystacks come from ([niah].haystack_dir, off_theme_dir), the seeds derived per trial, and the version of
what NIAH produces. The [niah] section itself is ragpipe.settings.NiahSettings (Settings.niah)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ragpipe.settings import NiahSettings, Settings

TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".rst", ".text")
IMPL_VERSION = "2"  # bump when haystacks, needles, questions or scoring change what they produce
# 2: haystacks from the parsed documents of the corpus (any format), not its text files


def haystack_dir(settings: Settings, ns: NiahSettings) -> Path:
    if not ns.haystack_dir:
        return settings.corpus.dir
    p = Path(ns.haystack_dir).expanduser()
    return p if p.is_absolute() else settings.root / p


def off_theme_dir(settings: Settings, ns: NiahSettings) -> Path | None:
    if not ns.off_theme_dir:
        return None
    p = Path(ns.off_theme_dir).expanduser()
    return p if p.is_absolute() else settings.root / p


def sub_seed(*parts: Any) -> int:
    """A stable 63-bit seed from any parts (Python's hash() is salted per process; this is not)."""
    return int(hashlib.sha256("\x00".join(map(str, parts)).encode()).hexdigest()[:15], 16)
