"""Answer matching: normalized exact/contains, and equivalence of numbers ("$12.4M" = "12.4 million" = "twelve point
four million"), quantities with units ("5 s" = "five seconds" = "5000 ms"), ordinals, versions ("v1.6" = "APT 1.6"),
dates (written or ISO) and lists ("A and B" = "B, A")."""

from __future__ import annotations

import datetime as dt
import math
import re
import unicodedata
from dataclasses import dataclass

from ragpipe.core import normalize_text
from ragpipe.reading.notation import SCI, TINY, as_decimal, cased, mantissa_exponent, other_bases, with_carets

_SCALE = {
    **dict.fromkeys(("k", "thousand"), 1e3),
    **dict.fromkeys(("m", "mn", "million", "millions"), 1e6),
    **dict.fromkeys(("b", "bn", "billion", "billions"), 1e9),
}
_NUM = re.compile(
    r"(?<![\w.])[$\u20ac\u00a3]?\s?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?\s?(%|percent\b|thousand\b|millions?\b|billions?\b|bn\b|mn\b|[kmb]\b)?",
    re.IGNORECASE,
)
# Units a value may carry, in a canonical name and a factor to it; "5 s" and "5000 ms" are the same quantity.
_UNITS = {
    "ms": ("s", 1e-3),
    "msec": ("s", 1e-3),
    "millisecond": ("s", 1e-3),
    "milliseconds": ("s", 1e-3),
    "s": ("s", 1.0),
    "sec": ("s", 1.0),
    "secs": ("s", 1.0),
    "second": ("s", 1.0),
    "seconds": ("s", 1.0),
    "min": ("s", 60.0),
    "mins": ("s", 60.0),
    "minute": ("s", 60.0),
    "minutes": ("s", 60.0),
    "h": ("s", 3600.0),
    "hr": ("s", 3600.0),
    "hrs": ("s", 3600.0),
    "hour": ("s", 3600.0),
    "hours": ("s", 3600.0),
    "day": ("s", 86400.0),
    "days": ("s", 86400.0),
    "week": ("s", 604800.0),
    "weeks": ("s", 604800.0),
    "month": ("month", 1.0),
    "months": ("month", 1.0),
    "year": ("year", 1.0),
    "years": ("year", 1.0),
    "bit": ("byte", 0.125),
    "bits": ("byte", 0.125),
    "b": ("byte", 1.0),
    "byte": ("byte", 1.0),
    "bytes": ("byte", 1.0),
    "kb": ("kb", 1.0),
    "kib": ("byte", 1024.0),  # binary prefixes are exact; kB/MB/GB stay apart (1,000 or 1,024 by convention)
    "mb": ("mb", 1.0),
    "mib": ("byte", 1048576.0),
    "gb": ("gb", 1.0),
    "gib": ("byte", 1073741824.0),
    "hz": ("hz", 1.0),
    "khz": ("hz", 1e3),
    "mhz": ("hz", 1e6),
    "ghz": ("hz", 1e9),
    "%": ("%", 1.0),
    "percent": ("%", 1.0),
    "per cent": ("%", 1.0),
    "mm": ("m", 0.001),
    "millimeter": ("m", 0.001),
    "millimeters": ("m", 0.001),
    "millimetre": ("m", 0.001),
    "millimetres": ("m", 0.001),
    "cm": ("m", 0.01),
    "centimeters": ("m", 0.01),
    "centimetres": ("m", 0.01),
    "kilometers": ("m", 1000.0),
    "kilometres": ("m", 1000.0),
    "kilograms": ("kg", 1.0),
    "grams": ("kg", 1e-3),
    "meter": ("m", 1.0),
    "meters": ("m", 1.0),
    "metre": ("m", 1.0),
    "metres": ("m", 1.0),
    "km": ("m", 1000.0),
    "kg": ("kg", 1.0),
    "g": ("kg", 1e-3),
}
_QTY = re.compile(
    r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?\s?(ms|msecs?|milliseconds?|secs?|seconds?|mins?|minutes?|hrs?|hours?|"
    r"days?|weeks?|months?|years?|bits?|bytes?|kib|kb|mib|mb|gib|gb|%|per\s?cent|millimet(?:er|re)s?|centimet(?:er|re)s?|kilomet(?:er|re)s?|kilograms?|grams|mm|cm|km|kg|meters?|metres?|[kmg]?hz|[sh])?(?![\w])",
    re.IGNORECASE,
)
_VERSION = re.compile(r"(?<![\w.])v?(\d+(?:\.\d+){2,})(?![\w.]*\d)", re.IGNORECASE)
_LARGE = re.compile(r"\b(million|billion|trillion)(s?)\b|(?<=\d)(\s+)(thousand)(s?)\b", re.IGNORECASE)
_MONTHS = {
    m: i for i, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], 1)
}
_MON = r"\b(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
_DATE_PATTERNS = [
    (re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"), ("y", "m", "d")),
    (re.compile(_MON + r"\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b", re.IGNORECASE), ("M", "d", "y")),
    (re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MON + r",?\s+(\d{4})\b", re.I), ("d", "M", "y")),
]
_ISO_MONTH = re.compile(r"\b(\d{4})-(\d{2})\b(?!-\d)")
_MONTH_YEAR = re.compile(_MON + r",?\s+(?:of\s+)?(\d{4})\b", re.IGNORECASE)


