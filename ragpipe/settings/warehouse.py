"""[warehouse] and [warehouse.s3]: where the DuckDB file, the LanceDB tables and built models are kept.

Part of no stage's code version: where things are stored does not change what any stage computes (see STAGE_SECTIONS).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragpipe.settings.base import Resolve, SettingsError, build

REMOTE_SCHEMES = ("s3://",)


@dataclass(frozen=True)
class S3Settings:
    """[warehouse.s3]: how to reach an S3-compatible store. Non-secret options only: credentials come from the
    environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) or the platform's role, never from here."""

    endpoint_url: str | None = None  # e.g. "http://127.0.0.1:9000" for MinIO or moto; unset: AWS S3 itself
    region: str | None = None  # e.g. "eu-west-1"; unset: the SDK's default (AWS_DEFAULT_REGION, else us-east-1)
    allow_http: bool = False  # plain-HTTP endpoints (a local server) must be allowed explicitly


def is_remote_uri(uri: str) -> bool:
    return uri.startswith(REMOTE_SCHEMES)


def check_s3_uri(uri: str, where: str) -> None:
    """An s3://bucket[/prefix] URI without credentials in it; raises SettingsError naming `where`."""
    from urllib.parse import urlsplit

    parts = urlsplit(uri)
    if "@" in parts.netloc:
        raise SettingsError(
            f"{where}: credentials do not belong in the URI; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
            f"in the environment and write s3://BUCKET/PREFIX"
        )
    if parts.scheme != "s3" or not parts.netloc or parts.query or parts.fragment:
        raise SettingsError(f"{where}: expected s3://BUCKET or s3://BUCKET/PREFIX, got {uri!r}")


def _location(key: str, uri: Any, source: Path, resolve: Resolve) -> str:
    """[warehouse].<key>: a local path (resolved) or an s3://BUCKET/PREFIX URI."""
    if not isinstance(uri, str) or not uri.strip():
        raise SettingsError(f"{source}: [warehouse].{key} must be a path or an s3://BUCKET/PREFIX URI")
    if is_remote_uri(uri):
        check_s3_uri(uri.rstrip("/"), f"{source}: [warehouse].{key}")
        return uri.rstrip("/")
    if "://" in uri:
        raise SettingsError(f"{source}: [warehouse].{key} {uri!r}: only local paths and s3:// URIs are supported")
    return str(resolve(uri))


def read(raw: dict[str, Any], source: Path, resolve: Resolve) -> dict[str, Any]:
    """The Settings fields [warehouse] gives: warehouse_dir, model_cache, lancedb_location, staging_location, s3."""
    warehouse = dict(raw)
    fields: dict[str, Any] = {"warehouse_dir": resolve(str(warehouse.pop("dir", "warehouse")))}
    fields["model_cache"] = resolve(str(warehouse.pop("models_dir"))) if "models_dir" in warehouse else None
    for key, name in (("lancedb_uri", "lancedb_location"), ("staging_uri", "staging_location")):
        fields[name] = _location(key, warehouse.pop(key), source, resolve) if key in warehouse else None
    s3_raw = warehouse.pop("s3", {})
    if not isinstance(s3_raw, dict):
        raise SettingsError(f"{source}: [warehouse.s3] must be a table")
    fields["s3"] = build(S3Settings, s3_raw, "warehouse.s3", source)
    if warehouse:
        raise SettingsError(
            f"{source}: unknown key(s) in [warehouse]: {sorted(warehouse)}; "
            "allowed: dir, models_dir, lancedb_uri, staging_uri, s3"
        )
    return fields


def check(s3: S3Settings, src: Path) -> None:
    for name in ("endpoint_url", "region"):
        if getattr(s3, name) is not None and not isinstance(getattr(s3, name), str):
            raise SettingsError(f"{src}: [warehouse.s3].{name} must be a string")
    endpoint = s3.endpoint_url
    if endpoint is not None:
        from urllib.parse import urlsplit

        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path.strip("/") or "@" in parts.netloc:
            raise SettingsError(
                f"{src}: [warehouse.s3].endpoint_url must be http(s)://HOST[:PORT] (no path, no credentials), "
                f"got {endpoint!r}"
            )
        if parts.scheme == "http" and not s3.allow_http:
            raise SettingsError(
                f"{src}: [warehouse.s3].endpoint_url {endpoint!r} is plain HTTP; set allow_http = true in "
                f"[warehouse.s3] (only for a local or otherwise trusted server)"
            )
