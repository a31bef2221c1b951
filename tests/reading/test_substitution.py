"""A claim that restates a retrieved sentence with one word swapped for its rival contradicts it; a paraphrase,
the same word, or a rival another sentence states does not (the sentences are made up for these tests)."""

from __future__ import annotations

import pytest

from ragpipe.reading.substitution import replaced, rivals

TRUST = (
    "To mark a key as trusted, enter its fingerprint followed by a space and a capital letter 'S'. The key id of a "
    "certificate is the low 64 bits of its SHA-1 fingerprint. Memory for the buffer is 400k + (8 x block size)."
)


@pytest.mark.parametrize(
    ("claim", "mine", "theirs"),
    [
        ("You enter the fingerprint followed by a space and a lowercase 's'.", "lowercase", "capital"),
        ("The key id is the high 64 bits of the SHA-1 fingerprint.", "high", "low"),
        ("The key id is the low 64 bits of the certificate's SHA-256 fingerprint.", "sha-256", "sha-1"),
        ("Memory for the buffer is 400k + (4 x block size).", "4", "8"),
    ],
)
def test_a_rival_in_the_place_of_the_texts_word_is_found(claim: str, mine: str, theirs: str) -> None:
    hit = replaced(claim, (TRUST,))
    assert hit is not None and (hit.mine, hit.theirs) == (mine, theirs)


@pytest.mark.parametrize(
    "claim",
    [
        "You enter the fingerprint, then a space and an uppercase 'S'.",  # a synonym of the text's word
        "The key id is the low 64 bits of the SHA-1 fingerprint (its last 16 hex digits).",  # the text, and more
        "It takes the lowest 64 bits of the fingerprint, computed with SHA-1.",  # reworded, nothing swapped
        "Memory is 400k plus eight times the block size.",  # in words: no number stands in for another
    ],
)
def test_a_paraphrase_swaps_nothing(claim: str) -> None:
    assert replaced(claim, (TRUST,)) is None


def test_a_rival_another_sentence_states_is_no_swap() -> None:
    text = TRUST + " Subkeys use the high 64 bits of the SHA-1 fingerprint instead."
    assert replaced("The key id is the high 64 bits of the SHA-1 fingerprint.", (TRUST,)) is not None
    assert replaced("The key id is the high 64 bits of the SHA-1 fingerprint.", (text,)) is None


def test_words_of_the_question_and_the_expected_answer_are_not_the_claims_own() -> None:
    claim = "You enter the fingerprint followed by a space and a lowercase 's'."
    assert replaced(claim, (TRUST,), known="Is a lowercase 's' accepted? no") is None


def test_rivals_are_closed_pairs_and_codes_of_one_kind() -> None:
    assert rivals("minimum", "maximum") and rivals("decrypt", "encrypt") and rivals("ipv6", "ipv4")
    assert not rivals("sha-1", "md5")  # another kind of code: not read as a swap
    assert not rivals("minimum", "least") and not rivals("capital", "uppercase")
