"""A tiny OpenAI-compatible chat-completions server for tests (stdlib only).

    python tests/openai_server.py --port 0      # prints "READY <port>" once listening on 127.0.0.1

POST /v1/chat/completions answers from markers in the last user message:
  default         the text after "ANSWER:" up to the end of that line, else "not in documents"
  [[429]]         always 429 with a JSON error body      [[429-once]]  429 on the first request for that message, then 200
  [[500]]         always 500 with a JSON error body      [[500-once]]  500 on the first request for that message, then 200
  [[401]]         always 401 (bad key)
  [[timeout]]     sleeps --slow-s seconds before sending anything
  [[slowbody]]    sends the status line and headers, then sleeps --slow-s seconds before the body
  [[truncated]]   200 whose Content-Length promises more bytes than are sent, then closes the connection
  [[malformed]]   200 with a body that is not JSON       [[nochoices]] 200 with JSON lacking "choices"
  [[badusage]]    200 with a proper answer but "usage" that is a list, not an object
  [[echo-json]]   the JSON object written after "ECHO-JSON:" on the same line (a structured answer), else "{}"
A request whose system message is ragpipe's judge prompt (ragpipe.verdicts.judge.PROMPT) is a judge request: the reply is the
text after "JUDGE-REPLY:" up to the end of that line of the user message, else "I am not sure." (no verdict).
A request whose system message is ragpipe's rewording prompt (ragpipe.evaluate.PHRASING_PROMPT) gets the question back
as "Do the documents say: <question>", or "How much was it?" (every qualifier dropped) when it holds [[reword-drop]].
GET /_requests lists {"auth", "path"} for every request received (the Authorization header as sent).
GET /_sizes lists the length in characters of the last user message of every chat-completions request, in order.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REFUSAL = "not in documents"


class State:
    def __init__(self, slow_s: float):
        self.slow_s = slow_s
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.seen: dict[str, int] = {}  # last user message -> requests so far
        self.sizes: list[int] = []  # characters of the last user message, per chat request

    def record(self, auth: str | None, path: str) -> None:
        with self.lock:
            self.requests.append({"auth": auth, "path": path})

    def count(self, message: str) -> int:
        """How many requests with this exact message came before this one."""
        with self.lock:
            n = self.seen.get(message, 0)
            self.seen[message] = n + 1
            return n


def _words(text: str) -> int:
    return len(text.split())


class Handler(BaseHTTPRequestHandler):
    server_version = "FakeOpenAI/1.0"
    state: State  # set on the class by main()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet: tests read stdout
        pass

    # -- helpers ---------------------------------------------------------------------------------------------------
    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timed out); nothing to do
        self.close_connection = True

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj).encode("utf-8"))

    def _error(self, status: int, message: str, kind: str) -> None:
        self._json(status, {"error": {"message": message, "type": kind, "param": None, "code": str(status)}})

    # -- routes ----------------------------------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/_requests":
            with self.state.lock:
                snapshot = list(self.state.requests)
            self._json(200, snapshot)
        elif self.path == "/_sizes":
            with self.state.lock:
                sizes = list(self.state.sizes)
            self._json(200, sizes)
        else:
            self._error(404, f"no route GET {self.path}", "not_found")

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        self.state.record(self.headers.get("Authorization"), self.path)
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._error(404, f"no route POST {self.path}", "not_found")
            return
        try:
            req = json.loads(raw.decode("utf-8"))
            messages = req["messages"]
            users = [m for m in messages if m.get("role") == "user"]
            user = str(users[-1]["content"])
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            self._error(400, f"bad request: {type(exc).__name__}: {exc}", "invalid_request_error")
            return
        with self.state.lock:
            self.state.sizes.append(len(user))
        model = str(req.get("model") or "fake-model")
        n = self.state.count(user)

        if "[[401]]" in user:
            self._error(401, "Incorrect API key provided.", "invalid_request_error")
            return
        if "[[429]]" in user or ("[[429-once]]" in user and n == 0):
            self._error(429, "Rate limit reached; try again later.", "rate_limit_error")
            return
        if "[[500]]" in user or ("[[500-once]]" in user and n == 0):
            self._error(500, "The server had an error while processing your request.", "server_error")
            return
        if "[[timeout]]" in user:
            time.sleep(self.state.slow_s)
        if "[[malformed]]" in user:
            self._send(200, b"<html>this is not JSON {", "text/html")
            return
        if "[[nochoices]]" in user:
            self._json(
                200, {"id": "chatcmpl-x", "object": "chat.completion", "created": int(time.time()), "model": model}
            )
            return

        system = " ".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
        if system.startswith("You grade one answer"):  # a judge request (ragpipe.verdicts.judge.PROMPT)
            j = re.search(r"JUDGE-REPLY:([^\n]*)", user)
            reply = j.group(1).strip() if j else "I am not sure."
        elif system.startswith("Reword the question"):  # a rewording (ragpipe.evaluate.PHRASING_PROMPT)
            reply = (
                "How much was it?"
                if "[[reword-drop]]" in user
                else f"Do the documents say: {user[:1].lower()}{user[1:]}"
            )
        else:
            m = re.search(r"ANSWER:([^\n]*)", user)
            reply = m.group(1).strip() if m else REFUSAL
        if "[[echo-json]]" in user:
            j = re.search(r"ECHO-JSON:\s*(\{[^\n]*\})", user)
            reply = j.group(1) if j else "{}"
        prompt_tokens = sum(_words(str(msg.get("content", ""))) for msg in messages)
        completion_tokens = _words(reply)
        usage: Any = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if "[[badusage]]" in user:
            usage = [prompt_tokens, completion_tokens]
        body = json.dumps(
            {
                "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
                "usage": usage,
            }
        ).encode("utf-8")

        if "[[slowbody]]" in user or "[[truncated]]" in user:
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body) + (100 if "[[truncated]]" in user else 0)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.flush()
                if "[[slowbody]]" in user:
                    time.sleep(self.state.slow_s)
                self.wfile.write(body)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True
            return
        self._send(200, body)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    ap.add_argument("--slow-s", type=float, default=5.0, help="seconds [[timeout]] and [[slowbody]] sleep")
    args = ap.parse_args(argv)
    Handler.state = State(args.slow_s)
    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    httpd.daemon_threads = True
    print(f"READY {httpd.server_address[1]}", flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()


if __name__ == "__main__":
    sys.exit(main())
