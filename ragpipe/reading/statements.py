"""An answer cut into the claims it makes about its subject: sentences, list items, table cells and JSON fields,
markup and citation marks taken off. Framing is no claim: courtesy ("Thanks for reaching out!", "Hope this helps"),
talk about the sources or the question ("Based on the documents, here is the answer") and a bare label."""

from __future__ import annotations

import re

from ragpipe.reading.forms import unwrap
from ragpipe.reading.premises import keys, sentences

_MARKS = re.compile(r"\*\*|__|(?<!\w)[*_](?=\w)|(?<=\w)[*_](?!\w)|`")
_CITES = re.compile(
    r"\s*(?:\[(?:\d+|[A-Za-z]?\d+)(?:\s*[,\u2013-]\s*\d+)*\]|\((?:source|sources|see|passage|passages|p)\b[^)]*\))",
    re.I,
)
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)]|#+)\s+")
_COURTESY = re.compile(
    r"^\W*(?:and\s+|please\s+|so\s+|ok(?:ay)?,?\s+)?(?:let\s+me|let's|i'll|i\s+will|first,?\s+i|thanks?|thank\s+you|hope\s+(?:this|that|it)\s+helps?|let\s+me\s+know|feel\s+free|happy\s+to\s+help|"
    r"great\s+question|good\s+question|hello|hi|hey|sure|certainly|of\s+course|if\s+you\s+(?:have|need)|glad\s+to|reach\s+out|further\s+questions|anything\s+else|"
    r"here(?:'s|\s+is)\s+(?:the|what|a)|i\s+(?:checked|looked|searched|reviewed)|"
    r"(?:kind|best|warm|warmest)\s+regards|regards|sincerely|cheers|best\s+wishes|all\s+the\s+best|"
    r"have\s+a\s+(?:great|good|nice|wonderful|lovely)\s+(?:day|week|weekend|evening))\b",
    re.I,
)
# an offer of further help, anywhere in the sentence: "if it matters, I'd be happy to escalate this to our team"
_OFFER = re.compile(
    r"\b(?:happy|glad|able)\s+to\s+(?:escalate|help|assist|check\s+further|look\s+further)|\bescalate\s+(?:this|it|your)\b|"
    r"\b(?:open|file|raise)\s+a\s+(?:ticket|request|support\s+case)\b",
    re.I,
)
_FRAMING_WORDS = frozenset(
    "answer answers question questions document documents docs documentation text texts passage passages source "
    "sources context provided retrieved based according say says said state states stated mention mentions "
    "mentioned give gives given find found look looked see shown show shows help helps here following note "
    "short final summary yes sure certainly".split()
)


# a letter's closing: it and what follows it (a name, a team, a title) say nothing of the subject
_SIGNOFF = re.compile(
    r"^\W*(?:(?:kind|best|warm|warmest)\s+regards|regards|sincerely|yours\s+(?:truly|sincerely)|cheers|best\s+wishes|"
    r"all\s+the\s+best|best)\b\W*(?:,|$)",
    re.I,
)


def signed_from(clauses: list[str]) -> int:
    """Where the closing of a letter starts among the answer's clauses ("Kind regards, Customer Support"), or
    len(clauses) when there is none: clauses from there on are its signature."""
    return next((i for i, c in enumerate(clauses) if _SIGNOFF.search(c)), len(clauses))


def plain(text: str) -> str:
    """Markup and citation marks off: **bold**, `code`, [1], (source: passage 2)."""
    return " ".join(_MARKS.sub("", _CITES.sub("", text)).split())


def framing(sentence: str) -> bool:
    """Courtesy or talk about answering ("Let me read the passages first"), in a sentence that opens with it and
    holds no number or code, or words about the sources and the question only: nothing said of the subject."""
    if not keys(sentence) - _FRAMING_WORDS:
        return True
    return bool(_COURTESY.search(sentence) or _OFFER.search(sentence)) and not re.search(r"\d|`", sentence)


def claims_of(answer: str, shortest: int = 3) -> list[str]:
    """The answer's claims in order: one per sentence, list item or table row, framing left out. A table row is
    read as its cells joined; a "Label: value" line keeps its label ("Default: 4 bytes"). A part of fewer than
    `shortest` words ("Maybe.") is left out: too short to read against a text, though it may change what the answer
    claims (a review decision's key keeps every part)."""
    out: list[str] = []
    for _ in range(3):  # an answer in JSON, also as the value of a JSON field
        answer, before = unwrap(answer), answer
        if answer == before:
            break
    for line in answer.splitlines():
        line = line.strip()
        if not line or re.fullmatch(r"\|?[\s:|-]+\|?", line):
            continue
        if line.startswith("|"):
            line = ", ".join(c.strip() for c in line.strip("|").split("|") if c.strip())
        line = _BULLET.sub("", line)
        for s in (part for sentence in sentences(plain(line)) for part in re.split(r";\s+", sentence)):
            s = s.strip(" -:")
            if len(s.split()) >= shortest and not framing(s):
                out.append(s)
    return out
