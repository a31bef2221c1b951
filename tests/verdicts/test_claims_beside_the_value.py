"""A right value is not a right answer when what the answer says with it is contradicted by the retrieved text, or
when it turns the expected bound into an exact figure: each case with its near twin that must come out the other way
(the sentences are made up for these tests)."""

from __future__ import annotations

from ragpipe.golden import GoldenTest
from ragpipe.rag import Answer
from ragpipe.reading import grounds, opposed
from ragpipe.verdicts import decide
from ragpipe.verdicts.positives import bound_denied

CACHE = (
    "The gateway keeps idle sessions for ten minutes. Idle sessions are not shared between tenants, and every deploy "
    "ends all open sessions."
)


def _test(question: str, expected: str, quote: str) -> GoldenTest:
    return GoldenTest("t1", question, expected, "positive", 1, ["a"], quote, "doc.md", None, "tag", "2026-01-01")


def _verdict(test: GoldenTest, answer: str, contexts: tuple[str, ...]) -> str:
    v = decide(test, ("a",), "unchanged", ["a"], Answer(answer, 0, 0, 0), (), "tag", contexts=contexts)
    return "contradicted" if "contradicts" in v.reason and v.verdict == "needs_review" else v.verdict


TTL = _test("How long does the gateway keep idle sessions?", "ten minutes", CACHE)


def test_a_claim_the_text_denies_beside_the_right_value_is_never_a_pass() -> None:
    assert _verdict(TTL, "Ten minutes; idle sessions are shared between tenants, too.", (CACHE,)) == "contradicted"
    assert _verdict(TTL, "Ten minutes; idle sessions are not shared between tenants.", (CACHE,)) == "pass"


def test_a_denial_the_text_does_not_make_is_contradicted_too() -> None:
    assert _verdict(TTL, "Ten minutes. A deploy does not end open sessions.", (CACHE,)) == "contradicted"
    assert _verdict(TTL, "Ten minutes; deploys never end open sessions.", (CACHE,)) == "contradicted"
    assert _verdict(TTL, "Ten minutes. A deploy ends open sessions.", (CACHE,)) == "pass"


def test_a_predicate_the_text_gives_both_polarities_is_no_contradiction() -> None:
    text = "Requests are retried on timeouts by the client. Requests are not retried on timeouts by the server."
    g = grounds((text,), "What is retried?")
    assert opposed("requests are retried on timeouts", g) is None  # one sentence says it, the other denies it
    one = grounds(("Requests are not retried on timeouts by the server.",), "What is retried?")
    assert opposed("requests are retried on timeouts", one) is not None


def test_code_and_table_rows_make_no_claim_to_oppose() -> None:
    g = grounds((CACHE,), "How long?")
    assert opposed("idle sessions are shared between tenants", g) is not None
    assert opposed("share(sessions, tenants) = true; idle sessions are shared", g) is None
    assert opposed("| idle sessions | shared between tenants |", g) is None


def test_a_bound_given_as_an_exact_figure_or_the_other_bound_is_denied() -> None:
    assert bound_denied("Exactly 300 stores.", "more than 300 stores") is not None
    assert bound_denied("Fewer than 300 stores.", "more than 300 stores") is not None
    assert bound_denied("Over 300 stores.", "more than 300 stores") is None
    assert bound_denied("About 300 stores.", "more than 300 stores") is None
    assert bound_denied("Exactly 300 stores.", "300 stores") is None  # no bound to deny
    test = _test("How many stores does the chain run?", "more than 300", "The chain runs more than 300 stores.")
    assert _verdict(test, "Exactly 300 stores.", ("The chain runs more than 300 stores.",)) == "fail"
    assert _verdict(test, "Over 300 stores.", ("The chain runs more than 300 stores.",)) == "pass"


def test_another_version_than_the_one_expected_is_a_fail_not_a_near_miss() -> None:
    text = "Signed manifests are accepted from release 4.12.10 on."
    test = _test("From which release are signed manifests accepted?", "4.12.10", text)
    assert _verdict(test, "From release 4.12.1 on.", (text,)) == "fail"
    assert _verdict(test, "From release 4.12.10 on.", (text,)) == "pass"


def test_a_negative_answered_with_no_word_of_denial_is_a_sure_fail() -> None:
    text = "Night trains to Vienna leave from platform 4."
    test = GoldenTest(
        "n1", "Which platform do night trains to Prague leave from?", "not in documents", "negative", 1, ["a"],
        text, "doc.md", "platform 4", "tag", "2026-01-01",
    )  # fmt: skip
    assert _verdict(test, "They usually go from the eastern concourse near the bus station.", (text,)) == "fail"
    # words the refusal grammar may not know, with a denial in them, stay for a reviewer rather than fail
    assert _verdict(test, "The passage is mum on Prague; nothing about it there.", (text,)) != "fail"


KEYS = "The key id of a certificate is the low 64 bits of its SHA-1 fingerprint. Key ids are shown in hex."


def test_a_claim_that_swaps_a_word_of_the_text_for_its_rival_fails_beside_the_right_value() -> None:
    test = _test("How are key ids shown?", "in hex", KEYS)
    v = decide(test, ("a",), "unchanged", ["a"], Answer("In hex. A key id is the high 64 bits of its SHA-1 "
               "fingerprint.", 0, 0, 0), (), "tag", contexts=(KEYS,))  # fmt: skip
    assert (v.verdict, "'high' where the retrieved text says 'low'" in v.reason) == ("fail", True)
    assert _verdict(test, "In hex. A key id is the low 64 bits of its SHA-1 fingerprint.", (KEYS,)) == "pass"


def test_a_long_expected_answer_reworded_with_a_rival_word_fails_instead_of_waiting_for_a_reviewer() -> None:
    test = _test("What is the key id of a certificate?", "the low 64 bits of its SHA-1 fingerprint", KEYS)
    assert _verdict(test, "It is the high 64 bits of the certificate's SHA-1 fingerprint.", (KEYS,)) == "fail"
    assert _verdict(test, "It is the 64 low-order bits of the SHA-1 fingerprint.", (KEYS,)) != "fail"
