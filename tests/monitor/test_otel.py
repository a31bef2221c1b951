"""Production traces from OpenTelemetry: spans made by the real SDK (OpenInference and OpenLLMetry attributes), as OTLP
JSON lines, read into the same rows as their JSON-lines twins; a trace read when its root span arrives, and once; and
`ragpipe monitor serve` receiving what the SDK's own OTLP/HTTP exporter sends."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest
from conftest import ROOT
from google.protobuf.json_format import MessageToJson
from monitorkit import ingest, rows, traces_settings
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragpipe.monitor.receiver import TOKEN_ENV, ReceiverError, serve
from ragpipe.settings import Settings

EXAMPLES = ROOT / "examples"
GOLDEN = [json.loads(line) for line in (EXAMPLES / "golden.jsonl").read_text().splitlines() if line.strip()]
TRAP = next(t["trap_quote"] for t in GOLDEN if t["question_id"] == "neg_01")
CTX = "Revenue for the second quarter of 2023 was $44.8 million, a quarterly record for the company at the time."
READINGS = "question, answer, n_contexts, refused, cites, citation_hit, trap_tests"


def settings(root: Path) -> Settings:
    return traces_settings(root, EXAMPLES / "golden.jsonl", str(EXAMPLES / "corpus"), min_traces=1)


class App:
    """A traced app: the OpenTelemetry SDK with an in-memory exporter, spans named as the instrumentors name them."""

    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "shop-bot", "service.version": "3"}))
        provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.tracer = provider.get_tracer("app")

    def openinference(self, question: str, answer: str, docs: list[str]) -> None:
        retrieved = {f"retrieval.documents.{i}.document.content": d for i, d in enumerate(docs)}
        with self.tracer.start_as_current_span("chain", attributes={"input.value": question}) as root:
            with self.tracer.start_as_current_span("retriever", attributes={
                **retrieved, "retrieval.documents.0.document.id": "reports/q2-2023.md#0",
                "openinference.span.kind": "RETRIEVER"}):  # fmt: skip
                pass
            with self.tracer.start_as_current_span("llm", attributes={"llm.token_count.prompt": 50,
                                                                      "llm.token_count.completion": 7}):  # fmt: skip
                pass
            root.set_attributes(
                {"output.value": json.dumps({"answer": answer}), "output.mime_type": "application/json"}
            )

    def openllmetry(self, question: str, answer: str, docs: dict[str, str] | None = None) -> None:
        with self.tracer.start_as_current_span("rag.workflow", attributes={
                "traceloop.entity.input": json.dumps({"inputs": {"question": question}})}):  # fmt: skip
            with self.tracer.start_as_current_span("chroma.query", attributes={"db.system": "chroma"}) as query:
                # the events OpenLLMetry's vector-database instrumentors add, one per document returned
                for i, (doc_id, text) in enumerate((docs or {}).items()):
                    query.add_event("db.query.result", {"db.query.result.id": doc_id, "db.query.result.distance": i / 10,
                                                        "db.query.result.document": text})  # fmt: skip
            with self.tracer.start_as_current_span("openai.chat", attributes={
                "gen_ai.completion.0.content": answer, "gen_ai.usage.input_tokens": 30,
                "gen_ai.usage.output_tokens": 4}):  # fmt: skip
                pass

    def health_check(self) -> None:
        with self.tracer.start_as_current_span("GET /health"):
            pass

    def take(self) -> list[ReadableSpan]:
        out = list(self.spans.get_finished_spans())
        self.spans.clear()
        return out


def otlp_line(spans: list[ReadableSpan]) -> str:
    """The SDK's own OTLP encoding as protobuf's generic JSON (ids in base64: the reader takes base64 and hex)."""
    return json.dumps(json.loads(MessageToJson(encode_spans(spans)))) + "\n"


def test_openinference_and_openllmetry_spans_read_as_their_json_lines_twins(tmp_path: Path) -> None:
    app = App()
    app.openinference("What was revenue in Q2 2023?", "Revenue was $44.8 million [1].", [CTX])
    app.openinference("What was revenue in Q3 2022?", "The documents do not say.", [TRAP, CTX])
    app.openllmetry("Who is the CFO?", "I'm sorry, that is not in the documents.", {"q2.md#0": CTX, "neg.md#3": TRAP})
    app.health_check()  # another trace of the app, with no question: not a production trace
    otel = settings(tmp_path / "otel")
    (otel.monitor.traces_dir / "spans.jsonl").write_text(otlp_line(app.take()))
    got = ingest(otel)
    assert (got.traces, got.not_questions, got.new_problems) == (3, 1, 0)
    twin = settings(tmp_path / "twin")
    (twin.monitor.traces_dir / "twin.jsonl").write_text(
        "".join(
            json.dumps({"time": "2026-12-01T10:00:00Z", **t}) + "\n"
            for t in [
                {
                    "question": "What was revenue in Q2 2023?",
                    "answer": "Revenue was $44.8 million [1].",
                    "contexts": [CTX],
                },
                {
                    "question": "What was revenue in Q3 2022?",
                    "answer": "The documents do not say.",
                    "contexts": [TRAP, CTX],
                },
                {
                    "question": "Who is the CFO?",
                    "answer": "I'm sorry, that is not in the documents.",
                    "contexts": [CTX, TRAP],
                },
            ]
        )  # fmt: skip
    )
    ingest(twin)
    sql = f"SELECT {READINGS} FROM production_traces ORDER BY question"
    assert rows(otel, sql) == rows(twin, sql)
    assert rows(otel, "SELECT trap_tests FROM production_traces WHERE question LIKE '%Q3 2022%'") == [(["neg_01"],)]
    detail = rows(otel, "SELECT question, app_version, tokens, latency_ms > 0, contexts, extra FROM production_traces "
                        "ORDER BY question")  # fmt: skip
    assert [(r[1], r[2], r[3]) for r in detail] == [("3", 57, True), ("3", 57, True), ("3", 34, True)]
    assert json.loads(detail[0][4]) == [{"text": CTX, "source": "reports/q2-2023.md#0"}]
    assert json.loads(detail[2][4]) == [{"text": CTX, "source": "q2.md#0"}, {"text": TRAP, "source": "neg.md#3"}]
    assert json.loads(detail[0][5]) == {"service": "shop-bot"}


def test_a_trace_spread_over_lines_is_read_when_its_root_arrives_and_only_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = settings(tmp_path)
    path = s.monitor.traces_dir / "otlp.jsonl"
    app = App()
    app.openinference("What was revenue in Q2 2023?", "Revenue was $44.8 million.", [CTX])
    a_retriever, a_llm, a_root = app.take()  # children end first: an exporter's batch may cut between them
    app.openllmetry("Who is the CFO?", "Not in the documents.")
    b = app.take()
    path.write_text(otlp_line([a_retriever]) + otlp_line(b))
    first = ingest(s)
    assert (first.traces, first.files_read) == (1, 1)  # B; A waits for its root span
    with path.open("a") as f:
        f.write(otlp_line([a_llm, a_root]))
    second = ingest(s)
    assert (second.traces, second.repeated) == (1, 0)  # A, with the retriever span of line 1; B not read twice
    assert rows(s, "SELECT n_contexts, tokens, line FROM production_traces WHERE question LIKE '%Q2%'") == [(1, 57, 3)]
    assert ingest(s).files_read == 0
    # spans whose root never comes are given up after PENDING_LINES lines, named once, and hold nothing back
    monkeypatch.setattr("ragpipe.monitor.ingest.PENDING_LINES", 2)
    app.openinference("What was revenue in Q3 2022?", "The documents do not say.", [TRAP])
    orphan = app.take()[0]
    app.openllmetry("Who is the CEO?", "Not in the documents.")
    with path.open("a") as f:
        f.write(otlp_line([orphan]) + otlp_line(app.take()) + "\n" + "{}\n")
    third = ingest(s)
    assert (third.traces, third.new_problems) == (1, 2)
    problems = rows(s, "SELECT line, problem FROM trace_problems ORDER BY line")
    assert problems[0][0] == 4 and re.search(r"trace [0-9a-f]{32}: 1 spans and no root span in 2 lines", problems[0][1])
    assert problems[1][0] == 7 and "no 'time' field" in problems[1][1]
    assert ingest(s).files_read == 0


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[tuple[Settings, str]]:
    s = settings(tmp_path)
    server = serve(s.monitor.traces_dir, "127.0.0.1", 0, log=lambda _m: None)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield s, f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    server.shutdown()
    server.server_close()


def post(url: str, body: bytes, **headers: str) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers)) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@pytest.mark.slow
def test_the_receiver_takes_the_sdk_exporters_requests_and_refuses_what_is_not_otlp(
    receiver: tuple[Settings, str],
) -> None:
    s, url = receiver
    app = App()
    app.openinference("What was revenue in Q2 2023?", "Revenue was $44.8 million.", [CTX])
    assert OTLPSpanExporter(endpoint=url).export(app.take()) == SpanExportResult.SUCCESS
    app.openllmetry("Who is the CFO?", "Not in the documents.")
    body = gzip.compress(otlp_line(app.take()).encode())
    assert post(url, body, **{"Content-Type": "application/json", "Content-Encoding": "gzip"}) == 200
    assert post(url, b"\xff\x00 not protobuf", **{"Content-Type": "application/x-protobuf"}) == 400
    assert post(url, b'{"spans": []}', **{"Content-Type": "application/json"}) == 400
    assert post(url.replace("/v1/traces", "/v1/metrics"), b"", **{"Content-Type": "application/json"}) == 404
    assert post(url, b"", **{"Content-Type": "application/x-protobuf"}) == 200  # an empty export: nothing written
    (written,) = list(s.monitor.traces_dir.iterdir())
    lines = written.read_text().splitlines()
    assert len(lines) == 2 and re.fullmatch(r"otlp-\d{4}-\d{2}-\d{2}\.jsonl", written.name)
    trace_id = json.loads(lines[0])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    assert re.fullmatch(r"[0-9a-f]{32}", trace_id)  # OTLP JSON: ids in hex, as the Collector writes them
    assert ingest(s).traces == 2
    assert rows(s, "SELECT trace_id FROM production_traces WHERE question LIKE '%Q2%'") == [(trace_id,)]


@pytest.mark.slow
def test_the_receiver_needs_its_token_and_a_token_to_listen_beyond_this_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with pytest.raises(ReceiverError, match=f"without a token: set {TOKEN_ENV}"):
        serve(folder, "0.0.0.0", 0)
    with pytest.raises(ReceiverError, match="is not a folder"):
        serve(tmp_path / "missing", "127.0.0.1", 0)
    monkeypatch.setenv(TOKEN_ENV, "tok-3c1a9")
    logged: list[str] = []
    server = serve(folder, "127.0.0.1", 0, log=logged.append)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    app = App()
    app.openllmetry("Who is the CFO?", "Not in the documents.")
    spans = app.take()
    try:
        assert OTLPSpanExporter(endpoint=url).export(spans) == SpanExportResult.FAILURE  # 401
        assert list(folder.iterdir()) == []
        with_token = OTLPSpanExporter(endpoint=url, headers={"Authorization": "Bearer tok-3c1a9"})
        assert with_token.export(spans) == SpanExportResult.SUCCESS
    finally:
        server.shutdown()
        server.server_close()
    assert len(list(folder.iterdir())) == 1 and len(logged) == 1
    assert "tok-3c1a9" not in "".join(logged) + "".join(p.read_text() for p in folder.iterdir())


@pytest.mark.slow
@pytest.mark.model
def test_the_example_app_traced_by_openinference_lands_with_the_rates_of_its_json_lines_twin(tmp_path: Path) -> None:
    """The done-when of OpenTelemetry traces, end to end with real processes: `ragpipe monitor serve`, and the example
    LangChain app instrumented by OpenInference exporting through the SDK's OTLP/HTTP exporter."""
    otel = settings(tmp_path / "otel")
    serve_proc = subprocess.Popen(
        [sys.executable, "-m", "ragpipe.cli", "--settings", str(otel.source), "monitor", "serve", "--port", "0"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert serve_proc.stdout is not None
        port = re.search(r"127\.0\.0\.1:(\d+)/v1/traces", serve_proc.stdout.readline()).group(1)  # type: ignore[union-attr]
        twin = settings(tmp_path / "twin")
        questions = [t["question"] for t in GOLDEN[:4] + GOLDEN[-4:]]
        script = (
            "import json, sys, time\n"
            "import rag_app\n"
            "from opentelemetry import trace\n"
            "with open(sys.argv[1], 'w') as out:\n"
            "    for q in json.loads(sys.argv[2]):\n"
            "        r = rag_app.ask(q)\n"
            "        out.write(json.dumps({'time': time.time(), 'question': q, 'answer': r['answer'],"
            " 'contexts': r['contexts']}) + '\\n')\n"
            "trace.get_tracer_provider().shutdown()\n"  # flushes the batch exporter
        )
        env = {**os.environ, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{port}/v1/traces",
               "APP_VERSION": "5", "PYTHONPATH": str(EXAMPLES / "app")}  # fmt: skip
        argv = [sys.executable, "-c", script, str(twin.monitor.traces_dir / "twin.jsonl"), json.dumps(questions)]
        subprocess.run(argv, env=env, check=True, timeout=300, capture_output=True)
        deadline = time.monotonic() + 30
        while sum(len(p.read_text().splitlines()) for p in otel.monitor.traces_dir.glob("*.jsonl")) == 0:
            assert time.monotonic() < deadline, "the receiver wrote nothing"
            time.sleep(0.2)
    finally:
        serve_proc.terminate()
        serve_proc.wait(timeout=30)
    assert ingest(otel).traces == ingest(twin).traces == len(questions)
    sql = f"SELECT {READINGS} FROM production_traces ORDER BY question"
    assert rows(otel, sql) == rows(twin, sql)
    rates = "SELECT traces, refusal_rate, citation_hit_rate, trap_hits FROM monitor_daily"
    assert rows(otel, rates) == rows(twin, rates)
    assert rows(otel, "SELECT DISTINCT app_version FROM production_traces") == [("5",)]
    assert rows(otel, "SELECT sum(len(trap_tests)) > 0, bool_or(refused), bool_or(NOT refused) FROM production_traces")[
        0
    ] == (True, True, True)  # the questions reach traps, and the app both answers and refuses


def test_a_bad_trace_is_named_and_the_other_traces_of_its_line_are_read(tmp_path: Path) -> None:
    s = settings(tmp_path)
    app = App()
    app.openinference("What was revenue in Q2 2023?", "Revenue was $44.8 million.", [CTX])
    app.openllmetry("Who is the CFO?", "Not in the documents.")
    request = json.loads(otlp_line(app.take()))
    spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    llm = next(sp for sp in spans if "gen_ai.usage.input_tokens" in json.dumps(sp))
    llm["attributes"].append({"key": "llm.token_count.total", "value": {"intValue": "-5"}})  # a broken counter
    (s.monitor.traces_dir / "otlp.jsonl").write_text(json.dumps(request) + "\n")
    got = ingest(s)
    assert (got.traces, got.new_problems) == (1, 1)
    (problem,) = rows(s, "SELECT line, problem FROM trace_problems")
    assert problem[0] == 1 and re.match(
        r"OpenTelemetry trace [0-9a-f]{32}: 'tokens' must be a non-negative", problem[1]
    )


def test_spans_of_openllmetrys_own_chroma_instrumentation_give_the_documents_its_query_returned(tmp_path: Path) -> None:
    """tests/fixtures/traces_otel/openllmetry_chroma.jsonl: OpenLLMetry's Chroma instrumentor around a real Chroma
    query (its `db.query.result` events), encoded by the SDK (make_openllmetry.py says how it was made)."""
    otel = settings(tmp_path)
    fixture = ROOT / "tests" / "fixtures" / "traces_otel" / "openllmetry_chroma.jsonl"
    (otel.monitor.traces_dir / fixture.name).write_bytes(fixture.read_bytes())
    got = ingest(otel)
    assert (got.traces, got.not_questions, got.new_problems) == (3, 1, 0)
    found = rows(otel, "SELECT question, contexts, refused, citation_hit, app_version, tokens FROM production_traces "
                       "ORDER BY question")  # fmt: skip
    sources = [[c["source"] for c in json.loads(r[1])] for r in found]
    assert sources == [  # nearest first, as the query returned them
        ["policies/parental-leave-policy.md#1", "product/hr-200-datasheet.md#2"],  # How many weeks ...
        ["reports/q2-2023.md#0", "reports/q3-2023.md#0"],  # What was Halvorsen's revenue ...
        ["product/hr-200-datasheet.md#2", "policies/parental-leave-policy.md#1"],  # Who is ...
    ]
    assert json.loads(found[1][1])[0]["text"].startswith("Revenue for the second quarter of 2023 was $44.8 million")
    assert [(r[2], r[3], r[4], r[5]) for r in found] == [(False, True, "7", 36), (False, True, "7", 36),
                                                         (True, None, "7", 36)]  # fmt: skip


def test_the_receiver_stops_on_sigterm_even_when_it_was_started_with_sigterm_blocked(tmp_path: Path) -> None:
    """`kill` (docker stop, systemd) stops `ragpipe monitor serve` as Ctrl-C does, exit status 0; a SIGTERM blocked or
    ignored by the process that started it (a child inherits both) does not keep it running."""
    import signal

    s = settings(tmp_path)

    def blocked() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    proc = subprocess.Popen(
        [sys.executable, "-m", "ragpipe.cli", "--settings", str(s.source), "monitor", "serve", "--port", "0"],
        stdout=subprocess.PIPE, text=True, preexec_fn=blocked,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and "OTLP/HTTP receiver on" in proc.stdout.readline()
        proc.terminate()
        assert proc.wait(timeout=20) == 0
    finally:
        proc.kill()
