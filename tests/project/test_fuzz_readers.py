"""Fuzzed readers of user input: valid inputs generated and mutated (wrong types, fields dropped or unknown, bytes
that are not UTF-8, truncation, nesting), and for each reader one property: it returns a result or raises the
project's own error naming the file (and the line or field), never another exception. Briefly in `make test`; longer
with `make fuzz` (RAGPIPE_FUZZ_EXAMPLES, the examples per property). A crash found becomes an example below."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from conftest import EXAMPLES
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ragpipe.core import InputError, RagpipeError
from ragpipe.golden import load_golden
from ragpipe.monitor.traces import TraceProblem, parse_trace
from ragpipe.rag.subject import SubjectError, parse_reply
from ragpipe.settings import SubjectSettings, load_settings
from ragpipe.verdicts.scoring import load_answers

EXAMPLES_PER_PROPERTY = int(os.environ.get("RAGPIPE_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES_PER_PROPERTY,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=True), st.text(max_size=40)
)
JSON_VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)  # fmt: skip
# TOML has no null and no NaN-free guarantee: its values are these
TOML_VALUES = st.recursive(
    st.one_of(st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False), st.text(max_size=40)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(min_size=1, max_size=10), inner, max_size=3),
    max_leaves=8,
)


def _mutated(obj: dict[str, Any], data: st.DataObject, values: st.SearchStrategy[Any]) -> dict[str, Any]:
    """The object with a few of its fields dropped, retyped, or unknown ones added."""
    out = dict(obj)
    for _ in range(data.draw(st.integers(0, 3))):
        action = data.draw(st.sampled_from(["drop", "retype", "add"]))
        keys = sorted(out)
        if action == "drop" and keys:
            out.pop(data.draw(st.sampled_from(keys)))
        elif action == "retype" and keys:
            out[data.draw(st.sampled_from(keys))] = data.draw(values)
        else:
            out[data.draw(st.text(min_size=1, max_size=12))] = data.draw(values)
    return out


def _bytes_mutated(raw: bytes, data: st.DataObject) -> bytes:
    """The file's bytes cut short, or with bytes that are not UTF-8 spliced in."""
    action = data.draw(st.sampled_from(["keep", "truncate", "splice"]))
    if action == "truncate" and raw:
        return raw[: data.draw(st.integers(0, len(raw) - 1))]
    if action == "splice":
        at = data.draw(st.integers(0, len(raw)))
        return raw[:at] + data.draw(st.sampled_from([b"\xff\xfe", b"\xc3", b"\x00", b"\xed\xa0\x80"])) + raw[at:]
    return raw


_SCRATCH = tempfile.TemporaryDirectory(prefix="ragpipe-fuzz-")  # one per process, removed at exit


def _scratch() -> Path:
    """The folder each example writes its file into (the next example overwrites it)."""
    return Path(_SCRATCH.name)


# ---------------------------------------------------------------- ragpipe.toml


BASE_SETTINGS: dict[str, Any] = {
    "warehouse": {"dir": "warehouse"},
    "corpus": {"dir": "corpus", "exclude": ["README.md"]},
    "chunker": {"strategy": "by_title", "max_characters": 800, "new_after_n_chars": 600},
    "embedder": {"name": "minilm", "batch_size": 64},
    "golden": {"path": "golden.jsonl"},
    "retriever": {"mode": "hybrid", "k": 5},
    "answerer": {"kind": "extractive", "min_support": 0.5},
    "subject": {"kind": "pipeline"},
    "gate": {"block": ["fail"]},
    "monitor": {"window_days": 7, "min_traces": 30},
}


@FUZZ
@given(data=st.data())
def test_a_settings_file_loads_or_names_itself_in_a_settings_error(data: st.DataObject) -> None:
    sections = {name: _mutated(section, data, TOML_VALUES) for name, section in BASE_SETTINGS.items()}
    if data.draw(st.booleans()):
        sections[data.draw(st.text(min_size=1, max_size=10))] = {"x": data.draw(TOML_VALUES)}
    path = _scratch() / "ragpipe.toml"
    path.write_bytes(_bytes_mutated(tomli_w.dumps(sections).encode(), data))
    try:
        load_settings(path)
    except InputError as exc:
        assert str(path.resolve()) in str(exc) or str(path) in str(exc), str(exc)


