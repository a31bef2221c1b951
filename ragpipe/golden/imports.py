"""Golden sets kept in other tools, read as rows of (question, expected answer, reference contexts), each with the line
it came from: a Ragas testset (to_jsonl, to_csv: `user_input`, `reference`, `reference_contexts`), a DeepEval dataset
of goldens (save_as json, jsonl, csv: `input`, `expected_output`, `context`), a promptfoo config (`tests`: `vars` and
`assert`), a LangSmith or Phoenix dataset export (`inputs` and `outputs` objects, or their columns), or a plain CSV.

A row that cannot be read is a GoldenProblem naming file, line and field, never dropped in silence.
"""

from __future__ import annotations

import ast
import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ragpipe.golden.file import GoldenProblem, GoldenSetError, json_objects, user_text

FORMATS = ("ragas", "deepeval", "promptfoo", "langsmith", "csv")
# The names each field has in the tools' files, most specific first.
QUESTION = ("user_input", "input", "question", "query", "prompt", "inputs.question", "inputs.query", "inputs.input")
EXPECTED = ("reference", "expected_output", "expected_answer", "expected", "ground_truth", "answer", "output",
            "outputs.answer", "outputs.output", "outputs.expected", "outputs.reference", "outputs.ground_truth")  # fmt: skip
CONTEXTS = ("reference_contexts", "context", "contexts", "ground_truth_contexts", "evidence", "documents",
            "inputs.context", "inputs.contexts", "outputs.context", "outputs.contexts", "metadata.contexts",
            "metadata.context")  # fmt: skip
IDS = ("question_id", "id", "example_id")
DEEPEVAL_DELIMITER = "|"  # DeepEval joins a golden's context with it in CSV
# promptfoo assertions whose value is the expected answer, and those that expect a refusal
PROMPTFOO_EXPECT = ("equals", "contains", "icontains", "contains-any", "icontains-any", "similar", "factuality",
                    "llm-rubric", "model-graded-closedqa")  # fmt: skip
PROMPTFOO_REFUSE = ("is-refusal",)


@dataclass
class Row:
    """One test of the other tool, as read."""

    line: int
    question: str
    expected: str
    contexts: list[str] = field(default_factory=list)
    refusal: bool = False  # the tool itself says a refusal is expected (promptfoo's is-refusal)
    ident: str | None = None


def _flat(obj: dict[str, Any]) -> dict[str, Any]:
    """inputs/outputs/metadata objects (LangSmith, Phoenix), or their JSON in a CSV cell, as dotted keys besides; a
    column already dotted in the singular (Phoenix's CSV: input.question, output.answer) as the plural."""
    out = dict(obj)
    for key, value in obj.items():
        head, dot, rest = key.partition(".") if isinstance(key, str) else ("", "", "")
        if dot and head in ("input", "output"):
            out.setdefault(f"{head}s.{rest}", value)
    for key in ("inputs", "outputs", "metadata", "input", "output"):
        value = obj.get(key)
        if isinstance(value, str) and value.strip().startswith("{"):
            try:
                value = json.loads(value)
            except ValueError:
                continue
        if isinstance(value, dict):
            plural = {"input": "inputs", "output": "outputs"}.get(key, key)
            out.update({f"{plural}.{k}": v for k, v in value.items()})
            if key in ("input", "output"):
                out.pop(key)  # {"input": {...}} is not the question itself
    return out


def _first(obj: dict[str, Any], names: tuple[str, ...]) -> tuple[str | None, Any]:
    for name in names:
        if obj.get(name) not in (None, ""):
            return name, obj[name]
    return None, None


