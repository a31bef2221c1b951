"""Load ragpipe.toml: the one settings file for every stage, and the stage fingerprints derived from it."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragpipe.core import VERDICTS, RagpipeError

SETTINGS_ENV = "RAGPIPE_SETTINGS"
DEFAULT_FILE = "ragpipe.toml"

# Bump a stage's implementation version when its code changes what it produces;
# together with the hash of the stage's own settings it forms the Dagster code version.
# The settings sections each stage's code version hashes (a stage sees only its own settings).
# [warehouse] (dir, models_dir, lancedb_uri, [warehouse.s3]) is deliberately in none of them: where the DuckDB file
# and the vectors are stored does not change what any stage computes, so moving the LanceDB store to object storage
# (or back) leaves every asset fresh. A store moved without its data is empty, though: run `ragpipe ingest` once
# after pointing lancedb_uri somewhere new (it embeds what the new store lacks; retrieval refuses an emptied store).
STAGE_SECTIONS = {
    "corpus": ("corpus",),
    "parser": ("parser",),
    "chunker": ("chunker",),
    "embedder": ("embedder",),
    "golden": ("golden",),
    "retriever": ("retriever",),
    "answerer": ("answerer",),
    "verdict": ("gate", "judge"),  # with a judge enabled, its prompt version is part of the code version too
}

# Settings that change how fast a stage runs, never what it produces: left out of its code version.
UNVERSIONED = {"parser": ("workers",), "answerer": ("threads",)}

# The names settings may use, each with what it is (for --help and error messages). The code behind each name is
# registered under the same name in its stage module (ragpipe.chunk.CHUNKERS, ragpipe.answer.ANSWERERS; embedders:
# ragpipe.embed.EMBEDDERS, where any other name is a sentence-transformers model); a test keeps the lists equal.
PDF_ENGINES = {
    "pdfium": "page text from pdfium, rebuilt into titles, paragraphs and list items (the default; fast)",
    "unstructured": "unstructured's partition_pdf with [parser].pdf_strategy (pdfminer; ~60x slower, bench/README.md)",
}
CHUNKER_STRATEGIES = {
    "by_title": "a chunk never spans a section title and never cuts an element (the default)",
    "basic": "packs whole elements up to max_characters",
    "sentences": "packs whole sentences up to max_characters across element and title boundaries",
}
ANSWERER_KINDS = {
    "extractive": "the offline baseline: the best-supported retrieved sentence, or the refusal phrase",
    "smollm2": "SmolLM2-135M-Instruct from its packaged GGUF weights, on this machine (slow on CPU)",
    "openai": "any OpenAI-compatible chat endpoint ([answerer.openai])",
}


def _names(options: dict[str, str]) -> str:
    names = [f"'{n}'" for n in options]
    return ", ".join(names[:-1]) + f" or {names[-1]}"


class SettingsError(RagpipeError, ValueError):
    """A settings file that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class S3Settings:
    """[warehouse.s3]: how to reach an S3-compatible store. Non-secret options only: credentials come from the
    environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) or the platform's role, never from here."""

    endpoint_url: str | None = None  # e.g. "http://127.0.0.1:9000" for MinIO or moto; unset: AWS S3 itself
    region: str | None = None  # e.g. "eu-west-1"; unset: the SDK's default (AWS_DEFAULT_REGION, else us-east-1)
    allow_http: bool = False  # plain-HTTP endpoints (a local server) must be allowed explicitly


@dataclass(frozen=True)
class CorpusSettings:
    dir: Path
    exclude: tuple[str, ...] = ("README.md", "**/.*")


@dataclass(frozen=True)
class ParserSettings:
    pdf_strategy: str = "fast"  # unstructured's strategy, when pdf_engine = "unstructured"
    pdf_engine: str = "pdfium"  # pdfium (fast text, ragpipe.pdf) | unstructured (partition_pdf, pdfminer)
    timeout_s: float = 120.0  # per document: a file that parses longer becomes an ingest_errors row
    max_memory_mb: int = 2048  # per document: address space a parse may add to its worker process (RLIMIT_AS)
    workers: int = 0  # worker processes per parsing process; 0: from the cores and memory (ragpipe.parse_pool)


