"""How a change reads in logs and tables: both sides of a flag, and a status that its reason does not repeat."""

from ragpipe.evaluate import stamp_line
from ragpipe.reports import Change


def _change(old: bool | None, new: bool) -> Change:
    return Change("neg_01", "pass", "did_not_run", 3, None, old, new, "embedder a -> b")


def test_the_unverified_flag_reads_as_old_to_new() -> None:
    assert _change(False, True).flags == "verified -> unverified"
    assert _change(True, False).flags == "unverified -> verified"
    assert _change(True, True).flags == "" and _change(None, True).flags == ""


def test_a_stamp_line_does_not_repeat_its_status() -> None:
    assert stamp_line("missing", "missing from corpus: a.md deleted") == "missing from corpus: a.md deleted"
    assert stamp_line("moved", "ch_a -> ch_b") == "moved ch_a -> ch_b"
