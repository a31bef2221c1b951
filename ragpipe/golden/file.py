"""The golden set file: load JSON array or JSON Lines, validate with file:line:field errors, rewrite fields in place.

Rewrites touch only the values that change, so `restamp --write` and `revalidate --write` give a reviewable diff
that keeps the file's order, indentation and every other field as the team wrote it.
"""

from __future__ import annotations

import bisect
import datetime as dt
import functools
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ragpipe.core import InputError, NotUtf8Error, read_user_text
from ragpipe.reading import is_refusal

REQUIRED = ("question_id", "question", "expected_answer")
KINDS = ("negative", "positive")
ANCHOR_FIELDS = {
    "negative": ("trap_chunk_id", "trap_quote", "trap_source"),
    "positive": ("evidence_chunk_id", "evidence_quote", "evidence_source"),
}


@dataclass(frozen=True)
class GoldenProblem:
    file: str
    line: int
    question_id: str | None
    field: str | None
    message: str
    drift: bool = False  # the corpus moved under a sound test (document gone, quote reworded): that test did not run

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}"
        who = f" [{self.question_id}]" if self.question_id else ""
        fld = f" field '{self.field}':" if self.field else ""
        return f"{where}{who}{fld} {self.message}"


class GoldenSetError(InputError, ValueError):
    """A golden set with problems; str() lists every one with file, line and field."""

    def __init__(self, problems: list[GoldenProblem]):
        self.problems = problems
        super().__init__(f"{len(problems)} problem(s) in the golden set:\n" + "\n".join(f"  {p}" for p in problems))


def user_text(path: Path, what: str) -> str:
    """A golden set (or answers) file as text; one that is not UTF-8 is a GoldenSetError naming file and line."""
    try:
        return read_user_text(path, what)
    except NotUtf8Error as exc:
        raise GoldenSetError([GoldenProblem(exc.path, exc.line, None, None, exc.detail)]) from None


@dataclass
class GoldenTest:
    question_id: str
    question: str
    expected_answer: str
    kind: str
    line: int
    anchor_ids: list[str]  # trap chunk id(s) for negatives, evidence chunk id(s) for positives, as in the file
    quote: str | None
    source: str | None
    trap_value: str | None
    embedder_tag: str | None
    last_validated: str | None
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def anchor_field(self) -> str:
        return ANCHOR_FIELDS[self.kind][0]


@dataclass
class GoldenFile:
    path: Path
    text: str
    format: str  # "jsonl" or "json"
    tests: list[GoldenTest]
    spans: dict[str, tuple[int, int]]  # question_id -> (start, end) of its object in `text`

    @functools.cached_property
    def sha256(self) -> str:  # cached: the golden set's rows each carry it
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _lines_of(text: str) -> Callable[[int], int]:
    """_line_of for many positions of one text: the newlines are found once (10,000 tests: 22 s -> milliseconds)."""
    newlines = [m.start() for m in re.finditer("\n", text)]
    return lambda pos: bisect.bisect_left(newlines, pos) + 1


def _objects(text: str, name: str, problems: list[GoldenProblem]) -> tuple[str, list[tuple[int, int, Any]]]:
    """(format, [(start, end, value)]) for every top-level object; malformed parts become problems."""
    stripped = text.lstrip()
    decoder = json.JSONDecoder()
    out: list[tuple[int, int, Any]] = []
    if stripped.startswith("["):
        pos = text.index("[") + 1
        while True:
            m = re.compile(r"[\s,]*").match(text, pos)
            pos = m.end() if m else pos
            if pos >= len(text):
                problems.append(
                    GoldenProblem(
                        name,
                        _line_of(text, len(text)),
                        None,
                        None,
                        "malformed JSON: the array is never closed with ']'; fix the syntax",
                    )
                )
                break
            if text[pos] == "]":
                rest = len(text[pos + 1 :]) - len(text[pos + 1 :].lstrip())
                if pos + 1 + rest < len(text):
                    problems.append(
                        GoldenProblem(
                            name,
                            _line_of(text, pos + 1 + rest),
                            None,
                            None,
                            "malformed JSON: content after the closing ']'; fix the syntax",
                        )
                    )
                break
            try:
                value, end = decoder.raw_decode(text, pos)
            except json.JSONDecodeError as exc:
                problems.append(
                    GoldenProblem(
                        name, _line_of(text, exc.pos), None, None, f"malformed JSON: {exc.msg}; fix the syntax"
                    )
                )
                return "json", out
            out.append((pos, end, value))
            pos = end
        return "json", out
    pos = 0
    # Lines end at "\n" only: str.splitlines() would also cut at U+2028, U+0085, ... which JSON allows inside strings.
    for raw_line in re.split(r"(?<=\n)", text):
        body = raw_line.strip()
        if body and not body.startswith("//"):
            start = pos + raw_line.index(body[0])
            try:
                value = json.loads(body)
                out.append((start, start + len(body), value))
            except json.JSONDecodeError as exc:
                problems.append(
                    GoldenProblem(
                        name,
                        _line_of(text, pos),
                        None,
                        None,
                        f"malformed JSON at column {exc.colno}: {exc.msg}; fix the syntax",
                    )
                )
        pos += len(raw_line)
    return "jsonl", out


