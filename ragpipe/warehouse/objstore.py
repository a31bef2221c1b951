"""S3-compatible object storage: connection options for LanceDB and pyarrow from [warehouse.s3], and errors a person
can act on.

Credentials are never read here: LanceDB (object_store) and pyarrow (the AWS SDK) take them from the standard
environment variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) or the platform's role themselves,
so no secret passes through ragpipe's settings, logs, metadata or warehouse. Messages of errors raised by those
libraries are still scrubbed of the environment's secret values before they are shown, as a second line of defence.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from ragpipe.core import InputError
from ragpipe.settings import S3Settings, is_remote_uri

SECRET_ENV = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID")
CREDENTIALS_HINT = (
    "credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) in the environment"
)


class ObjectStoreError(InputError, RuntimeError):
    """Object storage (or a local store) that cannot be used; the message names the URI and what to do."""


def split_uri(uri: str) -> tuple[str, str]:
    """s3://bucket/a/b -> ("bucket", "a/b")."""
    parts = urlsplit(uri)
    return parts.netloc, parts.path.strip("/")


def lance_storage_options(s3: S3Settings) -> dict[str, str]:
    """LanceDB `storage_options` for an s3:// URI: endpoint, region and plain-HTTP permission, nothing secret."""
    options: dict[str, str] = {}
    if s3.endpoint_url:
        options["aws_endpoint"] = s3.endpoint_url
    if s3.region:
        options["aws_region"] = s3.region
    if s3.allow_http:
        options["allow_http"] = "true"
    return options


def pyarrow_filesystem(s3: S3Settings) -> Any:
    """A pyarrow S3FileSystem for [warehouse.s3] (path-style requests when an endpoint is set)."""
    import pyarrow.fs as pafs

    kwargs: dict[str, Any] = {}
    if s3.endpoint_url:
        parts = urlsplit(s3.endpoint_url)
        kwargs["endpoint_override"] = parts.netloc
        kwargs["scheme"] = parts.scheme
    if s3.region:
        kwargs["region"] = s3.region
    return pafs.S3FileSystem(**kwargs)


def redact(text: str) -> str:
    """`text` with the environment's AWS secret values (and key id) replaced by ***."""
    for name in SECRET_ENV:
        value = os.environ.get(name)
        if value and len(value) >= 4:
            text = text.replace(value, "***")
    return text


def _where(uri: str, s3: S3Settings | None) -> str:
    if s3 is not None and s3.endpoint_url and is_remote_uri(uri):
        return f"{uri} (endpoint {s3.endpoint_url})"
    return uri


def no_such_bucket(action: str, uri: str, s3: S3Settings | None) -> ObjectStoreError:
    bucket = split_uri(uri)[0]
    return ObjectStoreError(
        f"cannot {action} {_where(uri, s3)}: the bucket {bucket!r} does not exist. Create it "
        f"(e.g. `aws s3 mb s3://{bucket}`) or point the URI at an existing bucket"
    )


def explain(exc: BaseException, action: str, uri: str, s3: S3Settings | None) -> ObjectStoreError:
    """An ObjectStoreError for a failure of LanceDB or pyarrow on `uri`: what went wrong and what to do, no secrets."""
    raw = f"{type(exc).__name__}: {exc}"
    text = raw.lower()
    where = _where(uri, s3)
    if "nosuchbucket" in text or "no_such_bucket" in text:
        return no_such_bucket(action, uri, s3)
    if any(
        s in text
        for s in (
            "connecterror",
            "tcp connect",
            "network_connection",
            "could not connect",
            "connection refused",
            "dns error",
            "failed to lookup address",
            "timed out",
        )
    ):
        msg = (
            f"cannot {action} {where}: the storage endpoint is unreachable. Check [warehouse.s3].endpoint_url "
            f"in the settings and that the server is running"
        )
    elif any(
        s in text
        for s in (
            "invalidaccesskeyid",
            "signaturedoesnotmatch",
            "accessdenied",
            "access_denied",
            "forbidden",
            "missing credentials",
            "no credentials",
            "expiredtoken",
        )
    ):
        msg = f"cannot {action} {where}: access was refused. Check the credentials ({CREDENTIALS_HINT}) and their permissions"
    else:
        detail = " ".join(redact(raw).split())
        if len(detail) > 300:
            detail = detail[:300] + " ..."
        msg = f"cannot {action} {where}: {detail}"
        if is_remote_uri(uri):
            msg += f". Check [warehouse.s3] in the settings; {CREDENTIALS_HINT}"
    return ObjectStoreError(redact(msg))
