"""The evaluation stages over the warehouse: golden set -> stamps -> retrievals -> answers -> verdicts, one module
per stage, and the eval-run bookkeeping the answers and verdicts stages share (runs.py)."""

from ragpipe.core import lazy_exports

_EXPORTS = {
    "stamps": [
        "GOLDEN_COLUMNS",
        "documents_text",
        "load_golden_stage",
        "golden_tests",
        "restamper_for",
        "stamp_stage",
        "current_anchors",
        "stamp_line",
    ],
    "retrievals": ["retrieve_stage", "corpus_digest"],
    "subject": ["observe_subject"],
    "runs": ["record_failure", "progress_line", "latest_eval_run", "fork_eval_run", "judged_elsewhere"],
    "answers": ["ANSWER_COLUMNS", "answer_stage", "retrieved_texts"],
    "verdicts": ["VERDICT_COLUMNS", "test_sha", "anchor_rank", "anchor_source_sha", "verdict_stage"],
    "phrasing": ["PROMPT as PHRASING_PROMPT", "kept", "rephrase"],
    "proposing": ["SuggestError", "Proposal", "read_corpus"],
    "suggestions": ["Suggestions", "suggest", "stored", "decide"],
    "importing": ["Imported", "anchor"],
    "reviews": [
        "DECISIONS",
        "ReviewError",
        "Review",
        "Pending",
        "answer_sha",
        "claims_key",
        "by_claims",
        "apply_reviews",
        "latest",
        "decide_review",
    ],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
