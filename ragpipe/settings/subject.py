"""[subject]: what is under test. "pipeline" (the default): ragpipe's own retriever and answerer over its own chunks.
"http": the team's RAG app, one request per test; "python": the app as a function ("package.module:function")."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ragpipe.settings.base import SettingsError, names

SUBJECT_KINDS = {
    "pipeline": "ragpipe's own parser, chunker, embedder, retriever and [answerer]",
    "http": "the team's app over HTTP: one POST per test ([subject] url, body, response paths)",
    "python": "the team's app as a Python function ([subject] target = 'package.module:function')",
}


@dataclass(frozen=True)
class SubjectSettings:
    kind: str = "pipeline"
    url: str = ""  # http: the endpoint each test is POSTed to
    body: str = '{"question": "{question}"}'  # a JSON body; {question} and {question_id} are filled in (JSON-escaped)
    headers: dict[str, str] = field(default_factory=dict)  # plain header values (never secrets)
    header_env: dict[str, str] = field(default_factory=dict)  # header -> environment variable holding its value
    answer_path: str = "answer"  # dotted paths into the response JSON; an empty answer_path: the app only retrieves
    contexts_path: str = "contexts"  # a list of strings or of objects with the three fields below
    context_text: str = "text"
    context_id: str = "id"
    context_source: str = "source"
    metadata_path: str = "metadata"  # optional: {"embedder": ..., "model": ..., "version": ...}
    identity_url: str = ""  # optional GET endpoint returning the app's identity (the same metadata fields)
    # the app's reported embedder name -> the embedder_tag the golden tests carry for the same model, so tests
    # validated under ragpipe's own tag stay verified against an app that names the model its own way
    embedder_tags: dict[str, str] = field(default_factory=dict)
    target: str = ""  # python: "package.module:function", called with the question (and the test, if it takes two)
    concurrency: int = 16
    timeout_s: float = 30.0
    max_retries: int = 3
    observe_interval_s: int = 60  # how often the `subject` source asset reads the app's identity


_PLACEHOLDER = re.compile(r"\{(question|question_id)\}")


def check(s: SubjectSettings, src: Path) -> None:
    if s.kind not in SUBJECT_KINDS:
        raise SettingsError(f"{src}: [subject].kind must be {names(SUBJECT_KINDS)}, got {s.kind!r}")
    if s.kind == "http":
        if not re.match(r"https?://", s.url):
            raise SettingsError(f"{src}: [subject].url must be an http(s):// URL for kind = 'http', got {s.url!r}")
        try:
            body = json.loads(_PLACEHOLDER.sub("0", s.body))
        except ValueError as exc:
            raise SettingsError(f"{src}: [subject].body is not a JSON template ({exc}): {s.body!r}") from exc
        if not isinstance(body, dict):
            raise SettingsError(
                f"{src}: [subject].body is not a JSON template of an object, like "
                f'\'{{"question": "{{question}}"}}\': {s.body!r}'
            )
        if "{question}" not in s.body:
            raise SettingsError(f"{src}: [subject].body must hold the {{question}} placeholder: {s.body!r}")
        secret = [h for h in s.headers if h.lower() in ("authorization", "x-api-key", "api-key")]
        if secret:
            raise SettingsError(
                f"{src}: [subject].headers.{secret[0]} looks like a secret; name the environment variable that "
                f'holds it instead: [subject.header_env] {secret[0]} = "APP_TOKEN"'
            )
    if s.kind == "python" and not re.fullmatch(r"[\w.]+:[\w.]+", s.target):
        raise SettingsError(
            f"{src}: [subject].target must be 'package.module:function' for kind = 'python', got {s.target!r}"
        )
    if s.concurrency < 1 or s.max_retries < 0 or s.timeout_s <= 0:
        raise SettingsError(f"{src}: [subject] concurrency >= 1, max_retries >= 0 and timeout_s > 0 are required")
