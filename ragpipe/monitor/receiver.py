"""`ragpipe monitor serve`: an OTLP/HTTP receiver. The app's OpenTelemetry exporter posts spans to /v1/traces
(protobuf, or OTLP JSON; gzip or not); each request becomes one line of OTLP JSON, ids in hex as the OTLP JSON
encoding writes them, appended to `otlp-<UTC day>.jsonl` in [monitor].traces_dir, where the traces sensor and
`ragpipe monitor` read it. A line is written whole, with one write on a file opened for appending, and readers take
only complete lines, so reading while the receiver writes loses nothing and reads nothing half-written.

Bound to 127.0.0.1 by default. Bound elsewhere it needs a token from the environment (RAGPIPE_OTLP_TOKEN), sent by
the exporter as `Authorization: Bearer <token>` (OTEL_EXPORTER_OTLP_HEADERS); the token is never logged.
"""

from __future__ import annotations

import datetime as dt
import hmac
import http.server
import ipaddress
import json
import os
import threading
import zlib
from pathlib import Path
from typing import Any, Callable

from ragpipe.core import InputError
from ragpipe.monitor.otlp import is_otlp

TOKEN_ENV = "RAGPIPE_OTLP_TOKEN"
MAX_BODY = 64 * 1024 * 1024  # bytes of one request (after decompression): larger ones get 413
ID_FIELDS = ("traceId", "spanId", "parentSpanId")


class ReceiverError(InputError):
    """The receiver cannot start as asked (no token for a non-local address, no traces folder)."""


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _hex_ids(obj: Any) -> Any:
    """Protobuf's generic JSON writes ids in base64; OTLP JSON writes them in hex (the ids of spans and of links)."""
    if isinstance(obj, list):
        return [_hex_ids(x) for x in obj]
    if not isinstance(obj, dict):
        return obj
    import base64

    return {
        k: (base64.b64decode(v).hex() if k in ID_FIELDS and isinstance(v, str) else _hex_ids(v)) for k, v in obj.items()
    }


def decode(body: bytes, content_type: str) -> dict[str, Any]:
    """One export request as OTLP JSON; raises ValueError with what is wrong."""
    if "json" in content_type:
        obj = json.loads(body.decode("utf-8"))
        if not is_otlp(obj):
            raise ValueError("an OTLP JSON export request has 'resourceSpans'")
        return obj
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except DecodeError as exc:
        raise ValueError(f"not an OTLP protobuf export request ({exc})") from None
    return _hex_ids(MessageToDict(request))


class TraceFiles:
    """Appends one line per request to the day's file; one writer at a time in this process."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.lock = threading.Lock()
        self.lines = 0

    def append(self, obj: dict[str, Any]) -> Path:
        line = (json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")
        path = self.folder / f"otlp-{dt.datetime.now(dt.timezone.utc):%Y-%m-%d}.jsonl"
        with self.lock:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                view = memoryview(line)
                while view:  # a regular file takes the whole line in one write; a short write is finished here
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            self.lines += 1
        return path


def _body(handler: http.server.BaseHTTPRequestHandler) -> bytes:
    size = int(handler.headers.get("Content-Length") or 0)
    if size > MAX_BODY:
        raise OverflowError
    raw = handler.rfile.read(size)
    encoding = (handler.headers.get("Content-Encoding") or "").lower()
    if encoding in ("gzip", "deflate"):
        inflater = zlib.decompressobj(wbits=31 if encoding == "gzip" else 15)
        raw = inflater.decompress(raw, MAX_BODY + 1)
        if len(raw) > MAX_BODY:
            raise OverflowError
    return raw


def make_handler(files: TraceFiles, token: str | None, log: Callable[[str], None]) -> type:
    class Handler(http.server.BaseHTTPRequestHandler):
        server_version = "ragpipe-otlp"

        def log_message(self, format: str, *args: Any) -> None:  # the request line only: headers hold the token
            pass

        def _reply(self, code: int, body: bytes, ctype: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _error(self, code: int, message: str) -> None:
            self._reply(code, json.dumps({"message": message}).encode(), "application/json")

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            if self.path.split("?")[0] != "/v1/traces":
                return self._error(404, "OTLP/HTTP traces are posted to /v1/traces")
            given = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
            if token is not None and not hmac.compare_digest(given.encode(), token.encode()):
                return self._error(401, f"send the token of {TOKEN_ENV} as 'Authorization: Bearer <token>'")
            ctype = (self.headers.get("Content-Type") or "application/x-protobuf").lower()
            try:
                obj = decode(_body(self), ctype)
            except OverflowError:
                return self._error(413, f"a request is at most {MAX_BODY} bytes")
            except (ValueError, zlib.error) as exc:
                return self._error(400, str(exc)[:300])
            if obj.get("resourceSpans"):  # an empty export is valid and writes nothing
                path = files.append(obj)
                log(f"{path.name}: +1 export request ({files.lines} written)")
            if "json" in ctype:
                return self._reply(200, b"{}", "application/json")
            return self._reply(200, b"", "application/x-protobuf")  # an empty ExportTraceServiceResponse

    return Handler


def serve(folder: Path, host: str, port: int, log: Callable[[str], None] = print) -> http.server.ThreadingHTTPServer:
    """The receiver, bound and ready (call serve_forever); raises ReceiverError when it must not start."""
    token = os.environ.get(TOKEN_ENV) or None
    if not _loopback(host) and token is None:
        raise ReceiverError(
            f"refusing to listen on {host} without a token: set {TOKEN_ENV} (the exporter sends it as "
            f"OTEL_EXPORTER_OTLP_HEADERS='Authorization=Bearer <token>'), or bind to 127.0.0.1"
        )
    if not folder.is_dir():
        raise ReceiverError(f"[monitor].traces_dir {folder} is not a folder; create it or fix the path")
    server = http.server.ThreadingHTTPServer((host, port), make_handler(TraceFiles(folder), token, log))
    server.daemon_threads = True
    return server
