"""The rule's principles on what a value is said of, what counts as grounded, and what a question asks for: each
case with its near twin that must come out the other way (the sentences are made up for these tests)."""

from __future__ import annotations

from ragpipe.golden import GoldenTest
from ragpipe.rag import Answer
from ragpipe.reading import grounds
from ragpipe.reading.grounding import Fact, grounded
from ragpipe.verdicts import decide


def _test(kind: str, question: str, expected: str, quote: str, trap: str | None = None) -> GoldenTest:
    return GoldenTest("t1", question, expected, kind, 1, ["a"], quote, "doc.md", trap, "tag", "2026-01-01")


def _verdict(test: GoldenTest, answer: str, contexts: tuple[str, ...]) -> str:
    return decide(test, ("a",), "unchanged", ["a"], Answer(answer, 0, 0, 0), (), "tag", contexts=contexts).verdict


COPY = (
    "On macOS the copy uses fcopyfile with a 1 MiB buffer. On Windows shutil.copyfile() uses a 1 MiB buffer, "
    "other platforms 64 KiB."
)
BUFFER = _test("positive", "What buffer size does shutil.copyfile() use on Windows?", "1 MiB", COPY)


def test_a_value_said_of_another_qualifier_while_the_asked_one_gets_a_rival_is_never_a_pass() -> None:
    wrong = "The 1 MiB buffer is used on macOS with fcopyfile; Windows keeps the usual 64 KiB buffer."
    assert _verdict(BUFFER, wrong, (COPY,)) == "needs_review"
    assert _verdict(BUFFER, "On Windows it uses a 1 MiB buffer; other platforms use 64 KiB.", (COPY,)) == "pass"


def test_a_rival_in_a_code_example_or_negated_is_no_rival() -> None:
    right = "It uses a 1 MiB buffer on Windows, unlike macOS.\n\n```python\nshutil.copyfile(src, dst)  # 64 KiB\n```"
    assert _verdict(BUFFER, right, (COPY,)) == "pass"


ENODFS = "glp_npp_preprocess1 returns GLP_ENOPFS on primal infeasibility and GLP_ENODFS on dual infeasibility."


def test_an_identifier_swapped_between_two_conditions_is_never_a_pass() -> None:
    test = _test("positive", "What does glp_npp_preprocess1 return on dual infeasibility?", "GLP_ENODFS", ENODFS)
    swapped = "`GLP_ENODFS` is returned on primal infeasibility; for dual infeasibility it returns `GLP_ENOPFS`."
    assert _verdict(test, swapped, (ENODFS,)) == "needs_review"
    assert _verdict(test, "It returns `GLP_ENODFS` (dual infeasibility).", (ENODFS,)) == "pass"


def test_a_conclusion_with_another_quantity_is_never_a_pass() -> None:
    quote = "Britain gained about 80,000 French colonists."
    test = _test("positive", "How many French colonists did Britain gain?", "80,000", quote)
    answer = "The text says about 80,000 colonists were gained.\n\nFinal answer: only a few thousand."
    assert _verdict(test, answer, (quote,)) == "needs_review"
    assert _verdict(test, "The text says about 80,000 colonists were gained.", (quote,)) == "pass"


SPAN = "Contrecoeur led 500 men south from Fort Venango on April 5, 1754"


def test_a_count_question_is_answered_by_the_count_of_a_long_span() -> None:
    test = _test("positive", "How many men did Duquesne send to relieve Saint-Pierre?", SPAN, SPAN)
    assert _verdict(test, "500 men.", (SPAN,)) == "pass"
    assert _verdict(test, "Five hundred.", (SPAN,)) == "pass"
    assert _verdict(test, "Not 500: only 40 men.", (SPAN,)) != "pass"
    assert _verdict(test, "It was not 500 men.", (SPAN,)) != "pass"
    # a question that does not ask for a count is not answered by the span's number
    other = _test("positive", "What did Duquesne do to relieve Saint-Pierre?", SPAN, SPAN)
    assert _verdict(other, "500 men.", (SPAN,)) != "pass"


def test_a_contrast_that_is_part_of_the_expected_answer_is_no_aside() -> None:
    quote = "Set the RUST_BACKTRACE environment variable to any value except 0."
    expected = "set the `RUST_BACKTRACE` environment variable to any value except `0`"
    test = _test("positive", "How do I get a panicking Rust program to print a backtrace?", expected, quote)
    answer = 'The Book says: "set the `RUST_BACKTRACE` environment variable to any value except `0`."'
    assert _verdict(test, answer, (quote,)) == "pass"


CERT = "httpx loads SSL certificates from SSL_CERT_FILE. Client certificates go to load_cert_chain()."
NEG = _test(
    "negative",
    "Which environment variable sets httpx's client certificate?",
    "not in documents",
    CERT,
    "SSL_CERT_FILE",
)


