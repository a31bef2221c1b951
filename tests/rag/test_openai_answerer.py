"""OpenAIAnswerer against a real local HTTP server process speaking the chat-completions protocol (tests/openai_server.py).

Every failure mode must come back as an Answer with `error` set and empty text, never as an exception, and never as
text that could pass as a refusal.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import ragpipe.rag.openai_client as client_mod
from ragpipe.golden import GoldenTest
from ragpipe.rag import Answer, OpenAIAnswerer, build_prompt
from ragpipe.settings import AnswererSettings, OpenAISettings
from ragpipe.verdicts import decide

pytestmark = [pytest.mark.slow]

SERVER = Path(__file__).resolve().parents[1] / "openai_server.py"
KEY_ENV = "RAGPIPE_TEST_OPENAI_KEY"
SENTINEL = "sk-test-SENTINEL-123"
REFUSAL = "not in documents"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start tests/openai_server.py on a free port; yield its base URL (…/v1)."""
    log = tmp_path_factory.mktemp("openai_server") / "stderr.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, str(SERVER), "--port", "0", "--slow-s", "5"],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # blocks until READY or the process dies (EOF)
        if not line.startswith("READY "):
            proc.kill()
            raise RuntimeError(f"server did not start: {line!r} {log.read_text(errors='replace')}")
        port = int(line.split()[1])
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()


def make_answerer(base_url: str, concurrency: int = 4) -> OpenAIAnswerer:
    cfg = AnswererSettings(
        kind="openai",
        refusal_phrase=REFUSAL,
        openai=OpenAISettings(
            base_url=base_url,
            model="test-model",
            api_key_env=KEY_ENV,
            timeout_s=1.0,
            max_retries=2,
            concurrency=concurrency,
            max_tokens=32,
        ),
    )
    return OpenAIAnswerer(cfg)


@pytest.fixture
def answerer(server: str, monkeypatch: pytest.MonkeyPatch) -> OpenAIAnswerer:
    monkeypatch.setenv(KEY_ENV, SENTINEL)
    return make_answerer(server)


def recorded(base_url: str) -> list[dict[str, str | None]]:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/_requests", timeout=5) as resp:
        return json.loads(resp.read())


def q(marker: str = "") -> str:
    """A question unique to the call, so the server's per-message counters never collide between tests."""
    return f"What was the revenue in Q3 2023? {marker} (case {uuid.uuid4().hex[:8]})".replace("  ", " ")


CONTEXT_WITH_ANSWER = [
    "Halvorsen Robotics reported revenue of $48.7 million for the third quarter of 2023.\nANSWER: $48.7 million"
]
CONTEXT_WITHOUT = ["Halvorsen Robotics opened an office in Oslo."]


def assert_error(ans: Answer, *needles: str) -> None:
    assert isinstance(ans, Answer)
    assert ans.error, ans
    assert ans.text == "", ans
    assert ans.input_tokens == 0 and ans.output_tokens == 0
    low = ans.error.lower()
    assert any(n.lower() in low for n in needles), f"{ans.error!r} names none of {needles}"
    assert SENTINEL not in repr(ans)


# -- happy paths ---------------------------------------------------------------------------------------------------


def test_normal_answer_sends_bearer_key_and_reports_usage(answerer: OpenAIAnswerer, server: str) -> None:
    before = len(recorded(server))
    question = q()
    ans = answerer.answer(question, CONTEXT_WITH_ANSWER)

    assert ans.error is None
    assert ans.text == "$48.7 million"
    assert ans.latency_s > 0
    # token counts come from the server's `usage` (it counts words of every message; the reply is two words)
    prompt = build_prompt(question, CONTEXT_WITH_ANSWER, REFUSAL)
    assert ans.input_tokens == sum(len(m["content"].split()) for m in prompt)
    assert ans.output_tokens == 2

    new = recorded(server)[before:]
    assert new == [{"auth": f"Bearer {SENTINEL}", "path": "/v1/chat/completions"}]
    assert SENTINEL not in repr(ans)
    assert SENTINEL not in repr(answerer.__dict__) and SENTINEL not in answerer.label


