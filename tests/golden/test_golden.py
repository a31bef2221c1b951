"""The golden set file: every problem at once with file:line:field, quote checks, kind inference, in-place rewrites."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragpipe.golden import GoldenSetError, check_quotes, load_golden, rewrite_fields


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def _problems(path: Path) -> tuple[GoldenSetError, set[tuple[int, str | None, str | None]]]:
    with pytest.raises(GoldenSetError) as info:
        load_golden(path)
    exc = info.value
    return exc, {(p.line, p.field, p.question_id) for p in exc.problems}


NEG = {
    "question_id": "n1",
    "question": "Q3 2022 revenue?",
    "expected_answer": "not in documents",
    "trap_chunk_id": "ch_a",
}
POS = {
    "question_id": "p1",
    "question": "Q3 2023 revenue?",
    "expected_answer": "$48.7 million",
    "evidence_chunk_id": "ch_b",
}


# --------------------------------------------------------------------------------------------- every problem at once

DAMAGED_JSONL = (
    "\n".join(
        [
            json.dumps(NEG),  # 1 fine
            '{"question_id": "broken", "question": "x", "expected_answer": "y"',  # 2 malformed JSON
            json.dumps({"question_id": "q_noq", "expected_answer": "42", "evidence_chunk_id": "c"}),  # 3 no question
            json.dumps(POS),  # 4 fine
            "",  # 5 blank: skipped, but still counts as a line
            json.dumps({**POS, "question": "again"}),  # 6 duplicate of line 4
            json.dumps({**POS, "question_id": "p_date", "last_validated": "2024-13-45"}),  # 7 bad date
            json.dumps(
                {"question_id": "n_bare", "question": "q", "expected_answer": "not in documents"}
            ),  # 8 no anchor
            '["not", "an", "object"]',  # 9 not an object
            json.dumps({**POS, "question_id": "p_kind", "kind": "neutral"}),  # 10 bad kind
            "// a comment line is allowed",  # 11
            json.dumps({**NEG, "question_id": "n2"}),  # 12 fine
        ]
    )
    + "\n"
)


def test_jsonl_every_problem_with_line_and_field(tmp_path: Path) -> None:
    path = _write(tmp_path, "golden.jsonl", DAMAGED_JSONL)
    exc, got = _problems(path)
    assert got == {
        (2, None, None),
        (3, "question", "q_noq"),
        (6, "question_id", "p1"),
        (7, "last_validated", "p_date"),
        (8, "trap_chunk_id", "n_bare"),
        (9, None, None),
        (10, "kind", "p_kind"),
    }
    assert len(exc.problems) == 7
    assert all(p.file == str(path) for p in exc.problems)
    by_line = {p.line: p for p in exc.problems}
    assert "malformed JSON" in by_line[2].message
    assert "line 4" in by_line[6].message  # the duplicate names the first use
    assert "2024-13-45" in by_line[7].message
    assert "trap_quote" in by_line[8].message
    assert "object" in by_line[9].message
    text = str(exc)
    for line in (2, 3, 6, 7, 8, 9, 10):
        assert f"{path}:{line}" in text
    assert "field 'last_validated'" in text
    assert "7 problem(s)" in text


DAMAGED_ARRAY = """[
  {
    "question_id": "n1",
    "question": "Q3 2022 revenue?",
    "expected_answer": "not in documents",
    "trap_chunk_id": "ch_a"
  },
  {"question_id": "q_noq", "expected_answer": "42", "evidence_chunk_id": "c"},
  {
    "question_id": "n1",
    "question": "dup",
    "expected_answer": "not in documents",
    "trap_quote": "x"
  },

  {"question_id": "p_date", "question": "q", "expected_answer": "42", "evidence_chunk_id": "c",
   "last_validated": "2024-13-45"},
  {"question_id": "n_bare", "question": "q", "expected_answer": "Not in the documents."},
  "just a string",
  42,
  {"question_id": "p_kind", "question": "q", "expected_answer": "42", "evidence_chunk_id": "c", "kind": "neutral"}
]
"""


def test_json_array_every_problem_with_object_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "golden.json", DAMAGED_ARRAY)
    exc, got = _problems(path)
    assert got == {
        (8, "question", "q_noq"),
        (9, "question_id", "n1"),
        (16, "last_validated", "p_date"),
        (18, "trap_chunk_id", "n_bare"),
        (19, None, None),
        (20, None, None),
        (21, "kind", "p_kind"),
    }
    dup = next(p for p in exc.problems if p.field == "question_id")
    assert "line 2" in dup.message
    assert f"{path}:16" in str(exc) and f"{path}:21" in str(exc)


def test_json_array_malformed_object_reported_with_earlier_problems(tmp_path: Path) -> None:
    text = (
        "[\n"
        '  {"question_id": "q_noq", "expected_answer": "42", "evidence_chunk_id": "c"},\n'
        '  {"question_id": "p1", "question": "q", "expected_answer": "42", "evidence_chunk_id": "c"},\n'
        '  {"question_id": "bad", "question": "q" "expected_answer": "42"}\n'
        "]\n"
    )
    _, got = _problems(_write(tmp_path, "golden.json", text))
    assert got == {(2, "question", "q_noq"), (4, None, None)}


def test_json_array_trailing_content_and_unclosed_array_are_problems(tmp_path: Path) -> None:
    obj = json.dumps(POS)
    exc, got = _problems(_write(tmp_path, "a.json", f"[\n  {obj}\n]\n{json.dumps(NEG)}\n"))
    assert got == {(4, None, None)}
    assert "after the closing" in exc.problems[0].message
    exc, got = _problems(_write(tmp_path, "b.json", f"[\n  {obj},\n"))
    assert [p.field for p in exc.problems] == [None]
    assert "never closed" in exc.problems[0].message


def test_wrongly_typed_fields_are_problems_not_crashes(tmp_path: Path) -> None:
    objs = [
        {**NEG, "trap_quote": "x", "trap_source": ["reports/q3.md"]},  # a list would crash check_quotes / restamp
        {**NEG, "question_id": "n2", "trap_quote": 7},
        {**NEG, "question_id": "n3", "trap_chunk_id": {"id": "c"}, "trap_quote": "x"},
        {**NEG, "question_id": "n4", "trap_value": 48.7},
        {**POS, "evidence_source": 3, "evidence_quote": "x"},
    ]
    _, got = _problems(_write(tmp_path, "g.jsonl", "".join(json.dumps(o) + "\n" for o in objs)))
    assert got == {
        (1, "trap_source", "n1"),
        (2, "trap_quote", "n2"),
        (3, "trap_chunk_id", "n3"),
        (4, "trap_value", "n4"),
        (5, "evidence_source", "p1"),
    }


def test_missing_file_is_a_golden_set_error(tmp_path: Path) -> None:
    with pytest.raises(GoldenSetError) as info:
        load_golden(tmp_path / "nope.jsonl")
    assert "not found" in str(info.value)


def test_unicode_line_separator_inside_a_string_is_not_a_line_break(tmp_path: Path) -> None:
    # json.dumps(..., ensure_ascii=False) writes U+2028 / U+0085 raw; they are legal inside JSON strings.
    first = json.dumps({**NEG, "trap_quote": "Revenue\u2028was $48.7\x85million"}, ensure_ascii=False)
    path = _write(tmp_path, "golden.jsonl", first + "\n" + json.dumps({**POS, "question": ""}) + "\n")
    _, got = _problems(path)
    assert got == {(2, "question", "p1")}
    path.write_text(first + "\n" + json.dumps(POS) + "\n", encoding="utf-8")
    g = load_golden(path)
    assert [(t.question_id, t.line) for t in g.tests] == [("n1", 1), ("p1", 2)]
    assert g.tests[0].quote == "Revenue\u2028was $48.7\x85million"


# ------------------------------------------------------------------------------------------------- kind and old files


@pytest.mark.parametrize(
    ("expected", "kind"),
    [
        ("not in documents", "negative"),
        ("Not in the documents.", "negative"),
        ("I don\u2019t know", "negative"),
        ("$48.7 million", "positive"),
        ("Acme Corp", "positive"),
    ],
)
def test_kind_is_inferred_from_the_expected_answer(tmp_path: Path, expected: str, kind: str) -> None:
    obj = {
        "question_id": "t",
        "question": "q",
        "expected_answer": expected,
        "trap_chunk_id": "ch_t",
        "evidence_chunk_id": "ch_e",
    }
    t = load_golden(_write(tmp_path, "g.jsonl", json.dumps(obj) + "\n")).tests[0]
    assert t.kind == kind
    assert t.anchor_ids == (["ch_t"] if kind == "negative" else ["ch_e"])
    assert t.anchor_field == ("trap_chunk_id" if kind == "negative" else "evidence_chunk_id")


def test_explicit_kind_wins_and_inferred_positive_needs_evidence(tmp_path: Path) -> None:
    obj = {
        "question_id": "t",
        "question": "q",
        "expected_answer": "not in documents",
        "kind": "positive",
        "evidence_chunk_id": "e",
    }
    assert load_golden(_write(tmp_path, "a.jsonl", json.dumps(obj) + "\n")).tests[0].kind == "positive"
    obj = {"question_id": "t", "question": "q", "expected_answer": "42", "trap_chunk_id": "ch_t"}
    _, got = _problems(_write(tmp_path, "b.jsonl", json.dumps(obj) + "\n"))
    assert got == {(1, "evidence_chunk_id", "t")}


def test_old_style_file_with_ids_but_no_quotes_loads(tmp_path: Path) -> None:
    lines = [
        {
            "question_id": "neg_01",
            "question": "Q3 2022?",
            "expected_answer": "not in documents",
            "trap_chunk_id": "ch_fdf07fc6472ed936",
            "embedder_tag": "minilm-bcfe46d6",
            "last_validated": "2026-11-29",
        },
        {
            "question_id": "pos_01",
            "question": "Q3 2023?",
            "expected_answer": "$48.7 million",
            "evidence_chunk_id": ["ch_1", "ch_2"],
        },
    ]
    g = load_golden(_write(tmp_path, "g.jsonl", "".join(json.dumps(o) + "\n" for o in lines)))
    assert g.format == "jsonl"
    neg, pos = g.tests
    assert (neg.kind, neg.anchor_ids, neg.quote, neg.source, neg.trap_value) == (
        "negative",
        ["ch_fdf07fc6472ed936"],
        None,
        None,
        None,
    )
    assert (neg.embedder_tag, neg.last_validated, neg.line) == ("minilm-bcfe46d6", "2026-11-29", 1)
    assert (pos.kind, pos.anchor_ids, pos.quote, pos.line) == ("positive", ["ch_1", "ch_2"], None, 2)
    assert check_quotes(g, {"reports/q3.md": "anything"}) == []


# ------------------------------------------------------------------------------------------------------ check_quotes

DOCS = {
    "reports/q3-2023.md": "# Q3 2023\n\nHalvorsen Robotics reported revenue of\n$48.7  million for the third quarter\nof 2023.\n",
    "policies/travel.md": "Employees may claim  up to\n\t$75 per day for meals.\n",
}
QUOTE = "Halvorsen Robotics reported revenue of $48.7 million for the third quarter of 2023."


def test_check_quotes_reports_each_bad_quote_with_line_and_field(tmp_path: Path) -> None:
    objs = [
        # 1: fine (single spaces against the document's newlines and double spaces)
        {**NEG, "trap_quote": QUOTE, "trap_source": "reports/q3-2023.md", "trap_value": "$48.7 million"},
        # 2: quote not in its source
        {**POS, "evidence_quote": "Revenue was $50 million.", "evidence_source": "reports/q3-2023.md"},
        # 3: unknown source document
        {
            **NEG,
            "question_id": "n3",
            "trap_quote": QUOTE,
            "trap_source": "reports/q9-2023.md",
            "trap_value": "$48.7 million",
        },
        # 4: trap_value not inside trap_quote
        {
            **NEG,
            "question_id": "n4",
            "trap_quote": QUOTE,
            "trap_source": "reports/q3-2023.md",
            "trap_value": "$51.2 million",
        },
        # 5: no source, found in some document (whitespace differs)
        {**POS, "question_id": "p5", "evidence_quote": "claim up to $75 per\nday"},
        # 6: no source, nowhere in the corpus
        {**POS, "question_id": "p6", "evidence_quote": "claim up to $90 per day"},
        # 7: the quote is in another document than the one named
        {
            **POS,
            "question_id": "p7",
            "evidence_quote": "claim up to $75 per day",
            "evidence_source": "reports/q3-2023.md",
        },
        # 8: trap_value written with other whitespace still counts as inside the quote
        {
            **NEG,
            "question_id": "n8",
            "trap_quote": QUOTE,
            "trap_source": "reports/q3-2023.md",
            "trap_value": "$48.7\n million",
        },
    ]
    g = load_golden(_write(tmp_path, "g.jsonl", "".join(json.dumps(o) + "\n" for o in objs)))
    problems = check_quotes(g, DOCS)
    assert {(p.line, p.field, p.question_id) for p in problems} == {
        (2, "evidence_quote", "p1"),
        (3, "trap_source", "n3"),
        (4, "trap_value", "n4"),
        (6, "evidence_quote", "p6"),
        (7, "evidence_quote", "p7"),
    }
    assert len(problems) == 5
    assert all(p.file == str(g.path) for p in problems)
    text = "\n".join(map(str, problems))
    assert f"{g.path}:3 [n3] field 'trap_source':" in text
    assert "reports/q9-2023.md" in text


# --------------------------------------------------------------------------------------------------- rewrite_fields


def test_rewrite_jsonl_touches_only_the_named_values(tmp_path: Path) -> None:
    lines = [
        "// golden set, hand-kept",
        '{"question_id":"n1","trap_chunk_id":"ch_same","question":"What is \\"trap_chunk_id\\": \\"ch_same\\"?","expected_answer":"not in documents"}',
        '{ "question_id" : "n2",  "question": "q2", "expected_answer": "not in documents",   "trap_chunk_id" :  "ch_same", "embedder_tag": "old-1" }',
        "",
        '{"question_id": "p1", "question": "q3", "expected_answer": "42", "evidence_chunk_id": ["a", "b"], "last_validated": "2024-01-01"}',
    ]
    original = "\n".join(lines) + "\n"
    g = load_golden(_write(tmp_path, "g.jsonl", original))
    out = rewrite_fields(
        g,
        {
            "n2": {"trap_chunk_id": ["ch_x", "ch_y"], "embedder_tag": "new-2"},
            "p1": {"evidence_chunk_id": "ch_z", "last_validated": "2026-01-02"},
        },
    )
    expected = (
        "\n".join(
            [
                lines[0],
                lines[1],
                '{ "question_id" : "n2",  "question": "q2", "expected_answer": "not in documents",   "trap_chunk_id" :  ["ch_x", "ch_y"], "embedder_tag": "new-2" }',
                "",
                '{"question_id": "p1", "question": "q3", "expected_answer": "42", "evidence_chunk_id": "ch_z", "last_validated": "2026-01-02"}',
            ]
        )
        + "\n"
    )
    assert out == expected
    assert g.text == original  # the loaded file is not mutated
    assert rewrite_fields(g, {}) == original


def test_rewrite_adds_a_missing_field_in_the_objects_layout(tmp_path: Path) -> None:
    original = '{"question_id": "n1", "question": "q", "expected_answer": "not in documents", "trap_chunk_id": "c1"}\n'
    g = load_golden(_write(tmp_path, "g.jsonl", original))
    out = rewrite_fields(g, {"n1": {"embedder_tag": "m-1", "last_validated": "2026-05-01"}})
    assert out == (
        '{"question_id": "n1", "question": "q", "expected_answer": "not in documents", "trap_chunk_id": "c1", '
        '"embedder_tag": "m-1", "last_validated": "2026-05-01"}\n'
    )


PRETTY = """[
    {
        "question_id": "n1",
        "question": "What was revenue in Q3 2022?",
        "expected_answer": "not in documents",
        "trap_chunk_id": "ch_old",
        "trap_quote": "Halvorsen Robotics reported revenue of $48.7 million",
        "trap_value": "$48.7 million"
    },
    {
        "question_id": "p1",
        "question": "Q?",
        "expected_answer": "42",
        "evidence_chunk_id": [
            "ch_a",
            "ch_b"
        ],
        "embedder_tag": "old"
    }
]
"""


def test_rewrite_pretty_printed_array_keeps_indentation(tmp_path: Path) -> None:
    path = _write(tmp_path, "golden.json", PRETTY)
    g = load_golden(path)
    assert g.format == "json"
    out = rewrite_fields(
        g,
        {
            "n1": {"trap_chunk_id": ["ch_1", "ch_2"], "embedder_tag": "minilm-1", "last_validated": "2026-01-02"},
            "p1": {"evidence_chunk_id": "ch_c", "embedder_tag": "minilm-1"},
        },
    )
    assert (
        out
        == """[
    {
        "question_id": "n1",
        "question": "What was revenue in Q3 2022?",
        "expected_answer": "not in documents",
        "trap_chunk_id": ["ch_1", "ch_2"],
        "trap_quote": "Halvorsen Robotics reported revenue of $48.7 million",
        "trap_value": "$48.7 million",
        "embedder_tag": "minilm-1",
        "last_validated": "2026-01-02"
    },
    {
        "question_id": "p1",
        "question": "Q?",
        "expected_answer": "42",
        "evidence_chunk_id": "ch_c",
        "embedder_tag": "minilm-1"
    }
]
"""
    )
    path.write_text(out, encoding="utf-8")
    again = load_golden(path)
    n1, p1 = again.tests
    assert (n1.anchor_ids, n1.embedder_tag, n1.last_validated, n1.line) == (
        ["ch_1", "ch_2"],
        "minilm-1",
        "2026-01-02",
        2,
    )
    assert n1.raw["trap_chunk_id"] == ["ch_1", "ch_2"]
    assert (p1.anchor_ids, p1.embedder_tag, p1.line) == (["ch_c"], "minilm-1", 12)
    assert n1.quote == "Halvorsen Robotics reported revenue of $48.7 million"


def test_rewrite_round_trip_jsonl_reload(tmp_path: Path) -> None:
    objs = [{**NEG, "question_id": f"n{i}", "trap_chunk_id": f"ch_{i}"} for i in range(5)]
    path = _write(tmp_path, "g.jsonl", "".join(json.dumps(o) + "\n" for o in objs))
    g = load_golden(path)
    updates = {"n1": {"trap_chunk_id": "ch_new_long_id"}, "n3": {"trap_chunk_id": ["s1", "s2"], "embedder_tag": "e"}}
    path.write_text(rewrite_fields(g, updates), encoding="utf-8")
    again = {t.question_id: t for t in load_golden(path).tests}
    assert (
        again["n0"].anchor_ids == ["ch_0"] and again["n2"].anchor_ids == ["ch_2"] and again["n4"].anchor_ids == ["ch_4"]
    )
    assert again["n1"].anchor_ids == ["ch_new_long_id"]
    assert again["n3"].anchor_ids == ["s1", "s2"] and again["n3"].embedder_tag == "e"
    assert [t.line for t in again.values()] == [1, 2, 3, 4, 5]
