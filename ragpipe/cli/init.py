"""`ragpipe init`: ragpipe in an existing directory. It finds what it can (the folder of documents, a golden set in
ragpipe's format or another tool's), asks only for what it cannot (or stops with what to pass, when nobody is there to
ask), writes ragpipe.toml, dagster.yaml and the .gitignore lines, and without a golden set ingests the corpus and
drafts one with `golden suggest`. Then it prints the next three commands."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ragpipe.core import EXIT_INPUT
from ragpipe.settings import SettingsError

DOCUMENTS = {".md", ".markdown", ".txt", ".rst", ".html", ".htm", ".pdf", ".docx"}
SKIP = {".git", ".venv", "venv", "node_modules", "__pycache__", "warehouse", "site-packages", "dist", "build"}
GITIGNORE = ["warehouse/", ".dagster/", ".telemetry/", "logs/", ".nux/"]
DAGSTER_YAML = """\
# Local Dagster instance for ragpipe. The Makefile sets DAGSTER_HOME to the project root, so runs, sensor
# cursors, schedules and asset history persist under {dir}/.dagster across restarts.
# Relative paths resolve against the working directory: run Dagster from the project root.
storage:
  sqlite:
    base_dir: {dir}/.dagster/storage

local_artifact_storage:
  module: dagster._core.storage.root
  class: LocalArtifactStorage
  config:
    base_dir: {dir}/.dagster

compute_logs:
  module: dagster._core.storage.local_compute_log_manager
  class: LocalComputeLogManager
  config:
    base_dir: {dir}/.dagster/logs

telemetry:
  enabled: false

# DuckDB allows one writer process at a time: every asset that writes it is in the "duckdb" pool,
# and a limit of 1 serializes those steps across runs.
concurrency:
  pools:
    default_limit: 1

# Run the automation sensor (declared RUNNING in code) and the corpus sensor on the daemon.
auto_materialize:
  use_sensors: true
"""


def _walk(root: Path) -> list[Path]:
    out, stack = [], [root]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        for p in entries:
            if p.name in SKIP or p.name.startswith("."):
                continue
            if p.is_dir() and not p.is_symlink():
                stack.append(p)
            elif p.is_file():
                out.append(p)
    return out


def find_corpus(root: Path, files: list[Path], golden: Path | None) -> Path | None:
    """The folder holding most documents (a parent wins over a sub-folder it mostly contains)."""
    counts: dict[Path, int] = {}
    for f in files:
        if f.suffix.lower() in DOCUMENTS and f != golden and f.name.lower() not in ("readme.md", "changelog.md"):
            for parent in f.relative_to(root).parents:
                if parent != Path("."):
                    counts[parent] = counts.get(parent, 0) + 1
    if not counts:
        return None
    best = max(counts.values())
    return root / min((p for p, n in counts.items() if n >= 0.8 * best), key=lambda p: len(p.parts))


def find_golden(root: Path, files: list[Path]) -> tuple[Path, str] | None:
    """(file, format) of a golden set: ragpipe's own ("ragpipe"), or another tool's that `golden import` reads."""
    from ragpipe.golden import GoldenSetError, load_golden, read_rows

    for f in sorted(files, key=lambda p: (len(p.relative_to(root).parts), p.name)):
        name = f.name.lower()
        if name.startswith("golden") and f.suffix in (".jsonl", ".json"):
            try:
                if load_golden(f).tests:
                    return f, "ragpipe"
            except GoldenSetError:
                pass
        if name.startswith("promptfooconfig") and f.suffix in (".yaml", ".yml", ".json"):
            return f, "promptfoo"
        if f.suffix in (".jsonl", ".json", ".csv") and f.stat().st_size < 50_000_000:
            head = f.read_text(encoding="utf-8", errors="replace")[:4000]
            for fmt, keys in (("ragas", ("user_input", "reference")), ("deepeval", ("expected_output",)),
                              ("langsmith", ('"inputs"', '"outputs"'))):  # fmt: skip
                if all(k in head for k in keys):
                    try:
                        if read_rows(f, fmt)[0]:
                            return f, fmt
                    except GoldenSetError:
                        pass
    return None


def _ask(what: str, flag: str) -> str:
    if not sys.stdin.isatty():
        raise SettingsError(f"{what} not found; pass {flag}")
    return input(f"{what}? ").strip()


def _settings_text(corpus: str, golden: str, warehouse: str) -> str:
    return f"""\
# ragpipe settings (written by `ragpipe init`): the single source of truth for every stage. Each section left out
# takes its defaults; `ragpipe --help` lists the choices, README.md describes every key.

[warehouse]
dir = {json.dumps(warehouse)}                    # DuckDB file, LanceDB tables, the Dagster instance's storage

[corpus]
dir = {json.dumps(corpus)}
exclude = ["README.md", "**/.*"]     # glob patterns relative to the corpus directory

[golden]
path = {json.dumps(golden)}       # JSON Lines or a JSON array of tests

