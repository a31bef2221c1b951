"""The code location of an installed ragpipe, for a deployment with no checkout:
`dagster dev -m ragpipe.assets.location` or `dagster-daemon run -m ragpipe.assets.location`, with the settings file
in $RAGPIPE_SETTINGS (else ./ragpipe.toml). The checkout's ./definitions.py is this same module's `defs`."""

import ragpipe  # noqa: F401  (sets the offline/telemetry environment before anything else loads)
from ragpipe.assets import build_definitions

defs = build_definitions()
