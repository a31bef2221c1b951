"""The checks on verdicts name the tests they are about (the Dagster UI shows the description beside the check)."""

from __future__ import annotations

import dagster as dg

from ragpipe.assets.evaluate import _verdict_checks
from ragpipe.assets.tables import table_of_tests


def test_a_failing_check_names_its_tests_and_a_passing_one_names_none() -> None:
    stats = {"fail": 2, "error": 0, "needs_review": 1, "did_not_run": 0, "unverified": 25}
    by = {
        "fail": ["neg_03", "pos_07"],
        "needs_review": ["pos_11"],
        "error": [],
        "did_not_run": [],
        "unverified": [f"t{i:02d}" for i in range(25)],
    }
    checks = {c.check_name: c for c in _verdict_checks(stats, ["neg_02"], dg.AssetCheckSeverity.WARN, by)}
    assert not checks["no_failures"].passed
    assert checks["no_failures"].description == "fail (2): neg_03, pos_07; needs_review (1): pos_11"
    assert checks["every_test_ran"].passed and checks["every_test_ran"].description is None
    assert checks["verified_under_current_embedder"].description.endswith("t19 (+5 more)")
    assert "neg_02" in checks["golden_stamps_current"].description
    assert checks["golden_stamps_current"].metadata["stale_stamps"].value == 1


def test_a_list_of_tests_is_an_inline_table_of_its_first_rows_and_says_how_many_more() -> None:
    rows = [(f"t{i:02d}", "did_not_run", f"trap chunk\nnot retrieved | rank {i}") for i in range(30)]
    table = table_of_tests(rows, ("test", "verdict", "reason"), limit=25)
    assert isinstance(table, dg.TableMetadataValue)  # drawn inline by the UI, unlike a long Markdown value
    assert [c.name for c in table.schema.columns] == ["test", "verdict", "reason"]
    records = [r.data for r in table.records]
    assert len(records) == 26 and records[0] == {
        "test": "t00",
        "verdict": "did_not_run",
        "reason": "trap chunk not retrieved | rank 0",
    }
    assert records[-1]["test"].startswith("... and 5 more")
    assert len(table_of_tests(rows[:3], ("test", "verdict", "reason")).records) == 3
    assert table_of_tests([], ("test", "why")).records == []


def test_the_gate_tag_is_short_and_the_blocking_counts_stand_beside_it() -> None:
    from types import SimpleNamespace as Row

    from ragpipe.assets.evaluate import _gate

    rows = [Row(verdict="fail", unverified=False)] * 17 + [Row(verdict="pass", unverified=True)] * 2
    assert _gate(rows, ("fail", "unverified")) == {
        "ragpipe/gate": "BLOCKED",
        "ragpipe/blocking": "17 fail, 2 unverified",
    }
    assert _gate(rows[-2:], ("fail", "unverified"))["ragpipe/blocking"] == "2 unverified"  # was "BLOCKED ()"
    assert _gate([], ("fail",)) == {"ragpipe/gate": "OK", "ragpipe/blocking": "none"}
