"""What changed between two recorded states, in a reader's words: settings by section and key, and keyed contents
(a corpus's files by content hash, a golden set's tests by line hash)."""

import json
from typing import Any, Mapping


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def settings_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """'[retriever].k 5 -> 8' for every key of every section whose value differs ('none' where one side lacks it)."""
    out = []
    for section in sorted(set(old) | set(new)):
        before, after = old.get(section) or {}, new.get(section) or {}
        for key in sorted(set(before) | set(after)):
            if before.get(key) != after.get(key):
                was = _shown(before[key]) if key in before else "none"
                now = _shown(after[key]) if key in after else "none"
                out.append(f"[{section}].{key} {was} -> {now}")
    return out


def keyed_diff(old: Mapping[str, str], new: Mapping[str, str], limit: int = 5) -> str:
    """'policies/x.txt deleted; reports/q3.md edited; 2 more added' from two {name: content hash} maps ('' if equal)."""
    parts = []
    for verb, names in (
        ("deleted", sorted(set(old) - set(new))),
        ("edited", sorted(k for k in set(old) & set(new) if old[k] != new[k])),
        ("added", sorted(set(new) - set(old))),
    ):
        shown = names[:limit]
        parts += [f"{n} {verb}" for n in shown]
        if len(names) > limit:
            parts.append(f"{len(names) - limit} more {verb}")
    return "; ".join(parts)
