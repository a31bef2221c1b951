"""[automation]: the nightly re-evaluation and the corpus sensor's interval."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AutomationSettings:
    nightly_cron: str = "0 3 * * *"  # re-run retrieval, answers and verdicts: a hosted LLM can drift
    timezone: str = "UTC"
    corpus_sensor_interval_s: int = 30
