"""Which settings of each stage only move its decision, and how to tell a stage rewrote a text.

`refinery retune` and the report's yield section read this: a setting listed here can be changed
and every document re-decided from the signals the run stored; any other setting changes what a
stage measures (or writes) and needs a full run. Keys are dotted paths below the stage's config;
`x.*` is any key directly below `x`.
"""
from __future__ import annotations

from typing import Any, Callable

# Per stage: the config keys (dotted, `*` = any key below) that only move a decision. Anything else
# changes what a stage measures or writes and needs a full run.
DECISION_KEYS: dict[str, tuple[str, ...]] = {
    "langid": ("min_score", "default_min_score", "thresholds.*", "languages"),
    "quality": ("gopher_quality.*", "gopher_repetition.*", "fineweb.line_punct_thr", "fineweb.short_line_thr",
                "fineweb.char_duplicates_ratio", "fineweb.new_line_ratio", "c4.min_num_sentences",
                "c4.filter_lorem_ipsum", "c4.filter_curly_bracket", "drop_on_rules", "min_quality_score",
                "classifier.min_score"),
    "toxicity": ("max_toxic_fraction", "max_score", "max_toxic_words"),
    "exact_dedup": ("keep", "quality_column"),
    "minhash_dedup": ("keep", "quality_column", "threshold", "clusters"),
    "pii": (),
}

# The signals that say a stage rewrote a document's text: any of them non-zero (C4's removed lines,
# PII's masked matches).
REWRITE_SIGNALS: dict[str, tuple[str, ...]] = {
    "quality": ("c4_removed_lines",),
    "pii": ("pii_email_count", "pii_phone_count", "pii_ip_count"),
}


def _rewrote_by(columns: tuple[str, ...]) -> Callable[[dict], bool]:
    return lambda r: any(r.get(c) for c in columns)


# Did the stage rewrite this document's text? (signals of the row -> bool)
REWROTE: dict[str, Callable[[dict], bool]] = {name: _rewrote_by(cols) for name, cols in REWRITE_SIGNALS.items()}
REWROTE_READS = tuple(c for cols in REWRITE_SIGNALS.values() for c in cols)  # what REWROTE reads


def rewrite_rows(table: Any, keep: tuple[str, ...] = ()) -> list[dict]:
    """The rows of an Arrow table as dicts of only what REWROTE reads, and the columns `keep`:
    converting every signal (and the text) of a row to Python costs far more than the check."""
    return table.select([c for c in REWROTE_READS + keep if c in table.column_names]).to_pylist()


def allowed(stage: str, key: str) -> bool:
    """Is `key` of stage `stage` (its registered name) a decision-only setting?"""
    for pat in DECISION_KEYS.get(stage, ()):
        if pat == key or (pat.endswith(".*") and key.startswith(pat[:-1]) and key.count(".") == pat.count(".")):
            return True
    return False


def dotted_keys(config: Any, prefix: str = "") -> dict[str, Any]:
    """A stage config (nested dicts) as {dotted key: leaf value}: the keys `allowed` takes."""
    if not isinstance(config, dict):
        return {prefix: config}
    out: dict[str, Any] = {}
    for k, v in config.items():
        out.update(dotted_keys(v, f"{prefix}.{k}" if prefix else str(k)))
    return out
