"""OpenTelemetry traces as production traces: a line of OTLP JSON (what the Collector's file exporter and `ragpipe
monitor serve` write: one ExportTraceServiceRequest per line) holds spans; the spans of one trace id become one
answered question, in ragpipe's own trace shape, so that the same checks, aliases and drop_fields apply.

Read from the span attributes of the OpenInference conventions (Phoenix, Arize: `input.value`, `output.value`,
`retrieval.documents.N.document.content`, `llm.token_count.*`) and of OpenLLMetry (Traceloop:
`traceloop.entity.input/output`, `gen_ai.completion.0.content`, `gen_ai.usage.*`, and the `db.query.result` events
its vector-database instrumentations add to a query span). The question and the answer are the root span's input and
output; the contexts are every retriever span's documents, in the order they started.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import math
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from ragpipe.monitor.traces import TraceProblem

QUESTION_KEYS = ("question", "query", "input", "user_input", "inputs", "args", "kwargs", "messages", "content")
ANSWER_KEYS = ("answer", "output", "response", "result", "text", "outputs", "content")
DOCS = "retrieval.documents."
RESULT_EVENT = "db.query.result"  # OpenLLMetry: one event per document a vector-database query returned


@dataclass
class Span:
    trace_id: str
    span_id: str
    parent: str  # "" for a root span
    name: str
    start_ns: int
    end_ns: int
    attrs: dict[str, Any]
    resource: dict[str, Any]
    results: list[dict[str, Any]] = field(default_factory=list)  # the attributes of its `db.query.result` events


@dataclass
class Pending:
    """The spans of traces whose root span has not arrived yet, with the first line each was seen on."""

    spans: dict[str, list[Span]] = field(default_factory=dict)
    first_line: dict[str, int] = field(default_factory=dict)


def is_otlp(obj: Any) -> bool:
    return isinstance(obj, dict) and ("resourceSpans" in obj or "resource_spans" in obj)


def _key(obj: dict[str, Any], camel: str) -> Any:
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)
    return obj.get(camel, obj.get(snake))


def _value(v: Any) -> Any:
    """An OTLP AnyValue as a Python value."""
    if not isinstance(v, dict):
        return v
    for kind in ("stringValue", "boolValue", "doubleValue"):
        if _key(v, kind) is not None:
            return _key(v, kind)
    try:
        if _key(v, "intValue") is not None:
            return int(_key(v, "intValue"))  # int64 is a JSON string in OTLP JSON
        if _key(v, "arrayValue") is not None:
            return [_value(x) for x in (_key(v, "arrayValue") or {}).get("values", [])]
        if _key(v, "kvlistValue") is not None:
            return _attrs((_key(v, "kvlistValue") or {}).get("values", []))
    except (TypeError, ValueError, AttributeError):
        raise TraceProblem(f"an attribute value is not an OTLP AnyValue: {str(v)[:80]}") from None
    return None


def _attrs(items: Any) -> dict[str, Any]:
    if not isinstance(items, list):
        raise TraceProblem("'attributes' must be a list of {key, value}")
    out = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise TraceProblem("an attribute must be an object with a 'key' and a 'value'")
        out[item["key"]] = _value(item.get("value"))
    return out


def _hex_id(value: Any, what: str) -> str:
    """OTLP JSON writes ids in hex; protobuf's generic JSON writes them in base64: either is read."""
    if not isinstance(value, str):
        raise TraceProblem(f"'{what}' must be a text, got {type(value).__name__}")
    if not value or all(c in "0123456789abcdefABCDEF" for c in value) and len(value) in (16, 32):
        return value.lower()
    try:
        return base64.b64decode(value, validate=True).hex()
    except (binascii.Error, ValueError):
        raise TraceProblem(f"'{what}' is neither hex nor base64: {value[:40]!r}") from None


def _nanos(span: dict[str, Any], camel: str) -> int:
    raw = _key(span, camel)
    try:
        nanos = int(raw)
    except (TypeError, ValueError, OverflowError):
        nanos = -1
    if not 0 <= nanos < 2**64:  # a fixed64 in OTLP
        raise TraceProblem(f"span '{camel}' must be nanoseconds since the epoch, got {str(raw)[:40]!r}")
    return nanos


def _results(events: Any) -> list[dict[str, Any]]:
    if not isinstance(events, list):
        raise TraceProblem("a span's 'events' must be a list")
    out = []
    for event in events:
        if not isinstance(event, dict):
            raise TraceProblem("a span event must be an object")
        if event.get("name") == RESULT_EVENT:
            out.append(_attrs(event.get("attributes", [])))
    return out


def spans_of(obj: dict[str, Any]) -> list[Span]:
    """Every span of one OTLP JSON request; raises TraceProblem naming what is malformed."""
    out = []
    resources = _key(obj, "resourceSpans")
    if not isinstance(resources, list):
        raise TraceProblem("'resourceSpans' must be a list")
    for rs in resources:
        if not isinstance(rs, dict):
            raise TraceProblem("each of 'resourceSpans' must be an object")
        resource = rs.get("resource") or {}
        if not isinstance(resource, dict):
            raise TraceProblem("'resource' must be an object")
        resource = _attrs(resource.get("attributes", []))
        scopes = _key(rs, "scopeSpans") or []
        if not isinstance(scopes, list):
            raise TraceProblem("'scopeSpans' must be a list")
        for ss in scopes:
            if not isinstance(ss, dict) or not isinstance(ss.get("spans", []), list):
                raise TraceProblem("each of 'scopeSpans' must be an object with a list of 'spans'")
            for sp in ss.get("spans", []):
                if not isinstance(sp, dict):
                    raise TraceProblem("a span must be an object")
                out.append(
                    Span(
                        trace_id=_hex_id(_key(sp, "traceId"), "traceId"),
                        span_id=_hex_id(_key(sp, "spanId"), "spanId"),
                        parent=_hex_id(_key(sp, "parentSpanId") or "", "parentSpanId"),
                        name=str(sp.get("name", "")),
                        start_ns=_nanos(sp, "startTimeUnixNano"),
                        end_ns=_nanos(sp, "endTimeUnixNano"),
                        attrs=_attrs(sp.get("attributes", [])),
                        resource=resource,
                        results=_results(sp.get("events", [])),
                    )
                )
    return out


