"""Physical quantities as dimensions: a value with its unit read into one unit system, so "60,000 ft" equals
"18.3 km", "300 K" differs from "300 °F" and "0.5 bp" from "0.5 pt" (a PostScript point is 1/72 in, a TeX point
1/72.27 in). The units are those technical and reference documents use: length (metric, imperial, typographic),
temperature, speed, mass and resolution. Time, data sizes and frequencies are read by ragpipe.reading.match."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragpipe.reading.notation import with_carets

INCH = 0.0254
# name -> (dimension, factor to the base unit, offset added after the factor)
UNITS: dict[str, tuple[str, float, float]] = {}


def _add(dimension: str, factor: float, *names: str, offset: float = 0.0) -> None:
    for n in names:
        UNITS[n] = (dimension, factor, offset)


_add("length", 1e-9, "nm", "nanometer", "nanometers", "nanometre", "nanometres")
_add("length", 1e-6, "\u00b5m", "um", "micrometer", "micrometers", "micron", "microns")
_add("length", 1e-3, "mm", "millimeter", "millimeters", "millimetre", "millimetres")
_add("length", 1e-2, "cm", "centimeter", "centimeters", "centimetre", "centimetres")
_add("length", 1.0, "m", "meter", "meters", "metre", "metres")
_add("length", 1e3, "km", "kilometer", "kilometers", "kilometre", "kilometres")
_add("length", INCH, "in", "in.", "inch", "inches", '"')
_add("length", 0.3048, "ft", "foot", "feet", "'")
_add("length", 0.9144, "yd", "yard", "yards")
_add("length", 1609.344, "mi", "mile", "miles")
_add("length", 1852.0, "nmi", "nautical mile", "nautical miles")
_add("length", INCH / 72.27, "pt", "point", "points", "tex point", "tex points")
_add("length", INCH / 72, "bp", "big point", "big points", "postscript point", "postscript points")
_add("length", INCH / 6, "pc", "pica", "picas")
_add("temperature", 1.0, "k", "kelvin", "kelvins")
_add("temperature", 1.0, "\u00b0c", "\u2103", "degrees c", "degrees celsius", "celsius", offset=273.15)
_add("temperature", 5 / 9, "\u00b0f", "\u2109", "degrees f", "degrees fahrenheit", "fahrenheit", offset=255.3722222)
_add("speed", 1.0, "m/s", "meters per second", "metres per second")
_add("speed", 1 / 3.6, "km/h", "kph", "kmh", "kilometers per hour", "kilometres per hour")
_add("speed", 0.44704, "mph", "miles per hour")
_add("speed", 0.514444, "kn", "knot", "knots")
_add("mass", 1e-6, "mg", "milligram", "milligrams")
_add("mass", 1e-3, "g", "gram", "grams")
_add("mass", 1.0, "kg", "kilogram", "kilograms")
_add("mass", 1e3, "t", "tonne", "tonnes", "metric ton", "metric tons")
_add("mass", 0.45359237, "lb", "lbs", "pound", "pounds")
_add("mass", 0.028349523, "oz", "ounce", "ounces")
_add("resolution", 1 / INCH, "dpi", "dots per inch", "ppi", "pixels per inch")
_add("resolution", 100.0, "dpcm", "dots per cm", "dots/cm", "dots per centimeter", "dots per centimetre")

_NUMBER = r"(?<![\w./])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?:\s*(?:[x\u00d7*]\s*10\s*\^\s*[-\u2212+]?\d+|e[-+]?\d+))?)"
_NAMES = "|".join(re.escape(n) for n in sorted(UNITS, key=len, reverse=True))
_MEASURE = re.compile(_NUMBER + r"\s?(" + _NAMES + r")(?![\w/])", re.IGNORECASE)
SAME = 0.02  # values within 2 % are the same quantity (a conversion rounds)


@dataclass(frozen=True)
class Measure:
    raw: float  # the number as written
    unit: str  # the unit as written, lower-cased
    dimension: str
    base: float  # in the base unit of its dimension (m, K, m/s, kg, dots per m)
    start: int
    end: int
    step: float = 0.0  # the last written digit's place ("18.3" -> 0.1): how far a rounded conversion may be off
    text: str = ""  # as written (superscript exponents with carets)

    def kind(self) -> tuple[str, float, float]:
        """The unit as a unit ("ft" and "feet" are one)."""
        return UNITS[self.unit]


def measures(text: str) -> list[Measure]:
    """Every number with a unit of the table, in order ("6 × 10^4 ft" is 60,000 ft)."""
    out = []
    text = with_carets(text)  # "10\u2074" as "10^4"
    for m in _MEASURE.finditer(text):
        unit = m.group(2).lower()
        if unit in ("'", '"', "in", "t", "m", "g", "k", "pt") and not _unit_plausible(text, m):
            continue
        raw = _value(m.group(1))
        dimension, factor, offset = UNITS[unit]
        digits = re.search(r"\.(\d+)", m.group(1).split("e")[0].split("x")[0])
        step = 10.0 ** -len(digits.group(1)) if digits else 1.0
        out.append(Measure(raw, unit, dimension, raw * factor + offset, m.start(), m.end(), step, m.group(0)))
    return out


def _value(number: str) -> float:
    n = re.sub(r"\s+", "", number.replace(",", "").replace("\u2212", "-")).lower()
    m = re.fullmatch(r"([\d.]+)[x\u00d7*]10\^([-+]?\d+)", n)
    return float(m.group(1)) * 10 ** int(m.group(2)) if m else float(n)


def _unit_plausible(text: str, m: re.Match[str]) -> bool:
    """A one-letter or ambiguous unit counts only written right after its number ("5 m", "12pt"), never as the
    next word ("5 in the list", "3 m of them" read as a quantity only when nothing letter-like follows)."""
    unit = m.group(2)
    after = text[m.end() : m.end() + 3]
    if unit.lower() == "in":
        return bool(re.match(r"\.|\s*(?:\)|,|;|$|\(|x\b|\u00d7)", after)) or after == ""
    return not re.match(r"\s+[a-z]", after) or unit.lower() in ("pt", "m", "g", "k")


def same(a: float, b: float) -> bool:
    return abs(a - b) <= SAME * max(abs(a), abs(b), 1e-12)


def equal(g: Measure, w: Measure) -> bool:
    """Is `g` the quantity `w`? In the same unit, the same number; in another, `w` converted and rounded as `g` is
    written (half its last digit, and 0.5 % more). The same number in another unit is another quantity."""
    if g.dimension != w.dimension:
        return False
    if g.kind() == w.kind():
        return same(g.raw, w.raw)
    if g.raw == w.raw:
        return False
    _, factor, offset = g.kind()
    converted = (w.base - offset) / factor  # w in g's unit
    return abs(converted - g.raw) <= g.step / 2 + 0.005 * abs(converted)


def wrong_unit(answer: str, expected: str) -> str | None:
    """The expected quantity's number written with another unit that makes it another quantity ("300 K" for
    "300 °F", "0.5 pt" for "0.5 bp"), and the right one nowhere: that measure, as written."""
    want = measures(expected)
    got = measures(answer)
    for w in want:
        if any(equal(g, w) for g in got):
            continue
        for g in got:
            if same(g.raw, w.raw) and g.kind() != w.kind():
                return g.text
    return None


def conversions(answer: str, expected: str) -> tuple[list[str], list[str]]:
    """Measures of an expected one's dimension in another unit: (right conversions, anywhere; wrong ones, within 60
    characters of an expected value as written and equal to none), as written. "60,000 ft (about 18.3 km)" adds a
    right one; the expected answer's own quantities ("1 bp = 1/72 inch") are no conversions of each other."""
    want = measures(expected)
    got = measures(answer)
    stating = [g for g in got for w in want if g.kind() == w.kind() and same(g.raw, w.raw)]
    right: list[str] = []
    wrong: list[str] = []
    for g in got:
        kin = [w for w in want if w.dimension == g.dimension and w.kind() != g.kind()]
        if g in stating or not kin or any(w.kind() == g.kind() for w in want):
            continue  # another value in an expected unit is another fact ("the maximum is 5 m"), not a conversion
        if any(equal(g, w) for w in kin):
            right.append(g.text)  # an expected value in another unit, wherever it stands
        elif any(
            abs(g.start - s.end) <= 60 or abs(s.start - g.end) <= 60 for s in stating if s.dimension == g.dimension
        ):
            wrong.append(g.text)
    return right, wrong


