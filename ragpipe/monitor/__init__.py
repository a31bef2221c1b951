"""Post-launch monitoring: the app's production traces (JSON Lines, one answered question per line, or OpenTelemetry
spans as OTLP JSON lines, which `serve` receives) read into the warehouse, with the refusal, citation hit and
correction rates per day and app version, the golden set's traps that real questions reach, and each rate judged
against its recent days."""

from ragpipe.core import lazy_exports

_EXPORTS = {
    "traces": ["ALIASES", "Trace", "TraceProblem", "parse_trace", "drop"],
    "readings": ["Reading", "TrapIndex", "citation_hit", "read_trace"],
    "ingest": ["MonitorError", "Ingested", "ingest_traces", "trap_index"],
    "rates": ["RATES", "DAILY_COLUMNS", "Judged", "days", "daily_rows", "judge"],
    "figure": ["rates_figure"],
    "receiver": ["ReceiverError", "TOKEN_ENV", "serve"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