@dataclass(frozen=True)
class ChunkerSettings:
    strategy: str = "by_title"
    max_characters: int = 800
    new_after_n_chars: int = 600
    overlap: int = 0
    combine_text_under_n_chars: int = 200


@dataclass(frozen=True)
class EmbedderSettings:
    name: str = "minilm"
    batch_size: int = 64
    device: str = "cpu"


@dataclass(frozen=True)
class GoldenSettings:
    path: Path | None = None


@dataclass(frozen=True)
class RetrieverSettings:
    mode: str = "hybrid"  # vector | fts | hybrid
    k: int = 5
    ann_min_rows: int = 50_000  # build an ANN index above this many vectors (0: always flat search)
    nprobes: int = 20  # ANN partitions probed per query


@dataclass(frozen=True)
class OpenAISettings:
    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 30.0
    max_retries: int = 3
    concurrency: int = 4
    max_tokens: int = 128


@dataclass(frozen=True)
class AnswererSettings:
    kind: str = "extractive"  # extractive | smollm2 | openai
    refusal_phrase: str = "not in documents"
    min_support: float = 0.5
    # Phrases that count as a refusal besides the grammar of ragpipe.refusal (a house style: "N/A - see ticket").
    refusal_phrases: tuple[str, ...] = ()
    threads: int = 0  # CPU threads of a local model (smollm2); 0: torch's default (one per core)
    openai: OpenAISettings = field(default_factory=OpenAISettings)


JUDGE_PROMPT_VERSION = "1"  # ragpipe.judge.PROMPT; bump with any change to it: verdicts become stale


@dataclass(frozen=True)
class JudgeSettings:
    """An optional LLM judge for the answers the rules cannot settle (an OpenAI-compatible endpoint)."""

    enabled: bool = False
    openai: OpenAISettings = field(default_factory=lambda: OpenAISettings(max_tokens=200, concurrency=2))


@dataclass(frozen=True)
class GateSettings:
    block: tuple[str, ...] = ("fail", "did_not_run", "error")
    check_severity: str = "WARN"  # severity of the asset checks on verdicts: WARN or ERROR


TRANSITIONS = tuple(f"{a}->{b}" for a in VERDICTS for b in (*VERDICTS, "none") if a != b)


@dataclass(frozen=True)
class CompareSettings:
    """`ragpipe compare` exits 1 when the candidate makes one of these transitions (current -> candidate verdict)."""

    block: tuple[str, ...] = ("pass->fail", "pass->did_not_run", "fail->did_not_run", "pass->error", "fail->error")


@dataclass(frozen=True)
class AutomationSettings:
    nightly_cron: str = "0 3 * * *"  # re-run retrieval, answers and verdicts: a hosted LLM can drift
    timezone: str = "UTC"
    corpus_sensor_interval_s: int = 30


@dataclass(frozen=True)
class ScaleSettings:
    # Static hash partitions of documents whose new chunks are embedded in separate Dagster steps: the multiprocess
    # executor runs them in parallel here, a cluster executor on other machines. Part of no stage's code version:
    # the vectors do not depend on how the work was split.
    embed_shards: int = 1
    # The same for parsing: new and changed files parsed in N steps by a static hash of their path (ragpipe.parse_shard).
    parse_shards: int = 1


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
    judge: JudgeSettings = field(default_factory=JudgeSettings)
    gate: GateSettings = field(default_factory=GateSettings)
    compare: CompareSettings = field(default_factory=CompareSettings)
    automation: AutomationSettings = field(default_factory=AutomationSettings)
    scale: ScaleSettings = field(default_factory=ScaleSettings)
    model_cache: Path | None = None
    lancedb_location: str | None = None  # [warehouse].lancedb_uri as written (resolved); None: <dir>/lancedb
    s3: S3Settings = field(default_factory=S3Settings)
    niah: dict[str, Any] = field(default_factory=dict)  # raw [niah] table; parsed by ragpipe.niah.NiahSettings

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
    def models_dir(self) -> Path:
        """Locally built models (the static and ONNX embedders); [warehouse].models_dir shares them across projects."""
        return self.model_cache or self.warehouse_dir / "models"

    def versioned(self, name: str) -> dict[str, Any]:
        """A section's settings as a dict, less the keys that change how fast, never what (UNVERSIONED)."""
        section = dataclasses.asdict(getattr(self, name))
        for key in UNVERSIONED.get(name, ()):
            section.pop(key, None)
        return section

    def stage_hash(self, stage: str) -> str:
        """A short hash of one stage's settings (paths made relative so the hash is machine-independent)."""
        payload = {name: _jsonable(self.versioned(name), self.root) for name in STAGE_SECTIONS[stage]}
        digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
        return digest[:10]

    @property
    def chunker_tag(self) -> str:
        """Identifies a chunking: strategy plus the hash of every chunker parameter."""
        return f"{self.chunker.strategy}-{self.stage_hash('chunker')}"


