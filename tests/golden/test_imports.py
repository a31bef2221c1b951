"""Other tools' golden sets read as rows: files written by Ragas, DeepEval, promptfoo and Phoenix themselves
(tests/fixtures/imports/make_files.py, make_phoenix.py), a LangSmith-style export and a plain CSV; every row that cannot be read is
named with its line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT

from ragpipe.golden import GoldenSetError, read_rows

FIXTURES = ROOT / "tests" / "fixtures" / "imports"
QUESTIONS = [
    "What was Halvorsen's revenue for the second quarter of 2023?",
    "How much did Halvorsen agree to pay for Lumen Vision Systems?",
    "How many weeks of paid parental leave do primary caregivers get?",
    "What is the maximum reach of the HR-200?",
    "When was HaloOS 4.2 released?",
    "What was Halvorsen Robotics' revenue in the third quarter of 2022?",
    "Who was appointed Chief Technology Officer of Halvorsen Robotics in 2024?",
    "What is the warranty period of the Kestrel drone?",
]
CONTEXTS = [1, 1, 1, 1, 0, 0, 0, 1]  # reference contexts per test, as the tools wrote them


@pytest.mark.parametrize(
    ("name", "fmt", "lines"),
    [
        ("ragas_testset.jsonl", "ragas", [1, 2, 3, 4, 5, 6, 7, 8]),
        ("ragas_testset.csv", "ragas", [2, 3, 4, 5, 6, 7, 8, 9]),
        ("deepeval_goldens.json", "deepeval", [2, 22, 42, 62, 82, 100, 118, 136]),
        ("deepeval_goldens.csv", "deepeval", [2, 3, 6, 7, 8, 9, 10, 11]),
        ("promptfooconfig.yaml", "promptfoo", [7, 19, 34, 44, 54, 61, 67, 73]),
        ("phoenix_dataset.csv", "langsmith", [2, 3, 4, 5, 6, 7, 8, 9]),  # Phoenix's own CSV download
        ("phoenix_dataset.jsonl", "langsmith", [1, 2, 3, 4, 5, 6, 7, 8]),  # its client's examples
    ],
)
def test_files_written_by_the_tools_read_as_their_tests(name: str, fmt: str, lines: list[int]) -> None:
    rows, problems = read_rows(FIXTURES / name, fmt)
    assert problems == []
    assert [r.question for r in rows] == QUESTIONS
    assert [r.line for r in rows] == lines  # where each test starts in the file (a CSV cell may span lines)
    assert [len(r.contexts) for r in rows] == CONTEXTS
    assert rows[0].expected == "$44.8 million" and "$44.8 million" in rows[0].contexts[0]
    assert rows[1].contexts[0].startswith("<h2>The agreement</h2>")  # the team's own chunk, markup and all
    if fmt == "promptfoo":  # is-refusal is promptfoo's way of saying a test is a negative
        assert [r.refusal for r in rows] == [False] * 5 + [True, True, False]
        assert rows[5].expected == "not in documents"


def test_langsmith_and_plain_csv_exports_read_their_inputs_and_outputs(tmp_path: Path) -> None:
    examples = tmp_path / "langsmith.jsonl"
    examples.write_text(
        json.dumps({"id": "ex-1", "inputs": {"question": "What is the maximum reach of the HR-200?"},
                    "outputs": {"answer": "912 mm"}, "metadata": {"contexts": ["The HR-200 has a reach of 912 mm."]}})
        + "\n" + json.dumps({"inputs": {"query": "Who is the CFO?"}, "outputs": {"output": "not in documents"}}) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    rows, problems = read_rows(examples, "langsmith")
    assert problems == []
    assert [(r.question, r.expected, r.contexts, r.ident) for r in rows] == [
        ("What is the maximum reach of the HR-200?", "912 mm", ["The HR-200 has a reach of 912 mm."], "ex-1"),
        ("Who is the CFO?", "not in documents", [], None),
    ]
    sheet = tmp_path / "golden.csv"
    sheet.write_text('question,expected,context\n"How long is CCTV kept?",31 days,"[""Kept 31 days.""]"\n', "utf-8")
    (row,), problems = read_rows(sheet, "csv")
    assert (row.question, row.expected, row.contexts, row.line, problems) == (
        "How long is CCTV kept?", "31 days", ["Kept 31 days."], 2, [])  # fmt: skip


def test_rows_that_cannot_be_read_are_named_with_line_and_field(tmp_path: Path) -> None:
    sheet = tmp_path / "t.csv"
    sheet.write_text("question,expected_answer\nWhat is X?,4\n,5\nWhat is Z?,\n", encoding="utf-8")
    rows, problems = read_rows(sheet, "csv")
    assert [r.question for r in rows] == ["What is X?"]
    assert [(p.line, p.field) for p in problems] == [(3, "user_input"), (4, "reference")]
    assert "this test is not imported" in problems[0].message
    lines = tmp_path / "t.jsonl"
    lines.write_text('{"user_input": 3, "reference": "x"}\n["a"]\n{"user_input": "q?", "reference": "a", '
                     '"reference_contexts": 7}\n', encoding="utf-8")  # fmt: skip
    rows, problems = read_rows(lines, "ragas")
    assert rows == [] and [(p.line, p.field) for p in problems] == [
        (1, "user_input"),
        (2, None),
        (3, "reference_contexts"),
    ]
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text("prompts: ['{{q}}']\ntests:\n  - vars: [1]\n  - description: x\n    vars: {q: hi}\n", "utf-8")
    rows, problems = read_rows(config, "promptfoo")
    assert [(p.line, p.field) for p in problems] == [(3, "vars"), (4, "reference")]
    (tmp_path / "bad.yaml").write_text("tests: [\n", encoding="utf-8")
    assert "not YAML" in read_rows(tmp_path / "bad.yaml", "promptfoo")[1][0].message
    (tmp_path / "latin1.csv").write_bytes("question,expected\nQuelle ann\xe9e?,2023\n".encode("latin-1"))
    with pytest.raises(GoldenSetError, match=r"latin1.csv:2.*not UTF-8"):
        read_rows(tmp_path / "latin1.csv", "csv")