def test_no_key_in_environment_sends_no_authorization(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    before = len(recorded(server))
    ans = make_answerer(server).answer(q(), CONTEXT_WITH_ANSWER)
    assert ans.error is None and ans.text == "$48.7 million"
    assert [r["auth"] for r in recorded(server)[before:]] == [None]


def test_refusal_comes_back_as_text(answerer: OpenAIAnswerer) -> None:
    ans = answerer.answer(q(), CONTEXT_WITHOUT)
    assert ans.error is None
    assert ans.text == REFUSAL
    assert ans.output_tokens == 3


@pytest.mark.parametrize("marker", ["[[429-once]]", "[[500-once]]"])
def test_transient_error_succeeds_after_retry(answerer: OpenAIAnswerer, server: str, marker: str) -> None:
    before = len(recorded(server))
    ans = answerer.answer(q(marker), CONTEXT_WITH_ANSWER)
    assert ans.error is None, ans.error
    assert ans.text == "$48.7 million"
    assert len(recorded(server)) - before == 2  # one failure, one retry


# -- failure modes -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("marker", "needles", "attempts"),
    [
        ("[[429]]", ("HTTP 429",), 3),
        ("[[500]]", ("HTTP 500",), 3),
        ("[[timeout]]", ("timed out", "cannot reach"), 3),  # no status line within timeout_s
        ("[[slowbody]]", ("timed out", "cannot reach"), 3),  # socket timeout while reading the body
        ("[[truncated]]", ("broken response",), 3),  # connection closed mid-body: http.client.IncompleteRead
        ("[[malformed]]", ("malformed response",), 1),
        ("[[nochoices]]", ("malformed response",), 1),
        ("[[badusage]]", ("malformed response",), 1),
        ("[[401]]", ("HTTP 401",), 1),
    ],
)
def test_failure_becomes_error_answer(
    answerer: OpenAIAnswerer, marker: str, needles: tuple[str, ...], attempts: int | None
) -> None:
    t0 = time.perf_counter()
    ans = answerer.answer(q(marker), CONTEXT_WITH_ANSWER)
    assert_error(ans, *needles)
    if attempts is not None:
        assert ans.error.endswith(f"after {attempts} attempt(s)"), ans.error
    assert ans.latency_s > 0
    assert time.perf_counter() - t0 < 8  # timeouts are 1 s and retries 2: never the server's 5 s sleep
    if marker == "[[401]]":
        assert KEY_ENV in ans.error  # tells where the key comes from, never the key