def states_converted(answer: str, expected: str) -> bool:
    """Every measure of the expected answer is in the answer, in some unit of its dimension."""
    want = measures(expected)
    got = measures(answer)
    return bool(want) and all(any(equal(g, w) for g in got) for w in want)


# Words that name what a number counts or measures, by kind ("ms" and "milliseconds" are one): a unit an answer
# puts after the expected number must be the expected answer's, or one the retrieved text puts with that number.
_COUNTED = {
    w: kind
    for kind, words in {
        "ms": "ms msec millisecond milliseconds",
        "s": "s sec secs second seconds",
        "min": "min mins minute minutes",
        "h": "h hr hrs hour hours",
        "day": "day days",
        "week": "week weeks",
        "month": "month months",
        "year": "year years yr yrs",
        "bit": "bit bits",
        "byte": "byte bytes octet octets",
        "kb": "kb kib kbyte kbytes kilobyte kilobytes",
        "mb": "mb mib mbyte mbytes megabyte megabytes",
        "gb": "gb gib gbyte gbytes gigabyte gigabytes",
        "px": "px pixel pixels",
        "pt": "pt pts point points",
        "bp": "bp",
        "char": "char chars character characters column columns line lines row rows",
        "digit": "digit digits",
        "percent": "% percent pct",
        "degree": "\u00b0 degree degrees deg",
        "word": "word words",
    }.items()
    for w in words.split()
}
_COUNT = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s?(%|\u00b0|[A-Za-z]+)?")


