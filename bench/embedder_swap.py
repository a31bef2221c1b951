"""What an embedder swap does to the bundled golden set: verdicts, anchor ranks and vector agreement, side by side.

    .venv/bin/python bench/embedder_swap.py [--embedders minilm,minilm-onnx-int8] [--depth 20]

Each embedder evaluates the bundled example (examples/) in its own throwaway warehouse with the project's settings
otherwise unchanged (`ragpipe ci`), then every test's anchor (trap or evidence chunk) is looked up in the top
`--depth` of the configured retriever. Prints the verdict counts per embedder, every test whose verdict or anchor rank
changed, and the cosine between the two embedders' vectors of the same chunks. This is the question to ask before
changing the default embedder: a swap makes every stored validation "unverified" and may move borderline traps out
of the top k.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import ragpipe  # noqa: E402,F401  (offline environment first)
from ragpipe import embed  # noqa: E402
from ragpipe.cli import main as ragpipe_main  # noqa: E402
from ragpipe.embed import load_embedder  # noqa: E402
from ragpipe.golden import load_golden  # noqa: E402
from ragpipe.rag import retrieve_many  # noqa: E402
from ragpipe.settings import Settings, load_settings  # noqa: E402
from ragpipe.warehouse import connect  # noqa: E402


def project(base: Path, name: str, models_dir: Path) -> Settings:
    """The repository's ragpipe.toml with another embedder and its own warehouse; corpus and golden set as bundled."""
    text = (ROOT / "ragpipe.toml").read_text()
    text = re.sub(r'(?m)^name = "[^"]*"', f'name = "{name}"', text, count=1)
    text = re.sub(
        r'(?m)^dir = "warehouse".*$', f'dir = "{base / "warehouse"}"\nmodels_dir = "{models_dir}"', text, count=1
    )
    text = re.sub(r'(?m)^dir = "examples/corpus"', f'dir = "{ROOT / "examples" / "corpus"}"', text, count=1)
    text = re.sub(
        r'(?m)^path = "examples/golden.jsonl"', f'path = "{ROOT / "examples" / "golden.jsonl"}"', text, count=1
    )
    base.mkdir(parents=True, exist_ok=True)
    path = base / "ragpipe.toml"
    path.write_text(text)
    return load_settings(path)


def evaluate(s: Settings, depth: int) -> tuple[dict[str, str], dict[str, int | None], dict[str, np.ndarray]]:
    """(verdict, anchor rank within `depth`, vector by chunk id) per test after `ragpipe ci`."""
    ragpipe_main(["--settings", str(s.source), "ci"])  # exit 1 when the gate blocks: expected here
    with connect(s.duckdb_path, read_only=True) as con:
        verdicts = dict(con.execute("SELECT question_id, verdict FROM latest_verdicts").fetchall())
        stamped = {
            q: ids
            for q, ids in con.execute(
                "SELECT question_id, new_ids FROM latest_stamps WHERE new_ids IS NOT NULL"
            ).fetchall()
        }
    emb = load_embedder(s.embedder, s.models_dir)
    table = embed.open_store(s).open_table(embed.table_name(emb.tag))
    tests = load_golden(s.golden.path).tests
    vectors = emb.encode([t.question for t in tests])
    ranks: dict[str, int | None] = {}
    questions = [t.question for t in tests]
    ranked = retrieve_many(table, s.retriever.mode, depth, questions, vectors, s.retriever.nprobes)
    for t, hits in zip(tests, ranked):
        ids = [h.chunk_id for h in hits]
        anchors = stamped.get(t.question_id) or t.anchor_ids  # the re-stamped ids the verdict used
        found = [ids.index(a) + 1 for a in anchors if a in ids]
        ranks[t.question_id] = min(found) if found else None
    rows = embed.table_rows(table, ["chunk_id", "vector"])
    return verdicts, ranks, {r["chunk_id"]: np.asarray(r["vector"], dtype=np.float32) for r in rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embedders", default="minilm,minilm-onnx-int8", help="two comma-separated ragpipe embedder names")
    ap.add_argument(
        "--depth", type=int, default=20, help="how deep to look for each anchor (the gate uses [retriever].k)"
    )
    args = ap.parse_args()
    names = args.embedders.split(",")
    tmp = Path(tempfile.mkdtemp(prefix="ragpipe-swap-"))
    results = {}
    for name in names:
        s = project(tmp / name, name, tmp / "models")
        print(f"== {name}: ragpipe ci on the bundled example", flush=True)
        results[name] = (s, *evaluate(s, args.depth))
    k = results[names[0]][0].retriever.k
    print(f"\nverdicts on the bundled golden set ({results[names[0]][0].retriever.mode} top-{k}):")
    for name in names:
        c = Counter(results[name][1].values())
        print(f"  {name:22s} " + ", ".join(f"{c.get(v, 0)} {v}" for v in ("pass", "fail", "did_not_run", "error")))
    a, b = names[0], names[1]
    print(f"\ntests whose verdict or anchor rank changed ({a} -> {b}; rank within top {args.depth}, '-' = deeper):")
    for qid in sorted(results[a][1]):
        va, vb = results[a][1][qid], results[b][1].get(qid)
        ra, rb = results[a][2].get(qid), results[b][2].get(qid)
        if va != vb or ra != rb:
            flag = "  <- verdict changed" if va != vb else ""
            print(f"  {qid:8s} {va:12s} rank {ra or '-':>2} -> {vb:12s} rank {rb or '-':>2}{flag}")
    common = sorted(set(results[a][3]) & set(results[b][3]))
    cos = np.array([float(results[a][3][c] @ results[b][3][c]) for c in common])
    print(
        f"\ncosine between {a} and {b} vectors of the same {len(common)} chunks: "
        f"min {cos.min():.4f}, median {np.median(cos):.4f}, mean {cos.mean():.4f}"
    )


if __name__ == "__main__":
    main()