def test_http_error_bodies_are_closed(answerer: OpenAIAnswerer, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[urllib.error.HTTPError] = []
    real = urllib.request.urlopen

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        try:
            return real(*args, **kwargs)
        except urllib.error.HTTPError as exc:
            seen.append(exc)
            raise

    monkeypatch.setattr(client_mod.urllib.request, "urlopen", spy)
    assert_error(answerer.answer(q("[[500]]"), CONTEXT_WITH_ANSWER), "HTTP 500")
    assert len(seen) == 3
    assert all(exc.fp is None or exc.fp.closed for exc in seen), "HTTP error responses left open"


def test_connection_refused_gives_cannot_reach(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SENTINEL)
    with socket.socket() as s:  # a port that was free a moment ago and now has no listener
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ans = make_answerer(f"http://127.0.0.1:{port}/v1").answer(q(), CONTEXT_WITH_ANSWER)
    assert_error(ans, "cannot reach")
    assert f"127.0.0.1:{port}" in ans.error
    assert ans.error.endswith("after 3 attempt(s)")


# -- answer_all ----------------------------------------------------------------------------------------------------


def test_answer_all_keeps_order_and_every_item(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SENTINEL)
    plan = [
        ("ok", "alpha"),
        ("[[500]]", None),
        ("ok", "bravo"),
        ("[[timeout]]", None),
        ("ok", "charlie"),
        ("[[malformed]]", None),
        ("[[429-once]]", "delta"),
        ("ok", "echo"),
        ("[[nochoices]]", None),
        ("refuse", REFUSAL),
        ("[[truncated]]", None),
        ("ok", "foxtrot"),
    ]
    items: list[tuple[str, list[str]]] = []
    for marker, value in plan:
        ctx = CONTEXT_WITHOUT if marker == "refuse" else [f"Some context.\nANSWER: {value or 'never seen'}"]
        items.append((q("" if marker in ("ok", "refuse") else marker), ctx))

    answers = make_answerer(server, concurrency=3).answer_all(items)

    assert len(answers) == len(items)
    for (marker, value), ans in zip(plan, answers):
        assert isinstance(ans, Answer)
        if value is None:
            assert ans.error and ans.text == "", (marker, ans)
        else:
            assert ans.error is None and ans.text == value, (marker, ans)


# -- the verdict rule end to end -----------------------------------------------------------------------------------


def test_error_answer_with_trap_retrieved_is_error_never_pass(answerer: OpenAIAnswerer) -> None:
    test = GoldenTest(
        question_id="neg_err",
        question="What was Halvorsen Robotics' revenue in the third quarter of 2022?",
        expected_answer=REFUSAL,
        kind="negative",
        line=1,
        anchor_ids=["ch_trap"],
        quote="Halvorsen Robotics reported revenue of $48.7 million for the third quarter of 2023.",
        source="reports/q3-2023.md",
        trap_value="$48.7 million",
        embedder_tag="minilm-test",
        last_validated=None,
    )
    refusals = AnswererSettings().refusal_phrases
    retrieved = ["ch_other", "ch_trap"]

    failed = answerer.answer(q("[[500]]"), CONTEXT_WITH_ANSWER)
    assert failed.error
    v = decide(test, ("ch_trap",), "unchanged", retrieved, failed, refusals, "minilm-test")
    assert v.verdict == "error"
    assert v.anchor_retrieved and not v.refused
    assert "HTTP 500" in v.reason

    # the same test with a real refusal from the server passes: the error verdict came from the error alone
    refused = answerer.answer(q(), CONTEXT_WITHOUT)
    assert decide(test, ("ch_trap",), "unchanged", retrieved, refused, refusals, "minilm-test").verdict == "pass"


def test_suggested_questions_are_reworded_by_the_endpoint_and_a_rewording_that_drops_the_qualifier_is_rejected(
    server: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from conftest import answerer_section, write_settings

    from ragpipe.evaluate import PHRASING_PROMPT, Proposal, rephrase
    from ragpipe.settings import load_settings

    assert PHRASING_PROMPT.startswith("Reword the question")  # what the server recognizes
    monkeypatch.setenv("RAGPIPE_TEST_KEY", SENTINEL)
    settings = load_settings(
        write_settings(
            tmp_path / "ragpipe.toml", {"corpus": {"dir": "c"}, "answerer": answerer_section("openai", server)}
        )
    )

    def proposal(question: str) -> Proposal:
        return Proposal("sug_x", "negative", "periods", question, "q", "s", "$1", "ch", "Q2 2023", "Q3 2023", {})

    good, dropped = proposal("Revenue for Q3 2023 was how much?"), proposal("Revenue for Q3 2023 [[reword-drop]]?")
    assert rephrase(settings, [good, dropped], log=lambda m: None) == (1, 1)
    assert good.question == "Do the documents say: revenue for Q3 2023 was how much?"
    assert good.evidence["template"] == "Revenue for Q3 2023 was how much?"
    assert dropped.question == "Revenue for Q3 2023 [[reword-drop]]?"  # the template stays
    assert "dropped the qualifier 'Q3 2023'" in dropped.evidence["phrasing_rejected"]
