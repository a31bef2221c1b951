"""Verdicts: the rule that decides pass, fail or did not run from a test, its anchor's retrieval and the answer
(rule.py), the optional LLM judge for what the rule cannot settle, and the scoring of answers produced elsewhere with
the same rule."""

from ragpipe.core import lazy_exports

_EXPORTS = {
    "rule": ["IMPL_VERSION as VERDICT_VERSION", "Verdict", "took_trap", "decide"],
    "judge": ["PROMPT as JUDGE_PROMPT", "Ruling", "addresses_grader", "parse_reply", "settle"],
    "scoring": ["AnswerLine", "load_answers", "score_one", "score"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
