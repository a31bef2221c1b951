"""The settings file (ragpipe.toml): one module per section, each reading and checking its own table; `load` gathers
them into Settings, with the sections each stage's code version hashes (Settings.stage_hash)."""

from ragpipe.core import lazy_exports

_EXPORTS = {
    "load": [
        "SETTINGS_ENV",
        "DEFAULT_FILE",
        "STAGE_SECTIONS",
        "UNVERSIONED",
        "SECTIONS",
        "Settings",
        "settings_path",
        "load_settings",
        "settings_from_dict",
    ],
    "base": ["SettingsError"],
    "warehouse": ["S3Settings", "REMOTE_SCHEMES", "is_remote_uri", "check_s3_uri"],
    "corpus": ["CorpusSettings"],
    "parser": ["ParserSettings", "PDF_ENGINES"],
    "chunker": ["ChunkerSettings", "CHUNKER_STRATEGIES"],
    "embedder": ["EmbedderSettings", "API_PREFIX"],
    "golden": ["GoldenSettings"],
    "retriever": ["RetrieverSettings"],
    "subject": ["SubjectSettings", "SUBJECT_KINDS"],
    "answerer": ["AnswererSettings", "OpenAISettings", "ANSWERER_KINDS"],
    "judge": ["JudgeSettings", "JUDGE_PROMPT_VERSION"],
    "gate": ["GateSettings"],
    "compare": ["CompareSettings", "TRANSITIONS"],
    "automation": ["AutomationSettings"],
    "scale": ["ScaleSettings"],
    "niah": ["NiahSettings", "NEEDLE_TYPES", "METHODS", "SUBJECTS"],
    "monitor": ["MonitorSettings", "DEFAULT_DROP"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
