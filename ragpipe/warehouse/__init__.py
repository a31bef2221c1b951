"""Where results are kept: the DuckDB warehouse (connections with bounded lock waits, transactions, the numbered SQL
migrations in migrations/), S3-compatible object storage, the shard steps' staging, read-only SQL, and the export of every table as Parquet."""

from ragpipe.core import lazy_exports

_EXPORTS = {
    "db": [
        "first",
        "MIGRATIONS_PACKAGE",
        "WarehouseBusy",
        "migrate",
        "connect",
        "transaction",
        "drop_block_cache",
        "insert_rows",
        "record_stage",
    ],
    "objstore": [
        "ObjectStoreError",
        "split_uri",
        "lance_storage_options",
        "pyarrow_filesystem",
        "redact",
        "no_such_bucket",
        "explain",
    ],
    "staging": ["Staging"],
    "sql": ["SqlError", "Result", "format_rows", "run_sql"],
    "export": ["MANIFEST", "ExportError", "Exported", "relations", "export_warehouse"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
