"""What each asset is computed from, in its definition and in every materialization: its stage's settings (and for
the golden set, a hash per test). Comparing the two names a change in the user's words ('[retriever].k 5 -> 8',
'neg_03 edited') where Dagster only says 'has a new code version'."""

from typing import Any

import dagster as dg

from ragpipe.golden import hashes_by_test
from ragpipe.settings import Settings

SETTINGS = "ragpipe/settings"
TESTS = "ragpipe/tests"
CHANGE = "change"  # the corpus materialization's own record of what changed on disk, by file


def recorded_inputs(settings: Settings, stage: str, tests: bool = False) -> dict[str, Any]:
    """The metadata entries an asset of `stage` carries in its definition and in each materialization."""
    out: dict[str, Any] = {SETTINGS: dg.MetadataValue.json(settings.stage_settings(stage))}
    if tests:
        out[TESTS] = dg.MetadataValue.json(hashes_by_test(settings.golden.path))
    return out


def json_entry(metadata: Any, key: str) -> Any:
    """The value of a JSON metadata entry, or None (older materializations have none)."""
    value = (metadata or {}).get(key)
    return value.value if isinstance(value, dg.JsonMetadataValue) else None
