"""[judge]: the optional LLM judge for the answers the rules cannot settle (an OpenAI-compatible endpoint)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ragpipe.settings.answerer import OpenAISettings

JUDGE_PROMPT_VERSION = "1"  # ragpipe.verdicts.judge.PROMPT; bump with any change to it: verdicts become stale


@dataclass(frozen=True)
class JudgeSettings:
    """An optional LLM judge for the answers the rules cannot settle (an OpenAI-compatible endpoint)."""

    enabled: bool = False
    openai: OpenAISettings = field(default_factory=lambda: OpenAISettings(max_tokens=200, concurrency=2))
