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
    if not isinstance(corpus_raw["dir"], str):
        raise SettingsError(f"{source}: [corpus].dir must be a path as text, got {corpus_raw['dir']!r}")
    corpus_raw["dir"] = resolve(corpus_raw["dir"])
    exclude = corpus_raw.pop("exclude", list(CorpusSettings.exclude))
    if not isinstance(exclude, list) or not all(isinstance(p, str) for p in exclude):
        raise SettingsError(
            f'{source}: [corpus].exclude must be a list of glob patterns (["README.md"]), got {exclude!r}'
        )
    corpus = CorpusSettings(dir=corpus_raw.pop("dir"), exclude=tuple(exclude))
    if corpus_raw:
        raise SettingsError(f"{source}: unknown key(s) in [corpus]: {sorted(corpus_raw)}; allowed: dir, exclude")
    return corpus
