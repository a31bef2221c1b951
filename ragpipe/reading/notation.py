"""Scientific notation as people type it: its written forms, the decimal each stands for, and where it stands in a
text (ragpipe.reading.match compares values through these; ragpipe.reading.grounding grounds them as one value);
powers of other bases and hexadecimal literals as decimals; and code whose case is part of how it is written ("-l" is
not "-L")."""

from __future__ import annotations

import re

# Scientific notation in its written forms: "1e-09", "10^-9", "10**-9", "1.5 x 10^3", "2.5 \u00d7 10^-3",
# "2.5*10^-3", "10\u207b\u2079", "10 to the 6th (power)", "3 times 10 to the power of 4".
_SUPER = str.maketrans("\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079", "-0123456789")
SCI = re.compile(
    r"(?<![\w.])(?:(\d+(?:\.\d+)?)\s*(?:x|\u00d7|\*|times)\s*)?10\s*(?:\^|\*\*)\s*([+-]?\d+)(?![\w.])|"
    r"(?<![\w.])(\d+(?:\.\d+)?)e([+-]?\d+)(?![\w.])|"
    r"(?<![\w.])(?:(\d+(?:\.\d+)?)\s*(?:x|\u00d7|\*|times)\s*)?10 to the (?:power of )?([+-]?\d+)(?:st|nd|rd|th)?"
    r"(?: power)?(?![\w.])",
    re.IGNORECASE,  # "2.5E-3", "2.5 X 10^-3"
)
TINY = re.compile(r"(?<![\w.])0\.0{3,}\d+(?![\w.])")  # a decimal with four or more leading zeros


def mantissa_exponent(value: float) -> tuple[float, int]:
    mantissa, exponent = f"{value:e}".split("e")
    return float(mantissa), int(exponent)


_SUPERSCRIPT_EXPONENT = re.compile(r"10([\u207b\u2070\u00b9\u00b2\u00b3\u2074-\u2079]+)")


def with_carets(text: str) -> str:
    """Superscript exponents written with a caret, as the same notation in plain characters: "10\u207b\u00b3" ->
    "10^-3" (Unicode normalization would make it "10\u22123", a subtraction)."""
    if "10" not in text:
        return text
    return _SUPERSCRIPT_EXPONENT.sub(lambda m: "10^" + m.group(1).translate(_SUPER), text)


def notations(text: str) -> list[tuple[int, int, float]]:
    """(start, end, value) of each value written in scientific notation in `text` (superscript exponents: through
    with_carets first), or as a power of another base or in hexadecimal: "2.5 x 10^-3 m" gives (0, 11, 0.0025),
    "2^20" (0, 4, 1048576.0)."""
    out = []
    for m in SCI.finditer(text):
        mantissa, exponent = _parts(m)
        # written as a float literal: "719483e547" (a commit hash in release notes) is inf, not an OverflowError
        out.append((m.start(), m.end(), float(f"{mantissa}e{exponent}")))
    out += [(m.start(), m.end(), float(other_bases(m.group(0)))) for p in (_POWER, _HEX) for m in p.finditer(text)]
    return sorted(out)


def _parts(m: re.Match[str]) -> tuple[str, int]:
    """(mantissa as written, exponent) of a SCI match: "10^-9" has the mantissa 1."""
    return m.group(1) or m.group(3) or m.group(5) or "1", int(m.group(2) or m.group(4) or m.group(6))


def as_decimal(m: re.Match[str]) -> str:
    """A value in scientific notation as the decimal it equals ("2.5 x 10^-3" -> "0.0025", "6 x 10^4" -> "60000"), so it
    meets the same value written out; a value so small that its decimal has four or more leading zeros stays a
    notation token, the form such a decimal takes too (TINY), and so does an exponent beyond 30."""
    from decimal import Decimal

    mantissa, exponent = _parts(m)
    if abs(exponent) > 30:  # no quantity a document states; written out it would be hundreds of digits ("3e19816")
        return f"sci{mantissa}e{exponent}"
    value = Decimal(mantissa).scaleb(exponent)
    if value != 0 and abs(value) < Decimal("0.0001"):
        return f"sci{float(mantissa):g}e{exponent}"
    return format(value.normalize(), "f")


