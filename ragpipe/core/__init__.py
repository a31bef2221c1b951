"""Shared by every stage: the errors users meet and the exit codes, text normalization, the words tables and reports
share (verdicts, stamp statuses), how stages report progress, the machine's CPUs, how long to wait before calling a server again, what changed between two recorded states, and the lazy exports each package's namespace is made of."""

from ragpipe.core.exports import lazy_exports

_EXPORTS = {
    "errors": [
        "EXIT_OK",
        "EXIT_BLOCKED",
        "EXIT_INPUT",
        "EXIT_BUSY",
        "RagpipeError",
        "InputError",
        "NotUtf8Error",
        "read_user_text",
    ],
    "logs": ["Log", "no_log", "heartbeat", "time_left"],
    "text": ["FOLD", "fold", "collapse_whitespace", "normalize_text", "common_prefix"],
    "vocabulary": [
        "VerdictName",
        "VERDICTS",
        "StampStatus",
        "STAMP_STATUSES",
        "REWRITES_FILE",
        "NEEDS_ATTENTION",
    ],
    "machine": ["usable_cpus", "available_memory_mb"],
    "retries": ["retry_after", "backoff_s"],
    "diffs": ["settings_diff", "keyed_diff"],
    "exports": ["lazy_exports"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
