"""An embeddings API as the embedder: `[embedder] name = "openai:<model>"` with `base_url` (OpenAI, Azure OpenAI, TEI,
Ollama, vLLM and llama.cpp all serve POST {base_url}/embeddings). Requests carry at most `batch_size` inputs and
about 8,000 tokens; 429, 5xx, timeouts and broken connections are retried with backoff, waiting what `Retry-After`
asks. The key is read from the environment variable `api_key_env` names, never stored.

A hosted model can change behind the same name. The tag is the model's name plus a behavioural fingerprint: the
vectors of a fixed probe set, rounded and hashed. A silent update gives a new tag, so the golden tests validated under
the old vectors read "unverified under current embedder".
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragpipe.core import RagpipeError, backoff_s, retry_after
from ragpipe.settings import EmbedderSettings

if TYPE_CHECKING:
    import numpy as np

REQUEST_TOKENS = 8000  # a budget under every common server's per-request limit (TEI's default is 16,384)
PROBES = (
    "The quarterly report lists revenue by region.",
    "How do I reset a forgotten password?",
    "Photosynthesis converts light into chemical energy.",
    "Der Vertrag endet am 31. Dezember.",
    "SELECT count(*) FROM orders WHERE status = 'open';",
)


class EmbeddingsApiError(RagpipeError):
    """The embeddings endpoint gave no usable reply after the allowed attempts; the message says why."""


def _tokens(text: str) -> int:
    return len(text) // 4 + 1  # about four characters a token: only to keep requests under REQUEST_TOKENS


def _requests(texts: list[str], max_inputs: int) -> list[list[int]]:
    """Indices of `texts` split into requests of at most `max_inputs` inputs and about REQUEST_TOKENS tokens."""
    out: list[list[int]] = [[]]
    used = 0
    for i, text in enumerate(texts):
        need = _tokens(text)
        if out[-1] and (len(out[-1]) >= max_inputs or used + need > REQUEST_TOKENS):
            out.append([])
            used = 0
        out[-1].append(i)
        used += need
    return [r for r in out if r]


def post_embeddings(cfg: EmbedderSettings, inputs: list[str]) -> list[list[float]]:
    """One POST {base_url}/embeddings; the vectors in input order. Raises EmbeddingsApiError after the last attempt
    (at once for 4xx other than 429, and for a reply of the wrong shape)."""
    model = cfg.name.split(":", 1)[1]
    url = cfg.base_url.rstrip("/") + "/embeddings"
    headers = {"Content-Type": "application/json"}
    key = os.environ.get(cfg.api_key_env) or None
    if key:
        headers["Authorization"] = f"Bearer {key}"
    body = json.dumps({"model": model, "input": inputs}).encode()
    last, attempt = "no attempt made", 0
    for attempt in range(cfg.max_retries + 1):
        wait = None
        try:
            req = urllib.request.Request(url, data=body, headers=headers, method="POST")
            with urllib.request.urlopen(req, timeout=cfg.timeout_s) as resp:
                data = json.loads(resp.read().decode("utf-8"))
            rows = sorted(data["data"], key=lambda r: r["index"])
            if len(rows) != len(inputs):
                raise ValueError(f"{len(rows)} vectors for {len(inputs)} inputs")
            return [[float(x) for x in r["embedding"]] for r in rows]
        except urllib.error.HTTPError as exc:
            wait = retry_after(exc.headers.get("Retry-After") if exc.headers else None)
            exc.close()
            last = f"HTTP {exc.code} from {url}"
            if exc.code in (401, 403):
                raise EmbeddingsApiError(f"{last}: check the key in ${cfg.api_key_env}") from exc
            if exc.code != 429 and exc.code < 500:
                raise EmbeddingsApiError(f"{last} for model {model!r}") from exc
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            last = f"cannot reach {url}: {getattr(exc, 'reason', exc)}"
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise EmbeddingsApiError(f"malformed reply from {url}: {type(exc).__name__}: {exc}") from exc
        if attempt == cfg.max_retries:
            break
        time.sleep(backoff_s(attempt, wait))
    raise EmbeddingsApiError(f"{last} after {attempt + 1} attempt(s)")


@functools.lru_cache(maxsize=16)
def _fingerprint(cfg: EmbedderSettings) -> tuple[str, int]:
    """(hash of the probe vectors rounded to 2 decimals, dimensions): what the model does, not what it is called.
    Asked once per process and settings."""
    vectors = post_embeddings(cfg, list(PROBES))
    rounded = [[round(x / (sum(v * v for v in vec) ** 0.5 or 1.0), 2) + 0.0 for x in vec] for vec in vectors]
    return hashlib.sha256(json.dumps(rounded).encode()).hexdigest()[:8], len(vectors[0])


def api_tag(cfg: EmbedderSettings) -> str:
    """'openai:text-embedding-3-small-<fingerprint>'."""
    return f"{cfg.name}-{_fingerprint(cfg)[0]}"


@dataclass
class ApiEmbedder:
    cfg: EmbedderSettings
    name: str = ""
    tag: str = ""
    dims: int = 0

    def __post_init__(self) -> None:
        self.name = self.cfg.name
        self.tag = api_tag(self.cfg)
        self.dims = _fingerprint(self.cfg)[1]

    def encode(self, texts: list[str], progress: Any = None) -> np.ndarray:
        import numpy as np

        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        t0 = time.perf_counter()
        done = 0
        for idx in _requests(texts, self.cfg.batch_size):
            vecs = np.asarray(post_embeddings(self.cfg, [texts[i] for i in idx]), dtype=np.float32)
            norms = np.linalg.norm(vecs, axis=1, keepdims=True)
            out[idx] = vecs / np.where(norms == 0, 1.0, norms)  # cosine search expects unit vectors
            done += len(idx)
            if progress:
                progress(done, len(texts), time.perf_counter() - t0)
        return out

    def count_tokens(self, texts: list[str]) -> list[int]:
        return [_tokens(t) for t in texts]
