"""The `ragpipe` command line: run the graph, gate CI on verdicts, maintain the golden set, query the warehouse.

common.py holds what every command shares (settings, the Dagster instance, the runner, exit codes and error wording);
each command group is one module that declares its sub-parser beside its commands (runs: demo, ingest, ci, status;
golden, with suggest and imports; init; score; niah; monitor; compare: compare, history; warehouse: sql, export); app.py
the root parser and `main`; pytest_plugin.py `pytest --ragpipe` (a pytest11 entry point).
"""

from ragpipe.core import lazy_exports

_EXPORTS = {"app": ["main", "build_parser"]}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
