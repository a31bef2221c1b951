"""[corpus]: the directory of documents to ingest, and the files in it that are not documents."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragpipe.settings.base import Resolve, SettingsError


@dataclass(frozen=True)
class CorpusSettings:
    dir: Path
    exclude: tuple[str, ...] = ("README.md", "**/.*")


def read(raw: dict[str, Any], source: Path, resolve: Resolve) -> CorpusSettings:
    corpus_raw = dict(raw)
    if "dir" not in corpus_raw:
        raise SettingsError(f"{source}: [corpus].dir is required (the directory of documents to ingest)")
    corpus_raw["dir"] = resolve(str(corpus_raw["dir"]))
    corpus = CorpusSettings(dir=corpus_raw.pop("dir"), exclude=tuple(corpus_raw.pop("exclude", CorpusSettings.exclude)))
    if corpus_raw:
        raise SettingsError(f"{source}: unknown key(s) in [corpus]: {sorted(corpus_raw)}; allowed: dir, exclude")
    return corpus
