"""Answer matching: refusals, normalized exact/contains, and numeric or date equivalence ("$12.4M" = "12.4 million")."""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from dataclasses import dataclass

_SCALE = {
    "k": 1e3, "thousand": 1e3,
    "m": 1e6, "mm": 1e6, "mn": 1e6, "million": 1e6, "millions": 1e6,
    "b": 1e9, "bn": 1e9, "billion": 1e9, "billions": 1e9,
}
_NUM = re.compile(
    r"(?<![\w.])[$\u20ac\u00a3]?\s?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?\s?(%|percent\b|thousand\b|millions?\b|billions?\b|bn\b|mn\b|mm\b|[kmb]\b)?",
    re.IGNORECASE,
)
_MONTHS = {m: i for i, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], 1)}
_MON = r"\b(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
_DATE_PATTERNS = [
    (re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"), ("y", "m", "d")),
    (re.compile(_MON + r"\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b", re.IGNORECASE), ("M", "d", "y")),
    (re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+" + _MON + r",?\s+(\d{4})\b", re.IGNORECASE), ("d", "M", "y")),
]


def normalize_text(text: str) -> str:
    """Lower-case, unify quotes and dashes, drop punctuation that does not change meaning, collapse spaces."""
    t = unicodedata.normalize("NFKC", text).lower()
    t = t.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    t = re.sub(r"[\u2010-\u2015]", "-", t)
    t = re.sub(r"[\"'`*_()\[\]{}]", " ", t)
    t = re.sub(r"(?<!\d)[.,;:!?](?!\d)", " ", t)
    return " ".join(t.split())


def numbers(text: str) -> list[float]:
    """Numeric values with their scale: "$12.4M" and "12.4 million" both give 12400000.0; "18%" gives 18.0."""
    out = []
    for m in _NUM.finditer(text):
        whole, frac, unit = m.group(1), m.group(2) or "", (m.group(3) or "").lower()
        value = float(whole.replace(",", "") + frac)
        if unit in _SCALE:
            value *= _SCALE[unit]
        out.append(round(value, 6))
    return out


def dates(text: str) -> list[dt.date]:
    out = []
    for pattern, order in _DATE_PATTERNS:
        for m in pattern.finditer(text):
            parts = dict(zip(order, m.groups()))
            try:
                month = int(parts["m"]) if "m" in parts else _MONTHS[parts["M"].lower()[:3]]
                out.append(dt.date(int(parts["y"]), month, int(parts["d"])))
            except (KeyError, ValueError):
                continue
    return out


def is_refusal(answer: str, phrases: tuple[str, ...]) -> bool:
    norm = normalize_text(answer)
    return any(normalize_text(p) in norm for p in phrases)


@dataclass(frozen=True)
class Match:
    matched: bool
    how: str  # exact | contains | numeric | date | "" when not matched


def answer_matches(answer: str, expected: str) -> Match:
    """Does `answer` state `expected`? Tries exact, contains, then numeric and date equivalence."""
    a, e = normalize_text(answer), normalize_text(expected)
    if not e:
        return Match(False, "")
    if a == e:
        return Match(True, "exact")
    if re.search(r"(?<!\w)" + re.escape(e) + r"(?!\w)", a):
        return Match(True, "contains")
    exp_dates = dates(expected)
    if exp_dates and set(exp_dates) <= set(dates(answer)):
        return Match(True, "date")
    exp_nums = numbers(expected)
    if exp_nums and not exp_dates:
        got = numbers(answer)
        if all(any(abs(x - y) <= 1e-9 * max(1.0, abs(x)) for y in got) for x in exp_nums):
            return Match(True, "numeric")
    return Match(False, "")
