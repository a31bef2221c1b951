"""Near-miss negatives about changes, the logic alone: the change notes of reference documentation read under the
definition they stand under, the versions asked about instead, the question, and the absence search. The chunks
are written the way the HTML parser gives Sphinx pages (a definition line ends with its permalink mark)."""

from __future__ import annotations

import duckdb

from ragpipe.evaluate.proposing import collect, read_corpus
from ragpipe.golden import (
    GoldenTest,
    change_notes,
    change_question,
    change_siblings,
    qualifiers,
    remember,
    search_change,
)
from ragpipe.rag.answerers import Answer
from ragpipe.verdicts import decide

DOC = "html/library/zipfile.html"
FIRST = """zipfile.is_zipfile(filename)¶

Returns True if filename is a valid ZIP file based on its magic number, otherwise returns False.

Changed in version 3.1: Support for file and file-like objects.

class zipfile.ZipFile(file, mode='r')¶

Open a ZIP file, where file can be a path to a file (a string) or a file-like object.

Changed in version 3.2: Added the ability to use ZipFile as a context manager.

Changed in version 3.5: Added support for writing to unseekable streams.

testzip()¶

Read all the files in the archive and check their CRCs and file headers.

Changed in version 3.6: Calling testzip() on a closed ZipFile will raise a ValueError."""
SECOND = """Return the name of the first bad file, or else return None.

Changed in version 3.4: The archive comment is now checked as well by this method.

zipfile.Path(root, at='')¶

Construct a Path object from a root zipfile.

New in version 3.8.

Changed in version 3.10: Added the encoding parameter, backported from 3.9 in the zipp package."""
OTHER = "html/library/os.html"
ELSEWHERE = """os.fspath(path)¶

Return the file system representation of the path.

New in version 3.6.

Changed in version 3.7: The module zipfile now checks the archive in testzip() before returning it."""


def _rows() -> list[tuple[str, str, str]]:
    return [("ch_1", DOC, FIRST), ("ch_2", DOC, SECOND), ("ch_3", OTHER, ELSEWHERE)]


def test_a_note_is_said_of_the_definition_it_stands_under_in_the_same_chunk() -> None:
    notes = change_notes(_rows())
    found = {(c.subject, c.qualifier.text, c.value.text) for c in notes.candidates}
    assert found == {
        ("zipfile.is_zipfile", "version 3.1", "Support for file and file-like objects"),
        ("zipfile.ZipFile", "version 3.2", "Added the ability to use ZipFile as a context manager"),
        ("zipfile.ZipFile", "version 3.5", "Added support for writing to unseekable streams"),
        ("zipfile.ZipFile.testzip", "version 3.6", "Calling testzip() on a closed ZipFile will raise a ValueError"),
        ("zipfile.Path", "version 3.10", "Added the encoding parameter, backported from 3.9 in the zipp package"),
        ("os.fspath", "version 3.7", "The module zipfile now checks the archive in testzip() before returning it"),
    }  # testzip's 3.4 note stands in a chunk that does not name testzip: no trap; "New in version 3.8." no change
    c = next(c for c in notes.candidates if c.qualifier.text == "version 3.6")
    assert c.sentence.text[c.value.start : c.value.end] == c.value.text and c.sentence.chunk_id == "ch_1"
    assert notes.of("zipfile.ZipFile.testzip") == {"3.4", "3.6"}  # every note counts for what the subject names
    assert notes.of("zipfile.Path") == {"3.8", "3.9", "3.10"} and notes.added["zipfile.Path"] == "3.8"
    assert notes.latest == (3, 10)


def test_a_note_after_a_section_heading_is_said_of_no_definition() -> None:
    for heading in ("Flags¶", "Module Contents¶"):
        text = f"re.compile(pattern, flags=0)¶\n\nCompile a pattern.\n\n{heading}\n\nChanged in version 3.6: Flag constants are now instances of RegexFlag."
        assert change_notes([("c", "html/library/re.html", text)]).candidates == []
    constant = (
        "re.compile(pattern, flags=0)¶\n\nCompile.\n\nASCII¶\n\nChanged in version 3.6: ASCII is now an enum member."
    )
    assert [c.subject for c in change_notes([("c", "re.html", constant)]).candidates] == ["ASCII"]


def test_a_quote_found_twice_is_no_trap() -> None:
    twice = FIRST + "\n\nzipfile.main()¶\n\nChanged in version 3.1: Support for file and file-like objects."
    notes = change_notes([("ch_1", DOC, twice)])
    assert "zipfile.is_zipfile" not in {c.subject for c in notes.candidates}


