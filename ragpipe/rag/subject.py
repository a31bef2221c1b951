"""The team's own RAG app as the subject under test: one call per test, over HTTP or as a Python function, giving
the app's answer and the contexts it retrieved (and, when it says so, which embedder and version it runs).

A call that fails after its retries is a reply with `error` set, never an answer: its test's verdict is `error`.
Secrets for headers come from the environment variables [subject.header_env] names and are never stored.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
import re
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ragpipe.core import RagpipeError, backoff_s, retry_after
from ragpipe.settings import SubjectSettings

IDENTITY_FIELDS = ("embedder", "model", "version")


class SubjectError(RagpipeError):
    """The subject cannot be called at all (a target that does not import, a reply of the wrong shape)."""


@dataclass(frozen=True)
class Context:
    text: str
    id: str | None = None
    source: str | None = None


@dataclass(frozen=True)
class Reply:
    answer: str | None  # None: the app only retrieves; [answerer] answers from its contexts
    contexts: tuple[Context, ...]
    metadata: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    latency_s: float = 0.0


def dotted(data: Any, path: str) -> Any:
    """data at a dotted path ("result.answer", "data.0.text"); None where it is absent."""
    for part in [p for p in path.split(".") if p]:
        if isinstance(data, dict):
            data = data.get(part)
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return None
    return data


def parse_reply(data: Any, cfg: SubjectSettings, where: str) -> Reply:
    """The app's response JSON read through the [subject] paths. Raises SubjectError naming the path and what it
    found when the shape is wrong."""
    answer = dotted(data, cfg.answer_path) if cfg.answer_path else None
    if answer is not None and not isinstance(answer, str):
        raise SubjectError(f"{where}: {cfg.answer_path!r} must be a string, got {type(answer).__name__}")
    raw = dotted(data, cfg.contexts_path)
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise SubjectError(f"{where}: {cfg.contexts_path!r} must be a list of contexts, got {type(raw).__name__}")
    contexts = []
    for i, c in enumerate(raw):
        if isinstance(c, str):
            contexts.append(Context(c))
            continue
        text = dotted(c, cfg.context_text) if isinstance(c, dict) else None
        if not isinstance(text, str):
            raise SubjectError(
                f"{where}: {cfg.contexts_path}[{i}] needs a string at {cfg.context_text!r} (or be a string itself)"
            )
        cid, src = dotted(c, cfg.context_id), dotted(c, cfg.context_source)
        contexts.append(Context(text, None if cid is None else str(cid), None if src is None else str(src)))
    meta = dotted(data, cfg.metadata_path) if cfg.metadata_path else None
    metadata = {k: str(meta[k]) for k in IDENTITY_FIELDS if isinstance(meta, dict) and meta.get(k) is not None}
    return Reply(answer, tuple(contexts), metadata)


def _body(template: str, question: str, question_id: str) -> bytes:
    """The JSON body with the placeholders filled in, each value JSON-escaped (a quote in a question stays text)."""
    values = {"question": question, "question_id": question_id}
    filled = re.sub(r"\{(question|question_id)\}", lambda m: json.dumps(values[m.group(1)])[1:-1], template)
    return filled.encode("utf-8")


class HttpSubject:
    """POST one JSON request per test; retries 429, 5xx, timeouts and broken connections with exponential backoff
    and jitter, waiting what `Retry-After` asks (at most 60 s)."""

    def __init__(self, cfg: SubjectSettings):
        import httpx

        self.cfg = cfg
        self.label = f"http {cfg.url}"
        headers = {"Content-Type": "application/json", **cfg.headers}
        for name, var in cfg.header_env.items():
            value = os.environ.get(var)
            if value is None:
                raise SubjectError(f"[subject.header_env] {name} names ${var}, which is not set in the environment")
            headers[name] = value
        limits = httpx.Limits(max_connections=cfg.concurrency, max_keepalive_connections=cfg.concurrency)
        self._client = httpx.Client(headers=headers, timeout=cfg.timeout_s, limits=limits)

    def _send(self, method: str, url: str, body: bytes | None = None) -> Any:
        import httpx

        last, attempt = "no attempt made", 0
        for attempt in range(self.cfg.max_retries + 1):
            wait = None
            try:
                resp = self._client.request(method, url, content=body)
                if resp.status_code == 429 or resp.status_code >= 500:
                    last = f"HTTP {resp.status_code} from {url}"
                    wait = retry_after(resp.headers.get("retry-after"))
                elif resp.status_code >= 400:
                    hint = (
                        " (check the header values in [subject.header_env])" if resp.status_code in (401, 403) else ""
                    )
                    raise SubjectError(f"HTTP {resp.status_code} from {url}{hint}: {resp.text[:200]}")
                else:
                    try:
                        return resp.json()
                    except ValueError as exc:
                        raise SubjectError(f"{url} did not reply with JSON: {resp.text[:120]!r}") from exc
            except httpx.TimeoutException:
                last = f"no reply from {url} within {self.cfg.timeout_s} s"
            except httpx.TransportError as exc:
                last = f"cannot reach {url}: {exc}"
            if attempt == self.cfg.max_retries:
                break
            time.sleep(backoff_s(attempt, wait))
        raise SubjectError(f"{last} after {attempt + 1} attempt(s)")

    def ask(self, question: str, question_id: str) -> Reply:
        data = self._send("POST", self.cfg.url, _body(self.cfg.body, question, question_id))
        return parse_reply(data, self.cfg, f"the reply of {self.cfg.url}")

    def identity(self) -> dict[str, str]:
        """The app's identity from [subject].identity_url ({} without one)."""
        if not self.cfg.identity_url:
            return {}
        data = self._send("GET", self.cfg.identity_url)
        meta = dotted(data, self.cfg.metadata_path) if isinstance(dotted(data, self.cfg.metadata_path), dict) else data
        return {k: str(meta[k]) for k in IDENTITY_FIELDS if isinstance(meta, dict) and meta.get(k) is not None}

    def close(self) -> None:
        self._client.close()


