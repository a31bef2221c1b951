"""The reading's shortcuts skip work only where it could find nothing: with them, every answer reads exactly as the
grammar reads it without them (the refusal grammar's word every rule needs, the contractions' texts, the number
words' rewrites), on every recorded answer of the repository and on generated ones."""

from __future__ import annotations

import json
import re
import unicodedata

import pytest
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

from ragpipe.core import normalize_text
from ragpipe.core.text import FOLD, fold
from ragpipe.reading import content_words, is_refusal
from ragpipe.reading import match as M
from ragpipe.reading import refusal as R
from ragpipe.reading.notation import with_carets


def recorded_texts() -> list[str]:
    """Every answer, expected answer and question the repository records (traces, first-contact sets)."""
    out: set[str] = set()
    files = [*(ROOT / "tests/fixtures/traces").glob("*.jsonl"), *(ROOT / "bench/data/first_contact").rglob("*.jsonl")]
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            out |= {obj[k] for k in ("answer", "expected_answer", "question") if isinstance(obj.get(k), str)}
    return sorted(out)


TEXTS = recorded_texts()


def reference_prepare(text: str) -> str:
    t = unicodedata.normalize("NFKC", with_carets(text)).lower()
    t = t.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    t = R._MARKUP.sub(" ", t)
    for p, repl, _texts in R._CONTRACTIONS:  # every pattern, always
        t = re.sub(p, repl, t)
    return R._BLANKS.sub(" ", t)


def reference_refuses(clause: str) -> bool:
    if R._CONDITION.search(clause):
        return False
    if R._APOLOGY.search(clause) and R._NEGATION.search(clause):
        return True
    return any((m := rule.search(clause)) and not R._IN_CONDITION.search(clause[: m.start()]) for rule in R._REFUSAL)


def reference_is_refusal(answer: str) -> bool:
    text = re.sub(r"(?<=[^\s.!?:;|])[ \t]*\n(?![ \t]*(?:[-*+\u2022#|>]|\d+[.)]\s|\n))", " ", answer)
    t = re.sub(r"(?<=\d)\.(?=\d)", "\u2024", reference_prepare(text))
    clauses = [
        re.sub(r"^(?:[-+\u2022]|\d+[.)])\s+", "", part.replace("\u2024", ".").strip(" ,.:"))
        for sentence in R._SENTENCE.split(t)
        for part in R._PART.split(sentence)
    ]
    return any(reference_refuses(c) for c in clauses if c and re.search(r"\w", c))


def reference_normalize(text: str) -> str:
    t = unicodedata.normalize("NFKC", text).lower().translate(FOLD)
    t = re.sub(r"[\"'`*_()\[\]{}]", " ", t)
    t = re.sub(r"(?<!\d)[.,;:!?](?!\d)", " ", t)
    return " ".join(t.split())


def reference_digits(text: str) -> str:
    from text_to_num import alpha2digit

    protected = M.protect_scales(text)  # always, where digits() skips texts it cannot change
    out = alpha2digit(protected, "en", threshold=0)
    out = re.sub(r"scaleword(million|billion|trillion|thousand)", r"\1", out)
    out = re.sub(r"(\d)\s+2nd\b", r"\1 second", out)
    out = re.sub(r"\b(\d+)\s+and\s+a\s+half\b", lambda m: f"{m.group(1)}.5", out)
    return re.sub(r"\bhalf\s+an?\s+(million|billion|hour|minute|day|year)\b", r"0.5 \1", out)


def test_the_recorded_texts_are_many_and_hold_refusals() -> None:
    assert len(TEXTS) > 2000
    assert sum(map(is_refusal, TEXTS)) > 300  # the shortcut is not tested on statements only


def test_every_recorded_text_reads_as_the_grammar_without_shortcuts_reads_it() -> None:
    for text in TEXTS:
        assert R.prepare(text) == reference_prepare(text), text
        assert is_refusal(text) == reference_is_refusal(text), text
        assert M.digits(text) == reference_digits(text), text
        assert normalize_text(text) == reference_normalize(text), text
        assert fold(text) == text.translate(FOLD), text