def test_an_identifier_is_grounded_as_written_never_by_its_words() -> None:
    g = grounds((CERT,), NEG.question)
    assert not grounded(Fact("HTTPX_CLIENT_CERT", "code", 0, 17), g)
    assert grounded(Fact("load_cert_chain()", "code", 0, 17), g)
    assert grounded(Fact("ssl.load_cert_chain", "code", 0, 19), grounds(("ctx = ssl.load_cert_chain",), ""))
    answer = "There's no documented variable. You'd read something like `HTTPX_CLIENT_CERT` yourself."
    assert _verdict(NEG, answer, (CERT,)) == "fail"
    cited = "There's no documented variable; the docs only mention `SSL_CERT_FILE` for SSL certificates."
    assert _verdict(NEG, cited, (CERT,)) == "pass"


def test_a_refusal_then_what_is_usual_elsewhere_fails() -> None:
    quote = "With --output-dir, artifacts are copied into outputdir/artifacts/."
    test = _test("negative", "Where do artifacts end up without --output-dir?", "not in documents", quote)
    usual = "That case isn't documented here; in practice the runner writes them to a temporary directory under /tmp."
    assert _verdict(test, usual, (quote,)) == "fail"
    advice = "That case isn't documented here; typically you would ask the maintainers."
    assert _verdict(test, advice, (quote,)) == "pass"


def test_an_abbreviated_year_range_grounds_its_full_end() -> None:
    g = grounds(("Bismarck was Chancellor 1862-90.",), "When did Bismarck die?")
    assert grounded(Fact("1890", "number", 0, 4), g)
    assert not grounded(Fact("1898", "number", 0, 4), g)


RUNNER = "Each test runs in a fresh directory. Artifacts are kept under $ARTIFACTS and copied on --output-dir."
RUN_NEG = _test("negative", "Where do artifacts end up without --output-dir?", "not in documents", RUNNER)


def test_a_guess_beside_a_refusal_fails_even_without_a_name_or_number() -> None:
    guess = "It's not spelled out, but they're most likely discarded with the temporary directory."
    assert _verdict(RUN_NEG, guess, (RUNNER,)) == "fail"
    advice = "It's not spelled out in the docs; you could ask the maintainers, perhaps."
    assert _verdict(RUN_NEG, advice, (RUNNER,)) == "pass"
    mixup = "I think there may be a mix-up of names; the documents do not say where they end up."
    assert _verdict(RUN_NEG, mixup, (RUNNER,)) == "pass"


def test_an_abbreviation_with_a_dot_does_not_cut_the_guess_from_its_value() -> None:
    quote = "EDSP solvers run as the _apt user."
    test = _test("negative", "Which user do EIPP planners run as?", "not in documents", quote, "_apt")
    answer = "It isn't stated for planners, but presumably the same as for solvers, i.e. `_apt`."
    assert _verdict(test, answer, (quote,)) == "fail"


def test_no_results_for_the_asked_version_is_a_refusal() -> None:
    quote = "GLPSOL 4.40 solved air04 in 396 s."
    test = _test("negative", "How long does GLPK 5.0 take on air04?", "not in documents", quote, "396")
    answer = "The documents only give results for GLPSOL 4.40; there are no timings for GLPK 5.0."
    assert _verdict(test, answer, (quote,)) == "pass"


def test_a_final_answer_or_a_correction_after_the_value_is_what_the_answer_settles_on() -> None:
    quote = "Control is often exercised through othering, based on stereotypes."
    test = _test("positive", "Which technique divides countries?", "othering", quote)
    answer = 'The passage says control is exercised through "othering". Final answer: informal imperialism.'
    assert _verdict(test, answer, (quote,)) == "needs_review"
    assert _verdict(test, 'The passage says control is exercised through "othering".', (quote,)) == "pass"
    tol = "rel_tol defaults to 1e-09, about nine digits."
    t2 = _test("positive", "What is the default relative tolerance of math.isclose?", "1e-09", tol)
    assert _verdict(t2, "rel_tol defaults to 1e-9... actually 1e-6 in practice.", (tol,)) != "pass"


def test_a_place_of_a_denied_act_is_negated() -> None:
    quote = "The Germanic tribes originated in Scandinavia."
    test = _test("positive", "Where did the Germanic tribes originate?", "Scandinavia", quote)
    assert _verdict(test, "They did not originate in Scandinavia but further south.", (quote,)) != "pass"
    assert _verdict(test, "They originated in Scandinavia.", (quote,)) == "pass"


def test_a_plural_acronym_is_grounded_by_its_singular() -> None:
    g = grounds(("apt can use hash-based URI paths",), "")
    assert grounded(Fact("URIs", "name", 0, 4), g)
