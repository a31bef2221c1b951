"""The ragpipe code location: `dagster dev` from the project root finds `defs` here (see pyproject.toml)."""

from ragpipe.assets.location import defs

__all__ = ["defs"]
