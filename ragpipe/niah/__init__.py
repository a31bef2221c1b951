"""Needle in a haystack: the long-context evaluation (docs/niah.md).

sources (haystack directories, seeds) -> haystack (token lengths, placement by depth) -> needles (types, distractors,
prompts) -> scoring; subjects.py answers and scores trials (window check included), run.py runs the grid (one stored
row per finished trial, resume, progress), stats.py holds the intervals and flags, report.py the cells and summary,
figures.py one figure per subject. This package namespace re-exports the pure parts (not subjects, run, report and
figures, which load models or matplotlib).
"""

from ragpipe.niah.haystack import (
    Haystack,
    Tokenizer,
    boundaries,
    build_haystack,
    insert_at,
    load_tokenizer,
    off_theme_generated,
    place_needle,
    sentences,
    source_paragraphs,
)
from ragpipe.niah.needles import (
    SCHEMAS,
    Needle,
    Placement,
    Reasoning,
    Score,
    json_schema,
    locate_prompt,
    make_needle,
    make_needles,
    question_text,
    reasoning_prompt,
    structured_prompt,
)
from ragpipe.niah.scoring import (
    check_schema,
    evidence_contains,
    extract_json,
    score_answer,
    score_reasoning,
    wrong_values,
)
from ragpipe.niah.sources import IMPL_VERSION, TEXT_SUFFIXES, haystack_dir, off_theme_dir, sub_seed
from ragpipe.niah.stats import NOT_ENOUGH, Estimate, wilson

__all__ = [
    "NOT_ENOUGH",
    "SCHEMAS",
    "Estimate",
    "Haystack",
    "IMPL_VERSION",
    "Needle",
    "Placement",
    "Reasoning",
    "Score",
    "TEXT_SUFFIXES",
    "Tokenizer",
    "boundaries",
    "build_haystack",
    "check_schema",
    "evidence_contains",
    "extract_json",
    "haystack_dir",
    "insert_at",
    "json_schema",
    "load_tokenizer",
    "locate_prompt",
    "make_needle",
    "make_needles",
    "off_theme_dir",
    "off_theme_generated",
    "place_needle",
    "question_text",
    "reasoning_prompt",
    "score_answer",
    "score_reasoning",
    "sentences",
    "source_paragraphs",
    "structured_prompt",
    "sub_seed",
    "wilson",
    "wrong_values",
]