def months(text: str) -> list[tuple[int, int]]:
    """(year, month) of every date and of every "December 2022" in the text."""
    out = [(d.year, d.month) for d in dates(text)]
    out += [(int(m.group(2)), _MONTHS[m.group(1).lower()[:3]]) for m in _MONTH_YEAR.finditer(text)]
    out += [(int(m.group(1)), int(m.group(2))) for m in _ISO_MONTH.finditer(text) if 1 <= int(m.group(2)) <= 12]
    return out


_SCALEWORD = re.compile(r"scaleword(million|billion|trillion|thousand)")
_ONE_SECOND = re.compile(r"(\d)\s+2nd\b")
_AND_A_HALF = re.compile(r"\b(\d+)\s+and\s+a\s+half\b")
_HALF_A = re.compile(r"\bhalf\s+an?\s+(million|billion|hour|minute|day|year)\b")


def protect_scales(text: str) -> str:
    """ "million", "billion", "trillion" (and "thousand" after a number) hidden from text2num, which would multiply."""
    return _LARGE.sub(
        lambda m: (
            f"scaleword{m.group(1).lower()}{m.group(2)}"
            if m.group(1)
            else f"{m.group(3)}scaleword{m.group(4).lower()}{m.group(5)}"
        ),
        text,
    )


def digits(text: str) -> str:
    """Numbers written in words as digits ("twenty-five" -> "25", "five seconds" -> "5 seconds", "second" -> "2nd",
    "forty-eight point seven million" -> "48.7 million"), with text2num; "million"/"billion" stay words."""
    from text_to_num import alpha2digit

    low = text.lower()
    may_scale = "illion" in low or "thousand" in low or not text.isascii()  # in ASCII, the only texts _LARGE matches
    out = alpha2digit(protect_scales(text) if may_scale else text, "en", threshold=0)
    if "scaleword" in out:
        out = _SCALEWORD.sub(r"\1", out)
    if "2nd" in out:  # "one second" comes back as "1 2nd": after a number, "2nd" was the unit
        out = _ONE_SECOND.sub(r"\1 second", out)
    if "half" in out:
        out = _AND_A_HALF.sub(lambda m: f"{m.group(1)}.5", out)
        out = _HALF_A.sub(r"0.5 \1", out)
    return out


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


def quantities(text: str) -> list[tuple[float, float, str]]:
    """(as written, in the canonical unit, the unit or ""): "5 s", "5 seconds" give (5, 5, "s"), "5000 ms" (5000, 5, "s")."""
    out = []
    for m in _QTY.finditer(text):
        raw = float(m.group(1).replace(",", "") + (m.group(2) or ""))
        unit, factor = _UNITS.get(re.sub(r"\s+", " ", (m.group(3) or "").lower()), ("", 1.0))
        out.append((raw, round(raw * factor, 9), unit))
    return out