# ---------------------------------------------------------------- golden files and answers files


GOLDEN_LINES = [json.loads(x) for x in (EXAMPLES / "golden.jsonl").read_text(encoding="utf-8").splitlines() if x]


@FUZZ
@given(data=st.data())
@example(data=None)  # filled in below: a line that is not UTF-8 (found by this test)
def test_a_golden_file_loads_or_names_file_and_line_in_a_golden_set_error(data: st.DataObject | None) -> None:
    if data is None:
        raw = (json.dumps(GOLDEN_LINES[0]) + "\n").encode() + b'{"question_id": "x\xff"}\n'
    else:
        lines = [_mutated(t, data, JSON_VALUES) for t in data.draw(st.lists(st.sampled_from(GOLDEN_LINES), max_size=6))]
        as_array = data.draw(st.booleans())
        text = json.dumps(lines) if as_array else "\n".join(json.dumps(x) for x in lines)
        raw = _bytes_mutated(text.encode(), data)
    path = _scratch() / "golden.jsonl"
    path.write_bytes(raw)
    try:
        load_golden(path)
    except InputError as exc:
        assert str(path) in str(exc), str(exc)


IMPORTS = EXAMPLES.parent / "tests" / "fixtures" / "imports"


@FUZZ
@given(data=st.data())
def test_another_tools_golden_set_reads_or_names_file_and_line(data: st.DataObject) -> None:
    from ragpipe.golden import read_rows

    name, fmt = data.draw(st.sampled_from([("ragas_testset.jsonl", "ragas"), ("deepeval_goldens.csv", "deepeval"),
                                           ("promptfooconfig.yaml", "promptfoo"), ("ragas_testset.csv", "csv")]))  # fmt: skip
    raw = (IMPORTS / name).read_bytes()
    if name.endswith(".jsonl"):
        lines = [_mutated(json.loads(x), data, JSON_VALUES) for x in raw.decode().splitlines()[:3]]
        raw = "\n".join(json.dumps(x) for x in lines).encode()
    path = _scratch() / name
    path.write_bytes(_bytes_mutated(raw, data))
    try:
        rows, problems = read_rows(path, fmt)
    except InputError as exc:
        assert str(path) in str(exc), str(exc)
        return
    assert all(p.file == str(path) and p.line >= 1 for p in problems)
    assert all(isinstance(r.question, str) and all(isinstance(c, str) for c in r.contexts) for r in rows)


ANSWER = {"question_id": GOLDEN_LINES[0]["question_id"], "answer": "not in documents", "retrieved_ids": ["a"]}


@FUZZ
@given(data=st.data())
def test_an_answers_file_loads_or_names_file_and_line(data: st.DataObject) -> None:
    golden = load_golden(EXAMPLES / "golden.jsonl")
    lines = [_mutated(ANSWER, data, JSON_VALUES) for _ in range(data.draw(st.integers(0, 4)))]
    path = _scratch() / "answers.jsonl"
    path.write_bytes(_bytes_mutated("\n".join(json.dumps(x) for x in lines).encode(), data))
    try:
        load_answers(path, golden)
    except InputError as exc:
        assert str(path) in str(exc), str(exc)


# ---------------------------------------------------------------- production traces and the app's replies


TRACE = {
    "time": "2026-11-08T10:00:00Z",
    "question": "What was Q3 revenue?",
    "answer": "Not in the documents.",
    "contexts": [{"text": "Revenue was $4M.", "source": "a.md"}],
    "app_version": "1",
    "latency_ms": 120,
}


@FUZZ
@given(data=st.data())
@example(data=None)  # found by this test: epoch seconds past year 9999, NaN, and a time before year 1 in UTC
def test_a_trace_line_is_a_trace_or_a_named_problem(data: st.DataObject | None) -> None:
    if data is None:
        for time in (253402300800000.0, float("nan"), "0001-01-01T00:00:00+01:00"):
            with pytest.raises(TraceProblem, match="'time'"):
                parse_trace(json.dumps({**TRACE, "time": time}))
        return
    line = json.dumps(_mutated(TRACE, data, JSON_VALUES))
    if data.draw(st.booleans()):
        line = line[: data.draw(st.integers(0, len(line)))]
    try:
        parse_trace(line)
    except TraceProblem as exc:
        assert str(exc)


