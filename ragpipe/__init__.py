"""ragpipe: golden-set evaluation for RAG that tells a passing test from a test that did not run."""

from __future__ import annotations

import os

# The product runs offline and quietly; users export nothing. setdefault keeps any explicit choice.
for _name, _value in {
    "DO_NOT_TRACK": "1",
    "UNSTRUCTURED_DISABLE_NOTICE": "1",
    "SCARF_NO_ANALYTICS": "true",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "DAGSTER_DISABLE_TELEMETRY": "1",
    "TOKENIZERS_PARALLELISM": "false",
}.items():
    os.environ.setdefault(_name, _value)

__version__ = "0.1.0"