def versions(text: str) -> list[str]:
    """Dotted versions with three or more parts ("v2.3.1" -> "2.3.1"): compared as strings, never as numbers."""
    return [m.group(1) for m in _VERSION.finditer(text)]


@dataclass(frozen=True)
class Match:
    matched: bool
    how: str  # exact | contains | numeric | date | "" when not matched


def _same(x: float, y: float) -> bool:
    return abs(x - y) <= 1e-9 * max(1.0, abs(x))


_GREEK = dict(
    zip(
        "\u03b1\u03b2\u03b3\u03b4\u03b5\u03b6\u03b7\u03b8\u03b9\u03ba\u03bb\u03bc\u03bd\u03be\u03c0\u03c1\u03c3\u03c4\u03c5\u03c6\u03c7\u03c8\u03c9",
        "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi pi rho sigma tau upsilon phi chi psi "
        "omega".split(),
    )
)


_ISO_TIME = re.compile(r"\b(\d{4}-\d{2}-\d{2})t(\d{2}:\d{2}(?::\d{2})?)z?\b")
_CLOCK = re.compile(r"(?<![\d:])(\d{1,2}):(\d{2})(?::(\d{2}))?(?![\d:])|\b(midnight)\b")


def _clocks(text: str) -> set[tuple[int, int, int]]:
    """Times of day: "06:28:15", "00:00" and "midnight" as (h, m, s)."""
    return {(int(h or 0), int(m or 0), int(s or 0)) for h, m, s, _ in _CLOCK.findall(text)}


def _canonical(text: str) -> str:
    """Digits for number words, "v1.6" as "1.6", "0..100" as "0 to 100", Greek letters spelled out ("TGF-\u03b2" =
    "TGF-beta"), centuries in one form ("19th century" = "the 1800s"): the form every comparison below reads."""
    text = with_carets(text)  # first: NFKC would make "10\u207b\u00b3" the plain "10\u22123" (no caret)
    text = "".join(_GREEK.get(ch, ch) for ch in unicodedata.normalize("NFKC", text).lower())
    out = re.sub(r"(?<![\w.])v(?=\d)", "", digits(text), flags=re.IGNORECASE)
    out = re.sub(r"\b(\d{1,2})(?:st|nd|rd|th)\s+century\b", r"century\1", out)
    out = SCI.sub(as_decimal, out)
    out = other_bases(out)  # "2^20" = "0x100000" = "1048576"
    out = _ISO_TIME.sub(r"\1 \2", out)  # "1970-01-01t00:00:01z" = "1970-01-01 00:00:01"
    out = TINY.sub(lambda m: "sci{:g}e{}".format(*mantissa_exponent(float(m.group(0)))), out)  # 0.000000001 = 1e-09
    out = re.sub(r"\b(\d{1,2})00s\b", lambda m: f"century{int(m.group(1)) + 1}", out)
    return re.sub(r"(?<=\d)\s*\.\.\.?\s*(?=\d)", " to ", out)


def _years_for(answer: str, expected: str) -> str:
    """An abbreviated year ("April of '91") read as the expected answer's year it abbreviates (1991)."""
    for year in set(re.findall(r"\b(1\d{3}|20\d{2})\b", expected)):
        answer = re.sub(rf"(?<!\w)['\u2019]{year[2:]}\b", year, answer)
    return answer


def _abbreviated(answer: str, expected: str) -> bool:
    """Names with leading words shortened to initials: "E. coli" for "Escherichia coli", "J. Smith" for "John
    Smith". The last word is always written out."""
    words = expected.split()
    if len(words) < 2 or not all(w.isalpha() for w in words):
        return False
    parts = [rf"(?:{re.escape(w)}|{re.escape(w[0])}\.?)" if len(w) > 2 else re.escape(w) for w in words[:-1]]
    pattern = r"(?<!\w)" + r"\s*".join(parts) + r"\s*" + re.escape(words[-1]) + r"(?!\w)"
    return re.search(pattern, answer.lower()) is not None


def _compact(text: str) -> str:
    """Hyphens and spaces inside names dropped: "UTF-8" = "utf8", "HR-400" = "HR 400"."""
    return re.sub(r"(?<=[a-z0-9])-(?=[a-z0-9])|(?<=[a-z])\s(?=\d)", "", text)


