"""The entailment reader's training recipe: claims made by rule from documents, the same for the same seed."""

from collections import Counter

from ragpipe.reading.synth import LABELS, examples

DOC = " ".join(
    f"The scheduler in release {n} keeps at most {n * 10} jobs in the queue before it rejects new ones. "
    f"Operators can enable the archive option so that finished jobs are written to disk after {n} hours. "
    f"The Berlin office reviewed the queue limits in the spring of that year and found them adequate. "
    for n in range(2, 14)
)
OTHER = " ".join(
    f"The garden has {n} beds of tomatoes, which the volunteers water every morning before nine. "
    f"A storm in the autumn damaged the old greenhouse and the fence beside it. "
    for n in range(2, 14)
)


def test_the_recipe_is_a_function_of_the_documents_and_the_seed():
    docs = [("ops.md", DOC), ("garden.md", OTHER)]
    a, b = examples(docs, 30, seed=7), examples(docs, 30, seed=7)
    assert a == b
    assert a != examples(docs, 30, seed=8)


def test_every_label_is_made_and_each_claim_is_read_against_its_premise():
    got = examples([("ops.md", DOC), ("garden.md", OTHER)], 40, seed=3)
    assert set(Counter(e.label for e in got)) == set(LABELS)
    for e in got:
        assert e.premise and e.claim
        if e.how == "verbatim":
            assert e.claim in e.premise  # a sentence of the passage, read against it
        if e.label == "contradicted":
            assert e.claim not in DOC  # changed: negation, number, opposite or name
        if e.how in ("reason", "judgement"):
            assert e.claim.count(",") >= 1 and e.claim not in DOC  # a sentence with something invented after it
