"""An answer written as a structure read as the sentences it says: JSON (bare or in a code fence), XML, a Markdown
table without its header row."""

from __future__ import annotations

import re

_FENCE = re.compile(r"```[a-z]*[ \t]*\n?(.*?)```", re.S)
# Fields of a structured answer that describe it rather than say it.
_METADATA = {
    "confidence",
    "score",
    "probability",
    "certainty",
    "sources",
    "source",
    "citations",
    "citation",
    "ids",
    "chunk_ids",
    "references",
    "passages",
    "context_ids",
    "doc_ids",
    "id",
    "model",
    "version",
    "latency",
}


def _flatten(obj: object, key: str = "") -> list[str]:
    if isinstance(obj, dict):
        return [x for k, v in obj.items() if str(k).lower() not in _METADATA for x in _flatten(v, str(k))]
    if isinstance(obj, list):
        return [x for v in obj for x in _flatten(v, key)]
    if obj is None:
        return ["null"]
    if isinstance(obj, bool):
        return [f"{key.replace('_', ' ')}: {'yes' if obj else 'no'}"]
    if isinstance(obj, str) and obj.strip().startswith("{") and obj.strip().endswith("}"):
        import json

        try:  # a field holding JSON of its own ({"answer": "{\"answer\": \"40.3%\", \"confidence\": 0.95}"})
            return _flatten(json.loads(obj), key)
        except ValueError:
            pass
    return [str(obj)]


def unwrap(text: str) -> str:
    """An answer written as JSON (bare or in a code fence) read as what it says: the values of its fields, one
    sentence each, metadata fields (confidence, sources, ids) left out; a Markdown table without its header row."""
    import json

    def read(block: str) -> str | None:
        start, end = block.find("{"), block.rfind("}")
        if start < 0 or end < start:
            return None
        try:
            obj = json.loads(block[start : end + 1])
        except ValueError:
            return None
        parts = [p.strip().rstrip(".") for p in _flatten(obj) if p.strip()]
        return block[:start] + "".join(f"{p}. " for p in parts) + block[end + 1 :]

    out = _FENCE.sub(lambda m: read(m.group(1)) or m.group(0), text)
    out = (read(out) or out) if "{" in out else out
    if re.match(r"\s*<\w+[^>]*>", out) and re.search(r"</\w+>\s*$|/>\s*$", out):  # an XML answer

        def tag(m: re.Match[str]) -> str:  # <answer found="false"/> says "answer not found"
            falsy = re.findall(r"(\w+)=\"(?:false|no|none|null)\"", m.group(0), flags=re.I)
            return ". " + "".join(f"{m.group(1)} not {k}. " for k in falsy)

        out = re.sub(r"<(\w+)[^>]*>|</\w+>", lambda m: tag(m) if m.group(1) else ". ", out)
        out = re.sub(r"(?:\s*\.\s*){2,}", ". ", out).strip(" .") + "."
    return _TABLE_HEADER.sub("", out)  # a Markdown table's header row names its columns: no claim


_TABLE_HEADER = re.compile(r"^[ \t]*\|[^\n]*\|[ \t]*\n[ \t]*\|[ \t:|-]*-[ \t:|-]*\|[ \t]*$\n?", re.M)