# [embedder]   name = "minilm"          (default)
# [retriever]  k = 5, mode = "hybrid"   (defaults)
# [answerer]   kind = "extractive"      (default; "openai" with base_url and api_key_env for a model)
# [gate]       block = ["fail", "needs_review", "did_not_run", "error"]
"""


def _gitignore(root: Path, warehouse: str) -> list[str]:
    path = root / ".gitignore"
    have = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    lines = [f"{warehouse.rstrip('/')}/" if line == "warehouse/" else line for line in GITIGNORE]
    new = [line for line in lines if line not in have]
    if new:
        text = "\n".join(have) + ("\n" if have else "") + "# ragpipe\n" + "\n".join(new) + "\n"
        path.write_text(text, encoding="utf-8")
    return new


def _ingest_and_draft(target: Path, negatives: int | None) -> int:
    """`ragpipe ingest`, then (with `negatives`) `ragpipe golden suggest`, as the commands run them."""
    from ragpipe.cli.common import run
    from ragpipe.cli.runs import cmd_ingest
    from ragpipe.cli.suggest import cmd_golden_suggest
    from ragpipe.golden import QUALIFIER_KINDS

    code = run(argparse.Namespace(settings=str(target), func=cmd_ingest))
    if code or negatives is None:
        return code
    print("no golden set found: drafting one from the corpus (`ragpipe golden suggest`) ...", flush=True)
    suggest = argparse.Namespace(settings=str(target), func=cmd_golden_suggest, accept=None, reject=None, phrase=False,
                                 kinds=",".join(QUALIFIER_KINDS), negatives=negatives, positives=5, out=None)  # fmt: skip
    return run(suggest)


def cmd_init(args: argparse.Namespace) -> int:
    root = Path(args.dir).resolve()
    target = root / "ragpipe.toml"
    if target.exists() and not args.force:
        print(f"{target} exists; `ragpipe init --force` writes it again", file=sys.stderr)
        return EXIT_INPUT
    files = _walk(root)
    found = (Path(args.golden).resolve(), args.golden_from or "ragpipe") if args.golden else find_golden(root, files)
    corpus = Path(args.corpus).resolve() if args.corpus else find_corpus(root, files, found[0] if found else None)
    corpus = corpus or Path(_ask("Folder of the documents", "--corpus DIR")).resolve()
    if not corpus.is_dir():
        raise SettingsError(f"--corpus {corpus} is not a folder")
    rel = lambda p: p.relative_to(root).as_posix() if p.is_relative_to(root) else str(p)  # noqa: E731
    golden = found[0] if found and found[1] == "ragpipe" else root / "golden.jsonl"
    target.write_text(_settings_text(rel(corpus), rel(golden), args.warehouse), encoding="utf-8")
    if not (root / "dagster.yaml").exists() or args.force:
        (root / "dagster.yaml").write_text(DAGSTER_YAML.format(dir=args.warehouse), encoding="utf-8")
    added = _gitignore(root, args.warehouse)
    documents = sum(1 for f in files if f.suffix.lower() in DOCUMENTS and f.is_relative_to(corpus))
    print(f"wrote {target.name} (corpus: {rel(corpus)}, {documents} documents; golden set: {rel(golden)}), dagster.yaml"
          + (f", .gitignore (+{len(added)} lines)" if added else ""))  # fmt: skip
    if found and found[1] == "ragpipe":
        steps = ["ragpipe golden restamp --write", "ragpipe ci", "ragpipe golden revalidate --write"]
        print(f"golden set found: {rel(golden)}")
    else:
        golden.touch()
        print("ingesting the corpus (parse, chunk, embed) ...", flush=True)
        if _ingest_and_draft(target, None if found else args.negatives) != 0:
            return EXIT_INPUT
        if found:
            steps = [f"ragpipe golden import {rel(found[0])} --from {found[1]} --write", "ragpipe ci",
                     "ragpipe golden revalidate --write"]  # fmt: skip
            print(f"{found[1]} golden set found: {rel(found[0])}")
        else:
            steps = _suggest_steps(target)
    print("\nnext:\n" + "\n".join(f"  {i}. {s}" for i, s in enumerate(steps, 1)))
    return 0


def _suggest_steps(target: Path) -> list[str]:
    from ragpipe.evaluate import stored
    from ragpipe.settings import load_settings
    from ragpipe.warehouse import connect

    settings = load_settings(target)
    with connect(settings.duckdb_path, read_only=True) as con:
        ids = [r["suggestion_id"] for r in stored(con) if not r["decision"]]
    sheet = (settings.duckdb_path.parent / "suggestions.md").relative_to(target.parent)
    return [f"read {sheet.as_posix()} against your documents",
            f"ragpipe golden suggest --accept {' '.join(ids) if ids else 'ID ...'}    # the ones you keep",
            "ragpipe ci"]  # fmt: skip


def add_parser(sub: Any) -> None:
    from ragpipe.golden import IMPORT_FORMATS

    p = sub.add_parser(
        "init",
        help="set ragpipe up in an existing directory: ragpipe.toml, dagster.yaml, .gitignore, a first golden set",
        description="Finds the folder of documents (the one holding most .md/.txt/.html/.pdf/.docx files) and a "
        "golden set (golden*.jsonl in ragpipe's format, or a Ragas, DeepEval, promptfoo or LangSmith file), asks for "
        "what it cannot find (or, without a terminal, says which option to pass), and writes ragpipe.toml, "
        "dagster.yaml and the .gitignore lines. With another tool's golden set, or none, it ingests the corpus; with "
        "none, it drafts one with `golden suggest` (a review sheet to accept from). Then it prints the next three "
        "commands.",
        epilog="Examples:\n  ragpipe init\n  ragpipe init --corpus docs --golden evals/testset.jsonl --golden-from ragas",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("dir", nargs="?", default=".", help="the directory (default: the current one)")
    p.add_argument("--corpus", metavar="DIR", help="the folder of documents (default: found)")
    p.add_argument("--golden", metavar="FILE", help="the golden set file (default: found)")
    p.add_argument("--golden-from", choices=["ragpipe", *IMPORT_FORMATS], help="its format (default: ragpipe)")
    p.add_argument("--warehouse", default="warehouse", metavar="DIR", help="where ragpipe keeps its data")
    p.add_argument("--negatives", type=int, default=20, metavar="N", help="negatives drafted without a golden set")
    p.add_argument("--force", action="store_true", help="write ragpipe.toml and dagster.yaml again")
    p.set_defaults(func=cmd_init)
