"""The vectors a project's LanceDB table holds, by chunk id, and their comparison across two ways of embedding."""

from __future__ import annotations

from typing import Any

import numpy as np

from ragpipe.embed import load_embedder, store


def _table(settings: Any) -> dict[str, tuple[str, np.ndarray]]:
    emb = load_embedder(settings.embedder, settings.models_dir)
    rows = store.table_rows(
        store.open_store(settings).open_table(store.table_name(emb.tag)), ["chunk_id", "content_hash", "vector"]
    )
    return {r["chunk_id"]: (r["content_hash"], np.asarray(r["vector"], dtype=np.float32)) for r in rows}


def _same(a: dict[str, tuple[str, np.ndarray]], b: dict[str, tuple[str, np.ndarray]]) -> None:
    assert a.keys() == b.keys()
    assert all(a[k][0] == b[k][0] for k in a)
    assert max(float(np.abs(a[k][1] - b[k][1]).max()) for k in a) < 1e-6
