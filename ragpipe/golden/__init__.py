"""The golden set: the file loaded and validated (every problem with file, line and field), its quotes in the forms
people copy them, re-stamping (each test's quote located in the current chunks), in-place rewrites and appended tests
that keep the file a reviewable diff, near-miss tests read from the corpus with their absence shown, and the golden
sets of other tools read as rows to import."""

from ragpipe.core import lazy_exports

_EXPORTS = {
    "file": [
        "REQUIRED",
        "KINDS",
        "ANCHOR_FIELDS",
        "GoldenProblem",
        "GoldenSetError",
        "GoldenTest",
        "GoldenFile",
        "json_objects",
        "user_text",
        "load_golden",
        "check_quotes",
        "rewrite_fields",
        "write_atomic",
    ],
    "lines": ["hashes_by_test"],
    "near_miss": [
        "QUALIFIER_KINDS",
        "YEAR",
        "Span",
        "Sentence",
        "Candidate",
        "sentences_of",
        "passages_of",
        "qualifiers",
        "values",
        "names",
        "candidates",
        "question",
    ],
    "alternatives": ["siblings", "remember", "forms"],
    "doc_changes": ["Notes", "change_notes", "change_siblings", "change_question", "search_change"],
    "prose": ["askable", "readable"],
    "clauses": ["TEMPLATES", "template"],
    "titles": ["document_period", "document_title", "named_by_year", "termly", "titled_spans"],
    "tables": [
        "MEASURE_HEADERS",
        "Table",
        "tables_of",
        "measure_columns",
        "period_rows",
        "row_candidates",
        "row_question",
    ],
    "series": ["FALSE_PREMISE", "SeriesIndex", "series_index", "fair_period", "cadence"],
    "absence": ["Evidence", "Corpus", "agreeing"],
    "append": ["next_ids", "golden_object", "appended"],
    "imports": ["FORMATS as IMPORT_FORMATS", "Row", "read_rows"],
    "quotes": ["quote_form", "plain_form", "html_form", "quote_forms", "closest_passage"],
    "restamp": ["IMPL_VERSION as GOLDEN_VERSION", "ChunkSpan", "Stamp", "Restamper", "id_value"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
