"""The client that calls the team's app ([subject] http / python), against a real HTTP server on loopback: the
request body, secret headers from the environment, retries on 429/5xx honouring Retry-After, a call that fails
reported as an error, and replies of the wrong shape named by path."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ragpipe.rag import HttpSubject, PythonSubject, SubjectError, ask_all, parse_reply
from ragpipe.settings import SettingsError, SubjectSettings, settings_from_dict


class _App(BaseHTTPRequestHandler):
    seen: list[dict] = []
    plan: list[tuple[int, dict[str, str]]] = []  # (status, headers) to answer with before the 200s

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _App.seen.append({"body": body, "auth": self.headers.get("Authorization"), "t": time.monotonic()})
        status, headers = _App.plan.pop(0) if _App.plan else (200, {})
        payload = {
            "answer": f"re: {body.get('question', body.get('q'))}",
            "contexts": [{"text": "a passage", "id": "c1"}],
            "metadata": {"embedder": "e1"},
        }
        data = json.dumps(payload if status == 200 else {"error": "busy"}).encode()
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def app() -> Iterator[str]:
    _App.seen, _App.plan = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _App)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/ask"
    server.shutdown()


def test_one_request_per_test_with_the_question_json_escaped_and_the_secret_from_the_environment(
    app: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_TOKEN", "Bearer s3cret")
    cfg = SubjectSettings(
        kind="http",
        url=app,
        body='{"q": "{question}", "id": "{question_id}"}',
        header_env={"Authorization": "APP_TOKEN"},
    )
    replies = ask_all(HttpSubject(cfg), [("t1", 'What is "x"?'), ("t2", "y\nz")], concurrency=2)
    assert [r.answer for r in replies] == ['re: What is "x"?', "re: y\nz"]
    assert replies[0].contexts[0].id == "c1" and replies[0].metadata == {"embedder": "e1"}
    assert sorted(s["body"]["id"] for s in _App.seen) == ["t1", "t2"]
    assert {s["auth"] for s in _App.seen} == {"Bearer s3cret"}


def test_429_and_5xx_are_retried_and_retry_after_is_honoured(app: str) -> None:
    _App.plan = [(429, {"Retry-After": "1"}), (503, {})]
    t0 = time.monotonic()
    [reply] = ask_all(HttpSubject(SubjectSettings(kind="http", url=app, max_retries=3)), [("t1", "q")], 1)
    assert reply.error is None and reply.answer == "re: q"
    assert len(_App.seen) == 3 and _App.seen[1]["t"] - _App.seen[0]["t"] >= 0.95
    assert time.monotonic() - t0 < 10


def test_a_call_that_keeps_failing_is_an_error_with_the_reason(app: str) -> None:
    _App.plan = [(500, {})] * 3
    [reply] = ask_all(HttpSubject(SubjectSettings(kind="http", url=app, max_retries=2)), [("t1", "q")], 1)
    assert reply.answer is None and "HTTP 500" in (reply.error or "") and "3 attempt(s)" in (reply.error or "")


def test_a_missing_secret_variable_is_named() -> None:
    cfg = SubjectSettings(kind="http", url="http://127.0.0.1:9/ask", header_env={"X-Key": "NO_SUCH_VAR_123"})
    with pytest.raises(SubjectError, match=r"\$NO_SUCH_VAR_123"):
        HttpSubject(cfg)


def test_replies_of_the_wrong_shape_name_the_path() -> None:
    cfg = SubjectSettings(kind="http", url="http://x/ask", answer_path="result.text", contexts_path="result.docs")
    ok = parse_reply({"result": {"text": "a", "docs": ["p1", {"text": "p2", "id": 7}]}}, cfg, "reply")
    assert ok.answer == "a" and [c.text for c in ok.contexts] == ["p1", "p2"] and ok.contexts[1].id == "7"
    with pytest.raises(SubjectError, match=r"'result.docs' must be a list"):
        parse_reply({"result": {"text": "a", "docs": "p1"}}, cfg, "reply")
    with pytest.raises(SubjectError, match=r"result.docs\[0\] needs a string at 'text'"):
        parse_reply({"result": {"docs": [{"body": "p"}]}}, cfg, "reply")
    retriever_only = parse_reply({"result": {"docs": ["p"]}}, cfg, "reply")
    assert retriever_only.answer is None


def test_a_python_target_that_does_not_import_is_named() -> None:
    with pytest.raises(SubjectError, match=r"cannot import 'no_such_module_xyz'"):
        PythonSubject(SubjectSettings(kind="python", target="no_such_module_xyz:ask"))
    with pytest.raises(SubjectError, match=r"'nope' is not a function in json"):
        PythonSubject(SubjectSettings(kind="python", target="json:nope"))


def test_the_settings_name_the_field(tmp_path: Path) -> None:
    src = tmp_path / "ragpipe.toml"
    base = {"corpus": {"dir": "c"}}
    for subject, message in (
        ({"kind": "app"}, r"\[subject\].kind must be"),
        ({"kind": "http", "url": "localhost/ask"}, r"\[subject\].url must be an http"),
        ({"kind": "http", "url": "http://h/ask", "body": "{question}"}, r"\[subject\].body is not a JSON template"),
        ({"kind": "http", "url": "http://h/ask", "headers": {"Authorization": "Bearer x"}}, r"header_env"),
        ({"kind": "python", "target": "app.ask"}, r"package.module:function"),
    ):
        with pytest.raises(SettingsError, match=message):
            settings_from_dict({**base, "subject": subject}, src)
    pipeline = settings_from_dict(base, src)
    app = settings_from_dict({**base, "subject": {"kind": "http", "url": "http://h/ask"}}, src)
    assert pipeline.stage_hash("retriever") != app.stage_hash("retriever")  # a subject change re-evaluates
    assert pipeline.stage_hash("chunker") == app.stage_hash("chunker")


def test_the_app_is_observed_by_identity_else_probe_metadata_else_a_fingerprint_of_its_contexts(app: str) -> None:
    from ragpipe.rag import observe

    cfg = SubjectSettings(kind="http", url=app)
    http = HttpSubject(cfg)
    try:
        seen = observe(http, [("q1", "first question")])  # no identity endpoint: the probe's reply metadata
    finally:
        http.close()
    assert (seen.how, seen.identity) == ("probe metadata", {"embedder": "e1"}) and len(_App.seen) == 1

    contexts = {"text": "one passage"}

    def app_fn(question: str) -> dict:
        return {"answer": "x", "contexts": [contexts]}

    import sys
    import types

    module = types.ModuleType("observed_app_xyz")
    module.ask = app_fn  # type: ignore[attr-defined]
    sys.modules["observed_app_xyz"] = module
    try:
        fn = PythonSubject(SubjectSettings(kind="python", target="observed_app_xyz:ask"))
        a = observe(fn, [("q1", "first question")])
        assert a.how == "contexts fingerprint" and a.identity == {}
        assert observe(fn, [("q1", "first question")]) == a  # the same retrieval: the same app
        contexts["text"] = "another passage"  # a re-index that changed what it retrieves: another app
        assert observe(fn, [("q1", "first question")]).version != a.version
        app_fn.identity = lambda: {"embedder": "bge", "version": "7", "other": "x"}  # type: ignore[attr-defined]
        named = observe(fn, [("q1", "first question")])
        assert (named.how, named.identity) == ("identity", {"embedder": "bge", "version": "7"})
    finally:
        del sys.modules["observed_app_xyz"]


def test_compare_subject_url_moves_the_identity_endpoint_with_the_app(tmp_path: Path) -> None:
    from ragpipe.cli.compare import subject_overrides

    raw = {
        "corpus": {"dir": str(tmp_path)},
        "subject": {"kind": "http", "url": "http://prod:8765/ask", "identity_url": "http://prod:8765/identity"},
    }
    settings = settings_from_dict(raw, tmp_path / "ragpipe.toml")
    assert subject_overrides(settings, "https://staging:9000/v2/ask") == [
        'subject.url="https://staging:9000/v2/ask"',
        'subject.identity_url="https://staging:9000/identity"',
    ]
    elsewhere = {**raw, "subject": {**raw["subject"], "identity_url": "http://registry/apps/rag"}}
    assert subject_overrides(settings_from_dict(elsewhere, tmp_path / "ragpipe.toml"), "http://staging/ask") == [
        'subject.url="http://staging/ask"'  # an identity served elsewhere stays where it is
    ]
