"""Scan the corpus directory: every file with its content hash, never leaving the directory."""

from __future__ import annotations

import fnmatch
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from ragpipe.ingest.parse import format_of

IMPL_VERSION = "1"  # the corpus scan; bump when what it records changes (part of `corpus`'s code version)


@dataclass(frozen=True)
class CorpusFile:
    path: str  # relative to the corpus directory, POSIX separators
    sha256: str
    bytes: int
    format: str | None


@dataclass(frozen=True)
class CorpusProblem:
    path: str
    error_class: str
    message: str


@dataclass(frozen=True)
class CorpusScan:
    files: list[CorpusFile]
    problems: list[CorpusProblem]

    def manifest_digest(self) -> str:
        """One hash over (path, sha256) of every file: changes exactly when the corpus content changes."""
        h = hashlib.sha256()
        for f in self.files:
            h.update(f"{f.path}\x00{f.sha256}\n".encode())
        return h.hexdigest()


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def is_excluded(rel: str, patterns: tuple[str, ...]) -> bool:
    """Gitignore-like: a pattern without '/' matches any path component; '**/' matches any directories."""
    parts = rel.split("/")
    for pat in patterns:
        bare = pat[3:] if pat.startswith("**/") else pat
        if "/" not in bare:
            if any(fnmatch.fnmatchcase(p, bare) for p in parts):
                return True
        elif fnmatch.fnmatchcase(rel, pat.replace("**/", "*")) or fnmatch.fnmatchcase(rel, bare):
            return True
    return False


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def scan_corpus(corpus_dir: Path, exclude: tuple[str, ...] = ()) -> CorpusScan:
    """List supported files with hashes. Symlinks leaving the corpus, loops and unsupported types are problems."""
    root = Path(corpus_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"corpus directory {root} does not exist; set [corpus].dir in the settings file")
    real_root = root.resolve()
    files: list[CorpusFile] = []
    problems: list[CorpusProblem] = []
    # followlinks=False: symlinked directories are listed, never descended (no loops, no escapes).
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if is_excluded(rel, exclude):
                if name in dirnames:
                    dirnames.remove(name)
                continue
            if full.is_symlink():
                try:
                    target = full.resolve(strict=True)
                except (OSError, RuntimeError):
                    problems.append(
                        CorpusProblem(rel, "BrokenSymlink", f"{rel}: symlink is broken or loops; fix or remove it")
                    )
                    continue
                if not _inside(target, real_root):
                    problems.append(
                        CorpusProblem(
                            rel,
                            "SymlinkOutsideCorpus",
                            f"{rel}: symlink points outside the corpus directory ({target}); not followed",
                        )
                    )
                    continue
                if target.is_dir():
                    continue  # its files are reached through their real path
            elif name in dirnames:
                continue
            if not full.is_file():
                continue
            fmt = format_of(full)
            if fmt is None:
                problems.append(
                    CorpusProblem(
                        rel,
                        "UnsupportedFormat",
                        f"{rel}: unsupported file type {full.suffix or '(none)'!r}; add it to [corpus].exclude or convert it",
                    )
                )
                continue
            files.append(CorpusFile(rel, file_sha256(full), full.stat().st_size, fmt))
    files.sort(key=lambda f: f.path)
    return CorpusScan(files, problems)
