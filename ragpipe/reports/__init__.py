"""What the evaluations say: the CI summary (text, Markdown, JUnit XML) and the gate, one test's verdict over time with
the cause of each change, the comparison of a candidate configuration with the current one, the review sheet of
proposed tests, and the verdicts in Ragas' and promptfoo's formats."""

from ragpipe.core import lazy_exports

_EXPORTS = {
    "summary": [
        "Row",
        "Change",
        "load_changes",
        "EvalSummary",
        "load_summary",
        "passing_negatives",
        "render_text",
        "render_markdown",
        "changes_table",
        "render_junit",
        "render_failure_markdown",
        "render_failure_junit",
    ],
    "timeline": ["UnknownTest", "HistoryRow", "history"],
    "suggestions": ["render_sheet"],
    "interop": ["EXPORT_FORMATS", "verdict_rows", "ragas_lines", "promptfoo_results"],
    "compare": [
        "COMPARABLE",
        "parse_override",
        "candidate_settings",
        "Side",
        "TestRow",
        "Comparison",
        "settings_diff",
        "run_comparison",
        "record as record_comparison",
        "render_text as render_comparison_text",
        "render_markdown as render_comparison_markdown",
    ],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