def test_a_clause_any_refusal_rule_matches_holds_a_word_the_shortcut_looks_for() -> None:
    clauses = [c for text in TEXTS for c in R.clauses(text)]
    ruled = [
        c
        for c in clauses
        if any(rule.search(c) for rule in R._REFUSAL) or (R._APOLOGY.search(c) and R._NEGATION.search(c))
    ]
    assert len(ruled) > 300
    assert [c for c in ruled if not R._MAY_REFUSE.search(c)] == []


@pytest.mark.parametrize(
    "answer",
    [
        "The report does not say.", "There is no mention of it.", "It is never stated.",
        "None of the passages mention it.", "The context neither states it.", "Nor does it say so in the text.",
        "Without information on that.", "Nowhere stated.", "Insufficient data.", "A lack of data.",
        "The text lacks details.", "Unable to determine.", "Impossible to say.", "Unknown.", "Unanswerable.",
        "Undetermined.", "Unspecified.", "Unstated.", "Undisclosed.", "Outside the scope.", "Beyond the scope.",
        "N/A", "null", "I have nothing on that.",
    ],
)  # fmt: skip
def test_each_word_the_shortcut_looks_for_is_the_only_one_of_some_refusal(answer: str) -> None:
    """One refusal per word of the shortcut, holding no other: a word left out of it would lose this refusal."""
    t = R._prepared_text(answer)
    assert len(R._MAY_REFUSE.findall(t)) == 1
    assert reference_is_refusal(answer) and is_refusal(answer)
    assert R.refuses("it cannot be answered") == reference_refuses("it cannot be answered")  # a clause not prepared


@pytest.mark.parametrize(
    "text", ["Revenue was 3 thousand dollars.", "About 2 Million users.", "It cost 4.5 BILLION.", "one trillion"]
)
def test_each_scale_word_is_protected_as_without_the_shortcut(text: str) -> None:
    assert M.digits(text) == reference_digits(text)
    assert "scaleword" not in M.digits(text) and M.protect_scales(text) != text


# Words of the refusal rules, the contractions and the number words, glued by what separates clauses.
WORDS = (
    "the documents context i we not no nothing none never nor neither without nowhere unable impossible unknown "
    "unanswerable unspecified undisclosed outside beyond scope n/a null cannot can't cant won't wont dont doesn't isnt "
    "i'm it's that's there's i.e. e.g. what's they're we'll lack lacks insufficient information mention say says "
    "stated specified mentioned find found answer determine sorry unfortunately if when unless however but so "
    "nothingness north note known twenty-five one second two and a half half an hour million thousand 10\u00b3 1.5 "
    "m\u0131ll\u0131on B\u0130LLION \u2019s `x` \u2014 3.5! 12,000; 7:30 \u0663.\u0664 \uff11."
).split()
SEPARATORS = [" ", " ", " ", ", ", "; ", ". ", " - ", "\n", "\n- ", ": ", "  ", "\t", "'", '"', "**"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), min_size=1, max_size=14))
def test_property_generated_answers_read_as_without_shortcuts(parts: list[tuple[str, str]]) -> None:
    text = "".join(w + sep for w, sep in parts)
    for variant in (text, text.upper(), text.capitalize()):
        assert R.prepare(variant) == reference_prepare(variant)
        assert is_refusal(variant) == reference_is_refusal(variant)
        assert M.digits(variant) == reference_digits(variant)
        assert normalize_text(variant) == reference_normalize(variant)
        assert fold(variant) == variant.translate(FOLD)
        assert content_words(variant) == {
            w if re.search(r"\d", w) else w[:5]
            for w in re.findall(r"[a-z0-9][a-z0-9.\-]*[a-z0-9]|[a-z0-9]", normalize_text(reference_digits(variant)))
            if w not in M._STOP and (len(w) > 2 or w.isdigit())
        }
