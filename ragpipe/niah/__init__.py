"""Needle in a haystack: the long-context evaluation (docs/niah.md).

sources (haystack directories, seeds) -> haystack (token lengths, placement by depth) -> needles (types, distractors,
prompts) -> scoring; trials.py builds the grid's haystacks and trials, subjects.py answers and scores trials (window
check included), run.py runs the grid (one stored row per finished trial, resume, progress), stats.py holds the
intervals and flags, reporting.py the cells and summary, figures.py one figure per subject. The [niah] section is
ragpipe.settings.NiahSettings (Settings.niah).
"""

from ragpipe.core import lazy_exports

_EXPORTS = {
    "sources": ["IMPL_VERSION as NIAH_VERSION", "TEXT_SUFFIXES", "haystack_dir", "off_theme_dir", "sub_seed"],
    "haystack": [
        "Haystack",
        "Tokenizer",
        "boundaries",
        "build_haystack",
        "insert_at",
        "load_tokenizer",
        "off_theme_generated",
        "place_needle",
        "sentences",
        "source_paragraphs",
        "parsed_paragraphs",
    ],
    "needles": [
        "SCHEMAS",
        "Needle",
        "Placement",
        "Reasoning",
        "Score",
        "json_schema",
        "locate_prompt",
        "make_needle",
        "make_needles",
        "question_text",
        "reasoning_prompt",
        "structured_prompt",
    ],
    "scoring": [
        "check_schema",
        "evidence_contains",
        "extract_json",
        "score_answer",
        "score_reasoning",
        "wrong_values",
    ],
    "stats": ["NOT_ENOUGH", "Estimate", "wilson", "estimate", "pooled", "effective_length", "bias_flags"],
    "trials": ["Trial", "haystack_key", "build_haystacks", "load_haystacks", "build_trials", "prefix_sharing_order"],
    "subjects": [
        "DEFAULT_WINDOWS",
        "PROMPT_OVERHEAD",
        "RetrievalContexts",
        "window_counter",
        "fit_window",
        "first_prompt",
        "evaluate_trials",
    ],
    "run": ["COLUMNS as TRIAL_COLUMNS", "new_run_id", "run_key", "evaluate_subject", "run_trials"],
    "reporting": ["latest_run_id", "cells", "cell_estimates", "report", "render_text"],
    "figures": ["subject_figure", "paths_figure"],
    "summary_path": ["PIECE_TOKENS", "SUMMARY_PROMPT", "SummaryError", "Summaries", "pieces"],
    "tiers": ["ALL_TYPES", "NONE_GOOD", "PathAt", "Tier", "choose_tiers", "tier_line", "tier_text"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
