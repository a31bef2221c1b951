"""What this machine lends the process: the CPUs it may run on (worker counts and threads derive from it)."""

from __future__ import annotations


def usable_cpus() -> int:
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)
