"""`ragpipe score`: answers produced elsewhere, judged with the same rule, through the real command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import EXAMPLES, ROOT

GOLDEN = {
    json.loads(line)["question_id"]: json.loads(line) for line in (EXAMPLES / "golden.jsonl").read_text().splitlines()
}


def score(tmp_path: Path, lines: list[dict], *args: str) -> tuple[int, str, str]:
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps(x) + "\n" for x in lines))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragpipe.cli",
            "--settings",
            str(ROOT / "ragpipe.toml"),
            "score",
            "--answers",
            str(answers),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, proc.stdout, proc.stderr


def test_score_judges_each_line_with_the_verdict_rule(tmp_path: Path) -> None:
    neg, pos = GOLDEN["neg_01"], GOLDEN["pos_01"]
    context = f"Some other passage.\n\n{' '.join(neg['trap_quote'].split()[:6])}\n   {' '.join(neg['trap_quote'].split()[6:])}"
    lines = [
        {
            "question_id": "neg_01",
            "answer": f"The reports don't cover 2022; they only give {neg['trap_value']} for 2023.",
            "retrieved_texts": [context],
        },
        {
            "question_id": "neg_02",
            "answer": f"Probably {GOLDEN['neg_02']['trap_value']}.",
            "retrieved_ids": [GOLDEN["neg_02"]["trap_chunk_id"]],
        },
        {"question_id": "neg_03", "answer": "I couldn't find that.", "retrieved_texts": ["nothing relevant here"]},
        {"question_id": "neg_04", "answer": "Not in the documents."},
        {
            "question_id": "pos_01",
            "answer": f"**{pos['expected_answer']}**",
            "retrieved_texts": [pos["evidence_quote"]],
        },
    ]
    code, out, err = score(tmp_path, lines, "--format", "json")
    assert code == 1, err  # the gate blocks on fail and did_not_run
    got = {r["question_id"]: r for r in json.loads(out)}
    assert len(got) == len(GOLDEN)
    assert (got["neg_01"]["verdict"], got["neg_01"]["matched_by"]) == ("pass", "refusal_citing_trap")
    assert got["neg_02"]["verdict"] == "fail" and got["neg_02"]["reason"].startswith("took the trap (hedged)")
    assert (
        got["neg_03"]["verdict"] == "did_not_run"
        and "quote not in any of the 1 retrieved texts" in got["neg_03"]["reason"]
    )
    assert got["neg_04"]["verdict"] == "did_not_run" and got["neg_04"]["reason"].startswith("no retrieval recorded")
    assert got["pos_01"]["verdict"] == "pass"
    assert got["pos_02"]["verdict"] == "did_not_run" and "no answer line" in got["pos_02"]["reason"]

    code, text, _ = score(tmp_path, lines)
    assert "neg_01" in text and "[refusal_citing_trap]" in text and f"{len(GOLDEN)} tests: 2 pass, 1 fail" in text


def test_a_bad_answers_file_lists_every_problem(tmp_path: Path) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        '{"question_id": "neg_01", "answer": "x", "retrieved_ids": ["a"]}\n{oops\n'
        '{"question_id": "nope", "answer": "x"}\n{"question_id": "neg_01", "answer": "y"}\n'
        '{"question_id": "neg_02", "answer": 3}\n{"question_id": "neg_03", "answer": "x", "retrieved_ids": "a"}\n'
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragpipe.cli",
            "--settings",
            str(ROOT / "ragpipe.toml"),
            "score",
            "--answers",
            str(answers),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    for where in (
        f"{answers}:2 malformed JSON",
        f"{answers}:3 [nope] field 'question_id'",
        f"{answers}:4 [neg_01] field 'question_id': duplicate",
        f"{answers}:5 [neg_02] field 'answer'",
        f"{answers}:6 [neg_03] field 'retrieved_ids'",
    ):
        assert where in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_score_with_a_golden_file_needs_no_settings_file_and_grounds_in_the_retrieved_texts(tmp_path: Path) -> None:
    """A one-off grader: no ragpipe.toml anywhere, the defaults apply; an answer that refuses and then answers from
    outside the retrieved texts fails, and the default gate blocks on it."""
    neg = GOLDEN["neg_01"]
    lines = [
        {"question_id": "neg_01", "answer": "The reports don't cover Q3 2022.", "retrieved_texts": [neg["trap_quote"]]},
        {
            "question_id": "neg_02",
            "answer": "Not in the documents. From what I remember, it was 1,204 units.",
            "retrieved_texts": [GOLDEN["neg_02"]["trap_quote"]],
        },
    ]
    (tmp_path / "answers.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragpipe.cli",
            "score",
            "--answers",
            "answers.jsonl",
            "--golden",
            str(EXAMPLES / "golden.jsonl"),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={k: v for k, v in __import__("os").environ.items() if k != "RAGPIPE_SETTINGS"},
    )
    assert proc.returncode == 1, proc.stderr
    got = {r["question_id"]: r for r in json.loads(proc.stdout)}
    assert got["neg_01"]["verdict"] == "pass"
    assert got["neg_02"]["verdict"] == "fail" and "outside the context" in got["neg_02"]["reason"]
