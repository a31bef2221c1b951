"""Each stage's Dagster code version: the implementation version its module declares (each stage package exports it
as <STAGE>_VERSION), plus a hash of its own settings section (Settings.stage_hash), so changing one stage's code or
settings marks exactly that stage stale. The one module that reads every stage package: it comes after them all."""

from ragpipe.embed import EMBEDDER_VERSION
from ragpipe.golden import GOLDEN_VERSION
from ragpipe.ingest import CHUNKER_VERSION, CORPUS_VERSION, PARSER_VERSION
from ragpipe.rag import ANSWERER_VERSION, RETRIEVER_VERSION
from ragpipe.settings import JUDGE_PROMPT_VERSION, Settings
from ragpipe.verdicts import VERDICT_VERSION

IMPL_VERSIONS = {
    "corpus": CORPUS_VERSION,
    "parser": PARSER_VERSION,
    "chunker": CHUNKER_VERSION,
    "embedder": EMBEDDER_VERSION,
    "golden": GOLDEN_VERSION,
    "retriever": RETRIEVER_VERSION,
    "answerer": ANSWERER_VERSION,
    "verdict": VERDICT_VERSION,
}


def code_version(settings: Settings, stage: str) -> str:
    """'v<impl>-<settings hash>' (with a judge, its prompt version too: a new prompt re-judges)."""
    judge = f"-judge{JUDGE_PROMPT_VERSION}" if stage == "verdict" and settings.judge.enabled else ""
    return f"v{IMPL_VERSIONS[stage]}-{settings.stage_hash(stage)}{judge}"