def test_the_version_asked_about_is_a_neighbour_the_subject_has_no_note_for() -> None:
    notes = change_notes(_rows())
    named = {f"3.{n}" for n in range(0, 12)}
    by = {(c.subject, c.qualifier.text): c for c in notes.candidates}
    testzip = by[("zipfile.ZipFile.testzip", "version 3.6")]
    assert change_siblings(testzip, notes, named) == ["version 3.7", "version 3.5", "version 3.8"]  # not 3.4
    assert change_siblings(testzip, notes, {"3.5", "3.8"}) == [
        "version 3.5",
        "version 3.8",
    ]  # versions the corpus names
    path = by[("zipfile.Path", "version 3.10")]
    assert change_siblings(path, notes, named) == []  # 3.11 is newer than the documentation, 3.8 and 3.9 are noted
    assert change_question(testzip, "version 3.7") == "What changed in zipfile.ZipFile.testzip in version 3.7?"
    added = change_notes([("c", DOC, "os.fspath(path)¶\n\nNew in version 3.6: Added the strict argument.")])
    assert change_question(added.candidates[0], "version 3.7") == "What was added to os.fspath in version 3.7?"


def test_absence_is_a_search_of_every_sentence_naming_the_version_and_the_subject() -> None:
    conn = duckdb.connect()
    conn.execute("CREATE TABLE chunks (chunk_id VARCHAR, doc_id VARCHAR, seq INT, text VARCHAR, chunker_tag VARCHAR)")
    conn.executemany(
        "INSERT INTO chunks VALUES (?, ?, ?, ?, 't')", [(c, d, i, t) for i, (c, d, t) in enumerate(_rows())]
    )
    corpus, notes, n_chunks = read_corpus(conn, "t")
    assert n_chunks == 3
    testzip = next(c for c in notes.candidates if c.subject.endswith("testzip"))
    answered = search_change(testzip, "version 3.7", notes, corpus.sentences)  # os.fspath's note names testzip
    assert answered.answered_by == ("ch_3", next(s.text for s in corpus.sentences if "3.7:" in s.text))
    absent = search_change(testzip, "version 3.5", notes, corpus.sentences)
    assert absent.absent and absent.naming == 1  # the ZipFile note that names 3.5 does not name testzip
    assert "name version(s) 3.4, 3.6, not 3.5" in absent.why("version 3.5")

    seen: dict[str, set[str]] = {}
    for s in corpus.sentences:
        for q in qualifiers(s.text):
            remember(seen, q)
    dropped = {k: 0 for k in ("negative: every sibling qualifier is answered in the corpus", "negative: no sibling")}
    neg, pos, _, _ = collect(corpus, notes, ("changes",), set(), seen, dropped, set(), 10, 5)
    asked = {p.question: p for p in neg}
    assert "What changed in zipfile.ZipFile.testzip in version 3.7?" not in asked  # answered in os.html
    p = asked["What changed in zipfile.ZipFile.testzip in version 3.5?"]
    assert (p.value, p.qualifier_kind, p.asked_for, p.chunk_id) == (
        testzip.value.text,
        "changes",
        "version 3.5",
        "ch_1",
    )
    assert sum(q.question.startswith("What changed in zipfile.ZipFile in") for q in neg) == 1  # one per subject
    assert pos == []  # a change is a paraphrase to read, not a value to find: no positive
    assert dropped["negative: no sibling"] >= 1  # zipfile.Path: every neighbour is noted or too new


def test_a_change_negative_is_scored_by_the_verdict_rule_like_any_trap() -> None:
    """The trap's value is the change, a sentence: stating it of the asked version takes the trap, citing it as what
    the documents say of another version does not."""
    notes = change_notes(_rows())
    c = next(c for c in notes.candidates if c.subject.endswith("testzip"))
    test = GoldenTest(
        "neg_1", change_question(c, "version 3.5"), "not in documents", "negative", 1, ("ch_1",),
        c.sentence.text, DOC, c.value.text, "e", "2026-12-04", {},
    )  # fmt: skip
    verdicts = {
        "The documents do not mention any change to testzip in version 3.5.": "pass",
        "In version 3.5, calling testzip() on a closed ZipFile will raise a ValueError.": "fail",
        "Nothing is said about 3.5; in 3.6, calling testzip() on a closed ZipFile started to raise a ValueError.": "pass",
        "I can't find a 3.5 note, but probably calling testzip() on a closed ZipFile raises a ValueError.": "fail",
    }
    for answer, expected in verdicts.items():
        v = decide(test, ("ch_1",), "ok", ["ch_1"], Answer(answer, 0, 0, 0), (), "e", contexts=[FIRST])
        assert v.verdict == expected, (answer, v.reason)
