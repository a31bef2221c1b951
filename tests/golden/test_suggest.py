"""Proposing near-miss tests, the logic alone: which sentences are candidates, the question asked back, the sibling
qualifiers, absence over a corpus (a qualifier named by the document counts), and the lines appended to a golden file.
The sentences are the bundled example's own (examples/corpus); the end-to-end path is in test_eval_e2e.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import EXAMPLES

from ragpipe.golden import (
    Corpus,
    GoldenSetError,
    agreeing,
    appended,
    candidates,
    golden_object,
    load_golden,
    next_ids,
    qualifiers,
    question,
    readable,
    remember,
    sentences_of,
    siblings,
)


def _sentence(text: str, doc: str = "d.md", chunk: str = "c1"):  # type: ignore[no-untyped-def]
    (s,) = list(sentences_of(chunk, doc, text))
    return s


def _corpus(files: dict[str, str]) -> Corpus:
    sentences = [s for doc, text in files.items() for s in sentences_of(f"ch_{doc}", doc, text)]
    return Corpus(sentences, files)


def _example(path: str) -> str:
    return (EXAMPLES / "corpus" / path).read_text(encoding="utf-8")


def test_a_value_under_a_period_is_asked_back_under_another_period() -> None:
    s = _sentence("Revenue for the second quarter of 2023 was $44.8 million, a quarterly record for the company.")
    (c,) = candidates(s)
    assert (c.value.text, c.qualifier.text, c.qualifier.group) == ("$44.8 million", "second quarter of 2023", "periods")
    assert question(c, "third quarter of 2023") == "How much was revenue for the third quarter of 2023?"
    assert question(c) == "How much was revenue for the second quarter of 2023?"  # a positive keeps its qualifier
    near = siblings(c.qualifier, {})
    assert near[:3] == ["first quarter of 2023", "third quarter of 2023", "fourth quarter of 2023"]
    assert "second quarter of 2022" in near and "second quarter of 2023" not in near


def test_counts_versions_and_names_are_asked_for_by_kind() -> None:
    (c,) = candidates(_sentence("The company shipped 5,272 robot arms in fiscal year 2023, more than in any year."))
    assert question(c, "fiscal year 2022") == "How many robot arms did the company ship in fiscal year 2022?"
    (c,) = candidates(_sentence("HaloOS 4.1 was released on May 9, 2023 and added a palletizing wizard."))
    assert c.value.kind == "version" and question(c, "May 9, 2022").startswith("Which HaloOS version was released")
    seen: dict[str, set[str]] = {}
    for q in qualifiers("the HR-200, the HR-400 and the HR-300X; SHA-256 and SHA-512"):
        remember(seen, q)
    (c,) = candidates(_sentence("The HR-200 has a maximum reach of 912 mm measured from the base axis."))
    assert siblings(c.qualifier, seen) == ["HR-400"]  # a name of the same pattern that the corpus holds


def test_a_sentence_of_several_values_or_a_qualifier_of_another_clause_proposes_nothing() -> None:
    row = _sentence("Revenue in Q2 2023 was $44.8 million and gross margin was 38.1%, up from 36.0%.")
    assert candidates(row) == []  # which value would the question ask for?
    other_clause = _sentence("Compared with the first quarter of 2023, quarterly revenue grew by $3.5 million.")
    assert candidates(other_clause) == []  # the growth is not said "of" the first quarter
    assert list(sentences_of("c", "d", "# Quarterly Business Report: Q1 2023\n\n| Revenue | $41.3 million |")) == []


def test_absence_counts_a_qualifier_named_by_the_document_not_only_by_the_sentence() -> None:
    """q2-2023.md says "in the second quarter" and names the year only in its title: asking for Q2 2023's shipments
    is answered there, so that proposal must not stand."""
    files = {"reports/q2-2023.md": _example("reports/q2-2023.md"), "reports/q3-2023.md": _example("reports/q3-2023.md")}
    corpus = _corpus(files)
    trap = next(s for s in corpus.sentences if s.text.startswith("Unit shipments reached"))
    (c,) = [c for c in candidates(trap) if c.qualifier.text == "third quarter of 2023"]
    answered = corpus.search(c, "second quarter of 2023")
    assert not answered.absent and answered.answered_by[0].startswith("ch_reports/q2-2023.md")  # type: ignore[index]
    absent = corpus.search(c, "fourth quarter of 2023")  # "the fourth quarter" of the Q3 2023 report: its year's
    assert absent.absent and absent.naming == 2 and any("The fourth quarter is" in t for _, t, _ in absent.closest)
    absent = corpus.search(c, "first quarter of 2022")
    assert absent.absent and absent.naming == 0 and "no document" in absent.why("first quarter of 2022")


def test_a_year_named_inside_a_documents_text_is_not_what_its_undated_sentences_are_said_of() -> None:
    """A policy whose version history says "1 April 2019" is not a 2019 document: its undated sentence about fault
    records answers nothing of 2019; a document headed by the year is (its heading names it)."""
    policy = "Compensation Policy\n\nHead of Network Control ensures fault records are accurate and complete.\n\n"
    policy += "Version 3.0 took effect on 1 April 2019, with amounts updated."
    report = "Annual Report\n\nThe network recorded 9,922 faults in 2021, a record low."
    files = {"policy.md": policy, "report.md": report}
    c = next(c for s in _corpus(files).sentences if s.doc_id == "report.md" for c in candidates(s))
    assert _corpus(files).search(c, "2019").absent
    headed = {"policy.md": policy.replace("Compensation Policy", "Compensation Policy 2019"), "report.md": report}
    assert not _corpus(headed).search(c, "2019").absent


def test_a_quarter_is_answered_where_its_trap_sums_the_year_to_date_and_not_by_a_policy_kept_up_to_date() -> None:
    """ "$5.4 million, giving $11.3 million for the year to date" in the Q2 report gives Q1 ($5.9 million); "keep
    their calendar up to date" in a policy sums nothing."""
    report = "Quarterly Report\n\nAgency spending for the second quarter of 2023 was $5.4 million{}."
    policy = "Remote Work Policy\n\nThe company asks staff to keep their calendar up to date."
    for tail, absent in ((", giving $11.3 million for the year to date", False), ("", True)):
        corpus = _corpus({"q2-2023.md": report.format(tail), "policy.md": policy})
        c = next(c for s in corpus.sentences if s.doc_id == "q2-2023.md" for c in candidates(s))
        assert corpus.search(c, "first quarter of 2023").absent is absent
    from ragpipe.golden.absence import _CUMULATIVE

    assert _CUMULATIVE.search(policy) is None and _CUMULATIVE.search("Year to date (1 April to 30 June)")


