"""Load ragpipe.toml: the one settings file for every stage, and the stage fingerprints derived from it.

Each section is read and checked by its own module (ragpipe.settings.<section>); this module holds the Settings object
that gathers them, the sections each stage's code version hashes, and the loading.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ragpipe.core import read_user_text
from ragpipe.settings import (
    answerer,
    chunker,
    compare,
    corpus,
    embedder,
    gate,
    golden,
    monitor,
    niah,
    parser,
    retriever,
    scale,
    subject,
    warehouse,
)
from ragpipe.settings.answerer import AnswererSettings
from ragpipe.settings.automation import AutomationSettings
from ragpipe.settings.base import SettingsError, build
from ragpipe.settings.chunker import ChunkerSettings
from ragpipe.settings.compare import CompareSettings
from ragpipe.settings.corpus import CorpusSettings
from ragpipe.settings.embedder import EmbedderSettings
from ragpipe.settings.gate import GateSettings
from ragpipe.settings.golden import GoldenSettings
from ragpipe.settings.judge import JudgeSettings
from ragpipe.settings.monitor import MonitorSettings
from ragpipe.settings.niah import NiahSettings
from ragpipe.settings.parser import ParserSettings
from ragpipe.settings.retriever import RetrieverSettings
from ragpipe.settings.scale import ScaleSettings
from ragpipe.settings.subject import SubjectSettings
from ragpipe.settings.warehouse import S3Settings, is_remote_uri

SETTINGS_ENV = "RAGPIPE_SETTINGS"
DEFAULT_FILE = "ragpipe.toml"

# Bump a stage's implementation version when its code changes what it produces;
# together with the hash of the stage's own settings it forms the Dagster code version.
# The settings sections each stage's code version hashes (a stage sees only its own settings).
# [warehouse] (dir, models_dir, lancedb_uri, staging_uri, [warehouse.s3]) is deliberately in none of them: where the
# DuckDB file and the vectors are stored does not change what any stage computes, so moving the LanceDB store to object storage
# (or back) leaves every asset fresh. A store moved without its data is empty, though: run `ragpipe ingest` once
# after pointing lancedb_uri somewhere new (it embeds what the new store lacks; retrieval refuses an emptied store).
STAGE_SECTIONS = {
    "corpus": ("corpus",),
    "parser": ("parser",),
    "chunker": ("chunker",),
    "embedder": ("embedder",),
    "golden": ("golden",),
    "retriever": ("retriever", "subject"),  # [subject] only when it is not ragpipe's own pipeline
    "answerer": ("answerer",),
    "verdict": ("gate", "judge"),  # with a judge enabled, its prompt version is part of the code version too
}

# Settings that change how fast a stage runs, never what it produces: left out of its code version.
UNVERSIONED = {
    "parser": ("workers",),
    "answerer": ("threads",),
    "subject": ("concurrency", "timeout_s", "max_retries", "observe_interval_s", "header_env"),
    "embedder": ("base_url", "api_key_env", "timeout_s", "max_retries"),  # an API's tag fingerprints its vectors
}

# The sections read by `build` alone (a table of typed keys with defaults), in the order they are read.
PLAIN = {
    "parser": ParserSettings,
    "chunker": ChunkerSettings,
    "embedder": EmbedderSettings,
    "retriever": RetrieverSettings,
    "answerer": AnswererSettings,
    "subject": SubjectSettings,
    "judge": JudgeSettings,
    "gate": GateSettings,
    "compare": CompareSettings,
    "automation": AutomationSettings,
    "scale": ScaleSettings,
}
SECTIONS = ("warehouse", "corpus", "golden", *PLAIN, "niah", "monitor")  # every section a settings file may have
# Each section's checks across its keys, run once every section is read (a section without any has none here).
CHECKS: dict[str, Callable[[Any, Path], None]] = {
    "chunker": chunker.check,
    "embedder": embedder.check,
    "parser": parser.check,
    "retriever": retriever.check,
    "scale": scale.check,
    "answerer": answerer.check,
    "subject": subject.check,
    "gate": gate.check,
    "compare": compare.check,
    "s3": warehouse.check,
}


@dataclass(frozen=True)
class Settings:
    source: Path
    root: Path
    warehouse_dir: Path
    corpus: CorpusSettings
    parser: ParserSettings = field(default_factory=ParserSettings)
    chunker: ChunkerSettings = field(default_factory=ChunkerSettings)
    embedder: EmbedderSettings = field(default_factory=EmbedderSettings)
    golden: GoldenSettings = field(default_factory=GoldenSettings)
    retriever: RetrieverSettings = field(default_factory=RetrieverSettings)
    answerer: AnswererSettings = field(default_factory=AnswererSettings)
    subject: SubjectSettings = field(default_factory=SubjectSettings)
    judge: JudgeSettings = field(default_factory=JudgeSettings)
    gate: GateSettings = field(default_factory=GateSettings)
    compare: CompareSettings = field(default_factory=CompareSettings)
    automation: AutomationSettings = field(default_factory=AutomationSettings)
    scale: ScaleSettings = field(default_factory=ScaleSettings)
    model_cache: Path | None = None
    lancedb_location: str | None = None  # [warehouse].lancedb_uri as written (resolved); None: <dir>/lancedb
    staging_location: str | None = None  # [warehouse].staging_uri as written (resolved); None: <dir>/staging
    s3: S3Settings = field(default_factory=S3Settings)
    niah: NiahSettings = field(default_factory=NiahSettings)
    monitor: MonitorSettings = field(default_factory=MonitorSettings)

    @property
    def duckdb_path(self) -> Path:
        return self.warehouse_dir / "ragpipe.duckdb"

    @property
    def lancedb_uri(self) -> str:
        """Where the LanceDB tables live: a local directory (default <dir>/lancedb) or an s3://bucket/prefix URI."""
        return self.lancedb_location or str(self.warehouse_dir / "lancedb")

    @property
    def lancedb_is_remote(self) -> bool:
        return is_remote_uri(self.lancedb_uri)

    @property
    def staging_uri(self) -> str:
        """Where shard steps hand work to each other: a local directory (default <dir>/staging), or an s3://bucket/prefix
        URI when the steps run on machines that share no disk (docs/scaling.md)."""
        return self.staging_location or str(self.warehouse_dir / "staging")

    @property
    def models_dir(self) -> Path:
        """Locally built models (the static and ONNX embedders); [warehouse].models_dir shares them across projects."""
        return self.model_cache or self.warehouse_dir / "models"

    def versioned(self, name: str) -> dict[str, Any]:
        """A section's settings as a dict, less the keys that change how fast, never what (UNVERSIONED)."""
        section = dataclasses.asdict(getattr(self, name))
        for key in UNVERSIONED.get(name, ()):
            section.pop(key, None)
        return section

    def stage_settings(self, stage: str) -> dict[str, Any]:
        """One stage's versioned settings by section, as JSON values (paths relative to the project root)."""
        sections = [n for n in STAGE_SECTIONS[stage] if n != "subject" or self.subject.kind != "pipeline"]
        return {name: _jsonable(self.versioned(name), self.root) for name in sections}

    def stage_hash(self, stage: str) -> str:
        """A short hash of one stage's settings (machine-independent: stage_settings has no absolute paths)."""
        digest = hashlib.sha256(json.dumps(self.stage_settings(stage), sort_keys=True).encode()).hexdigest()
        return digest[:10]

    @property
    def chunker_tag(self) -> str:
        """Identifies a chunking: strategy plus the hash of every chunker parameter."""
        return f"{self.chunker.strategy}-{self.stage_hash('chunker')}"


