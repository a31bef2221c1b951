"""The checks on verdicts name the tests they are about (the Dagster UI shows the description beside the check)."""

from __future__ import annotations

import dagster as dg

from assets.evaluate import _verdict_checks


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
    assert checks["no_failures"].description == "fail: neg_03, pos_07; needs_review: pos_11"
    assert checks["every_test_ran"].passed and checks["every_test_ran"].description is None
    assert checks["verified_under_current_embedder"].description.endswith("t19 (+5 more)")
    assert "neg_02" in checks["golden_stamps_current"].description
    assert checks["golden_stamps_current"].metadata["stale_stamps"].value == 1
