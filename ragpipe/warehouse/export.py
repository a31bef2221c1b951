"""Export the warehouse's tables and views as Parquet files to a local directory or an s3:// prefix.

DuckDB streams each relation as Arrow record batches; pyarrow writes them through pyarrow.fs (S3FileSystem configured
from [warehouse.s3], or the local filesystem), so no DuckDB extension is needed.

Crash safety: each file is written under a hidden temporary name and moved to `<name>.parquet` only once complete (a
rename locally, a server-side copy on S3, whose objects appear whole or not at all), and `_manifest.json` is removed
when an export starts and written last. A destination without `_manifest.json` holds an export that did not finish.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import duckdb

from ragpipe.core import InputError
from ragpipe.settings import Settings, check_s3_uri, is_remote_uri
from ragpipe.warehouse.objstore import ObjectStoreError, explain, no_such_bucket, pyarrow_filesystem, split_uri

MANIFEST = "_manifest.json"
BATCH_ROWS = 65_536


class ExportError(InputError, ValueError):
    """An export that cannot start (an unknown table, an unsupported destination); the message says why."""


@dataclass(frozen=True)
class Exported:
    name: str
    kind: str  # table | view
    rows: int
    uri: str


def relations(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """(name, "table" | "view") of every relation users query; internal ones (leading underscore) are left out."""
    rows = con.execute(
        "SELECT table_name, table_type FROM information_schema.tables "
        "WHERE table_schema = 'main' AND table_catalog = current_database() AND NOT starts_with(table_name, '_') "
        "ORDER BY table_type, table_name"
    ).fetchall()
    return [(name, "view" if kind == "VIEW" else "table") for name, kind in rows]


class _Destination:
    """A directory on the local filesystem or a prefix in a bucket, addressed through pyarrow.fs."""

    def __init__(self, dest: str, settings: Settings):
        import pyarrow.fs as pafs

        self.settings = settings
        self.remote = is_remote_uri(dest)
        if self.remote:
            self.uri = dest.rstrip("/")
            check_s3_uri(self.uri, "--to")
            bucket, prefix = split_uri(self.uri)
            self.fs = pyarrow_filesystem(settings.s3)
            self.base = f"{bucket}/{prefix}".rstrip("/")
            try:
                info = self.fs.get_file_info(bucket)
            except OSError as exc:
                raise explain(exc, "export to", self.uri, settings.s3) from None
            if info.type == pafs.FileType.NotFound:
                raise no_such_bucket("export to", self.uri, settings.s3)
        else:
            if "://" in dest:
                raise ExportError(f"cannot export to {dest}: only local directories and s3:// URIs are supported")
            path = Path(dest).expanduser().resolve()
            self.uri = str(path)
            self.fs = pafs.LocalFileSystem()
            self.base = path.as_posix()
            try:
                self.fs.create_dir(self.base, recursive=True)
            except OSError as exc:
                raise ObjectStoreError(f"cannot export to {self.uri}: {exc}") from None

    def key(self, name: str) -> str:
        return f"{self.base}/{name}" if self.base else name

    def display(self, name: str) -> str:
        return f"{self.uri}/{name}"

    def delete(self, name: str) -> None:
        import pyarrow.fs as pafs

        key = self.key(name)
        if self.fs.get_file_info(key).type != pafs.FileType.NotFound:
            self.fs.delete_file(key)

    def write(self, name: str, produce: Callable[[Any], Any]) -> Any:
        """Run produce(output stream) on a temporary key, then move the result to `name` (all or nothing)."""
        tmp = self.key(f".{name}.{uuid.uuid4().hex}.tmp")
        try:
            with self.fs.open_output_stream(tmp) as out:
                result = produce(out)
            self.fs.move(tmp, self.key(name))
        except BaseException:
            try:
                self.fs.delete_file(tmp)
            except Exception:  # the temporary file may not exist; the original error is the one to report
                pass
            raise
        return result


def export_warehouse(
    settings: Settings,
    con: duckdb.DuckDBPyConnection,
    dest: str,
    names: list[str] | None = None,
    log: Callable[[Exported], None] | None = None,
) -> list[Exported]:
    """Write every relation (or those in `names`) as DEST/<name>.parquet, then DEST/_manifest.json."""
    import pyarrow.parquet as pq

    available = relations(con)
    if names:
        unknown = sorted(set(names) - {n for n, _ in available})
        if unknown:
            raise ExportError(
                f"no table or view named {', '.join(unknown)} in the warehouse; available: "
                f"{', '.join(n for n, _ in available)}"
            )
        available = [(n, k) for n, k in available if n in names]
    target = _Destination(dest, settings)
    done: list[Exported] = []
    try:
        target.delete(MANIFEST)  # from here until the new manifest is written, the destination reads as incomplete
        for name, kind in available:
            reader = con.sql(f'SELECT * FROM "{name}"').to_arrow_reader(BATCH_ROWS)

            def produce(out: Any, reader: Any = reader) -> int:
                rows = 0
                with pq.ParquetWriter(out, reader.schema, compression="zstd") as writer:
                    for batch in reader:
                        writer.write_batch(batch)
                        rows += batch.num_rows
                return rows

            rows = target.write(f"{name}.parquet", produce)
            item = Exported(name, kind, rows, target.display(f"{name}.parquet"))
            done.append(item)
            if log:
                log(item)
        manifest = {
            "exported_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "warehouse": settings.duckdb_path.name,
            "format": "parquet",
            "relations": [{"name": e.name, "kind": e.kind, "rows": e.rows, "file": f"{e.name}.parquet"} for e in done],
        }
        data = json.dumps(manifest, indent=2).encode()
        target.write(MANIFEST, lambda out: out.write(data))
    except OSError as exc:
        raise explain(exc, "export to", target.uri, settings.s3 if target.remote else None) from None
    return done
