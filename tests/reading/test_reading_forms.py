"""Forms an answer takes that say nothing by themselves: each principle with a twin that must come out the other way
(the sentences are made up for these tests)."""

from __future__ import annotations

from ragpipe.golden import GoldenTest
from ragpipe.rag import Answer
from ragpipe.reading import answer_matches, grounds, is_refusal, read_answer, unwrap
from ragpipe.reading.grounding import Fact, facts, grounded
from ragpipe.reading.stance import standing
from ragpipe.verdicts import decide


def _verdict(kind: str, question: str, expected: str, answer: str, context: str, trap: str | None = None) -> str:
    t = GoldenTest("t1", question, expected, kind, 1, ["a"], context, "doc.md", trap, "tag", "2026-01-01")
    return decide(t, ("a",), "unchanged", ["a"], Answer(answer, 0, 0, 0), (), "tag", contexts=(context,)).verdict


def test_assuming_is_a_hedge_when_the_answerer_assumes_not_when_the_subject_does() -> None:
    assert not read_answer("The client falls back to assuming latin-1 for the body.")[0].hedge
    assert read_answer("Assuming the default build, it is latin-1.")[0].hedge


def test_an_unquoted_identifier_is_grounded_as_written() -> None:
    g = grounds(("Set Cache::Backend::Path before the first start.",), "Which setting?")
    assert grounded(Fact("Cache::Backend::Path", "name", 0, 20), g)  # spaCy tags it a proper noun
    assert not grounded(Fact("Cache::Frontend::Path", "name", 0, 21), g)  # its words are there, not as written


def test_a_decimal_with_many_zeros_is_the_same_number_in_scientific_notation() -> None:
    assert answer_matches("0.0000001", "1e-07").matched and not answer_matches("0.000001", "1e-07").matched


def test_contractions_without_apostrophes_still_deny() -> None:
    assert is_refusal("the manual doesnt say which port it uses")
    assert not is_refusal("the manual says port 8080")


def test_from_x_and_y_is_no_range_from_x_to_y_is() -> None:
    assert standing("The settlers came from Norway and northern Scotland.", "Norway") == "asserted"
    assert standing("Shifts run from 6 to 14 hours.", "6") == "range"


def test_a_table_header_names_columns_and_is_no_claim() -> None:
    text = "| Office | City |\n|---|---|\n| Head office | Lyon |"
    assert "Office | City" not in unwrap(text) and "Lyon" in unwrap(text)


def test_a_self_correction_that_lands_on_the_trap_takes_it() -> None:
    context = "The east warehouse holds 4,000 pallets."
    question = "How many pallets does the west warehouse hold?"
    took = "The passage doesn't give the west figure. It is not 4,000... actually, it holds 4,000 pallets."
    assert _verdict("negative", question, "not in documents", took, context, "4,000") == "fail"
    cited = "The passage doesn't give the west figure; it only gives 4,000 pallets for the east warehouse."
    assert _verdict("negative", question, "not in documents", cited, context, "4,000") == "pass"


def test_the_sources_an_answer_lists_are_no_outside_claim() -> None:
    context = "The east warehouse holds 4,000 pallets."
    question = "How many pallets does the west warehouse hold?"
    answer = "The passages give no figure for the west warehouse.\n\nSources consulted: Passage 1 (Logistics FY24)."
    assert _verdict("negative", question, "not in documents", answer, context, "4,000") == "pass"


def test_an_expected_answer_that_negates_part_of_itself_is_not_stated_by_its_words_reversed() -> None:
    q, e = "What kind of callables must the hooks be?", "coroutines (not plain functions)"
    doc = "Hooks must be coroutines; plain functions are rejected."
    assert _verdict("positive", q, e, "They can be plain functions; coroutines get wrapped.", doc) == "needs_review"
    assert _verdict("positive", q, e, "They must be plain functions rather than coroutines.", doc) == "fail"
    assert _verdict("positive", q, e, "Coroutines, not plain functions.", doc) == "pass"


def test_a_list_items_number_is_no_fact() -> None:
    assert [f.text for f in facts("Steps:\n1. Open it in 1999.\n2. Close it.") if f.kind == "number"] == ["1999"]
    assert [f.text for f in facts("It took 2. Then 3 more.") if f.kind == "number"] == ["2", "3"]


def test_an_abbreviation_may_skip_the_small_words_of_the_name() -> None:
    g = grounds(("The list was hosted by the University of California, San Diego.",), "Who hosted it?")
    assert grounded(Fact("UCSD", "name", 0, 4), g)
    assert not grounded(Fact("UCLA", "name", 0, 4), g)


def test_an_abbreviation_may_end_in_a_short_word_of_its_own() -> None:
    g = grounds(("With -b the output goes to wget-log.",), "In which file does Wget write its process ID?")
    assert grounded(Fact("PID", "name", 0, 3), g)  # "process ID"
    assert not grounded(Fact("UID", "name", 0, 3), g)  # no "user ID" anywhere


def test_an_ellipsis_for_arguments_and_code_of_punctuation_alone_name_nothing_new() -> None:
    g = grounds(("The function rsa_decrypt decrypts a message.",), "Which function performs OAEP?")
    assert grounded(Fact("rsa_decrypt(...)", "code", 0, 16), g)
    assert not grounded(Fact("rsa_oaep_decrypt(...)", "code", 0, 21), g)
    assert sorted(f.text for f in facts("In BRE, `()` and `{}` lose their meaning; `rsa_sign` too.")) == [
        "BRE",
        "rsa_sign",
    ]


def test_a_json_field_holding_json_is_read_as_its_fields() -> None:
    """An answer wrapped twice ({"answer": "{\\"answer\\": \\"40.3%\\", \\"confidence\\": 0.95}"}): the inner
    metadata is left out as the outer is."""
    import json

    inner = json.dumps({"answer": "40.3%", "confidence": 0.95})
    read = unwrap(json.dumps({"answer": inner, "confidence": 0.8}))
    assert "40.3%" in read and "0.95" not in read and "0.8" not in read


def test_a_semicolon_inside_quoted_code_ends_no_clause() -> None:
    from ragpipe.reading.refusal import clauses

    one = "You could start the search with a range like '.;$' or use '0;/RE/' which keeps it from wrapping."
    assert clauses(one) == [
        "you could start the search with a range like '.;$' or use '0;/re/' which keeps it from wrapping"
    ]
    assert len(clauses("The range is not documented; use a search instead.")) == 2  # prose: a space after it


def test_experience_of_a_named_tool_is_the_answerers_own_knowledge() -> None:
    (_, own) = read_answer("The pages don't describe it. From general Valgrind experience, C stops the prompts.")
    assert own.own_knowledge
    (_, cited) = read_answer("The pages don't describe it. The general Valgrind options are listed in section 2.")
    assert not cited.own_knowledge