def _contains(a: str, e: str) -> bool:
    return re.search(r"(?<!\w)" + re.escape(e) + r"(?!\w)", a) is not None


def _list_items(expected: str) -> list[str]:
    """The parts of a list; a part that tells to run or use something is stated by naming it ("run 'gzip -V'")."""
    items = [normalize_text(x) for x in re.split(r",|;|\band\b|\bor\b|&|/", expected)]
    return [re.sub(r"^(?:run|use|type|pass|call)\s+(?=\S)", "", x) for x in items if x]


_STOP = set(
    "a an the of in on at to for from by with and or is are was were be been being it its this that these those as "
    "what which who whom when where how why does do did has have had not no any there their they them than then so "
    "such can could would should will may might must also only just about into over under per his her he she we i "
    "you your our my me us".split()
)


_DIGIT = re.compile(r"[0-9]")
_TOKEN = re.compile(r"[a-z0-9][a-z0-9.\-]*[a-z0-9]|[a-z0-9]")
_OPTION = re.compile(r"(?<![\w-])-[A-Za-z](?![\w-])")  # a short option, whose one letter the words leave out


def content_words(text: str) -> set[str]:
    """Content words at a 5-letter prefix ("fortifying" and "fortify" meet), and every token holding a digit whole
    ("q2", "2023", "hr-400", "4.3.1"); number words count as digits."""
    words = _TOKEN.findall(normalize_text(digits(text)))
    return {w if _DIGIT.search(w) else w[:5] for w in words if w not in _STOP and (len(w) > 2 or w.isdigit())}


def _by_words(answer: str, expected: str, question: str, share: float) -> Match:
    """The words of `expected` that the question does not already hold, most of them (`share`, all of one or two)
    in the answer, in any order: "Sultan Suleiman, known as 'the Magnificent'" states "Suleiman the Magnificent"."""
    if len(expected.split()) == 1 and re.search(r"[/_.:=]", expected.strip(".,;")):
        return Match(False, "")  # an identifier or a path ("Games/Blocks") is matched whole, never by its parts
    need = content_words(expected) - content_words(question)
    if not need:
        return Match(False, "")
    got = len(need & content_words(answer))
    required = len(need) if len(need) <= 2 else math.ceil(share * len(need))
    return Match(True, "words") if got >= required else Match(False, "")


def answer_matches(answer: str, expected: str, question: str = "", share: float = 0.75) -> Match:
    """Does `answer` state `expected`? Tries exact, contains, dates, numbers with their units, list items, then the
    expected answer's words that the question does not hold (`share` of them)."""
    m = _structured_match(answer, expected)
    if m.matched or m.how == "no":
        return Match(m.matched, m.how if m.matched else "")
    return _by_words(answer, expected, question, share)