REMOTE_SCHEMES = ("s3://",)


def is_remote_uri(uri: str) -> bool:
    return uri.startswith(REMOTE_SCHEMES)


def check_s3_uri(uri: str, where: str) -> None:
    """An s3://bucket[/prefix] URI without credentials in it; raises SettingsError naming `where`."""
    from urllib.parse import urlsplit

    parts = urlsplit(uri)
    if "@" in parts.netloc:
        raise SettingsError(
            f"{where}: credentials do not belong in the URI; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
            f"in the environment and write s3://BUCKET/PREFIX"
        )
    if parts.scheme != "s3" or not parts.netloc or parts.query or parts.fragment:
        raise SettingsError(f"{where}: expected s3://BUCKET or s3://BUCKET/PREFIX, got {uri!r}")


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


def _build(cls: type, data: dict[str, Any], where: str, source: Path) -> Any:
    """Instantiate a settings dataclass, naming unknown keys and wrong types precisely."""
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise SettingsError(
            f"{source}: unknown key(s) {', '.join(f'[{where}].{k}' for k in unknown)}; "
            f"allowed: {', '.join(sorted(known))}"
        )
    kwargs: dict[str, Any] = {}
    defaults = cls.__dataclass_fields__
    for name, value in data.items():
        f = defaults[name]
        default = f.default if f.default is not dataclasses.MISSING else None
        if default is None and f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            default = f.default_factory()  # type: ignore[misc]
        if dataclasses.is_dataclass(default):
            if not isinstance(value, dict):
                raise SettingsError(f"{source}: [{where}.{name}] must be a table")
            kwargs[name] = _build(type(default), value, f"{where}.{name}", source)
            continue
        if isinstance(default, tuple):
            if not isinstance(value, list):
                raise SettingsError(f"{source}: [{where}].{name} must be a list, got {value!r}")
            value = tuple(value)
        elif isinstance(default, bool) or isinstance(value, bool):
            if not isinstance(value, bool) or not isinstance(default, (bool, type(None))):
                raise SettingsError(f"{source}: [{where}].{name} has the wrong type: {value!r}")
        elif isinstance(default, float) and isinstance(value, int):
            value = float(value)
        elif default is not None and not isinstance(value, type(default)):
            raise SettingsError(f"{source}: [{where}].{name} must be {type(default).__name__}, got {value!r}")
        kwargs[name] = value
    return cls(**kwargs)


