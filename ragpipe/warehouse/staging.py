"""Staging: the files one plan's shard steps hand to each other (work files, results, vectors, the files to parse).

With the default `[warehouse].staging_uri` (a local directory) a stage is a directory every step on this machine
sees. With an s3:// URI the steps may run on machines that share no disk: each keeps a local copy of what it uses
under its own `<warehouse dir>/staging/<stage>` and hands the rest on through object storage, a whole file at a time
(an object appears complete or not at all, so a reader never sees half a file).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ragpipe.settings import Settings, is_remote_uri
from ragpipe.warehouse.objstore import explain, pyarrow_filesystem, split_uri

CHUNK = 8 << 20  # bytes per read and write when copying a file


class Staging:
    """One stage (named after its plan's content): a local directory, mirrored to object storage when remote."""

    def __init__(self, settings: Settings, name: str) -> None:
        self.name = name
        self.remote = f"{settings.staging_uri}/{name}" if is_remote_uri(settings.staging_uri) else None
        root = settings.warehouse_dir / "staging" if self.remote else Path(settings.staging_uri)
        self.local = root / name
        self._s3 = settings.s3
        self._fs = pyarrow_filesystem(settings.s3) if self.remote else None

    def _key(self, rel: str) -> str:
        bucket, prefix = split_uri(f"{self.remote}/{rel}")
        return f"{bucket}/{prefix}"

    def _fail(self, exc: BaseException, action: str, rel: str) -> Exception:
        return explain(exc, action, f"{self.remote}/{rel}", self._s3)

    def has(self, rel: str) -> bool:
        """Whether the stage holds `rel`: here, or (remote) in object storage."""
        if (self.local / rel).exists() or self._fs is None:
            return (self.local / rel).exists()
        import pyarrow.fs as pafs

        try:
            return self._fs.get_file_info(self._key(rel)).type != pafs.FileType.NotFound
        except OSError as exc:
            raise self._fail(exc, "read", rel) from exc

    def fetch(self, rel: str) -> bool:
        """Make `rel` present in the local directory (copied from object storage if need be); False if nowhere."""
        path = self.local / rel
        if path.exists() or self._fs is None:
            return path.exists()
        if not self.has(rel):
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.fetching")
        try:
            with self._fs.open_input_stream(self._key(rel)) as src, tmp.open("wb") as dst:
                while block := src.read(CHUNK):
                    dst.write(block)
        except OSError as exc:
            raise self._fail(exc, "read", rel) from exc
        tmp.replace(path)
        return True

    def publish(self, *rels: str) -> None:
        """Copy local files of the stage to object storage (nothing to do for a local stage)."""
        for rel in rels:
            self.upload(rel, self.local / rel)

    def upload(self, rel: str, source: Path) -> None:
        """Copy the file `source` into the remote stage as `rel` (nothing to do for a local stage)."""
        if self._fs is None:
            return
        try:
            with source.open("rb") as src, self._fs.open_output_stream(self._key(rel)) as dst:
                while block := src.read(CHUNK):
                    dst.write(block)
        except OSError as exc:
            raise self._fail(exc, "write", rel) from exc

    def put_bytes(self, rel: str, data: bytes) -> None:
        """A small object written whole (the local file when the stage is local)."""
        path = self.local / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        self.publish(rel)

    def get_bytes(self, rel: str) -> bytes:
        if not self.fetch(rel):
            raise FileNotFoundError(f"{self.remote or self.local}/{rel}: not staged")
        return (self.local / rel).read_bytes()

    def release(self) -> None:
        """Forget this machine's copy of a remote stage (its files stay in object storage); a local stage is kept."""
        if self.remote:
            shutil.rmtree(self.local, ignore_errors=True)

    def drop(self) -> None:
        """Remove the stage: the local copy and, when remote, its objects."""
        shutil.rmtree(self.local, ignore_errors=True)
        if self._fs is not None:
            try:
                self._fs.delete_dir(self._key("").rstrip("/"))
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise self._fail(exc, "delete", "") from exc
