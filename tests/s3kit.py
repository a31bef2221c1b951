"""A real S3-compatible server (moto's server mode) on loopback, as a module-scoped fixture `s3`, with a sentinel secret
key that must appear nowhere."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pyarrow.fs as pafs
import pytest

SENTINEL = "ragpipe-SENTINEL-secret-3b9f6c1e"
KEY_ID = "AKIARAGPIPETEST0001"
BUCKET = "ragpipe-test"


@dataclass
class S3Server:
    endpoint: str
    client: Any  # boto3 S3 client

    def keys(self, prefix: str = "") -> list[str]:
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]

    def filesystem(self) -> pafs.S3FileSystem:
        return pafs.S3FileSystem(
            endpoint_override=self.endpoint.removeprefix("http://"), scheme="http", region="us-east-1"
        )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def moto_server(log_path: Path) -> Iterator[S3Server]:
    """moto's S3 server on a free loopback port with the BUCKET created (credentials: the caller's environment)."""
    import boto3

    port = _free_port()
    log = log_path.open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, f"moto server exited with {proc.returncode}"
            try:
                urllib.request.urlopen(f"{endpoint}/", timeout=1).close()  # ListBuckets
                break
            except OSError:
                assert time.monotonic() < deadline, "moto server did not start within 60 s"
                time.sleep(0.2)
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield S3Server(endpoint, client)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    mp = pytest.MonkeyPatch()
    for name in (
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT",
        "AWS_DEFAULT_REGION",
        "AWS_REGION",
    ):
        mp.delenv(name, raising=False)
    mp.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    mp.setenv("AWS_SECRET_ACCESS_KEY", SENTINEL)
    try:
        with moto_server(tmp_path_factory.mktemp("moto") / "server.log") as server:
            yield server
    finally:
        mp.undo()
