"""Needle in a haystack: insertion by token offset, needles and their scoring, overflow, the retrieval path end to end
with the real MiniLM embedder, the full-context path against the local OpenAI-compatible server, determinism."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import tomllib
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from conftest import answerer_section, write_settings

from ragpipe.niah import (
    SCHEMAS,
    Haystack,
    Tokenizer,
    build_haystack,
    check_schema,
    json_schema,
    load_tokenizer,
    make_needles,
    place_needle,
    score_answer,
    score_reasoning,
    sentences,
    source_paragraphs,
    structured_prompt,
)
from ragpipe.rag import ExtractiveAnswerer
from ragpipe.settings import NEEDLE_TYPES, AnswererSettings, SettingsError, load_settings

pytestmark = [pytest.mark.slow, pytest.mark.model]

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "corpus"
SERVER = Path(__file__).resolve().parents[1] / "openai_server.py"
REFUSALS = AnswererSettings().refusal_phrases


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return load_tokenizer("minilm")


@pytest.fixture(scope="module")
def filler(tok: Tokenizer) -> Haystack:
    return build_haystack(source_paragraphs(CORPUS), 1500, 0, 7, tok, off_theme_ratio=0.2)


def _project(tmp: Path, niah: str, answerer: str = "extractive", base_url: str = "http://127.0.0.1:9/v1") -> Any:
    tmp.mkdir(parents=True, exist_ok=True)
    write_settings(
        tmp / "ragpipe.toml",
        {
            "warehouse": {"dir": "warehouse"},
            "corpus": {"dir": CORPUS.as_posix()},
            "answerer": answerer_section(answerer, base_url, timeout_s=5.0, max_retries=0),
            "niah": tomllib.loads(niah),
        },
    )
    return load_settings(tmp / "ragpipe.toml")


# ----------------------------------------------------------------------------------------------- haystacks
def test_haystack_length_is_counted_with_the_named_tokenizer_and_deterministic(
    tok: Tokenizer, filler: Haystack
) -> None:
    assert filler.tokenizer.startswith("minilm-wordpiece")
    assert filler.n_tokens == tok.count(filler.text)
    longest = max(tok.count(s) for p in filler.text.split("\n\n") for s in sentences(p))
    assert 1500 - longest <= filler.n_tokens <= 1500  # trimmed at a sentence boundary
    again = build_haystack(source_paragraphs(CORPUS), 1500, 0, 7, tok, off_theme_ratio=0.2)
    assert again.text == filler.text
    other = build_haystack(source_paragraphs(CORPUS), 1500, 1, 7, tok, off_theme_ratio=0.2)
    assert other.text != filler.text  # another repetition, another order
    assert filler.n_off_theme > 0


# ----------------------------------------------------------------------------------------------- insertion
@pytest.mark.parametrize("needle_type", NEEDLE_TYPES)
def test_insertion_lands_at_the_token_offset(tok: Tokenizer, filler: Haystack, needle_type: str) -> None:
    longest = max(tok.count(s) for p in filler.text.split("\n\n") for s in sentences(p))
    for depth in (0.0, 25.0, 50.0, 75.0, 100.0):
        needle, distractors = make_needles(needle_type, seed=11, n_distractors=0 if depth in (0.0, 100.0) else 1)
        pl = place_needle(filler.text, needle, distractors, depth, tok, seed=11)
        ids = tok.encode(pl.text)
        assert pl.n_tokens == len(ids)
        first = tok.encode(needle.parts[0])
        # Decode and check: the tokens at the recorded offset are the needle's.
        assert tok.decode(ids[pl.offset : pl.offset + len(first)]) == tok.decode(first)
        assert pl.text[pl.char :].startswith(needle.parts[0])
        needle_tokens = sum(tok.count(p) for p in needle.parts)
        if depth == 0.0:
            assert pl.offset == 0 and pl.depth == 0.0
        elif depth == 100.0 and len(needle.parts) == 1:
            assert pl.offset == len(ids) - needle_tokens and pl.depth == 100.0
        else:  # snapped to a sentence boundary: within one sentence of the requested offset
            assert abs(pl.offset - pl.offset_requested) <= longest + 8
        # The recorded depth is the share of the haystack (without the needle) before it.
        before = pl.offset - (tok.count(needle.parts[1]) if pl.offset2 is not None and pl.offset2 < pl.offset else 0)
        assert pl.depth == pytest.approx(100.0 * before / (len(ids) - needle_tokens), abs=1e-3)
        assert abs(pl.depth - depth) <= 100.0 * (longest + 40) / len(ids)
        if len(needle.parts) > 1:  # cross-sentence: the second sentence is apart and lands where recorded
            second = tok.encode(needle.parts[1])
            assert pl.offset2 is not None and abs(pl.offset2 - pl.offset) > len(first) + 16
            assert tok.decode(ids[pl.offset2 : pl.offset2 + len(second)]) == tok.decode(second)


def test_table_needle_is_its_own_paragraph(tok: Tokenizer, filler: Haystack) -> None:
    needle, _ = make_needles("table_cell", seed=3, n_distractors=0)
    pl = place_needle(filler.text, needle, [], 50.0, tok, seed=3)
    assert f"\n\n{needle.parts[0]}\n\n" in pl.text
    assert 30 <= pl.depth <= 70


# -------------------------------------------------------------------------------------------- needles, scoring
def test_needles_come_from_the_seed_with_several_surface_forms() -> None:
    for t in NEEDLE_TYPES:
        a, da = make_needles(t, seed=5, n_distractors=2)
        b, db = make_needles(t, seed=5, n_distractors=2)
        assert a == b and da == db
        assert make_needles(t, seed=6, n_distractors=0)[0].key != a.key
        assert {make_needles(t, seed=s, n_distractors=0)[0].surface for s in range(30)} == {0, 1, 2}
        for d in da:  # near misses: same template, another key and other values
            assert d.key != a.key and all(d.fields[f] != v for f, v in a.fields.items())


@pytest.mark.parametrize("needle_type", NEEDLE_TYPES)
def test_every_needle_type_scores_right_refusal_and_distractor(needle_type: str) -> None:
    needle, distractors = make_needles(needle_type, seed=21, n_distractors=1)
    prompt = structured_prompt(needle, "direct", "not in documents")
    assert needle.question in prompt and json.dumps(json_schema(needle_type)) in prompt

    def as_json(fields: dict[str, str | None]) -> str:
        obj = {f: (int(v) if v is not None and SCHEMAS[needle_type][f] == "integer" else v) for f, v in fields.items()}
        assert check_schema(obj, json_schema(needle_type))
        return "Here you go: " + json.dumps(obj)

    right = score_answer(as_json(needle.fields), needle, distractors, REFUSALS)
    assert (right.answer_format, right.schema_ok, right.exact, right.field_score) == ("json", True, 1.0, 1.0)
    assert not right.refused and not right.hallucinated

    refusal = score_answer(as_json({f: None for f in needle.fields}), needle, distractors, REFUSALS)
    assert refusal.exact == 0.0 and refusal.refused and not refusal.hallucinated
    text_refusal = score_answer("not in documents", needle, distractors, REFUSALS)
    assert text_refusal.exact == 0.0 and text_refusal.refused and not text_refusal.hallucinated
    assert text_refusal.answer_format == "text" and not text_refusal.schema_ok

    wrong = score_answer(as_json(distractors[0].fields), needle, distractors, REFUSALS)
    assert wrong.exact == 0.0 and wrong.hallucinated and not wrong.refused
    assert wrong.distractor_hit is not None and distractors[0].key in wrong.distractor_hit

    if len(needle.fields) > 1:  # field level: one of two fields right
        half = dict(needle.fields)
        f0 = next(iter(half))
        half[f0] = distractors[0].fields[f0]
        partial = score_answer(as_json(half), needle, distractors, REFUSALS)
        assert partial.exact == 0.0 and partial.field_score == 0.5 and partial.hallucinated

    # Free text (the extractive baseline): the sentence that states the value is right.
    stated = (
        needle.text
        if needle_type != "table_cell"
        else "{crates} crates; the inspector is {inspector}.".format(**needle.fields)
    )
    text = score_answer(stated, needle, distractors, REFUSALS, structured=False)
    assert text.exact == 1.0 and text.answer_format == "text"
    # A cited answer carries its quote.
    cited = score_answer(
        json.dumps({"quote": needle.text, **json.loads(as_json(needle.fields).split(": ", 1)[1])}),
        needle,
        distractors,
        REFUSALS,
        with_quote=True,
    )
    assert cited.exact == 1.0 and cited.quote == needle.text


def test_reasoning_follow_up_is_scored_from_json() -> None:
    needle, _ = make_needles("numeric", seed=2, n_distractors=0)
    task = needle.reasoning
    assert task.kind == "compare"
    assert score_reasoning(json.dumps({"answer": task.expected}), task) == 1.0
    other = "no" if task.expected == "yes" else "yes"
    assert score_reasoning(json.dumps({"answer": other}), task) == 0.0


def test_trials_are_ordered_for_prefix_sharing(tmp_path: Path, tok: Tokenizer, filler: Haystack) -> None:
    """Grouped by haystack, deepest first insertion first, the methods of one needle side by side: what lets a
    prefix-caching model reuse the filler it has already read."""
    from ragpipe.niah import build_trials, prefix_sharing_order

    s = _project(
        tmp_path,
        'lengths = [1500]\ndepths = [0, 50, 100]\nrepetitions = 2\nneedle_types = ["numeric", "proper_noun"]\n'
        'methods = ["direct", "cite"]',
    )
    haystacks = {(1500, 0): filler, (1500, 1): build_haystack(source_paragraphs(CORPUS), 1500, 1, 7, tok)}
    trials = build_trials(s.niah, haystacks, tok)
    ordered = prefix_sharing_order(trials, haystacks)
    assert sorted(t.trial_id for t in ordered) == sorted(t.trial_id for t in trials) and len(trials) == 24
    assert [t.rep for t in ordered] == sorted(t.rep for t in trials)
    for rep in (0, 1):
        base = haystacks[(1500, rep)].text
        firsts = [
            next((i for i, (a, b) in enumerate(zip(base, t.placement.text)) if a != b), len(base))
            for t in ordered
            if t.rep == rep
        ]
        assert firsts == sorted(firsts, reverse=True) and firsts[0] > firsts[-1]
    for a, b in zip(ordered[::2], ordered[1::2]):
        assert a.placement.text == b.placement.text and {a.method, b.method} == {"direct", "cite"}


def test_settings_section_is_parsed_and_checked(tmp_path: Path) -> None:
    s = _project(tmp_path, 'lengths = [4000, 1000]\ndepths = [50, 0]\nneedle_types = ["numeric"]')
    ns = s.niah
    assert ns.lengths == (1000, 4000) and ns.depths == (0.0, 50.0) and ns.needle_types == ("numeric",)
    with pytest.raises(SettingsError, match="needle_types"):
        _project(tmp_path / "b", 'needle_types = ["haiku"]')  # when the settings file is loaded, like any section
    with pytest.raises(SettingsError, match="unknown key"):
        _project(tmp_path / "c", "colour = 1")


def test_effective_length_and_positional_bias() -> None:
    from ragpipe.niah import Estimate, bias_flags, effective_length

    def e(p: float, n: int = 60) -> Estimate:
        return Estimate(n, p * n)

    by_len = {1000: e(1.0), 2000: e(0.98), 4000: e(0.5), 8000: e(0.95)}
    assert effective_length(by_len, {}, 0.85)["value"] == 2000
    assert effective_length({1000: e(1.0), 2000: e(1.0)}, {2000: 1.0}, 0.85)["value"] == 1000  # overflow ends it
    assert effective_length({1000: e(0.2)}, {}, 0.85)["status"] == "below threshold"
    depths = (0.0, 50.0, 100.0)
    u_shape = {(n, d): e(1.0 if d in (0.0, 100.0) else 0.3) for n in (1000, 2000) for d in depths}
    flags = bias_flags(u_shape, 0.15)
    assert flags["pattern"] == "positional_bias"
    assert sorted({b["length"] for b in flags["positional_bias"]}) == [1000, 2000]
    decline = {(n, d): e(v) for n, v in ((1000, 1.0), (2000, 0.8), (4000, 0.5)) for d in depths}
    flags = bias_flags(decline, 0.15)
    assert flags["pattern"] == "length_decline" and not flags["positional_bias"]


# ------------------------------------------------------------------------------------------------ overflow
def test_overflow_is_labelled_not_scored_as_a_miss(tmp_path: Path, tok: Tokenizer) -> None:
    import duckdb

    from ragpipe.niah import Estimate, bias_flags, build_trials, cells, effective_length, evaluate_subject
    from ragpipe.warehouse import migrate

    s = _project(
        tmp_path,
        'lengths = [600, 1500]\ndepths = [0, 100]\nrepetitions = 1\nneedle_types = ["numeric"]\n'
        'subjects = ["full_context"]\nwindow = 1200',
    )
    ns = s.niah
    docs = source_paragraphs(CORPUS)
    hs = {(n, 0): build_haystack(docs, n, 0, ns.seed, tok) for n in ns.lengths}
    trials = build_trials(ns, hs, tok)
    rows = evaluate_subject("full_context", trials, s, ns, tok, ExtractiveAnswerer(s.answerer), "r1")
    by_len = {n: [r for r in rows if r["length_target"] == n] for n in ns.lengths}
    assert all(r["status"] == "scored" for r in by_len[600])
    assert all(
        r["status"] == "overflow"
        and r["exact"] is None
        and r["hallucinated"] is None
        and r["refused"] is None
        and r["answer"] is None
        and r["input_tokens_est"] > 1200 - 128
        for r in by_len[1500]
    )
    con = duckdb.connect()
    migrate(con)
    from ragpipe.niah.run import COLUMNS

    con.executemany(
        f"INSERT INTO niah_trials ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
        [["r1"] + [r[c] for c in COLUMNS[1:]] for r in rows],
    )
    got = {c["length_target"]: c for c in cells(con, "r1")}
    assert got[1500]["overflow_rate"] == 1.0 and got[1500]["exact"] is None and got[1500]["hallucination_rate"] is None
    first = Estimate(got[600]["n_scored"], got[600]["exact"] * got[600]["n_scored"])
    assert effective_length({600: first, 1500: Estimate(0, 0.0)}, {1500: 1.0}, 0.0)["value"] == 600
    assert bias_flags({(600, 0.0): Estimate(5, 5.0), (600, 100.0): Estimate(5, 5.0)}, 0.15)["pattern"] == "flat"


# ---------------------------------------------------------------------------- retrieval path, end to end
E2E = (
    "seed = 99\nlengths = [500, 1000]\ndepths = [0, 50, 100]\nrepetitions = 1\n"
    'needle_types = ["proper_noun", "numeric"]\nmethods = ["direct"]\nsubjects = ["retrieval"]\ndistractors = 1'
)
VOLATILE = {"run_id", "latency_s"}


def _trial_rows(con: Any, run_id: str) -> list[dict[str, Any]]:
    cur = con.execute("SELECT * FROM niah_trials WHERE run_id = ? ORDER BY trial_id, subject", [run_id])
    names = [d[0] for d in cur.description]
    return [{k: v for k, v in zip(names, r) if k not in VOLATILE} for r in cur.fetchall()]


def test_retrieval_path_end_to_end_through_dagster_and_deterministic(tmp_path: Path) -> None:
    from ragpipe.assets.niah import build_niah_assets
    from ragpipe.assets.resources import RagpipeResource
    from ragpipe.niah import run_trials
    from ragpipe.warehouse import connect

    s = _project(tmp_path / "proj", E2E)
    result = dg.materialize(
        build_niah_assets(s),
        resources={"ragpipe": RagpipeResource(settings_path=str(s.source))},
        instance=dg.DagsterInstance.ephemeral(),
    )
    assert result.success
    report_md = {
        ev.asset_key.to_user_string(): ev.materialization.metadata for ev in result.get_asset_materialization_events()
    }["niah_report"]
    assert list(report_md)[0] == "figures"  # the combined figure heads the materialization in the UI
    assert report_md["figures"].value.count("data:image/png;base64,") == 1  # one subject, one figure
    assert "retrieval_effective_length" in report_md
    tier_rows = report_md["tier_choice"].value.splitlines()[2:]  # per length: all types, then each needle type
    assert len(tier_rows) == 2 * 3 and all(row.startswith("| 500 |") or row.startswith("| 1000 |") for row in tier_rows)
    assert "TIER CHOICE" in report_md["summary"].value
    figures = sorted((s.warehouse_dir / "niah" / result.run_id).glob("*.png"))
    assert [p.name for p in figures] == ["retrieval.png"] and figures[0].stat().st_size > 1000

    with connect(s.duckdb_path) as con:
        rows = _trial_rows(con, result.run_id)
        assert len(rows) == 2 * 3 * 2  # lengths x depths x needle types (1 repetition, 1 method, 1 subject)
        assert {r["tokenizer"] for r in rows} == {"minilm-wordpiece (all-MiniLM-L6-v2)"}
        assert all(r["status"] == "scored" for r in rows)
        assert {(r["length_target"], r["depth_target"]) for r in rows} == {
            (n, d) for n in (500, 1000) for d in (0, 50, 100)
        }
        assert all(r["retrieval_score"] is not None and r["retrieved_ranks"] is not None for r in rows)
        # The extractive baseline finds these needles when retrieved; a miss is a refusal or a named near miss.
        assert sum(r["exact"] for r in rows) >= len(rows) // 2
        for r in rows:  # every trial is exactly one of: found, refused, a hallucination (with the score to match)
            assert [r["exact"] == 1.0, bool(r["refused"]), bool(r["hallucinated"])].count(True) == 1, r
            assert r["field_score"] == 1.0 if r["exact"] == 1.0 else r["field_score"] < 1.0, r
            assert r["field_score"] == 0.0 or not r["refused"], r
        cells = con.execute("SELECT count(*), sum(n) FROM niah_cells WHERE run_id = ?", [result.run_id]).fetchone()
        assert cells == (6, 12)
        run = con.execute(
            "SELECT n_trials, embedder_tag, report_json FROM niah_runs WHERE run_id = ?", [result.run_id]
        ).fetchone()
        assert run[0] == 12 and run[1].startswith("minilm-") and "effective_length" in run[2]
        cells_json = json.loads(run[2])["subjects"]["retrieval"]["cells"]
        assert all(
            c["metrics"]["exact"]["n"] == 2 and c["metrics"]["exact"]["lo"] <= c["metrics"]["exact"]["hi"]
            for c in cells_json
        )

        # The same seed again (through the library this time): identical trials, haystacks, questions and answers.
        again = run_trials(s, con, "second-run")  # the first run finished: a new run, not a resume
        assert again["rows"] == 12
        assert _trial_rows(con, "second-run") == rows


# ------------------------------------------------------------------------- full context, OpenAI-compatible
@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("niah_server") / "stderr.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, str(SERVER), "--port", "0"], stdout=subprocess.PIPE, stderr=err, text=True
        )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("READY "), log.read_text(errors="replace")
        yield f"http://127.0.0.1:{int(line.split()[1])}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # a loaded machine: the tests do not depend on how the server exits
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()


def test_full_context_path_with_the_openai_compatible_answerer(tmp_path: Path, server: str) -> None:
    from ragpipe.niah import run_trials
    from ragpipe.warehouse import connect

    s = _project(
        tmp_path,
        'lengths = [700, 2500]\ndepths = [0, 50, 100]\nrepetitions = 1\nneedle_types = ["numeric", "cross_sentence"]\n'
        'methods = ["direct", "cite"]\nsubjects = ["full_context"]\nwindow = 2000',
        answerer="openai",
        base_url=server,
    )
    with urllib.request.urlopen(server.removesuffix("/v1") + "/_sizes", timeout=5) as resp:
        before = len(json.loads(resp.read()))

    def mark(t: Any) -> Any:
        """The fake endpoint echoes what the trial says: right at depth 0, the distractor at 50, nothing at 100."""
        if t.depth_target == 100.0:
            return t
        fields = dict(t.needle.fields) if t.depth_target == 0.0 else dict(t.distractors[0].fields)
        if "code" in fields:
            fields["code"] = int(fields["code"])
        if t.method == "cite":
            fields = {"quote": t.needle.text if t.depth_target == 0.0 else t.distractors[0].text, **fields}
        text = t.placement.text + "\n\n[[echo-json]] ECHO-JSON: " + json.dumps(fields)
        return dataclasses.replace(t, placement=dataclasses.replace(t.placement, text=text))

    with connect(s.duckdb_path) as con:
        stats = run_trials(s, con, "fc-run", trial_filter=mark)
        cur = con.execute("SELECT * FROM niah_trials WHERE run_id = 'fc-run'")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
    assert stats["rows"] == 2 * 3 * 2 * 2
    short = [r for r in rows if r["length_target"] == 700]
    long = [r for r in rows if r["length_target"] == 2500]
    assert all(r["status"] == "overflow" and r["exact"] is None for r in long)  # beyond the window: labelled, not sent
    assert all(r["status"] == "scored" and r["window_tokens"] == 2000 for r in short)
    with urllib.request.urlopen(server.removesuffix("/v1") + "/_sizes", timeout=5) as resp:
        sent = json.loads(resp.read())[before:]
    assert len(sent) == len(short) + sum(1 for r in short if r["reasoning_score"] is not None)
    assert max(sent) > 2500  # the whole haystack went in the prompt
    for r in short:
        assert r["answer_format"] in ("json", "text") and r["input_tokens"] > 0 and r["latency_s"] >= 0
        if r["depth_target"] == 0.0:
            assert (r["answer_format"], r["schema_ok"], r["exact"], r["field_score"]) == ("json", True, 1.0, 1.0)
            assert r["hallucinated"] is False and r["refused"] is False
            if r["method"] == "cite":  # the cited text contains the needle
                assert r["retrieval_score"] == 1.0
            else:
                assert r["retrieval_score"] is None
        elif r["depth_target"] == 50.0:
            assert r["exact"] == 0.0 and r["hallucinated"] and r["distractor_hit"].startswith("distractor 1")
        else:
            assert r["refused"] and r["exact"] == 0.0 and not r["hallucinated"]  # "not in documents"