def test_a_quarter_named_without_its_year_is_its_reports_years() -> None:
    """ "Quarter 1 figures ... were: punctuality 96.4%" in the Quarter 2, 2023 report answers the first quarter of
    2023; the first quarter of another year stays unanswered."""
    report = "Quarterly Report - Quarter 2, 2023\n\nPunctuality was 94.1% in the second quarter of 2023. "
    report += "Quarter 1 figures, reported in June, were: punctuality 96.4% and 241 complaints."
    corpus = _corpus({"q2.md": report})
    c = next(c for s in corpus.sentences for c in candidates(s) if c.value.text == "94.1%")
    assert corpus.titles_quarter(corpus.sentences[-1]) == "Q1 2023"
    assert not corpus.search(c, "first quarter of 2023").absent and corpus.search(c, "first quarter of 2022").absent


def test_how_often_a_thing_is_done_is_no_figure_of_every_year() -> None:
    """ "audits compliance at least once a year" states no figure of each year; "about 9,900 faults a year" does."""
    report = "Annual Report\n\nThe network recorded 9,922 faults in 2021, a record low."
    for said, absent in (("Internal Audit audits fault records at least once a year, after 50,000 faults.", True),
                         ("The network records about 9,900 faults a year.", False)):  # fmt: skip
        corpus = _corpus({"audit.md": f"Audit Charter\n\n{said}", "report.md": report})
        c = next(c for s in corpus.sentences if s.doc_id == "report.md" for c in candidates(s))
        assert corpus.search(c, "2019").absent is absent