def _structured_match(answer: str, expected: str) -> Match:
    """Exact, contains, dates, versions, numbers, lists; how="no" when the expected value's structure (a date, a
    version) rules the answer out, so that words alone cannot match it."""
    answer = _years_for(answer, expected)
    wanted, named = set(_OPTION.findall(re.sub(r"\([^()]*\)", " ", expected))), set(_OPTION.findall(answer))
    if wanted - named and named - set(_OPTION.findall(expected)):  # "gzip -v" in the place of "gzip -V"
        return Match(False, "no")
    token = expected.strip().strip("`")
    if " " not in token and cased(token) and answer != answer.lower() and token not in answer:
        if token.lower() in answer.lower():  # "-Lexpat" for "-lexpat", "BZH" for "BZh": code whose case is part of it
            return Match(False, "no")  # (a clause already lower-cased for reading says nothing of case)
    if " " not in token and re.search(r"\w[_:]|[_:]\w", token):  # an identifier (`_apt`, `APT::Sandbox`): as written
        found = re.search(r"(?<![\w:])" + re.escape(token.lower()) + r"(?![\w:])", answer.lower())
        return Match(True, "contains") if found else Match(False, "no")
    a, e = normalize_text(answer), normalize_text(expected)
    if not e:
        return Match(False, "")
    if _abbreviated(answer, e):
        return Match(True, "contains")
    if a == e:
        return Match(True, "exact")
    if _contains(a, e):
        return Match(True, "contains")
    answer_c, expected_c = _canonical(answer), _canonical(expected)
    ca, ce = normalize_text(answer_c), normalize_text(expected_c)
    if ce and (_contains(ca, ce) or _contains(_compact(ca), _compact(ce))):
        return Match(True, "contains")
    if re.fullmatch(r"[0-9a-f]*[a-f][0-9a-f]*", e) and _contains(a, "0x" + e):  # "0xFFFFFFFF" for "ffffffff"
        return Match(True, "contains")
    exp_dates = dates(expected_c)
    if exp_dates:  # a time of day beside a date is part of it ("2106-02-07 06:28:15" is not "... 06:28:16")
        same = set(exp_dates) <= set(dates(answer_c)) and _clocks(expected_c) <= _clocks(answer_c)
        return Match(True, "date") if same else Match(False, "no")
    exp_months = months(expected_c)
    if exp_months:
        return Match(True, "date") if set(exp_months) <= set(months(answer_c)) else Match(False, "no")
    exp_versions = versions(expected_c)
    if exp_versions and not set(exp_versions) <= set(versions(answer_c)):
        return Match(False, "no")
    if _code_match(answer, expected):
        return Match(True, "code")
    # numbers decide a value that is essentially a quantity, not a long span that happens to hold one
    short = len(content_words(re.sub(r"[\d.,$%]+", " ", expected_c)) - set(_UNITS) - set(_SCALE)) <= 2
    if short and _numeric_match(answer_c, expected_c) and _named(answer, expected):
        return Match(True, "numeric")
    items = _list_items(expected_c)
    if len(items) > 1 and all(_contains(ca, x) or _numeric_match(answer_c, x) for x in items):
        return Match(True, "list")
    return Match(False, "")


_CODE = re.compile(r"`([^`\n]+)`")


def _code_match(answer: str, expected: str) -> bool:
    """An expected answer whose value is code ("examine the `.http_version` property") is stated by that code, in
    backticks or not ("`response.http_version`"). With several code spans the relation between them is the answer
    ("`RUST_BACKTRACE` set to anything except `0`"): code alone does not decide it."""
    spans = [c.strip().strip(".") for c in _CODE.findall(expected)]
    if len(spans) != 1 or not spans[0] or len(expected) - len(spans[0]) > 60:
        return False
    return re.search(r"(?<![\w-])" + re.escape(spans[0].lower()) + r"(?![\w-])", answer.lower()) is not None


_NAME = re.compile(r"(?<![\w.-])(?:[A-Z]{2,}[\w-]*|[A-Za-z]+[A-Z][\w-]*)(?![\w-])")  # "EIPP", "HR-400", "iOS"


def _named(answer: str, expected: str) -> bool:
    """The names beside an expected number are part of the value ("EIPP 0.1" is not stated by "EDSP 0.1"): each
    one is in the answer, as written (case aside). Units ("MiB", "KB") are no names."""
    names = [n for n in _NAME.findall(expected) if n.lower() not in _UNITS and n.lower() not in _SCALE]
    low = answer.lower()
    return all(re.search(r"(?<![\w-])" + re.escape(n.lower()) + r"(?![\w-])", low) for n in names)


def _numeric_match(answer: str, expected: str) -> bool:
    """Every number of `expected` is in `answer`: with a unit, as the same quantity in any unit of its kind ("5 s" =
    "5000 ms", never "5 minutes") or bare; without one, as the same value with scale words applied ("$12.4M")."""
    exp_nums = numbers(expected)
    if not exp_nums:
        return False
    got, got_q = numbers(answer), quantities(answer)
    with_unit = [(raw, value, unit) for raw, value, unit in quantities(expected) if unit and unit != "%"]
    for raw, value, unit in with_unit:
        if not any((u == unit and _same(value, v)) or (u == "" and _same(raw, r)) for r, v, u in got_q):
            return False
    plain = [x for x in exp_nums if not any(_same(x, raw) for raw, _, _ in with_unit)]
    return all(any(_same(x, y) for y in got) for x in plain)
