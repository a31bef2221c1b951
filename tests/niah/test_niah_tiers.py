"""The tier choice: per length and needle type, the cheapest path whose exact lower bound clears its threshold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest
from conftest import write_settings

from ragpipe.niah import ALL_TYPES, NONE_GOOD, choose_tiers, tier_text
from ragpipe.settings import NiahSettings, SettingsError, load_settings

SCHEMA = """CREATE TABLE niah_trials (run_id VARCHAR, subject VARCHAR, length_target INTEGER, needle_type VARCHAR,
status VARCHAR, exact DOUBLE, input_tokens INTEGER, output_tokens INTEGER, latency_s DOUBLE, summary_tokens INTEGER)"""


def trials(rows: list[tuple[str, int, str, int, int, int, float]]) -> duckdb.DuckDBPyConnection:
    """(subject, length, needle type, trials, exact hits, tokens in, latency) -> niah_trials rows of run r1; a path
    with tokens None overflowed every trial."""
    con = duckdb.connect()
    con.execute(SCHEMA)
    for subject, length, kind, n, hits, tokens, latency in rows:
        for i in range(n):
            status = "overflow" if tokens is None else "scored"
            exact = None if tokens is None else float(i < hits)
            con.execute("INSERT INTO niah_trials VALUES ('r1', ?, ?, ?, ?, ?, ?, 5, ?, NULL)",
                        [subject, length, kind, status, exact, tokens, latency])  # fmt: skip
    return con


def by_key(con: duckdb.DuckDBPyConnection, ns: NiahSettings) -> dict[tuple[int, str], Any]:
    return {(t.length, t.needle_type): t for t in choose_tiers(con, "r1", ns)}


def test_the_cheapest_good_enough_path_wins_per_length() -> None:
    con = trials([
        ("retrieval", 1000, "numeric", 40, 40, 300, 0.5), ("full_context", 1000, "numeric", 40, 40, 1100, 1.0),
        ("retrieval", 8000, "numeric", 40, 26, 300, 0.5), ("full_context", 8000, "numeric", 40, 40, 8200, 4.0),
        ("retrieval", 16000, "numeric", 40, 25, 300, 0.5), ("full_context", 16000, "numeric", 40, 0, None, 0.0),
    ])  # fmt: skip
    got = by_key(con, NiahSettings(effective_threshold=0.85))
    assert got[(1000, ALL_TYPES)].choice == "retrieval"  # both clear 0.85: the one with fewer tokens
    assert got[(8000, ALL_TYPES)].choice == "full_context"  # retrieval's 26/40 does not
    assert got[(16000, ALL_TYPES)].choice is None  # beyond the window, and retrieval short of the bar
    text = tier_text([t.as_dict() for t in choose_tiers(con, "r1", NiahSettings())])
    assert f"16000 {ALL_TYPES:<15} {NONE_GOOD} (best lower bound 0.47 < 0.85)" in text
    assert "1000 all types       retrieval (lower bound 0.91 >= 0.85; 305 tokens, 0.50 s)" in text


def test_a_riskier_needle_type_asks_more_and_its_bar_governs_all_types() -> None:
    con = trials([
        ("retrieval", 2000, "proper_noun", 40, 40, 300, 0.5), ("retrieval", 2000, "table_cell", 40, 39, 300, 0.5),
        ("full_context", 2000, "proper_noun", 40, 40, 2100, 2.0), ("full_context", 2000, "table_cell", 40, 40, 2100, 2.0),
    ])  # fmt: skip
    plain = by_key(con, NiahSettings(effective_threshold=0.85))
    assert plain[(2000, "table_cell")].choice == "retrieval"
    strict = by_key(con, NiahSettings(effective_threshold=0.85, risk=(("table_cell", 0.9),)))
    assert strict[(2000, "proper_noun")].threshold == 0.85 and strict[(2000, "proper_noun")].choice == "retrieval"
    assert strict[(2000, "table_cell")].threshold == 0.9
    assert strict[(2000, "table_cell")].choice == "full_context"  # 40/40 clears 0.9 (lower 0.91); 39/40 does not
    assert strict[(2000, ALL_TYPES)].threshold == 0.9


@pytest.mark.parametrize(
    ("risk", "named"),
    [
        ({"contract": 0.9}, r"\[niah\].risk.contract is not a needle type"),
        ({"table_cell": 1.5}, r"\[niah\].risk.table_cell must be a threshold in \(0, 1\]"),
        ([0.9], r"\[niah\].risk must be a table"),
    ],
)
def test_a_bad_risk_setting_is_named(tmp_path: Path, risk: Any, named: str) -> None:
    path = write_settings(tmp_path / "ragpipe.toml", {"corpus": {"dir": "c"}, "niah": {"risk": risk}})
    with pytest.raises(SettingsError, match=named):
        load_settings(path)
