"""Every asset's Dagster code version, recorded: a change of layout (moving modules, splitting functions) must leave
them equal, or every warehouse would re-run after an upgrade that computes nothing differently.

The values below were recorded from the flat layout before the stage packages (issue 26). A deliberate change of what
a stage computes bumps its IMPL_VERSION (or its settings), and then the new value is recorded here with the bump.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, write_settings

BUNDLED = {
    "answers": "v1-b20b0821df",
    "chunks": "v1-110dcebedc",
    "corpus": "v1-13a7ea8327",
    "documents": "v2-aa8b566cfe",  # v2: sentence boundaries from spaCy's senter
    "embeddings": "v1-43ad3754e1",
    "golden_set": "v1-ab6be096aa-257bdb40da",  # -<golden file hash>, since the restamp of 5efe909
    "golden_suggestions": "v1-8ef1a62827",  # new: proposed tests (on demand)
    "niah_haystacks": "v2-74012a93f9",
    "niah_report": "v2-74012a93f9",
    "niah_trials": "v2-5d4a0c52d1",
    "production_traces": "v1-80247997f2",  # new: the app's production traces (on their own sensor)
    "retrievals": "v2-c4fa7b0471",
    "stamps": "v1-ab6be096aa",
    "verdicts": "v16-675ad69aa7",  # v3: grounding, needs_review; v4, v6: what a value is said of; v5: contradicted claims; v7: the entailment reader, units; v8: framing, bare code, refusal then guess; v9: declines that describe, rivals; v10: a word swapped for its rival; v11: refusal grammar, restated sentences; v12: what the text itself calls usual; v13: the text quoted speaks for itself; v14: advice on where to look, guesses as likely, abbreviations ending in a word; v15: other bases, times of day, rival addresses
}
# Every section away from its defaults, a judge, shards (their own steps), a [niah] grid.
VARIANT = {
    "answers": "v1-19a549e02c",
    "chunks": "v1-dda48fa552",
    "corpus": "v1-22ba604a42",
    "documents": "v2-9b21c825b1",
    "embeddings": "v1-c25eab11d9",
    "golden_set": "v1-ab6be096aa-257bdb40da",  # -<golden file hash>, since the restamp of 5efe909
    "golden_suggestions": "v1-aca241ef4e",
    "niah_haystacks": "v2-a34971bc9e",
    "niah_report": "v2-a34971bc9e",
    "niah_trials": "v2-733d4d6332",
    "production_traces": "v1-d2cca3f0a4",
    "retrievals": "v2-31999abf66",
    "stamps": "v1-ab6be096aa",
    "verdicts": "v16-e194e5e319-judge1",
}
# ragpipe.versions.code_version of every stage, and the chunker tag (chunk ids and table rows carry it).
STAGES_BUNDLED = {
    "answerer": "v1-b20b0821df",
    "chunker": "v1-110dcebedc",
    "chunker_tag": "by_title-110dcebedc",
    "corpus": "v1-13a7ea8327",
    "embedder": "v1-43ad3754e1",
    "golden": "v1-ab6be096aa",
    "parser": "v2-aa8b566cfe",
    "retriever": "v2-c4fa7b0471",
    "verdict": "v16-675ad69aa7",
}
STAGES_VARIANT = {
    "answerer": "v1-19a549e02c",
    "chunker": "v1-dda48fa552",
    "chunker_tag": "sentences-dda48fa552",
    "corpus": "v1-22ba604a42",
    "embedder": "v1-c25eab11d9",
    "golden": "v1-ab6be096aa",
    "parser": "v2-9b21c825b1",
    "retriever": "v2-31999abf66",
    "verdict": "v16-e194e5e319-judge1",
}


def _variant_settings() -> dict[str, Any]:
    return {
        "warehouse": {"dir": "warehouse"},
        "corpus": {"dir": "examples/corpus", "exclude": ["README.md"]},
        "parser": {"pdf_engine": "unstructured", "timeout_s": 60.0, "workers": 3},
        "chunker": {"strategy": "sentences", "max_characters": 600, "new_after_n_chars": 400, "overlap": 20},
        "embedder": {"name": "minilm-static", "batch_size": 32},
        "golden": {"path": "examples/golden.jsonl"},
        "retriever": {"mode": "vector", "k": 8, "ann_min_rows": 10, "nprobes": 5},
        "answerer": {
            "kind": "openai",
            "refusal_phrases": ["N/A"],
            "threads": 2,
            "openai": {"base_url": "http://127.0.0.1:9/v1", "model": "m", "max_tokens": 64},
        },
        "judge": {"enabled": True, "openai": {"model": "judge-model"}},
        "gate": {"block": ["fail", "unverified"], "check_severity": "ERROR"},
        "compare": {"block": ["pass->fail"]},
        "scale": {"embed_shards": 3, "parse_shards": 2},
        "niah": {"lengths": [1000, 3000], "depths": [0, 50, 100], "repetitions": 1, "methods": ["direct", "cite"]},
        "monitor": {"traces_dir": "traces", "drop_fields": ["user"], "window_days": 14, "sensor_interval_s": 5},
    }


def _code_versions(settings_file: Path) -> dict[str, str]:
    from ragpipe.assets import build_definitions

    graph = build_definitions(str(settings_file)).resolve_asset_graph()
    return {key.to_user_string(): graph.get(key).code_version for key in graph.get_all_asset_keys()}


def _stage_versions(settings_file: Path) -> dict[str, str]:
    from ragpipe.settings import STAGE_SECTIONS, load_settings
    from ragpipe.versions import code_version

    settings = load_settings(settings_file)
    return {stage: code_version(settings, stage) for stage in STAGE_SECTIONS} | {"chunker_tag": settings.chunker_tag}


@pytest.fixture(scope="module")
def variant_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("variant")
    shutil.copytree(ROOT / "examples", root / "examples")
    return write_settings(root / "ragpipe.toml", _variant_settings())


def test_the_bundled_projects_code_versions_are_unchanged() -> None:
    assert _code_versions(ROOT / "ragpipe.toml") == BUNDLED
    assert _stage_versions(ROOT / "ragpipe.toml") == STAGES_BUNDLED


def test_every_setting_changed_gives_the_same_code_versions_as_before(variant_file: Path) -> None:
    assert _code_versions(variant_file) == VARIANT
    assert _stage_versions(variant_file) == STAGES_VARIANT
