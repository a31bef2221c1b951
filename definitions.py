"""The ragpipe code location: `dagster dev` from the project root finds `defs` here (see pyproject.toml)."""

import ragpipe  # noqa: F401  (sets the offline/telemetry environment before anything else loads)
from ragpipe.assets import build_definitions

defs = build_definitions()
