"""NIAH haystacks (built once per length and source, stored) and the trial grid: length x depth x needle type x
method x repetition, each with its needle placed and its question asked."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import duckdb

from ragpipe.core import Log, common_prefix
from ragpipe.niah.haystack import (
    Haystack,
    Tokenizer,
    build_haystack,
    load_tokenizer,
    parsed_paragraphs,
    place_needle,
    source_paragraphs,
)
from ragpipe.niah.needles import Needle, Placement, make_needles, question_text
from ragpipe.niah.sources import IMPL_VERSION, haystack_dir, off_theme_dir, sub_seed
from ragpipe.settings import NiahSettings, Settings
from ragpipe.warehouse import first, transaction

Progress = Callable[[str, int, int], None]  # (stage, done, total)


def noop(*_: Any) -> None:
    pass


# ------------------------------------------------------------------------------------------------- haystacks
def haystack_key(settings: Settings, ns: NiahSettings, docs: list[list[str]], off: list[str] | None) -> str:
    payload = json.dumps(
        {
            "impl": IMPL_VERSION,
            "seed": ns.seed,
            "tokenizer": ns.tokenizer,
            "ratio": ns.off_theme_ratio,
            "docs": docs,
            "off": off,
        },
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _parsed(settings: Settings, src: Path, con: duckdb.DuckDBPyConnection) -> list[list[str]]:
    """The haystack's documents as the graph parsed them (any format), when the haystack folder is the corpus or
    lies inside it and the corpus is ingested; else none."""
    corpus = settings.corpus.dir.resolve()
    if not src.resolve().is_relative_to(corpus):
        return []
    prefix = src.resolve().relative_to(corpus).as_posix()
    where, args = ("", []) if prefix == "." else ("WHERE starts_with(doc_id, ?)", [prefix.rstrip("/") + "/"])
    rows = con.execute(f"SELECT doc_id, text FROM documents {where}", args).fetchall()
    return parsed_paragraphs([(r[0], r[1]) for r in rows])


def _sources(
    settings: Settings, ns: NiahSettings, con: duckdb.DuckDBPyConnection
) -> tuple[Path, list[list[str]], list[str] | None]:
    src = haystack_dir(settings, ns)
    docs = _parsed(settings, src, con) or source_paragraphs(src)  # not ingested yet: its text files
    od = off_theme_dir(settings, ns)
    off = [p for d in source_paragraphs(od) for p in d] if od else None
    return src, docs, off


def build_haystacks(
    settings: Settings, con: duckdb.DuckDBPyConnection, run_id: str, log: Log = noop, progress: Progress = noop
) -> dict[str, Any]:
    """Build (or reuse, by key) one filler haystack per (length, repetition) and store them in niah_haystacks."""
    ns = settings.niah
    tok = load_tokenizer(ns.tokenizer)
    src, docs, off = _sources(settings, ns, con)
    key = haystack_key(settings, ns, docs, off)
    have = {
        (r[0], r[1])
        for r in con.execute("SELECT length_target, rep FROM niah_haystacks WHERE haystack_key = ?", [key]).fetchall()
    }
    todo = [(n, r) for n in ns.lengths for r in range(ns.repetitions) if (n, r) not in have]
    built: list[Haystack] = []
    for i, (n, r) in enumerate(todo):
        h = build_haystack(docs, n, r, ns.seed, tok, ns.off_theme_ratio, off, source=str(src))
        built.append(h)
        progress("haystacks", i + 1, len(todo))
        log(
            f"haystack {n} tokens rep {r}: {h.n_tokens} tokens, {h.n_paragraphs} paragraphs "
            f"({h.n_off_theme} off-theme) in {h.build_seconds:.2f} s"
        )
    if built:
        with transaction(con):
            con.executemany(
                "INSERT OR REPLACE INTO niah_haystacks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now())",
                [
                    [
                        key,
                        h.length_target,
                        h.rep,
                        h.seed,
                        h.tokenizer,
                        h.source,
                        h.n_tokens,
                        len(h.text),
                        h.n_paragraphs,
                        h.n_off_theme,
                        h.repeats,
                        h.sha256,
                        h.text,
                        h.build_seconds,
                        run_id,
                    ]
                    for h in built
                ],
            )
    rows = first(
        con.execute(
            "SELECT count(*), sum(n_tokens), max(build_seconds) FROM niah_haystacks WHERE haystack_key = ?", [key]
        )
    )
    return {
        "haystack_key": key,
        "source": str(src),
        "tokenizer": tok.name,
        "haystacks": rows[0],
        "built_this_run": len(built),
        "total_tokens": int(rows[1] or 0),
        "max_build_seconds": round(float(rows[2] or 0.0), 3),
    }


def load_haystacks(
    settings: Settings, con: duckdb.DuckDBPyConnection, run_id: str, log: Log = noop
) -> tuple[str, dict[tuple[int, int], Haystack]]:
    ns = settings.niah
    stats = build_haystacks(settings, con, run_id, log)  # a no-op when they are stored
    key = stats["haystack_key"]
    out = {}
    for row in con.execute(
        "SELECT length_target, rep, seed, tokenizer, source, text, n_tokens, n_paragraphs, n_off_theme, repeats, "
        "build_seconds FROM niah_haystacks WHERE haystack_key = ?",
        [key],
    ).fetchall():
        n, r = row[0], row[1]
        if n in ns.lengths and r < ns.repetitions:
            out[(n, r)] = Haystack(*row)
    return key, out


# ---------------------------------------------------------------------------------------------------- trials
@dataclass(frozen=True)
class Trial:
    trial_id: str
    length_target: int
    depth_target: float
    rep: int
    needle_type: str
    method: str
    seed: int
    needle: Needle
    distractors: tuple[Needle, ...]
    placement: Placement
    filler_tokens: int
    haystack_sha256: str
    question: str  # the bare question (the method's wording); prompts add the schema

    @property
    def cell_key(self) -> tuple[int, float, int, str]:
        """Trials that share a haystack (all methods of one needle)."""
        return (self.length_target, self.depth_target, self.rep, self.needle_type)


def build_trials(
    ns: NiahSettings, haystacks: dict[tuple[int, int], Haystack], tok: Tokenizer, progress: Progress = noop
) -> list[Trial]:
    """Every (length, depth, repetition, needle type, method): a function of the seed only."""
    out: list[Trial] = []
    cells = [
        (n, d, r, t) for n in ns.lengths for d in ns.depths for r in range(ns.repetitions) for t in ns.needle_types
    ]
    for i, (n, d, r, t) in enumerate(cells):
        h = haystacks[(n, r)]
        seed = sub_seed(ns.seed, "trial", n, d, r, t)
        needle, distractors = make_needles(t, seed, ns.distractors)
        pl = place_needle(h.text, needle, distractors, d, tok, seed, ns.cross_gap)
        sha = hashlib.sha256(pl.text.encode()).hexdigest()
        for m in ns.methods:
            tid = "nt_" + hashlib.sha256(f"{ns.seed}|{n}|{d}|{r}|{t}|{m}".encode()).hexdigest()[:14]
            out.append(
                Trial(
                    tid, n, d, r, t, m, seed, needle, tuple(distractors), pl, h.n_tokens, sha, question_text(needle, m)
                )
            )
        progress("trials", i + 1, len(cells))
    return out


def prefix_sharing_order(trials: list[Trial], haystacks: dict[tuple[int, int], Haystack]) -> list[Trial]:
    """The trials in the order that lets a prefix-caching model reuse the most: grouped by haystack, the trial whose
    first insertion lies deepest first (each next trial then shares the filler up to its own first insertion with
    the one before), the methods of one needle together (they share the whole haystack). Scores do not depend on
    the order; only the time does."""

    def key(it: tuple[int, Trial]) -> tuple[int, int, int, int]:
        i, t = it
        base = haystacks.get((t.length_target, t.rep))
        first = common_prefix(base.text, t.placement.text) if base is not None else 0
        return (t.length_target, t.rep, -first, i)

    return [t for _, t in sorted(enumerate(trials), key=key)]