def _jsonable(value: Any, root: Path) -> Any:
    if isinstance(value, Path):
        try:
            return value.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            return value.as_posix()
    if isinstance(value, dict):
        return {k: _jsonable(v, root) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, root) for v in value]
    return value


def settings_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    if explicit:
        return Path(explicit)
    if os.environ.get(SETTINGS_ENV):
        return Path(os.environ[SETTINGS_ENV])
    return Path.cwd() / DEFAULT_FILE


def load_settings(path: str | os.PathLike[str] | None = None) -> Settings:
    """Read the settings file (explicit path, else $RAGPIPE_SETTINGS, else ./ragpipe.toml)."""
    source = settings_path(path).resolve()
    if not source.is_file():
        raise SettingsError(
            f"settings file {source} not found; create it (see ragpipe.toml in the project root) "
            f"or point {SETTINGS_ENV} at one"
        )
    try:
        raw = tomllib.loads(read_user_text(source, "settings file"))
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{source}: not valid TOML: {exc}") from exc
    return settings_from_dict(raw, source)


def settings_from_dict(raw: dict[str, Any], source: Path) -> Settings:
    """Settings from a parsed settings file: each section read, then checked, by its own module."""
    root = source.parent
    unknown = sorted(set(raw) - set(SECTIONS))
    if unknown:
        raise SettingsError(f"{source}: unknown section(s) {unknown}; allowed: {sorted(SECTIONS)}")

    def resolve(p: str) -> Path:
        q = Path(p).expanduser()
        return q if q.is_absolute() else (root / q)

    fields = warehouse.read(raw.get("warehouse", {}), source, resolve)
    fields["corpus"] = corpus.read(raw.get("corpus", {}), source, resolve)
    fields["golden"] = golden.read(raw.get("golden", {}), source, resolve)
    fields.update({name: build(cls, raw.get(name, {}), name, source) for name, cls in PLAIN.items()})
    fields["niah"] = niah.read(raw.get("niah", {}), source)
    fields["monitor"] = monitor.read(raw.get("monitor", {}), source, resolve)
    settings = Settings(source=source, root=root, **fields)
    for name, check in CHECKS.items():
        check(getattr(settings, name), source)
    return settings