class PythonSubject:
    """The app as a function: called with the question (and the test's id, when it takes two arguments); it returns
    the same shape as the HTTP reply (a dict), or an object with `answer` and `contexts` attributes."""

    def __init__(self, cfg: SubjectSettings):
        self.cfg = cfg
        self.label = f"python {cfg.target}"
        module_name, _, attr = cfg.target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise SubjectError(f"[subject].target {cfg.target!r}: cannot import {module_name!r}: {exc}") from exc
        fn: Any = module
        for part in attr.split("."):
            fn = getattr(fn, part, None)
        if not callable(fn):
            raise SubjectError(f"[subject].target {cfg.target!r}: {attr!r} is not a function in {module_name}")
        self._fn: Callable[..., Any] = fn
        try:
            self._arity = len(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            self._arity = 1

    def ask(self, question: str, question_id: str) -> Reply:
        out = self._fn(question, question_id) if self._arity >= 2 else self._fn(question)
        if not isinstance(out, dict):
            out = {k: getattr(out, k) for k in ("answer", "contexts", "metadata") if hasattr(out, k)}
        return parse_reply(out, self.cfg, f"what {self.cfg.target} returned")

    def identity(self) -> dict[str, str]:
        probe = getattr(self._fn, "identity", None)
        return {k: str(v) for k, v in (probe() if callable(probe) else {}).items() if k in IDENTITY_FIELDS}

    def close(self) -> None:
        pass


def load_subject(cfg: SubjectSettings) -> HttpSubject | PythonSubject:
    if cfg.kind == "http":
        return HttpSubject(cfg)
    if cfg.kind == "python":
        return PythonSubject(cfg)
    raise SubjectError(f"[subject].kind {cfg.kind!r} is ragpipe's own pipeline, not an app to call")


def ask_all(
    subject: HttpSubject | PythonSubject,
    items: Sequence[tuple[str, str]],
    concurrency: int,
    progress: Callable[[int, int], None] | None = None,
) -> list[Reply]:
    """(question_id, question) -> Reply for each, in order, `concurrency` calls at a time. A call that fails is a
    Reply with `error` (the reason), so one broken test never stops the others."""

    def one(item: tuple[str, str]) -> Reply:
        qid, question = item
        t0 = time.perf_counter()
        try:
            reply = subject.ask(question, qid)
        except Exception as exc:  # the app's own exception (python) or a failed call: the test's error
            return Reply(None, (), error=f"{type(exc).__name__}: {exc}", latency_s=time.perf_counter() - t0)
        return Reply(reply.answer, reply.contexts, reply.metadata, None, time.perf_counter() - t0)

    out: list[Reply] = []
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        for reply in pool.map(one, items):
            out.append(reply)
            if progress:
                progress(len(out), len(items))
    return out


@dataclass(frozen=True)
class Observed:
    """What the app says it is, as a version: a deploy changes it."""

    version: str  # 16 hex digits
    identity: dict[str, str]  # embedder, model, version (empty for a fingerprint)
    how: str  # "identity" (the identity endpoint or function), "probe metadata", "contexts fingerprint"


def _digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def observe(subject: HttpSubject | PythonSubject, probes: Sequence[tuple[str, str]]) -> Observed:
    """The app's identity: from its identity endpoint (or the function's `identity`), else from the metadata of the
    replies to a few probe questions ((question_id, question) pairs), else a fingerprint of the contexts it returned
    for them: a changed retrieval is a changed app. A call that fails raises SubjectError."""
    ident = subject.identity()
    if ident:
        return Observed(_digest(ident), ident, "identity")
    replies = [subject.ask(question, qid) for qid, question in probes]
    ident = next((r.metadata for r in replies if r.metadata), {})
    if ident:
        return Observed(_digest(ident), ident, "probe metadata")
    seen = [[(c.id, c.source, c.text) for c in r.contexts] for r in replies]
    return Observed(_digest(seen), {}, "contexts fingerprint")
