"""Cutting an answer into claims, and the premise a claim is read against."""

from ragpipe.reading import claims_of, framing, plain
from ragpipe.reading.premises import PREMISE_SENTENCES, premise, sentences


def test_framing_and_courtesy_are_no_claims():
    answer = (
        "Thanks for reaching out! Based on the documents, here is the answer. "
        "**The buffer is 64 KiB** [1]. It was raised from 16 KiB because users asked for it. Hope this helps!"
    )
    assert claims_of(answer) == ["The buffer is 64 KiB.", "It was raised from 16 KiB because users asked for it."]


def test_list_items_and_table_rows_are_claims_each():
    answer = "Here's what you need:\n\n- **Default:** 4 bytes\n- set by the `size` option [2]\n\n| key | value |\n|---|---|\n| timeout | 5 s |"
    got = claims_of(answer)
    assert "Default: 4 bytes" in got
    assert "set by the size option" in got
    assert "timeout, 5 s" in got
    assert not any("---" in c for c in got)


def test_plain_drops_marks_and_citations_only():
    assert plain("**Set `compat` to 10** [1] (source: passage 2).") == "Set compat to 10."
    assert plain("x_1 and foo_bar stay") == "x_1 and foo_bar stay"


def test_framing_needs_nothing_said_of_the_subject():
    assert framing("Let me know if you need anything else!")
    assert framing("According to the provided documents:")
    assert not framing("The history keeps 500 commands by default.")


def test_premise_takes_the_sentences_sharing_most_words_in_text_order():
    ctx = [
        "Gnuplot draws plots. The history keeps 500 entries. Colours are set with `set style`.",
        "Entries beyond 500 are dropped from the history file. Fonts are chosen per terminal.",
    ]
    p = premise("How many entries does the history keep?", ctx)
    assert p.startswith("The history keeps 500 entries.")
    assert "Entries beyond 500 are dropped" in p
    assert len(sentences(p)) <= PREMISE_SENTENCES


def test_premise_of_nothing_is_empty():
    assert premise("anything", []) == ""
