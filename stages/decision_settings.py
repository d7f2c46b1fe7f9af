"""Reading the stages' own declarations of what a retune may change.

Each stage declares `decision_keys` (settings that only move its decision) and `rewrite_signals`
(signals that say it rewrote a text) on its class (stages/base.py). `refinery retune` and the
report's yield section ask through these helpers, by a stage's registered name.
"""
from __future__ import annotations

from typing import Any


def _stage(name: str):
    from stages import registry  # the registry imports every module below stages/, this one too
    return registry.get(name)


def retunable(stage: str) -> bool:
    """Does stage `stage` (its registered name) declare its decision-only settings?"""
    return _stage(stage).decision_keys is not None


def allowed(stage: str, key: str) -> bool:
    """Is `key` of stage `stage` (its registered name) a decision-only setting?"""
    return _stage(stage).decision_only(key)


def rewrite_reads() -> tuple[str, ...]:
    """Every signal any stage's `rewrote` reads."""
    from stages import registry
    return tuple(dict.fromkeys(c for cls in registry.available().values() for c in cls.rewrite_signals))


def rewrite_rows(table: Any, keep: tuple[str, ...] = ()) -> list[dict]:
    """The rows of an Arrow table as dicts of only what the stages' `rewrote` reads, and the columns
    `keep`: converting every signal (and the text) of a row to Python costs far more than the check."""
    return table.select([c for c in rewrite_reads() + keep if c in table.column_names]).to_pylist()


def dotted_keys(config: Any, prefix: str = "") -> dict[str, Any]:
    """A stage config (nested dicts) as {dotted key: leaf value}: the keys `allowed` takes."""
    if not isinstance(config, dict):
        return {prefix: config}
    out: dict[str, Any] = {}
    for k, v in config.items():
        out.update(dotted_keys(v, f"{prefix}.{k}" if prefix else str(k)))
    return out
