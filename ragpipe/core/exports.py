"""A package's public names, loaded from their submodules on first use (PEP 562), so that importing a package is cheap.

Each stage package lists its public names in `_EXPORTS` ({submodule: [names]}) and hands them to `lazy_exports`:
`from ragpipe.embed import EMBEDDERS` loads ragpipe.embed.embedders alone, not the LanceDB store or the shards
(pyarrow); `ragpipe --help` imports only what its help text needs. No public name may be spelled like a submodule
of its package (tests/test_architecture.py): the import system would bind the submodule under that name.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable


def lazy_exports(
    package: str, exports: dict[str, list[str]]
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """(__all__, __getattr__, __dir__) for `package` whose public names `exports` maps from their submodules."""
    where = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)  # found once: later lookups are plain attributes
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return list(where), __getattr__, __dir__
