"""A golden set file as {test id: hash of its test}, so an edit can be told in tests ('neg_03 edited; pos_44 added')
rather than as a new file hash."""

import hashlib
import json
from pathlib import Path

from ragpipe.golden.file import GoldenProblem, json_objects


def hashes_by_test(path: Path | None) -> dict[str, str]:
    """Each test's id (or 'line N' when it has none) and a short hash of its content; {} when there is no file."""
    if path is None or not path.is_file():
        return {}
    problems: list[GoldenProblem] = []
    out: dict[str, str] = {}
    for line, value in json_objects(path.read_text(encoding="utf-8", errors="replace"), path.name, problems):
        qid = value.get("question_id") if isinstance(value, dict) else None
        key = qid if isinstance(qid, str) and qid and qid not in out else f"line {line}"
        out[key] = hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]
    for p in problems:  # a malformed part is a change too, where it is
        out[f"line {p.line}"] = hashlib.sha256(p.message.encode()).hexdigest()[:12]
    return out