def test_a_positive_stands_only_when_every_place_states_the_same_value() -> None:
    one = "Headcount stood at 612 employees on March 31, 2023."
    agree = _corpus({"a.md": one, "b.md": "As of March 31, 2023, headcount stood at 612 employees in total."})
    differ = _corpus({"a.md": one, "b.md": "On March 31, 2023, headcount stood at 640 employees after hiring."})
    for corpus, expected in ((agree, True), (differ, False)):
        c = next(c for s in corpus.sentences if s.doc_id == "a.md" for c in candidates(s))
        ok, others = agreeing(c, corpus)
        assert ok is expected and (others == []) is expected


def test_accepted_tests_get_the_next_ids_and_a_line_each(tmp_path: Path) -> None:
    golden = tmp_path / "golden.jsonl"
    golden.write_text((EXAMPLES / "golden.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    g = load_golden(golden)
    assert next_ids(g, "negative", 2) == ["neg_17", "neg_18"] and next_ids(g, "positive", 1) == ["pos_28"]
    quote = "Revenue for the second quarter of 2023 was $44.8 million, a quarterly record for the company at the time."
    obj = golden_object("neg_17", "negative", "Revenue for Q3 2024?", quote, "reports/q2-2023.md", "$44.8 million",
                      "ch_x", "minilm-1", "2026-12-03")  # fmt: skip
    text = appended(g, [obj])
    assert text.startswith(g.text) and json.loads(text.splitlines()[-1])["trap_value"] == "$44.8 million"
    golden.write_text(text, encoding="utf-8")
    new = load_golden(golden).tests[-1]
    assert (new.question_id, new.kind, new.anchor_ids, new.quote) == ("neg_17", "negative", ["ch_x"], quote)


def test_appending_to_a_json_array_file_is_refused_with_what_to_do(tmp_path: Path) -> None:
    lines = (EXAMPLES / "golden.jsonl").read_text(encoding="utf-8").splitlines()
    path = tmp_path / "golden.json"
    path.write_text("[\n" + ",\n".join(lines[:2]) + "\n]\n", encoding="utf-8")
    with pytest.raises(GoldenSetError, match="by hand"):
        appended(load_golden(path), [])


def test_a_rewording_must_keep_the_qualifier_and_every_number_and_name() -> None:
    from ragpipe.evaluate import kept

    template = "Which HaloOS version was released on May 9, 2022 and added a palletizing wizard?"
    assert (
        kept(template, "What HaloOS version came out on May 9, 2022 with the palletizing wizard?", "May 9, 2022")
        is None
    )
    assert (
        kept(template, "Which version added the palletizing wizard?", "May 9, 2022")
        == "dropped the qualifier 'May 9, 2022'"
    )
    assert kept(template, "Which release shipped on May 9, 2022 with a wizard?", "May 9, 2022") == "dropped HaloOS"
    assert (
        kept(template, "Sure! Here it is:\nWhich HaloOS version ... May 9, 2022?", "May 9, 2022") == "not one question"
    )


def test_only_a_readable_sentence_stating_a_whole_value_becomes_a_question() -> None:
    """Sentences from real manuals that once made garbled questions ("protocol indicator http/how many when no
    context", "written by where Winter?"): a value must be a number of things or a whole name, and the sentence
    running prose a person could be asked back."""
    garbled = [
        "Changed in version 3.10: This class now sends an ALPN extension with protocol indicator http/1.1 when no "
        "context is given.",  # a command-line token, and "1.1 when no" is no count
        "A clamp value of 1 allows compatibility with the fixed-width decimal interchange formats specified in "
        "IEEE 854.",  # "1 allows": a number, not a number of things
        "Version 0.21: Adds a section on the functional module written by Collin Winter.",  # half a name
        "Who August 1992 Bruce Perens April 1996 Ian Jackson January 1998 Wichert Akkerman January 1999 Ben "
        "Collins.",  # a table of dates flattened into a line
        "the sources were released in 2019 under 4 licences.",  # a fragment, not a sentence
        "Your key length must be greater than 2048 bits (4096 bits is preferred) for every new key.",  # no year
        "In 1960’s MPS file was a deck of 80-column punched cards, so the word card stayed.",  # a decade
        "The exception hierarchy is defined by the DB-API 2.0 (PEP 249) for all drivers.",  # a citation
    ]
    for text in garbled:
        assert candidates(_sentence(text)) == [], text
    (c,) = candidates(_sentence("In 1931 the county recorded 412 permits across its eleven towns."))
    assert question(c, "1932") == "In 1932, how many permits did the county record across its eleven towns?"
    # opening with a pronoun whose referent stayed in the document: no question
    assert (
        candidates(_sentence("He embarked on a plan for the 1758 campaign that was largely developed by Loudoun."))
        == []
    )
    (c,) = candidates(_sentence("The protocol suite was published in 1985 by Novell for its network operating system."))
    assert question(c, "1984") == "By whom was the protocol suite published in 1984 for its network operating system?"


def test_a_question_reads_as_a_whole_clause_asking_for_a_place_or_a_subject_plainly() -> None:
    """Cut from a longer sentence, a question must still be a clause with a finite verb, not a phrase or a relative;
    a place is asked "where" without its preposition, a subject "who" or "what"."""
    assert not readable("Following the defeat of what in 1815?")  # no finite verb
    assert not readable("In the course of what 1920?")
    assert not readable("Which had been captured from where in 1713?")  # a relative clause cut loose
    assert readable("In 2006, how many companies were registered in the city?")
    (c,) = candidates(_sentence("French regular army reinforcements arrived in New France in May 1756."))
    assert question(c, "May 1755") == "Where did French regular army reinforcements arrive in May 1755?"
    (c,) = candidates(_sentence("Polonia was relegated from the country's top flight in 2013 because of debts."))
    assert question(c, "2012").startswith("What was relegated from the country's top flight in 2012")


def test_a_question_word_spliced_into_a_phrase_is_never_proposed() -> None:
    spliced = [
        "Through the Treaty of where 1956 did the country gain independence?",  # inside a noun phrase
        "The territory was ceded under what 1974 and the Act of 1981?",  # before the number it replaced
        "A group of who settled on the banks of the St?",  # inside a noun phrase, cut at an abbreviation
        "It was signed by how many delegates in 1946?",  # a pronoun whose referent stayed in the document
        "The city completed the how much sewer project in 2019?",  # a determiner before the question word
    ]
    assert not any(readable(q) for q in spliced)
    kept = ["Revenue for the third quarter of 2023 was how much?", "Who founded the company in 2016 with two partners?"]
    assert all(readable(q) for q in kept)


def test_whom_asks_for_a_person_or_an_organization_only() -> None:
    from ragpipe.golden import Candidate, Span

    s = _sentence("The protocol suite was published in 1985 by Novell for its network operating system.")
    (c,) = candidates(s)
    at = s.text.index("Novell")
    thing = Candidate(s, Span("PRODUCT", "Novell", at, at + 6), c.qualifier, c.attribute)
    assert question(c, "1984").startswith("By whom ")
    assert question(thing, "1984") == ""  # never "By whom" for a thing, and "By what was ..." is no question either
