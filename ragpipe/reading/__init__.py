"""Reading an answer as a careful grader does: the refusal grammar (does it refuse, hedge, cite, or state?) and answer
matching (does it state the expected value: numbers, units, dates, versions, lists, scientific notation), and
grounding (the facts an answer states, whether the retrieved text holds them, and where a value stands: negated,
contrasted, a range, one of alternatives; spaCy's dependency parse), quantities as dimensions (units), and the
entailment reader: an answer cut into claims, each read against the retrieved sentences it speaks of as supported,
contradicted or not in the context (a small cross-encoder trained here, from rule-made claims: synth), and a word
swapped for its rival (substitution). Shared by the golden set (a test's kind from its
expected answer), the verdict rule and NIAH's scoring."""

from ragpipe.core import lazy_exports

_EXPORTS = {
    "refusal": [
        "prepare",
        "clauses",
        "refuses",
        "hedge_leads",
        "cites",
        "Reading",
        "read_answer",
        "is_refusal",
        "generalizing",
    ],
    "forms": ["unwrap"],
    "grounding": ["Grounds", "facts", "grounds", "in_clause", "is_identifier", "names_in", "outside", "table_row"],
    "assertions": ["claims", "guesses", "proposes", "unsupported"],
    "stance": ["standing"],
    "polarity": ["opposed"],
    "attribution": ["reassigned", "said_there", "swapped"],
    "match": [
        "months",
        "digits",
        "numbers",
        "dates",
        "quantities",
        "versions",
        "Match",
        "content_words",
        "answer_matches",
    ],
    "notation": ["with_carets", "notations", "cased", "other_bases", "spellings", "misnamed"],
    "premises": ["premise", "sentences", "keys"],
    "statements": ["claims_of", "framing", "plain", "signed_from"],
    "entailment": ["Entailment", "entail", "available", "reader"],
    "substitution": ["Replacement", "replaced", "rivals"],
    "units": ["Measure", "measures", "wrong_unit", "conversions", "states_converted", "foreign_unit"],
    "synth": ["Example", "examples"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
