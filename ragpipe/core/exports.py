"""A package's public names, loaded from their submodules on first use (PEP 562), so that importing a package is cheap.

Each stage package lists its public names in `_EXPORTS` ({submodule: [names]}; "NAME as PUBLIC" exports a submodule's
NAME under another name, e.g. each stage's IMPL_VERSION as CORPUS_VERSION, PARSER_VERSION, ...) and hands them to
`lazy_exports`:
`from ragpipe.embed import EMBEDDERS` loads ragpipe.embed.embedders alone, not the LanceDB store or the shards
(pyarrow); `ragpipe --help` imports only what its help text needs. No public name may be spelled like a submodule
of its package (tests/project/test_architecture.py): the import system would bind the submodule under that name.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable


def lazy_exports(
    package: str, exports: dict[str, list[str]]
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """(__all__, __getattr__, __dir__) for `package` whose public names `exports` maps from their submodules."""
    where = {}  # public name -> (submodule, its name there)
    for module, names in exports.items():
        for entry in names:
            own, _, public = entry.partition(" as ")
            where[public or own] = (module, own)

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, own = where[name]
        value = getattr(importlib.import_module(f"{package}.{module}"), own)
        setattr(sys.modules[package], name, value)  # found once: later lookups are plain attributes
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return list(where), __getattr__, __dir__