def _counted(text: str) -> list[tuple[float, str | None, int]]:
    """(number, the kind of unit written right after it or None, offset) for every number of `text`."""
    out = []
    for m in _COUNT.finditer(text):
        try:
            value = float(m.group(1).replace(",", ""))
        except ValueError:
            continue
        out.append((value, _COUNTED.get((m.group(2) or "").lower()), m.start()))
    return out


def _kinds_near(text: str, at: int) -> set[str]:
    """The kinds of unit named within 60 characters of offset `at`, in its own sentence."""
    before = re.split(r"[.!?;]\s", text[max(0, at - 60) : at])[-1]
    after = re.split(r"[.!?;](?:\s|$)", text[at : at + 60])[0]
    return {_COUNTED[w] for w in re.findall(r"%|\u00b0|[a-z]+", (before + after).lower()) if w in _COUNTED}


def foreign_unit(answer: str, expected: str, question: str, source: str) -> tuple[str, bool] | None:
    """The expected number written with a unit that makes it another quantity ("9 pixels" for "9 points", "17 bits"
    for "17 digits"), or with a unit the expected answer does not give and the retrieved text never puts near that
    number ("10 pt" for a unitless "10.0"): (the number and unit as written, whether the expected answer names
    another unit). A length, temperature, speed or mass in another unit of its kind is a conversion, read by
    `conversions`; a unit the question names is the question's."""
    want: dict[float, str | None] = {}
    for n, kind, _ in _counted(expected):  # "500 lines (set history size 500)": the number's unit where it has one
        want[n] = want.get(n) or kind
    asked = {_COUNTED[w] for w in re.findall(r"%|\u00b0|[a-z]+", question.lower()) if w in _COUNTED}
    for m in _COUNT.finditer(answer):
        unit = (m.group(2) or "").lower()
        kind, value = _COUNTED.get(unit), float(m.group(1).replace(",", ""))
        if kind is None or value not in want or want[value] == kind or kind in asked:
            continue
        theirs = want[value]
        if theirs is not None:
            if unit in UNITS and any(
                UNITS.get(u, ("",))[0] == UNITS[unit][0] for u, k in _COUNTED.items() if k == theirs
            ):
                continue  # "9 bp" for "9 pt": wrong_unit's to read
            if any(n == value and k == kind for n, k, _ in _counted(source)):
                continue  # the retrieved text writes the number with this unit too
            return m.group(0).strip(), True
        if not any(n == value and (k == kind or kind in _kinds_near(source, at)) for n, k, at in _counted(source)):
            return m.group(0).strip(), False
    return None