def _dig(value: Any, keys: tuple[str, ...], depth: int = 0) -> str | None:
    """The text a span's input or output holds: the value itself, or the first text under the usual keys of the JSON
    an instrumentor writes for a dict ({"question": ...}, {"inputs": {...}}, {"output": ...})."""
    if depth > 8:
        return None
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            return value
        if not isinstance(parsed, (dict, list)):
            return value if not isinstance(parsed, str) else parsed
        value = parsed
    if isinstance(value, list):
        for item in reversed(value):  # chat messages: the last one is the user's turn (input) or the reply (output)
            got = _dig(item, keys, depth + 1)
            if got:
                return got
        return None
    if isinstance(value, dict):
        for k in keys:
            if k in value:
                got = _dig(value[k], keys, depth + 1)
                if got:
                    return got
    return None


def _text(spans: list[Span], names: tuple[str, ...], keys: tuple[str, ...]) -> str | None:
    for span in spans:
        for name in names:
            if name in span.attrs:
                got = _dig(span.attrs[name], keys)
                if got:
                    return got
    return None


def _contexts(spans: list[Span]) -> list[dict[str, Any]]:
    out = []
    for span in sorted(spans, key=lambda s: s.start_ns):
        docs: dict[int, dict[str, Any]] = {}
        for key, value in span.attrs.items():
            if key.startswith(DOCS):
                index, _, rest = key[len(DOCS) :].partition(".document.")
                if index.isdigit():
                    docs.setdefault(int(index), {})[rest] = value
        found = [d for _, d in sorted(docs.items())]
        found += [{k.removeprefix(f"{RESULT_EVENT}."): v for k, v in r.items()} for r in span.results]
        for doc in found:
            text = doc.get("content", doc.get("document"))
            if isinstance(text, str):
                meta = _dig(doc.get("metadata"), ("source",)) if doc.get("metadata") else None
                source = doc.get("id") or meta
                out.append({"text": text, **({"source": str(source)} if source else {})})
    return out


def _count(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _tokens(spans: list[Span]) -> int | None:
    total, seen = 0, False
    for span in spans:
        a = span.attrs
        one = a.get("llm.token_count.total", a.get("llm.usage.total_tokens"))
        if one is None:
            parts = [
                a.get(k)
                for k in ("llm.token_count.prompt", "llm.token_count.completion", "gen_ai.usage.input_tokens",
                          "gen_ai.usage.output_tokens", "gen_ai.usage.prompt_tokens", "gen_ai.usage.completion_tokens")
            ]  # fmt: skip
            nums = [float(p) for p in parts if _count(p)]
            one = sum(nums) if nums else None
        if _count(one):
            total, seen = total + int(one), True
    return total if seen else None


def _iso(nanos: int) -> str:
    try:
        return dt.datetime.fromtimestamp(nanos / 1e9, dt.timezone.utc).isoformat()
    except (ValueError, OverflowError, OSError):
        raise TraceProblem(f"the root span's 'startTimeUnixNano' is out of range: {nanos}") from None


def as_trace(spans: list[Span]) -> dict[str, Any] | None:
    """One trace's spans as a ragpipe trace object, or None when they hold no question and answer (a health check, a
    span of some other work): only answered questions are production traces."""
    roots = [s for s in spans if not s.parent] or sorted(spans, key=lambda s: s.start_ns)[:1]
    root = roots[0]
    ordered = [root] + sorted((s for s in spans if s is not root), key=lambda s: s.start_ns)
    question = _text(ordered, ("input.value", "traceloop.entity.input"), QUESTION_KEYS)
    llm_out = ("output.value", "traceloop.entity.output", "gen_ai.completion.0.content",
               "llm.output_messages.0.message.content")  # fmt: skip
    answer = _text([root], llm_out, ANSWER_KEYS) or _text(list(reversed(ordered)), llm_out, ANSWER_KEYS)
    if question is None or answer is None:
        return None
    obj: dict[str, Any] = {
        "id": root.trace_id,
        "time": _iso(root.start_ns),
        "question": question,
        "answer": answer,
        "contexts": _contexts(spans),
        "latency_ms": max(0.0, (root.end_ns - root.start_ns) / 1e6),
    }
    if root.resource.get("service.version") is not None:
        obj["app_version"] = str(root.resource["service.version"])
    if root.resource.get("service.name") is not None:
        obj["service"] = str(root.resource["service.name"])
    tokens = _tokens(spans)
    if tokens is not None:
        obj["tokens"] = tokens
    return obj


def take(spans: list[Span], line: int, pending: Pending) -> list[tuple[int, list[Span]]]:
    """Add one line's spans; returns (first line, spans) of each trace whose root span has now arrived."""
    done = []
    for span in spans:
        pending.spans.setdefault(span.trace_id, []).append(span)
        pending.first_line.setdefault(span.trace_id, line)
    for trace_id in {s.trace_id for s in spans if not s.parent}:
        done.append((pending.first_line.pop(trace_id), pending.spans.pop(trace_id)))
    return done
