"""ragpipe's own cost per test around the app under test: 1,000 tests asked of a local app over HTTP, `concurrency`
at a time (ragpipe.rag.ask_all: request, retries, reply parsing), each test's anchor searched in the contexts the app
returned (find_anchor) and its verdict decided by the rule over those contexts (decide). The app replies at once (or
after --latency-ms), from its own process, with five passages of about 700 characters, one of them holding the test's
quote, and an answer.

    .venv/bin/python bench/subject_overhead.py [--tests 1000] [--concurrency 16] [--latency-ms 0]

Reported in the same run: the whole process's CPU seconds per test for ragpipe's path, and for a bare loop of the
same POSTs with the same client settings (the floor any HTTP client pays), and the wall time of both. The DuckDB
writes of the stage are not in it (bench/eval_throughput.py measures the stages).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import ragpipe  # noqa: E402,F401

APP = textwrap.dedent(
    """
    import json, sys, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    replies = json.loads(open(sys.argv[1]).read())
    latency = float(sys.argv[2])
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def log_message(self, *a): pass
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if latency: time.sleep(latency)
            data = json.dumps(replies[body["question"]]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
    ThreadingHTTPServer.daemon_threads = True
    s = ThreadingHTTPServer(("127.0.0.1", 0), H)
    print(s.server_address[1], flush=True)
    s.serve_forever()
    """
)


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tests", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--latency-ms", type=float, default=0.0)
    args = ap.parse_args()

    from dataclasses import replace

    from ragpipe.evaluate.subject import find_anchor
    from ragpipe.golden import load_golden
    from ragpipe.rag import Answer, HttpSubject, ask_all
    from ragpipe.settings import SubjectSettings
    from ragpipe.verdicts import decide

    base = load_golden(ROOT / "examples" / "golden.jsonl").tests
    tests = [replace(base[i % len(base)], question_id=f"t{i}") for i in range(args.tests)]
    tests = [replace(t, question=f"{t.question} (#{t.question_id})") for t in tests]
    filler = "Background paragraph about the company's operations and policies. " * 10
    replies = {
        t.question: {
            "answer": "not in documents" if t.kind == "negative" else f"It is {t.expected_answer}.",
            "contexts": [
                {"text": (filler + (t.quote or "") if r == 2 else filler)[:900], "id": f"c{r}", "source": "doc.md"}
                for r in range(5)
            ],
        }
        for t in tests
    }
    data = ROOT / "bench" / "results" / "subject_app_replies.json"
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_text(json.dumps(replies))
    app = subprocess.Popen(
        [sys.executable, "-c", APP, str(data), str(args.latency_ms / 1000)], stdout=subprocess.PIPE, text=True
    )
    try:
        port = int(app.stdout.readline())  # type: ignore[union-attr]
        cfg = SubjectSettings(kind="http", url=f"http://127.0.0.1:{port}/ask", concurrency=args.concurrency)
        items = [(t.question_id, t.question) for t in tests]

        def bare() -> None:  # the floor: the same POSTs, same client, nothing done with the replies
            from concurrent.futures import ThreadPoolExecutor

            import httpx

            limits = httpx.Limits(max_connections=args.concurrency, max_keepalive_connections=args.concurrency)
            with httpx.Client(limits=limits, timeout=30) as client:
                with ThreadPoolExecutor(args.concurrency) as pool:
                    list(pool.map(lambda it: client.post(cfg.url, json={"question": it[1]}).json(), items))

        def ragpipe_path() -> None:
            subject = HttpSubject(cfg)
            try:
                got = ask_all(subject, items, cfg.concurrency)
            finally:
                subject.close()
            for t, r in zip(tests, got, strict=True):
                assert r.error is None, r.error
                ids, _ = find_anchor(t, r.contexts)
                contexts = tuple(c.text for c in r.contexts)
                decide(t, ids, "unchanged", list(ids), Answer(r.answer or "", 0, 0, 0), (), "tag", contexts=contexts)

        ragpipe_path()  # warm: imports, spaCy's model, the rule's caches of nothing in particular
        rows = {}
        for name, fn in (("bare POST loop", bare), ("ragpipe (ask, anchor, verdict)", ragpipe_path)):
            c0, w0 = cpu(), time.perf_counter()
            fn()
            rows[name] = (cpu() - c0, time.perf_counter() - w0)
    finally:
        app.terminate()
    n = len(tests)
    print(f"{n} tests, concurrency {args.concurrency}, app latency {args.latency_ms:g} ms (the app's own process)")
    print(f"{'path':<32} {'CPU s':>7} {'CPU ms/test':>12} {'wall s':>7} {'wall ms/test':>13}")
    for name, (c, w) in rows.items():
        print(f"{name:<32} {c:>7.2f} {1000 * c / n:>12.2f} {w:>7.2f} {1000 * w / n:>13.2f}")
    (c_b, w_b), (c_r, w_r) = rows.values()
    print(f"ragpipe's own CPU per test above the bare loop: {1000 * (c_r - c_b) / n:.2f} ms; ratio {c_r / c_b:.2f}x")


if __name__ == "__main__":
    main()
