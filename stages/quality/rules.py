"""What every rule set of the quality stage shares: a config base, a rule outcome and its score.

A rule set (Gopher quality, Gopher repetition, C4, FineWeb) turns `DocStats` into named signals,
then turns signals into ordered `Check`s: one per rule, in datatrove's order, each with the drop
reason, whether it passed and a score in [0, 1] for the composite quality score:
1 if it passed; if it failed, 0.5 * (1 - relative distance beyond the threshold), floored at 0,
so a near miss scores close to 0.5 and a far miss (or a yes/no rule such as lorem ipsum) scores 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa
from pydantic import BaseModel, ConfigDict


class RuleSetConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class Check:
    reason: str
    passed: bool
    score: float


@dataclass(frozen=True)
class LangRules:
    """How a document's language changes the rules: word rules off for unspaced scripts."""

    word_rules: bool
    stop_words: frozenset[str] | None


def at_most(reason: str, value: float | None, limit: float | None) -> Check | None:
    """Rule `value <= limit` (datatrove drops when value > limit). None when disabled or undefined."""
    if not limit or value is None:
        return None
    if value > limit:
        return Check(reason, False, 0.5 * max(0.0, 1.0 - (value - limit) / abs(limit)))
    return Check(reason, True, 1.0)


def at_least(reason: str, value: float | None, limit: float | None) -> Check | None:
    """Rule `value >= limit` (datatrove drops when value < limit). None when disabled or undefined."""
    if not limit or value is None:
        return None
    if value < limit:
        return Check(reason, False, 0.5 * max(0.0, 1.0 - (limit - value) / abs(limit)))
    return Check(reason, True, 1.0)


def flag(reason: str, failed: bool | None) -> Check | None:
    if failed is None:
        return None
    return Check(reason, not failed, 0.0 if failed else 1.0)


class RuleSet:
    """One family of rules. Subclasses declare their signals and reasons."""

    Config: ClassVar[type[RuleSetConfig]] = RuleSetConfig

    def __init__(self, config: RuleSetConfig):
        self.config = config

    def fields(self) -> list[pa.Field]:
        raise NotImplementedError

    def reasons(self) -> list[str]:
        raise NotImplementedError

    def datatrove_reasons(self) -> dict[str, str]:
        """Each reason of ours -> the reason datatrove's filter gives for the same rule."""
        raise NotImplementedError

    def signals(self, st: Any, lang: LangRules) -> dict[str, Any]:
        raise NotImplementedError

    def checks(self, sig: dict[str, Any], lang: LangRules) -> list[Check]:
        raise NotImplementedError
