"""[niah]: the needle-in-a-haystack grid (docs/niah.md), every key optional; read and checked like any section, so a
mistake in it is named when the settings file is loaded."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragpipe.settings.base import SettingsError, build, table

NEEDLE_TYPES = ("proper_noun", "numeric", "negative", "cross_sentence", "table_cell")
METHODS = ("direct", "rewritten", "cite", "locate")
SUBJECTS = ("retrieval", "full_context", "summary")


@dataclass(frozen=True)
class NiahSettings:
    """The [niah] section of ragpipe.toml (every key optional)."""

    seed: int = 20241129
    lengths: tuple[int, ...] = (2000, 4000, 8000, 16000, 32000)  # haystack tokens before the needle goes in
    depths: tuple[float, ...] = (0.0, 25.0, 50.0, 75.0, 100.0)  # percent of the haystack before the needle
    repetitions: int = 2  # per cell, each with its own seed (another haystack order, another needle)
    needle_types: tuple[str, ...] = NEEDLE_TYPES
    methods: tuple[str, ...] = ("direct",)  # direct | rewritten | cite | locate
    subjects: tuple[str, ...] = ("retrieval", "full_context")  # retrieval | full_context | summary
    haystack_dir: str = ""  # the haystack theme; "" = the corpus, as parsed (a folder outside it: its text files)
    off_theme_dir: str = ""  # off-theme text files; "" = built-in generated off-theme paragraphs
    off_theme_ratio: float = 0.1  # share of haystack paragraphs that are off-theme
    distractors: int = 1  # near-miss distractor needles (same template, other key and value) per trial
    tokenizer: str = "minilm"  # the named local tokenizer for endpoints: minilm (WordPiece) | a local HF path
    window: int = 0  # the full-context subject's window in tokens; 0 = the answerer's own (openai 128000, smollm2 8192)
    on_overflow: str = "skip"  # skip: label overflow, do not call | truncate: cut the haystack to the window
    cross_gap: float = 0.1  # cross-sentence needles: the second sentence this share of the haystack away
    effective_threshold: float = 0.85  # effective length: longest length whose score stays at or above this
    bias_threshold: float = 0.15  # positional bias: middle depths below the edges by more than this
    reasoning: bool = True  # follow-up compare/order/negate task on the cited or retrieved evidence
    # A higher bar per needle type for the tier choice ({"table_cell": 0.95}): (type, threshold) pairs, sorted.
    risk: tuple[tuple[str, float], ...] = ()

    def threshold(self, needle_type: str) -> float:
        """What the tier choice asks of a path for this needle type: its [niah].risk, else effective_threshold."""
        return dict(self.risk).get(needle_type, self.effective_threshold)

    def hash(self) -> str:
        return hashlib.sha256(json.dumps(dataclasses.asdict(self), sort_keys=True).encode()).hexdigest()[:10]


def read(value: Any, source: Path) -> NiahSettings:
    """The [niah] table, checked, with its lengths and depths sorted and each listed once."""
    raw = table(value, "niah", source)
    for key in ("lengths", "depths"):
        if key in raw and isinstance(raw[key], list):
            raw[key] = [float(v) if key == "depths" else v for v in raw[key]]
    risk = _risk(raw.pop("risk", {}), source)
    ns: NiahSettings = build(NiahSettings, raw, "niah", source)
    check(ns, source)
    return dataclasses.replace(
        ns, lengths=tuple(sorted(set(ns.lengths))), depths=tuple(sorted(set(ns.depths))), risk=risk
    )


def _risk(value: Any, src: Path) -> tuple[tuple[str, float], ...]:
    """[niah].risk: a table of needle type -> threshold in (0, 1]."""
    if not isinstance(value, dict):
        raise SettingsError(
            f"{src}: [niah].risk must be a table of needle type = threshold, e.g. {{table_cell = 0.95}}"
        )
    for key, bar in value.items():
        if key not in NEEDLE_TYPES:
            raise SettingsError(f"{src}: [niah].risk.{key} is not a needle type; allowed: {list(NEEDLE_TYPES)}")
        if isinstance(bar, bool) or not isinstance(bar, (int, float)) or not 0 < bar <= 1:
            raise SettingsError(f"{src}: [niah].risk.{key} must be a threshold in (0, 1], got {bar!r}")
    return tuple(sorted((k, float(v)) for k, v in value.items()))


def check(ns: NiahSettings, src: Path) -> None:
    bad = set(ns.needle_types) - set(NEEDLE_TYPES)
    if bad:
        raise SettingsError(
            f"{src}: [niah].needle_types has unknown types {sorted(bad)}; allowed: {list(NEEDLE_TYPES)}"
        )
    if set(ns.methods) - set(METHODS):
        raise SettingsError(f"{src}: [niah].methods must be among {list(METHODS)}")
    if set(ns.subjects) - set(SUBJECTS):
        raise SettingsError(f"{src}: [niah].subjects must be among {list(SUBJECTS)}")
    if not ns.lengths or any(not isinstance(n, int) or n < 200 for n in ns.lengths):
        raise SettingsError(f"{src}: [niah].lengths must be integers of at least 200 tokens")
    if not ns.depths or any(not 0 <= d <= 100 for d in ns.depths):
        raise SettingsError(f"{src}: [niah].depths must be percentages between 0 and 100")
    if ns.repetitions < 1 or ns.distractors < 0:
        raise SettingsError(f"{src}: [niah].repetitions must be >= 1 and distractors >= 0")
    if not 0 <= ns.off_theme_ratio < 1:
        raise SettingsError(f"{src}: [niah].off_theme_ratio must be in [0, 1)")
    if ns.on_overflow not in ("skip", "truncate"):
        raise SettingsError(f"{src}: [niah].on_overflow must be skip or truncate")
