"""One production trace: a JSON object the app writes per answered question, read and checked field by field, with
the fields that must never be stored dropped (after the rates have read them)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from ragpipe.core import RagpipeError

# The names a field may have in a trace: ragpipe's own first, then the ones other tools write (Ragas' user_input,
# response and retrieved_contexts; OpenTelemetry-style timestamp), so an app's existing log needs no conversion.
ALIASES = {
    "time": ("time", "timestamp", "created_at"),
    "question": ("question", "user_input", "query"),
    "answer": ("answer", "response", "output"),
    "contexts": ("contexts", "retrieved_contexts"),
}
OPTIONAL = ("id", "app_version", "corrected", "corrected_answer", "latency_ms", "tokens")


class TraceProblem(RagpipeError, ValueError):
    """A line that is not a usable trace; the message names the field and what is wrong with it."""


@dataclass(frozen=True)
class Trace:
    trace_id: str  # the app's `id`, else a hash of the line: the same line in two files is one trace
    at: dt.datetime  # UTC, naive
    question: str
    answer: str
    contexts: list[str]
    sources: list[str | None]  # each context's source or id, where the app gave one
    app_version: str | None = None
    corrected: bool | None = None  # None: the app does not report corrections
    latency_ms: float | None = None
    tokens: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # every other field, as the app wrote it


def _pick(obj: dict[str, Any], name: str) -> tuple[str, Any]:
    for key in ALIASES[name]:
        if key in obj:
            return key, obj[key]
    raise TraceProblem(f"no '{name}' field (also read as: {', '.join(ALIASES[name][1:])})")


def _time(value: Any) -> dt.datetime:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            at = dt.datetime.fromtimestamp(value / 1000 if value > 1e11 else value, dt.timezone.utc)
        except (ValueError, OverflowError, OSError):  # NaN, or past year 9999
            raise TraceProblem(f"'time' as epoch seconds (or milliseconds) is out of range: {value!r}") from None
    elif isinstance(value, str):
        try:
            at = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise TraceProblem(f"'time' is not an ISO 8601 time or epoch seconds: {value!r}") from None
    else:
        raise TraceProblem(f"'time' must be an ISO 8601 string or epoch seconds, got {type(value).__name__}")
    if at.tzinfo is not None:
        try:
            at = at.astimezone(dt.timezone.utc).replace(tzinfo=None)
        except OverflowError:  # "0001-01-01T00:00:00+01:00" is before year 1 in UTC
            raise TraceProblem(f"'time' is out of range in UTC: {value!r}") from None
    return at


def _contexts(value: Any, key: str) -> tuple[list[str], list[str | None]]:
    if not isinstance(value, list):
        raise TraceProblem(f"'{key}' must be a list of texts (or of objects with a 'text'), got {type(value).__name__}")
    texts: list[str] = []
    sources: list[str | None] = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            texts.append(item)
            sources.append(None)
        elif isinstance(item, dict) and isinstance(item.get("text"), str):
            texts.append(item["text"])
            src = item.get("source", item.get("id"))
            sources.append(None if src is None else str(src))
        else:
            raise TraceProblem(f"'{key}'[{i}] must be a text or an object with a 'text' field")
    return texts, sources


def _number(obj: dict[str, Any], key: str) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, dict) and key == "tokens":  # {"prompt": .., "completion": ..}: their sum
        value = sum(v for v in value.values() if isinstance(v, (int, float)) and not isinstance(v, bool))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise TraceProblem(f"'{key}' must be a non-negative number, got {value!r}")
    return float(value)


def _corrected(obj: dict[str, Any], answer: str) -> bool | None:
    flag = obj.get("corrected")
    if flag is not None and not isinstance(flag, bool):
        raise TraceProblem(f"'corrected' must be true or false, got {flag!r}")
    fixed = obj.get("corrected_answer")
    if fixed is not None and not isinstance(fixed, str):
        raise TraceProblem(f"'corrected_answer' must be a text, got {type(fixed).__name__}")
    if fixed is not None and fixed.strip() != answer.strip():
        return True
    return flag if flag is not None else (False if fixed is not None else None)


def drop(obj: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """A copy of `obj` without the named fields: a plain name wherever it occurs ("email" at the top or inside any
    object), a dotted one at that path only ("metadata.email"), through lists."""
    plain = {n for n in names if "." not in n}

    def everywhere(value: Any) -> Any:  # every plain name, at every depth, in one walk
        if isinstance(value, list):
            return [everywhere(v) for v in value]
        if isinstance(value, dict):
            return {k: everywhere(v) for k, v in value.items() if k not in plain}
        return value

    def at(value: Any, path: list[str]) -> Any:
        if isinstance(value, list):
            return [at(v, path) for v in value]
        if not isinstance(value, dict):
            return value
        head, rest = path[0], path[1:]
        if not rest:
            return {k: v for k, v in value.items() if k != head}
        return {k: (at(v, rest) if k == head else v) for k, v in value.items()}

    out = everywhere(obj) if plain else obj
    for name in names:
        if "." in name:
            out = at(out, name.split("."))
    return out


def load_line(line: str) -> Any:
    """One line of a traces file as JSON; raises TraceProblem when it is not."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise TraceProblem(f"not JSON ({exc.msg}: column {exc.colno})") from None
    except RecursionError:
        raise TraceProblem("JSON nested too deep") from None


def parse_trace(line: str) -> Trace:
    """One line of a traces file as a Trace; raises TraceProblem naming what is wrong."""
    return trace_from(load_line(line))


def trace_from(obj: Any) -> Trace:
    """A trace object (a parsed line, or one assembled from OpenTelemetry spans) as a Trace."""
    if not isinstance(obj, dict):
        raise TraceProblem(f"a trace is a JSON object, got {type(obj).__name__}")
    used = {}
    for name in ("time", "question", "answer", "contexts"):
        used[name] = _pick(obj, name)
    for name in ("question", "answer"):
        key, value = used[name]
        if not isinstance(value, str):
            raise TraceProblem(f"'{key}' must be a text, got {type(value).__name__}")
    answer = used["answer"][1]
    texts, sources = _contexts(*reversed(used["contexts"]))
    version = obj.get("app_version")
    tokens = _number(obj, "tokens")
    trace_id = obj.get("id")
    if trace_id is None:
        trace_id = hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:20]
    taken = {key for key, _ in used.values()} | set(OPTIONAL)
    return Trace(
        trace_id=str(trace_id),
        at=_time(used["time"][1]),
        question=used["question"][1],
        answer=answer,
        contexts=texts,
        sources=sources,
        app_version=None if version is None else str(version),
        corrected=_corrected(obj, answer),
        latency_ms=_number(obj, "latency_ms"),
        tokens=None if tokens is None else int(tokens),
        extra={k: v for k, v in obj.items() if k not in taken},
    )
