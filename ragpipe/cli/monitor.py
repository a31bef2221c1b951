"""`ragpipe monitor`: the app's new production traces into the warehouse (through Dagster, so the run shows in the UI),
then the rates per day and each judged against its recent days."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ragpipe.cli.common import failure_code, instance, report_failure, settings_from
from ragpipe.core import EXIT_BLOCKED, EXIT_INPUT


def cmd_monitor(args: argparse.Namespace) -> int:
    from ragpipe.assets.runner import materialize
    from ragpipe.monitor import DAILY_COLUMNS, daily_rows, days, judge
    from ragpipe.warehouse import connect, format_rows

    settings = settings_from(args)
    if settings.monitor.traces_dir is None:
        print("[monitor].traces_dir is not set: point it at the folder your app writes its traces to", file=sys.stderr)
        return EXIT_INPUT
    result = materialize(
        str(settings.source), ["production_traces"], instance(settings), tags={"ragpipe/trigger": "cli"}
    )
    if not result.success:
        return failure_code(report_failure(result))
    meta = {
        k: v.value for e in result.get_asset_materialization_events() for k, v in e.materialization.metadata.items()
    }
    print(
        f"{meta['new_traces']} new traces from {meta['files_read']} files, {meta['new_bad_lines']} new bad lines "
        f"({meta['bad_lines']} recorded)"
    )
    for line in str(meta.get("bad_lines_named", "")).splitlines()[: args.show_bad]:
        print(f"  {line.removeprefix('- ').strip('`')}")
    with connect(settings.duckdb_path, read_only=True) as con:
        series = days(con)
    print(format_rows(DAILY_COLUMNS, daily_rows(series[-args.days :]), "table"))
    judged = judge(series, settings.monitor.window_days, settings.monitor.min_traces)
    for j in judged:
        print(j.line())
    return EXIT_BLOCKED if args.gate and any(j.status == "out" for j in judged) else 0


def cmd_monitor_serve(args: argparse.Namespace) -> int:
    from ragpipe.monitor import serve

    settings = settings_from(args)
    if settings.monitor.traces_dir is None:
        print("[monitor].traces_dir is not set: the receiver writes the spans it receives there", file=sys.stderr)
        return EXIT_INPUT
    server = serve(settings.monitor.traces_dir, args.host, args.port, log=lambda m: print(m, flush=True))
    host, port = str(server.server_address[0]), server.server_address[1]
    try:  # from here a stop (SIGTERM as Ctrl-C) exits 0, also one that comes the moment the line below is out
        stop_on_sigterm()
        print(
            f"OTLP/HTTP receiver on http://{host}:{port}/v1/traces, writing to {settings.monitor.traces_dir} "
            f"(point OTEL_EXPORTER_OTLP_TRACES_ENDPOINT there; Ctrl-C stops)",
            flush=True,
        )
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def stop_on_sigterm() -> None:
    """SIGTERM (`kill`, `docker stop`, systemd) stops the receiver as Ctrl-C does, the files closed; also when the
    process that started it had left SIGTERM blocked or ignored, which a child inherits."""
    import signal

    def stop(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "monitor",
        help="read the app's new production traces ([monitor].traces_dir) and judge the rates per day",
        description="Reads the new lines of the app's JSON Lines traces into the warehouse (production_traces; each "
        "line once, bad lines named with file and line, [monitor].drop_fields never stored; OpenTelemetry spans as OTLP "
        "JSON lines too, one trace per answered question; 16 MiB of new lines or more are read on every core, "
        "[monitor].workers), then prints the refusal, citation hit and correction rates per day and whether the "
        "latest day left its recent interval. A run stopped half-way keeps what it stored; the next run goes on. "
        "docs/monitoring.md has the trace format.",
        epilog="exit codes: 0 ok, 1 with --gate when a rate is out of its recent interval, 2 settings or input error",
    )
    p.add_argument("--days", type=int, default=14, help="days shown (default 14)")
    p.add_argument("--show-bad", type=int, default=10, metavar="N", help="bad lines listed (default 10)")
    p.add_argument("--gate", action="store_true", help="exit 1 when a rate is out of its recent interval (for cron)")
    p.set_defaults(func=cmd_monitor)
    serve = p.add_subparsers(title="receiving traces", metavar="serve").add_parser(
        "serve",
        help="receive OpenTelemetry spans over OTLP/HTTP into [monitor].traces_dir",
        description="An OTLP/HTTP receiver: the app's OpenTelemetry exporter (OpenInference or OpenLLMetry "
        "instrumentation) posts to http://HOST:PORT/v1/traces, and each request is appended as a line of OTLP JSON to "
        "otlp-<UTC day>.jsonl in [monitor].traces_dir, which `ragpipe monitor` and the traces sensor read. "
        "Bound to 127.0.0.1 unless --host says otherwise; bound elsewhere it needs RAGPIPE_OTLP_TOKEN in the "
        "environment, sent by the exporter as 'Authorization: Bearer <token>'.",
        epilog="example: ragpipe monitor serve &  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:4318/v1/traces "
        "python app.py",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=4318, help="port (default 4318, OTLP/HTTP's; 0 picks a free one)")
    serve.set_defaults(func=cmd_monitor_serve)