def _contexts(value: Any, delimiter: str | None) -> list[str]:
    """A list of texts; in a CSV cell: a JSON or Python list literal (Ragas' to_csv), else one text (or several split
    by the tool's delimiter)."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            for parse in (json.loads, ast.literal_eval):
                try:
                    value = parse(text)
                    break
                except (ValueError, SyntaxError, MemoryError, RecursionError):
                    continue
        if isinstance(value, str):
            return [p for p in (value.split(delimiter) if delimiter else [value]) if p.strip()]
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        raise ValueError(f"must be a text or a list of texts, got {type(value).__name__}")
    out: list[str] = []
    for item in value:
        one = item.get("text", item.get("page_content", item.get("content"))) if isinstance(item, dict) else item
        if not isinstance(one, str):
            raise ValueError("must be a list of texts (or of objects with a 'text')")
        out.append(one)
    return out


def _row(obj: Any, line: int, name: str, problems: list[GoldenProblem], delimiter: str | None = None) -> Row | None:
    if not isinstance(obj, dict):
        problems.append(GoldenProblem(name, line, None, None, f"a test is an object, got {type(obj).__name__}"))
        return None
    obj = _flat(obj)
    _, ident = _first(obj, IDS)
    who = None if ident is None else str(ident)
    qkey, question = _first(obj, QUESTION)
    ekey, expected = _first(obj, EXPECTED)
    ckey, contexts = _first(obj, CONTEXTS)
    for key, value, names in ((qkey, question, QUESTION), (ekey, expected, EXPECTED)):
        if value is None:
            message = f"no {names[0]!r} (also read as: {', '.join(names[1:6])}, ...): this test is not imported"
            problems.append(GoldenProblem(name, line, who, names[0], message))
            return None
        if not isinstance(value, str):
            problems.append(GoldenProblem(name, line, who, key, f"must be a text, got {type(value).__name__}"))
            return None
    try:
        texts = _contexts(contexts, delimiter)
    except ValueError as exc:
        problems.append(GoldenProblem(name, line, who, ckey, str(exc)))
        return None
    return Row(line, question.strip(), expected.strip(), texts, ident=who)


def _json_rows(text: str, name: str, problems: list[GoldenProblem]) -> list[Row]:
    found = json_objects(text, name, problems)
    if len(found) == 1 and isinstance(found[0][1], dict):  # {"goldens": [...]}, {"examples": [...]}: the list inside
        wrapped = [v for v in found[0][1].values() if isinstance(v, list) and v and isinstance(v[0], dict)]
        if len(wrapped) == 1 and not any(k in found[0][1] for k in QUESTION):
            return [r for obj in wrapped[0] if (r := _row(obj, found[0][0], name, problems))]
    return [r for line, obj in found if (r := _row(obj, line, name, problems))]


def _csv_rows(text: str, name: str, problems: list[GoldenProblem], delimiter: str | None) -> list[Row]:
    reader = csv.DictReader(io.StringIO(text))
    out: list[Row] = []
    try:
        if not reader.fieldnames:
            return out
        line = reader.line_num + 1  # where the next record starts (a quoted cell may span lines)
        for record in reader:
            if any((v or "").strip() for v in record.values() if isinstance(v, str)):
                row = _row({k: v for k, v in record.items() if k is not None}, line, name, problems, delimiter)
                if row:
                    out.append(row)
            line = reader.line_num + 1
    except csv.Error as exc:
        problems.append(GoldenProblem(name, reader.line_num, None, None, f"not CSV: {exc}"))
    return out


def _promptfoo_rows(text: str, name: str, path: Path, problems: list[GoldenProblem]) -> list[Row]:
    """The `tests` of a promptfoo config (YAML or JSON), each with the line it starts on; `tests: file://x.yaml`
    read from beside the config."""
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        config = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problems.append(GoldenProblem(name, (mark.line + 1) if mark else 1, None, None, f"not YAML: {exc}"))
        return []
    tests = config.get("tests") if isinstance(config, dict) else config
    if isinstance(tests, str) and tests.startswith("file://"):
        inner = path.parent / tests.removeprefix("file://")
        return _promptfoo_rows(user_text(inner, "promptfoo tests file"), str(inner), inner, problems)
    if not isinstance(tests, list):
        problems.append(GoldenProblem(name, 1, None, "tests", "a promptfoo config has a list of 'tests'"))
        return []
    lines = _item_lines(node, len(tests))
    out = []
    for test, line in zip(tests, lines):
        variables = test.get("vars") if isinstance(test, dict) else None
        if not isinstance(variables, dict):
            problems.append(GoldenProblem(name, line, None, "vars", "a promptfoo test is an object with 'vars'"))
            continue
        checks = test.get("assert")
        asserts = [a for a in checks if isinstance(a, dict)] if isinstance(checks, list) else []
        expected = next((a.get("value") for a in asserts if a.get("type") in PROMPTFOO_EXPECT), None)
        if isinstance(expected, list):  # contains-any: the first is the answer
            expected = expected[0] if expected else None
        refusal = any(a.get("type") in PROMPTFOO_REFUSE for a in asserts)
        obj = {**variables, "id": test.get("description")}
        free = [k for k, v in variables.items() if isinstance(v, str) and k not in CONTEXTS + EXPECTED]
        if not any(k in obj for k in QUESTION) and len(free) == 1:
            obj["question"] = obj[free[0]]  # the prompt's one variable is the question, whatever its name
        obj["expected_answer"] = expected if expected is not None else ("not in documents" if refusal else None)
        obj.pop("answer", None)  # a var the prompt echoes (a fixed answer) is not what is expected of the app
        row = _row(obj, line, name, problems)
        if row:
            row.refusal = refusal
            out.append(row)
    return out


def _item_lines(node: Any, n: int) -> list[int]:
    """The line each item of the config's `tests` list starts on (1 where the YAML tree does not say)."""
    import yaml

    seq = node
    if isinstance(node, yaml.MappingNode):
        seq = next((v for k, v in node.value if getattr(k, "value", None) == "tests"), None)
    if isinstance(seq, yaml.SequenceNode):
        return [item.start_mark.line + 1 for item in seq.value]
    return [1] * n


def read_rows(path: Path, fmt: str) -> tuple[list[Row], list[GoldenProblem]]:
    """Every test of another tool's file; the problems name the rows that could not be read."""
    if fmt not in FORMATS:
        raise GoldenSetError([GoldenProblem(str(path), 1, None, None, f"--from must be one of {', '.join(FORMATS)}")])
    name = str(path)
    text = user_text(path, f"{fmt} file")
    problems: list[GoldenProblem] = []
    suffix = path.suffix.lower()
    readers: dict[str, Callable[[], list[Row]]] = {
        "csv": lambda: _csv_rows(text, name, problems, DEEPEVAL_DELIMITER if fmt == "deepeval" else None),
        "json": lambda: _json_rows(text, name, problems),
    }
    if fmt == "promptfoo":
        rows = _promptfoo_rows(text, name, path, problems)
    elif suffix in (".csv", ".tsv") or fmt == "csv" and suffix not in (".json", ".jsonl"):
        rows = readers["csv"]()
    else:
        rows = readers["json"]()
    if not rows and not problems:
        problems.append(GoldenProblem(name, 1, None, None, f"no tests in this {fmt} file"))
    return rows, problems
