"""What changed between two recorded states, in a reader's words (settings, a corpus's files, a golden set's tests)."""

from pathlib import Path

from ragpipe.core import keyed_diff, settings_diff
from ragpipe.golden import hashes_by_test


def test_settings_diff_names_section_key_and_both_values() -> None:
    old = {"retriever": {"k": 5, "mode": "hybrid"}, "subject": {"url": "http://a"}}
    new = {"retriever": {"k": 8, "mode": "hybrid", "rerank": True}}
    assert settings_diff(old, new) == [
        "[retriever].k 5 -> 8",
        "[retriever].rerank none -> true",
        "[subject].url http://a -> none",
    ]
    assert settings_diff(new, new) == []


def test_keyed_diff_says_deleted_edited_added_and_counts_past_the_limit() -> None:
    old = {"a.md": "1", "b.md": "2", "c.md": "3"}
    new = {"b.md": "2", "c.md": "9", "d.md": "4"}
    assert keyed_diff(old, new) == "a.md deleted; c.md edited; d.md added"
    assert keyed_diff(old, old) == ""
    many = {f"f{i}.txt": "x" for i in range(8)}
    assert keyed_diff({}, many, limit=3) == "f0.txt added; f1.txt added; f2.txt added; 5 more added"


def test_a_golden_file_is_hashed_per_test_so_an_edit_names_the_test(tmp_path: Path) -> None:
    f = tmp_path / "golden.jsonl"
    f.write_text('{"question_id": "neg_01", "question": "a?"}\n{"question_id": "pos_01", "question": "b?"}\n')
    before = hashes_by_test(f)
    f.write_text('{"question_id": "neg_01", "question": "a?"}\n{"question_id": "pos_01", "question": "c?"}\n{oops\n')
    after = hashes_by_test(f)
    assert set(before) == {"neg_01", "pos_01"}
    assert keyed_diff(before, after) == "pos_01 edited; line 3 added"
    assert hashes_by_test(tmp_path / "absent.jsonl") == {} and hashes_by_test(None) == {}
