"""Evaluate a candidate configuration beside the current one, without touching the current state.

The candidate runs the same stages (chunk, embed, golden set, stamps, retrieve, answer, verdicts) in a scratch
warehouse under `<warehouse>/compare/<id>/`, seeded from the current warehouse: parsed documents always, chunks when
the chunker is the same, vectors when the embedder is the same (only new chunk texts are embedded). The current
warehouse is only read, except for the two result tables `comparisons` and `comparison_verdicts`.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
import tomllib
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from ragpipe import evaluate, ingest
from ragpipe.core import VERDICTS, Log, no_log
from ragpipe.embed import embed_chunks, embedder_tag, open_store, table_name
from ragpipe.settings import STAGE_SECTIONS, Settings, SettingsError, settings_from_dict
from ragpipe.warehouse import connect, migrate, transaction

# The sections a candidate may change: what lies between the parsed corpus and the verdicts.
COMPARABLE = ("chunker", "embedder", "retriever", "answerer", "judge", "subject")


def parse_override(item: str) -> tuple[list[str], Any]:
    """'retriever.k=8' -> (['retriever', 'k'], 8); the value is read as TOML, else taken as a string."""
    key, sep, value = item.partition("=")
    path = [p.strip() for p in key.split(".") if p.strip()]
    if not sep or len(path) < 2:
        raise SettingsError(
            f"--set {item!r}: expected SECTION.KEY=VALUE, e.g. embedder.name=minilm-static or retriever.k=8"
        )
    try:
        parsed = tomllib.loads(f"v = {value.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value.strip()
    return path, parsed


def candidate_settings(current: Settings, overrides: list[str], candidate_file: Path | None = None) -> Settings:
    """The candidate: `candidate_file` (else the current settings file) with `overrides` applied, validated as any
    settings file. Only the stages between the parsed corpus and the verdicts may differ."""
    source = (candidate_file or current.source).resolve()
    try:
        raw = tomllib.loads(source.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise SettingsError(f"candidate settings {source} not found") from exc
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{source}: not valid TOML: {exc}") from exc
    for item in overrides:
        path, value = parse_override(item)
        if path[0] not in COMPARABLE:
            raise SettingsError(
                f"--set {item!r}: compare changes only {', '.join(COMPARABLE)}; "
                f"[{path[0]}] must stay as it is (the same corpus and golden set)"
            )
        node = raw
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise SettingsError(f"--set {item!r}: {'.'.join(path[:-1])} is not a section")
        node[path[-1]] = value
    cand = settings_from_dict(raw, source)
    for stage in ("corpus", "parser", "golden"):
        if cand.stage_hash(stage) != current.stage_hash(stage):
            raise SettingsError(
                f"{source}: [{STAGE_SECTIONS[stage][0]}] differs from {current.source}; a comparison "
                f"runs another pipeline over the same corpus and golden set"
            )
    return cand


@dataclass(frozen=True)
class Side:
    verdict: str | None
    anchor_rank: int | None
    unverified: bool | None


@dataclass(frozen=True)
class TestRow:
    question_id: str
    kind: str
    current: Side
    candidate: Side

    @property
    def transition(self) -> str:
        return f"{self.current.verdict or 'none'}->{self.candidate.verdict or 'none'}"

    @property
    def flipped(self) -> bool:
        return self.current.verdict != self.candidate.verdict


@dataclass
class Comparison:
    comparison_id: str
    current_run_id: str
    candidate_run_id: str
    changed: dict[str, str]  # setting -> "old -> new"
    rows: list[TestRow]
    metrics: dict[str, dict[str, float]]  # current / candidate -> hit_at_k, mrr, recall_at_k, k
    reused: dict[str, str]
    seconds: float
    block: tuple[str, ...]

    def counts(self, side: str) -> dict[str, int]:
        return {v: sum(getattr(r, side).verdict == v for r in self.rows) for v in VERDICTS} | {
            "unverified": sum(bool(getattr(r, side).unverified) for r in self.rows)
        }

    @property
    def flips(self) -> list[TestRow]:
        return [r for r in self.rows if r.flipped]

    @property
    def blocking(self) -> list[TestRow]:
        return [r for r in self.flips if r.transition in self.block]


def settings_diff(current: Settings, candidate: Settings) -> dict[str, str]:
    """'retriever.k': '5 -> 8' for every comparable setting that differs."""
    out: dict[str, str] = {}
    for section in COMPARABLE:
        old, new = (
            _flat(dataclasses.asdict(getattr(current, section))),
            _flat(dataclasses.asdict(getattr(candidate, section))),
        )
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                out[f"{section}.{key}"] = f"{old.get(key)} -> {new.get(key)}"
    return out


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _current_side(con: Any) -> tuple[str, dict[str, Side], dict[str, float]]:
    run = con.execute("SELECT eval_run_id, hit_at_k, mrr, recall_at_k, k FROM latest_eval_run").fetchone()
    if run is None:
        raise SettingsError("no judged evaluation in the warehouse yet: run `ragpipe ci` first, then compare")
    sides = {
        q: Side(v, r, u)
        for q, v, r, u in con.execute(
            "SELECT question_id, verdict, anchor_rank, unverified FROM verdicts WHERE eval_run_id = ?", [run[0]]
        ).fetchall()
    }
    return run[0], sides, dict(zip(("hit_at_k", "mrr", "recall_at_k", "k"), run[1:]))


def _seed(current: Settings, candidate: Settings, scratch: Any, log: Log) -> dict[str, str]:
    """Copy into the scratch warehouse what the candidate shares with the current state; say what was reused."""
    reused = {"documents": "copied (never re-parsed)"}
    with connect(current.duckdb_path, read_only=True) as main:
        tables = {name: main.sql(f"SELECT * FROM {name}").to_arrow_table() for name in ("corpus_files", "documents")}
        chunks = main.sql(f"SELECT * FROM chunks WHERE chunker_tag = '{candidate.chunker_tag}'").to_arrow_table()
    for name, data in tables.items():
        scratch.register("seed", data)
        scratch.execute(f"INSERT INTO {name} SELECT * FROM seed")
        scratch.unregister("seed")
    if chunks.num_rows:
        scratch.register("seed", chunks)
        scratch.execute("INSERT INTO chunks SELECT * FROM seed")
        scratch.unregister("seed")
        reused["chunks"] = f"copied ({chunks.num_rows} chunks of {candidate.chunker_tag})"
    emb_tag = _embedder_tag(candidate)
    src = open_store(current)
    if table_name(emb_tag) in src.table_names():
        table = src.open_table(table_name(emb_tag))
        vectors: pa.Table = table.to_arrow()
        dst = open_store(candidate)
        dst.create_table(table_name(emb_tag), data=vectors, mode="overwrite")
        reused["embeddings"] = f"{vectors.num_rows} vectors of {emb_tag} copied (only new chunk texts are embedded)"
    for what, how in reused.items():
        log(f"compare: {what} {how}")
    return reused


def _embedder_tag(s: Settings) -> str:
    return embedder_tag(s.embedder, s.models_dir)


def run_comparison(current: Settings, candidate: Settings, log: Log = no_log, keep_scratch: bool = False) -> Comparison:
    """Evaluate `candidate` in a scratch warehouse, compare it with the latest judged run, record the result."""
    t0 = time.perf_counter()
    comparison_id = f"cmp-{uuid.uuid4().hex[:12]}"
    scratch_dir = current.warehouse_dir / "compare" / comparison_id
    cand = dataclasses.replace(
        candidate, warehouse_dir=scratch_dir, lancedb_location=None, model_cache=current.models_dir, s3=current.s3
    )
    scratch_dir.mkdir(parents=True)
    with connect(current.duckdb_path, read_only=True) as main:
        current_run, current_sides, current_metrics = _current_side(main)
    try:
        with connect(cand.duckdb_path) as con:
            migrate(con)
            reused = _seed(current, cand, con, log)
            ingest.chunk_documents(cand, con, comparison_id, log=log)
            embed_chunks(cand, con, comparison_id, log=log)
            evaluate.load_golden_stage(cand, con, comparison_id, log=log)
            evaluate.stamp_stage(cand, con, comparison_id, log=log)
            evaluate.retrieve_stage(cand, con, comparison_id, trigger="compare", log=log)
            evaluate.answer_stage(cand, con, comparison_id, log=log, trigger="compare")
            evaluate.verdict_stage(cand, con, comparison_id, log=log, trigger="compare")
            _, cand_sides, cand_metrics = _current_side(con)
            kinds = dict(con.execute("SELECT question_id, kind FROM golden_tests").fetchall())
    finally:
        if not keep_scratch:
            shutil.rmtree(scratch_dir, ignore_errors=True)
    none = Side(None, None, None)
    rows = [
        TestRow(q, kinds.get(q, ""), current_sides.get(q, none), cand_sides.get(q, none))
        for q in sorted(set(current_sides) | set(cand_sides))
    ]
    result = Comparison(
        comparison_id,
        current_run,
        comparison_id,
        settings_diff(current, candidate),
        rows,
        {"current": current_metrics, "candidate": cand_metrics},
        reused,
        round(time.perf_counter() - t0, 2),
        current.compare.block,
    )
    record(current, result, candidate)
    return result


def record(current: Settings, c: Comparison, candidate: Settings) -> None:
    """The comparison and its per-test rows in the current warehouse (comparisons, comparison_verdicts)."""
    with connect(current.duckdb_path) as con, transaction(con):
        con.execute(
            "INSERT INTO comparisons VALUES (?, now(), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                c.comparison_id,
                c.current_run_id,
                str(candidate.source),
                json.dumps(c.changed),
                candidate.chunker_tag,
                _embedder_tag(candidate),
                json.dumps(c.metrics["current"]),
                json.dumps(c.metrics["candidate"]),
                len(c.flips),
                len(c.blocking),
                json.dumps(c.reused),
                c.seconds,
            ],
        )
        if c.rows:
            con.executemany(
                "INSERT INTO comparison_verdicts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    [
                        c.comparison_id,
                        r.question_id,
                        r.kind,
                        r.current.verdict,
                        r.candidate.verdict,
                        r.current.anchor_rank,
                        r.candidate.anchor_rank,
                        r.current.unverified,
                        r.candidate.unverified,
                        r.transition in c.block and r.flipped,
                    ]
                    for r in c.rows
                ],
            )


def _rank(r: int | None) -> str:
    return "-" if r is None else str(r)


def render_text(c: Comparison) -> str:
    cur, cand = c.counts("current"), c.counts("candidate")
    mc, mk = c.metrics["current"], c.metrics["candidate"]
    lines = [f"COMPARISON {c.comparison_id}: current (run {c.current_run_id[:8]}) vs candidate ({c.seconds:.1f} s)"]
    lines += [f"  {k}: {v}" for k, v in c.changed.items()] or ["  (no setting differs)"]
    lines += [
        f"  reused: {', '.join(f'{k} {v}' for k, v in c.reused.items())}",
        "",
        f"{'':<11}{'pass':>6}{'fail':>6}{'dnr':>6}{'error':>6}{'unver':>6}  hit@k    MRR",
        f"{'current':<11}"
        + "".join(f"{cur[k]:>6}" for k in (*VERDICTS, "unverified"))
        + f"  {mc['hit_at_k']:.3f}  {mc['mrr']:.3f}",
        f"{'candidate':<11}"
        + "".join(f"{cand[k]:>6}" for k in (*VERDICTS, "unverified"))
        + f"  {mk['hit_at_k']:.3f}  {mk['mrr']:.3f}",
        "",
        "PER TEST (current -> candidate)",
    ]
    for r in c.rows:
        mark = "!" if r in c.blocking else ("*" if r.flipped else " ")
        lines.append(
            f" {mark}{r.question_id:<10} {r.current.verdict or 'none':>11} -> {r.candidate.verdict or 'none':<11}"
            f" rank {_rank(r.current.anchor_rank):>2} -> {_rank(r.candidate.anchor_rank):<2}"
            f"{'  unverified' if r.candidate.unverified else ''}"
        )
    lines.append(f"\nFLIPS ({len(c.flips)}; * changed, ! blocking: {', '.join(c.block)})")
    lines += [f"  {r.question_id:<10} {r.current.verdict} -> {r.candidate.verdict}" for r in c.flips] or ["  (none)"]
    lines.append(f"\nCANDIDATE: {'BLOCKED' if c.blocking else 'OK'} ({len(c.blocking)} blocking flip(s))")
    return "\n".join(lines)


def render_markdown(c: Comparison) -> str:
    cur, cand = c.counts("current"), c.counts("candidate")
    mc, mk = c.metrics["current"], c.metrics["candidate"]
    out = [
        f"## ragpipe compare: {'BLOCKED' if c.blocking else 'OK'}",
        "",
        "Candidate: " + (", ".join(f"`{k}` {v}" for k, v in c.changed.items()) or "no setting differs"),
        "",
        "| | pass | fail | did not run | error | unverified | hit@k | MRR |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        "| current | "
        + " | ".join(str(cur[k]) for k in (*VERDICTS, "unverified"))
        + f" | {mc['hit_at_k']:.3f} | {mc['mrr']:.3f} |",
        "| candidate | "
        + " | ".join(str(cand[k]) for k in (*VERDICTS, "unverified"))
        + f" | {mk['hit_at_k']:.3f} | {mk['mrr']:.3f} |",
        "",
        f"### Flips ({len(c.flips)})",
        "",
    ]
    if c.flips:
        out += ["| test | current | candidate | anchor rank | blocking |", "|---|---|---|---|---|"]
        out += [
            f"| `{r.question_id}` | {r.current.verdict} | {r.candidate.verdict} | "
            f"{_rank(r.current.anchor_rank)} -> {_rank(r.candidate.anchor_rank)} | {'yes' if r in c.blocking else ''} |"
            for r in c.flips
        ]
    else:
        out.append("No verdict changes.")
    return "\n".join(out) + "\n"