# "2^20", "2**20", "2^{32}", "2^16 - 1"
_POWER = re.compile(
    r"(?<![\w.])([2-9])\s*(?:\^|\*\*)\s*\{?(\d{1,2})\}?(?:\s*[-\u2212]\s*(1)(?!\w|\.\d|\s*[\^*]))?(?!\w|\.\w)"
)
_HEX = re.compile(r"(?<![\w.])0[xX]([0-9a-fA-F]{2,16})(?!\w|\.\w)")  # "0x100000", "0xFFFFFFFF"


def other_bases(text: str) -> str:
    """Powers of a base other than 10 and hexadecimal literals as the decimals they equal: "2^20" and "0x100000"
    -> "1048576" (powers of 10 are SCI's)."""
    text = _POWER.sub(lambda m: str(int(m.group(1)) ** int(m.group(2)) - int(m.group(3) or 0)), text)
    return _HEX.sub(lambda m: str(int(m.group(1), 16)), text)


def cased(token: str) -> bool:
    """Is the token's case part of it: a short option ("-l" is not "-L"), a format specifier ("%x" is not "%X") or a
    word with capitals after its first letter and small letters too ("BZh", "XML_SetHashSalt")? "Scandinavia" and
    "GLP_ON" are read in any case."""
    letters = re.sub(r"[^A-Za-z]", "", token[1:])
    written = re.fullmatch(r"-[A-Za-z][\w-]*|%[A-Za-z]", token)
    return bool(written) or (letters != letters.lower() and letters != letters.upper())


_OPT = r"(?<![\w-])--?[A-Za-z\d][\w-]*"
_SPELLINGS = re.compile(  # "-s (--strict)", "-q (long form --quiet)", "--norc (short form -f)", "-n, --name=NAME"
    rf"\s*({_OPT})(?:=\S*)?\s*(?:[,/]|\(\s*(?:(?:long|short)\s+form:?\s*)?)\s*({_OPT})(?:=\S*)?\s*\)?\s*"
)
# two spellings given as one option: "--mathlib, the short form is -m", "-s / --strict", "-V (long form: --version)"
_PAIRED = re.compile(
    rf"({_OPT})\s*(?:[,/(]|\bor\b)?\s*(?:(?:the\s+)?(?:short|long)\s+(?:form|option)\s*(?:is\s+)?:?\s*)?({_OPT})"
)
_DENIED = re.compile(r"\bno\s+(?:short|long)\s+(?:form|option|version|equivalent|alias)", re.I)


def spellings(expected: str) -> list[str]:
    """The two spellings, short and long, of the one command-line option an expected answer names ("-s (--strict)",
    "-n, --name=NAME" -> ["-s", "--strict"], ["-n", "--name"]); [] for anything else. Either names the option."""
    m = _SPELLINGS.fullmatch(expected)
    if not m or m.group(1).startswith("--") == m.group(2).startswith("--"):
        return []
    return [m.group(1), m.group(2)]


def misnamed(answer: str, expected: str) -> str | None:
    """Why the answer does not name the option the expected answer spells two ways, or None when it does (or the
    expected answer is no such option): no spelling stands alone ("--strict-time"), another spelling is paired with
    one ("--mathlib, the short form is -m"), or one is denied ("there is no short option")."""
    both = spellings(expected)
    if not both:
        return None
    if not any(re.search(rf"(?<![\w-]){re.escape(s)}(?![\w-])", answer) for s in both):
        return f"names neither {both[0]!r} nor {both[1]!r} on its own"
    denied = _DENIED.search(answer)
    if denied:
        return f"says there is {denied.group()!r}"
    for m in _PAIRED.finditer(answer):
        a, b = m.group(1), m.group(2)
        if (a in both) != (b in both) and a.startswith("--") != b.startswith("--"):
            return f"pairs {a!r} with {b!r}"
    return None