OTLP = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.version", "value": {"stringValue": "2"}}]},
    "scopeSpans": [{"scope": {"name": "openinference"}, "spans": [
        {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "parentSpanId": "eee19b7ec3c1b173",
         "name": "retriever", "startTimeUnixNano": "1764576000000000000", "endTimeUnixNano": "1764576000100000000",
         "attributes": [{"key": "retrieval.documents.0.document.content", "value": {"stringValue": "Revenue was $4M."}}]},
        {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b173", "name": "chain",
         "startTimeUnixNano": "1764576000000000000", "endTimeUnixNano": "1764576000300000000",
         "attributes": [{"key": "input.value", "value": {"stringValue": "What was Q3 revenue?"}},
                        {"key": "output.value", "value": {"stringValue": "{\"answer\": \"$4M\"}"}},
                        {"key": "llm.token_count.total", "value": {"intValue": "42"}}]}]}]}]}  # fmt: skip


def _deep_mutated(value: Any, data: st.DataObject, depth: int = 0) -> Any:
    """The value with one place somewhere inside it dropped, retyped, or grown an unknown key."""
    inside = [k for k, v in (value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list)
              else []) if isinstance(v, (dict, list))]  # fmt: skip
    if inside and depth < 12 and data.draw(st.integers(0, 3)) > 0:
        at = data.draw(st.sampled_from(inside))
        out = dict(value) if isinstance(value, dict) else list(value)
        out[at] = _deep_mutated(value[at], data, depth + 1)
        return out
    return _mutated(value, data, JSON_VALUES) if isinstance(value, dict) else data.draw(JSON_VALUES)


@FUZZ
@given(data=st.data())
def test_an_otlp_line_gives_traces_or_a_named_problem(data: st.DataObject) -> None:
    from ragpipe.monitor.otlp import Pending, as_trace, spans_of, take
    from ragpipe.monitor.traces import trace_from

    obj = _deep_mutated(OTLP, data)
    try:
        for _line, spans in take(spans_of(obj), 1, Pending()):
            assembled = as_trace(spans)
            if assembled is not None:
                trace_from(assembled)
    except TraceProblem as exc:
        assert str(exc)


REPLY = {"answer": "It was $4M.", "contexts": [{"text": "Revenue was $4M.", "id": "c1", "source": "a.md"}],
         "metadata": {"embedder": "minilm", "version": "1"}}  # fmt: skip


@FUZZ
@given(data=st.data())
def test_a_reply_of_the_app_is_read_or_refused_with_its_path(data: st.DataObject) -> None:
    reply = data.draw(st.one_of(JSON_VALUES, st.just(REPLY).map(lambda r: _mutated(r, data, JSON_VALUES))))
    try:
        parse_reply(reply, SubjectSettings(kind="http", url="http://127.0.0.1:1/ask"), "POST /ask")
    except SubjectError as exc:
        assert "POST /ask" in str(exc)


@pytest.mark.parametrize(
    "corpus",
    [{"dir": "corpus", "exclude": False}, {"dir": "corpus", "exclude": [1]}, {"dir": 3}],  # found by the fuzz tier
)
def test_corpus_settings_of_the_wrong_type_are_named(corpus: dict[str, Any]) -> None:
    path = _scratch() / "ragpipe.toml"
    path.write_text(tomli_w.dumps({**BASE_SETTINGS, "corpus": corpus}))
    with pytest.raises(InputError, match=r"\[corpus\]\.(exclude|dir) must be"):
        load_settings(path)


def test_a_settings_file_that_is_not_utf8_names_the_line_and_byte() -> None:
    path = _scratch() / "ragpipe.toml"  # found by the fuzz tier: a UnicodeDecodeError before
    path.write_bytes(b'[warehouse]\ndir = "w"\n# caf\xe9\n')
    with pytest.raises(InputError, match=r"ragpipe.toml: line 3: byte 27 .* is not UTF-8; save the settings file"):
        load_settings(path)


def test_every_reader_error_is_the_projects_own() -> None:
    """What the properties above accept as a clean failure: the project's errors, worded for the user."""
    assert issubclass(TraceProblem, RagpipeError) and issubclass(SubjectError, RagpipeError)
    with pytest.raises(InputError):
        load_settings(_scratch() / "missing.toml")