def json_objects(text: str, name: str, problems: list[GoldenProblem]) -> list[tuple[int, Any]]:
    """(line, value) of every object in a JSON Lines file or JSON array; malformed parts become problems."""
    line_of = _lines_of(text)
    return [(line_of(start), value) for start, _, value in _objects(text, name, problems)[1]]


def _ids(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    return [str(value)]


def _test_of(obj: Any, line: int, name: str, seen: dict[str, int], problems: list[GoldenProblem]) -> GoldenTest | None:
    """One object of the file as a test; its problems appended (then None). `seen`: question_id -> first line."""
    if not isinstance(obj, dict):
        problems.append(GoldenProblem(name, line, None, None, f"expected a JSON object, got {type(obj).__name__}"))
        return None
    qid = obj.get("question_id")
    qid_s = str(qid) if qid not in (None, "") else None
    before = len(problems)
    for f in REQUIRED:
        if obj.get(f) in (None, ""):
            problems.append(
                GoldenProblem(
                    name, line, qid_s, f, "missing; every test needs question_id, question and expected_answer"
                )
            )
    if qid_s is not None:
        if qid_s in seen:
            problems.append(
                GoldenProblem(name, line, qid_s, "question_id", f"duplicate: also used on line {seen[qid_s]}")
            )
        else:
            seen[qid_s] = line
    kind = obj.get("kind")
    if kind is None:
        kind = "negative" if is_refusal(str(obj.get("expected_answer") or "")) else "positive"
    elif kind not in KINDS:
        problems.append(GoldenProblem(name, line, qid_s, "kind", f"must be 'negative' or 'positive', got {kind!r}"))
        kind = "positive"
    lv = obj.get("last_validated")
    if lv not in (None, ""):
        try:
            dt.date.fromisoformat(str(lv))
        except ValueError:
            problems.append(GoldenProblem(name, line, qid_s, "last_validated", f"not a date: {lv!r}; use YYYY-MM-DD"))
    ids_raw, quote = _anchor(obj, kind, line, name, qid_s, problems)
    if len(problems) > before or qid_s is None:
        return None
    return GoldenTest(
        question_id=qid_s,
        question=str(obj["question"]),
        expected_answer=str(obj["expected_answer"]),
        kind=kind,
        line=line,
        anchor_ids=_ids(ids_raw) if isinstance(ids_raw, (str, list)) else [],
        quote=quote or None,
        source=obj.get(ANCHOR_FIELDS[kind][2]) or None,
        trap_value=obj.get("trap_value") if kind == "negative" else None,
        embedder_tag=obj.get("embedder_tag") or None,
        last_validated=str(lv) if lv else None,
        raw=obj,
    )


def _anchor(
    obj: dict[str, Any], kind: str, line: int, name: str, qid_s: str | None, problems: list[GoldenProblem]
) -> tuple[Any, Any]:
    """(chunk ids as written, quote or None) of the test's trap or evidence; their problems appended."""
    id_field, quote_field, source_field = ANCHOR_FIELDS[kind]
    ids_raw = obj.get(id_field)
    if ids_raw is not None and not isinstance(ids_raw, (str, list)):
        problems.append(GoldenProblem(name, line, qid_s, id_field, "must be a chunk id string or a list of them"))
    quote = obj.get(quote_field)
    if quote is not None and not isinstance(quote, str):
        problems.append(
            GoldenProblem(name, line, qid_s, quote_field, "must be a string (verbatim text from the source document)")
        )
        quote = None
    if obj.get(source_field) is not None and not isinstance(obj.get(source_field), str):
        problems.append(
            GoldenProblem(name, line, qid_s, source_field, "must be a string (a document path in the corpus)")
        )
    if not _ids(ids_raw) and not quote:
        problems.append(
            GoldenProblem(
                name,
                line,
                qid_s,
                id_field,
                f"a {kind} test needs {id_field} or {quote_field} (the text that locates it)",
            )
        )
    if kind == "negative" and obj.get("trap_value") is not None and not isinstance(obj.get("trap_value"), str):
        problems.append(GoldenProblem(name, line, qid_s, "trap_value", "must be a string"))
    return ids_raw, quote


def load_golden(path: Path) -> GoldenFile:
    """Parse and validate the file's own content; raise GoldenSetError listing every problem at once."""
    path = Path(path)
    name = str(path)
    if not path.is_file():
        raise GoldenSetError(
            [GoldenProblem(name, 0, None, None, "file not found; set [golden].path in the settings file")]
        )
    text = user_text(path, "golden set file")
    problems: list[GoldenProblem] = []
    fmt, objects = _objects(text, name, problems)
    line_of = _lines_of(text)
    tests: list[GoldenTest] = []
    spans: dict[str, tuple[int, int]] = {}
    seen: dict[str, int] = {}
    for start, end, obj in objects:
        test = _test_of(obj, line_of(start), name, seen, problems)
        if test is not None:
            spans[test.question_id] = (start, end)
            tests.append(test)
    if problems:
        raise GoldenSetError(problems)
    return GoldenFile(path=path, text=text, format=fmt, tests=tests, spans=spans)


def check_quotes(golden: GoldenFile, documents: dict[str, str]) -> list[GoldenProblem]:
    """Every quote must occur in its source document (or anywhere when no source is named), as people copy quotes:
    markup, entities, curly quotes and line breaks aside (ragpipe.golden.quotes). A quote that is not found, or whose
    source is gone, is corpus drift (`drift=True`): the test did not run, the rest of the golden set is sound."""
    from ragpipe.golden.quotes import plain_form, quote_form, quote_forms

    normalized: dict[str, str] = {}

    def found(quote: str, doc_id: str) -> bool:
        if doc_id not in normalized:
            normalized[doc_id] = plain_form(documents[doc_id])
        return any(f in normalized[doc_id] for f in quote_forms(quote))

    problems = []
    for t in golden.tests:
        if not t.quote:
            continue
        quote_field, source_field = ANCHOR_FIELDS[t.kind][1], ANCHOR_FIELDS[t.kind][2]

        def problem(fld: str, message: str, drift: bool = True, t: GoldenTest = t) -> None:
            problems.append(GoldenProblem(str(golden.path), t.line, t.question_id, fld, message, drift))

        if t.source:
            if t.source not in documents:
                elsewhere = next((d for d in sorted(documents) if found(t.quote, d)), None)
                if elsewhere is None:
                    problem(source_field, f"document {t.source!r} is not in the corpus (deleted or renamed)")
                else:  # renamed: the test still runs on the quote's new document
                    problem(
                        source_field,
                        f"document {t.source!r} is not in the corpus; the quote is now in "
                        f"{elsewhere!r}: update {source_field}",
                    )
            elif not found(t.quote, t.source):
                problem(quote_field, f"quote no longer found in {t.source} (reworded, or copied with a typo)")
        elif not any(found(t.quote, d) for d in sorted(documents)):
            problem(quote_field, "quote not found anywhere in the corpus")
        if (
            t.kind == "negative"
            and t.trap_value
            and quote_form(t.trap_value).lower() not in quote_form(t.quote).lower()
        ):
            problem("trap_value", "does not occur in trap_quote", drift=False)
    return problems


def _json_value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def rewrite_fields(golden: GoldenFile, updates: dict[str, dict[str, Any]]) -> str:
    """Return the file text with `updates[question_id][field] = value` applied in place, nothing else touched."""
    text = golden.text
    pieces: list[str] = []
    pos = 0
    # One pass in file order, joining pieces once: linear in the file size whatever the number of updates.
    for qid, (start, end) in sorted(golden.spans.items(), key=lambda kv: kv[1][0]):
        fields = updates.get(qid)
        if not fields:
            continue
        obj_text = text[start:end]
        for fname, value in fields.items():
            obj_text = _set_field(obj_text, fname, value)
        pieces += [text[pos:start], obj_text]
        pos = end
    pieces.append(text[pos:])
    return "".join(pieces)


_VALUE = r'(?:null|true|false|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|"(?:[^"\\]|\\.)*"|\[[^\[\]]*\])'


def _set_field(obj_text: str, fname: str, value: Any) -> str:
    pattern = re.compile(r'("' + re.escape(fname) + r'"\s*:\s*)' + _VALUE)
    new = _json_value(value)
    if pattern.search(obj_text):
        return pattern.sub(lambda m: m.group(1) + new, obj_text, count=1)
    # Field absent: add it before the closing brace, in the object's own layout.
    close = obj_text.rfind("}")
    body = obj_text[:close].rstrip()
    tail = obj_text[len(body) :]
    indent = re.search(r"\n([ \t]*)[^\n]*$", body)
    sep = f",\n{indent.group(1)}" if indent else ", "
    return f"{body}{'' if body.endswith('{') else sep}{_json_value(fname)}: {new}{tail}"


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