def load_settings(path: str | os.PathLike[str] | None = None) -> Settings:
    """Read the settings file (explicit path, else $RAGPIPE_SETTINGS, else ./ragpipe.toml)."""
    source = settings_path(path).resolve()
    if not source.is_file():
        raise SettingsError(
            f"settings file {source} not found; create it (see ragpipe.toml in the project root) "
            f"or point {SETTINGS_ENV} at one"
        )
    try:
        raw = tomllib.loads(source.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{source}: not valid TOML: {exc}") from exc
    return settings_from_dict(raw, source)


def settings_from_dict(raw: dict[str, Any], source: Path) -> Settings:
    root = source.parent
    allowed = {
        "warehouse",
        "corpus",
        "parser",
        "chunker",
        "embedder",
        "golden",
        "retriever",
        "answerer",
        "judge",
        "gate",
        "compare",
        "automation",
        "scale",
        "niah",
    }
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise SettingsError(f"{source}: unknown section(s) {unknown}; allowed: {sorted(allowed)}")

    def resolve(p: str) -> Path:
        q = Path(p).expanduser()
        return q if q.is_absolute() else (root / q)

    warehouse = dict(raw.get("warehouse", {}))
    warehouse_dir = resolve(str(warehouse.pop("dir", "warehouse")))
    model_cache = resolve(str(warehouse.pop("models_dir"))) if "models_dir" in warehouse else None
    lancedb_location = None
    if "lancedb_uri" in warehouse:
        uri = warehouse.pop("lancedb_uri")
        if not isinstance(uri, str) or not uri.strip():
            raise SettingsError(f"{source}: [warehouse].lancedb_uri must be a path or an s3://BUCKET/PREFIX URI")
        if is_remote_uri(uri):
            check_s3_uri(uri.rstrip("/"), f"{source}: [warehouse].lancedb_uri")
            lancedb_location = uri.rstrip("/")
        elif "://" in uri:
            raise SettingsError(
                f"{source}: [warehouse].lancedb_uri {uri!r}: only local paths and s3:// URIs are supported"
            )
        else:
            lancedb_location = str(resolve(uri))
    s3_raw = warehouse.pop("s3", {})
    if not isinstance(s3_raw, dict):
        raise SettingsError(f"{source}: [warehouse.s3] must be a table")
    s3 = _build(S3Settings, s3_raw, "warehouse.s3", source)
    if warehouse:
        raise SettingsError(
            f"{source}: unknown key(s) in [warehouse]: {sorted(warehouse)}; allowed: dir, models_dir, lancedb_uri, s3"
        )

    corpus_raw = dict(raw.get("corpus", {}))
    if "dir" not in corpus_raw:
        raise SettingsError(f"{source}: [corpus].dir is required (the directory of documents to ingest)")
    corpus_raw["dir"] = resolve(str(corpus_raw["dir"]))
    corpus = CorpusSettings(dir=corpus_raw.pop("dir"), exclude=tuple(corpus_raw.pop("exclude", CorpusSettings.exclude)))
    if corpus_raw:
        raise SettingsError(f"{source}: unknown key(s) in [corpus]: {sorted(corpus_raw)}; allowed: dir, exclude")

    golden_raw = dict(raw.get("golden", {}))
    golden = GoldenSettings(path=resolve(str(golden_raw.pop("path"))) if "path" in golden_raw else None)
    if golden_raw:
        raise SettingsError(f"{source}: unknown key(s) in [golden]: {sorted(golden_raw)}; allowed: path")

    settings = Settings(
        source=source,
        root=root,
        warehouse_dir=warehouse_dir,
        model_cache=model_cache,
        lancedb_location=lancedb_location,
        s3=s3,
        corpus=corpus,
        parser=_build(ParserSettings, raw.get("parser", {}), "parser", source),
        chunker=_build(ChunkerSettings, raw.get("chunker", {}), "chunker", source),
        embedder=_build(EmbedderSettings, raw.get("embedder", {}), "embedder", source),
        golden=golden,
        retriever=_build(RetrieverSettings, raw.get("retriever", {}), "retriever", source),
        answerer=_build(AnswererSettings, raw.get("answerer", {}), "answerer", source),
        judge=_build(JudgeSettings, raw.get("judge", {}), "judge", source),
        gate=_build(GateSettings, raw.get("gate", {}), "gate", source),
        compare=_build(CompareSettings, raw.get("compare", {}), "compare", source),
        automation=_build(AutomationSettings, raw.get("automation", {}), "automation", source),
        scale=_build(ScaleSettings, raw.get("scale", {}), "scale", source),
        niah=_table(raw.get("niah", {}), "niah", source),
    )
    _validate(settings)
    return settings


def _table(value: Any, where: str, source: Path) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SettingsError(f"{source}: [{where}] must be a table")
    return dict(value)


def _validate(s: Settings) -> None:
    src = s.source
    if s.chunker.strategy not in CHUNKER_STRATEGIES:
        raise SettingsError(
            f"{src}: [chunker].strategy must be {_names(CHUNKER_STRATEGIES)}, got {s.chunker.strategy!r}"
        )
    if s.chunker.max_characters < 50:
        raise SettingsError(f"{src}: [chunker].max_characters must be at least 50")
    if not 0 <= s.chunker.overlap < s.chunker.max_characters:
        raise SettingsError(f"{src}: [chunker].overlap must be >= 0 and below max_characters")
    if s.parser.pdf_strategy not in ("fast", "auto", "hi_res", "ocr_only"):
        raise SettingsError(f"{src}: [parser].pdf_strategy must be fast, auto, hi_res or ocr_only")
    if s.parser.pdf_engine not in PDF_ENGINES:
        raise SettingsError(f"{src}: [parser].pdf_engine must be {_names(PDF_ENGINES)}")
    if s.parser.timeout_s <= 0 or s.parser.max_memory_mb < 64:
        raise SettingsError(f"{src}: [parser].timeout_s must be above 0 and [parser].max_memory_mb at least 64")
    if s.retriever.mode not in ("vector", "fts", "hybrid"):
        raise SettingsError(f"{src}: [retriever].mode must be vector, fts or hybrid, got {s.retriever.mode!r}")
    if not 1 <= s.scale.embed_shards <= 64:
        raise SettingsError(f"{src}: [scale].embed_shards must be between 1 and 64, got {s.scale.embed_shards}")
    if not 1 <= s.scale.parse_shards <= 64:
        raise SettingsError(f"{src}: [scale].parse_shards must be between 1 and 64, got {s.scale.parse_shards}")
    if s.answerer.threads < 0:
        raise SettingsError(f"{src}: [answerer].threads must be 0 (torch's default) or a number of threads")
    if s.parser.workers < 0:
        raise SettingsError(f"{src}: [parser].workers must be 0 (from the cores and memory) or a number of processes")
    if s.retriever.k < 1:
        raise SettingsError(f"{src}: [retriever].k must be at least 1")
    if s.answerer.kind not in ANSWERER_KINDS:
        raise SettingsError(f"{src}: [answerer].kind must be {_names(ANSWERER_KINDS)}, got {s.answerer.kind!r}")
    bad = set(s.gate.block) - {"fail", "did_not_run", "error", "unverified"}
    if bad:
        raise SettingsError(f"{src}: [gate].block has unknown verdicts {sorted(bad)}")
    bad = sorted(set(s.compare.block) - set(TRANSITIONS))
    if bad:
        raise SettingsError(
            f"{src}: [compare].block has unknown transitions {bad}; write CURRENT->CANDIDATE verdicts, "
            f"e.g. pass->fail or fail->did_not_run"
        )
    if s.gate.check_severity not in ("WARN", "ERROR"):
        raise SettingsError(f"{src}: [gate].check_severity must be WARN or ERROR")
    for name in ("endpoint_url", "region"):
        if getattr(s.s3, name) is not None and not isinstance(getattr(s.s3, name), str):
            raise SettingsError(f"{src}: [warehouse.s3].{name} must be a string")
    endpoint = s.s3.endpoint_url
    if endpoint is not None:
        from urllib.parse import urlsplit

        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path.strip("/") or "@" in parts.netloc:
            raise SettingsError(
                f"{src}: [warehouse.s3].endpoint_url must be http(s)://HOST[:PORT] (no path, no credentials), "
                f"got {endpoint!r}"
            )
        if parts.scheme == "http" and not s.s3.allow_http:
            raise SettingsError(
                f"{src}: [warehouse.s3].endpoint_url {endpoint!r} is plain HTTP; set allow_http = true in "
                f"[warehouse.s3] (only for a local or otherwise trusted server)"
            )
