"""Which qualifiers a near-miss question may ask instead of the trap's (siblings: other quarters and years, other
versions, other names of the same pattern the corpus holds), and every way the corpus could name one (forms), for
the search that shows the new question unanswered (absence.py)."""

from __future__ import annotations

import re

from ragpipe.golden.near_miss import _MONTHS, _ORDINALS, _YEAR, Span


def shift_year(text: str, year: int) -> str:
    split = re.search(rf"({_YEAR})([/\u2013-])\d\d", text)
    if split:  # a financial year "2022/23" moves as a whole: "2021/22"
        return text[: split.start()] + f"{year}{split.group(2)}{(year + 1) % 100:02d}" + text[split.end() :]
    return re.sub(_YEAR, str(year), text, count=1) if re.search(_YEAR, text) else text


def siblings(q: Span, seen: dict[str, set[str]], step: int = 1) -> list[str]:
    """Qualifiers of the same shape that are not this one, nearest first: other years (`step` apart) and quarters, other versions
    (those the corpus names first), other names of the same pattern the corpus holds (SHA-256 -> SHA-512)."""
    if q.group == "periods":
        year = int(_found(_YEAR, q.text))
        years = (year - step, year + step, year - 2 * step)  # `step`: a series' cadence (series.cadence)
        out = [shift_year(q.text, y) for y in years if re.fullmatch(_YEAR, str(y))]
        if q.kind == "quarter":
            ordinal = q.text.split()[0]
            i = _ORDINALS.index(ordinal.lower())
            others = [o for j, o in enumerate(_ORDINALS) if j != i]
            out = [q.text.replace(ordinal, o.capitalize() if ordinal[0].isupper() else o, 1) for o in others] + out
        elif q.kind == "q":
            n = int(q.text[1])
            out = [q.text.replace(f"Q{n}", f"Q{j}", 1) for j in (1, 2, 3, 4) if j != n] + out
        return out
    if q.kind == "version":
        lead, number = _lead(q.text), q.text[len(_lead(q.text)) :]
        parts = number.split(".")
        near = [".".join(parts[:-1] + [str(int(parts[-1]) + d)]) for d in (1, -1) if int(parts[-1]) + d >= 0]
        named = sorted(
            seen.get(f"version:{lead.strip().lower()}", set()) - {number}, key=lambda n: _distance(n, number)
        )
        return [f"{lead}{n}" for n in dict.fromkeys(named[:3] + near)]
    key = _shape(q)
    return sorted(seen.get(key, set()) - {q.text}, key=lambda t: (len(t), t))[:4]


def _lead(version: str) -> str:
    """What names a version before its number: "Python " of "Python 3.11", "v" of "v2.0"."""
    return _found(r"^\D*", version)


def _distance(a: str, b: str) -> tuple[int, ...]:
    pa, pb = [int(x) for x in a.split(".")], [int(x) for x in b.split(".")]
    return (len(pa) != len(pb), *(abs(x - y) for x, y in zip(pa, pb)))


def _shape(q: Span) -> str:
    if q.kind == "version":
        return f"version:{_lead(q.text).strip().lower()}"
    if q.kind == "shaped":
        return "shaped:" + re.split(r"[- ]", q.text)[0].lower()
    if q.kind == "code":
        return "code:" + re.split(r"(::|\.)(?=[^.:]*`$)", q.text)[0].lower()
    return q.kind


def remember(seen: dict[str, set[str]], q: Span) -> None:
    """Record a qualifier the corpus names, for siblings(): versions by their number, names whole."""
    value = _found(r"\d[\d.]*$", q.text) if q.kind == "version" else q.text
    seen.setdefault(_shape(q), set()).add(value)


def _found(pattern: str, qualifier: str) -> str:
    """What `pattern` finds in a qualifier of its kind (the kind was read from that very text, so it is there)."""
    m = re.search(pattern, qualifier)
    if m is None:
        raise ValueError(f"qualifier {qualifier!r} does not hold {pattern!r}")
    return m.group(0)


def forms(qualifier: str, kind: str) -> re.Pattern[str]:
    """Every way the corpus could name a qualifier, as one pattern: a quarter as words, as Qn or "Quarter n", with
    the year anywhere after it, or any range of months in its years (whose quarter it is depends on the financial
    year); a year or a version number alone (no sentence with it may answer); a name as written."""
    year = _found(_YEAR, qualifier) if kind in ("quarter", "q", "month", "year", "fy", "split") else ""
    if kind in ("quarter", "q"):
        n = _ORDINALS.index(qualifier.split()[0].lower()) + 1 if kind == "quarter" else int(qualifier[1])
        split = re.search(rf"{year}[/\u2013-](\d\d)\b", qualifier)  # "Q1 2023/24" spans 2023 and 2024
        years = f"{year}|{year[:2]}{split.group(1)}" if split else year
        months = "|".join(m[:3] for m in _MONTHS)  # "Apr-Jun 2023": some organisation's quarter, maybe this one
        ranged = rf"\b(?:{months})[a-z]*\.?\s?(?:[\u2013-]|to)\s?(?:{months})[a-z]*\.?,?\s+(?:{years})\b"
        return re.compile(rf"\b(?:{_ORDINALS[n - 1]} quarter|Q{n}|quarter {n})\b.*?\b{year}\b|{ranged}", re.I)
    if kind == "month":
        month = _found("|".join(_MONTHS), qualifier)
        return re.compile(rf"\b{month}\b.*?\b{year}\b|\b{year}-{_MONTHS.index(month) + 1:02d}\b", re.I)
    if kind in ("year", "fy", "split"):  # "2021/22" names 2021: any sentence naming that year may answer
        return re.compile(rf"(?<![\w.]){year}(?![\w.])")
    if kind == "version":
        number = _found(r"\d[\d.]*\d|\d", qualifier)
        return re.compile(rf"(?<![\d.]){re.escape(number)}(?![\d]|\.\d)")
    return re.compile(rf"(?<![\w-]){re.escape(qualifier.strip('`'))}(?![\w-])", re.I)
