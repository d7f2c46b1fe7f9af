"""The stage registry and the one vocabulary of rejection reasons (docs/architecture.md)."""
from __future__ import annotations

import re

import pytest

from pipeline.sources import arxiv, base, code, commoncrawl
from stages import registry
from stages.base import Stage
from stages.quality.stage import Quality

SNAKE = re.compile(r"[a-z][a-z0-9_]*")
QUALITY_FAMILIES = ("gopher_repetition_", "gopher_quality_", "c4_", "fineweb_", "quality_score_", "classifier_")


def read_reasons() -> set[str]:
    """The readers' reason constants (upper-case module strings the readers pass to `rejected`)."""
    out = {base.UNREADABLE}
    for mod, names in [(arxiv, ["NO_TEX", "NO_MAIN", "NO_TEXT"]),
                       (commoncrawl, ["NOT_HTML", "HTTP_STATUS", "NO_TEXT", "EXTRACT_ERROR", "TOO_LARGE"]),
                       (code, ["BINARY", "VENDORED", "LOCK_FILE", "NOT_CODE", "TOO_LARGE", "EMPTY", "GENERATED",
                               "LONG_LINE", "MEAN_LINE", "LOW_ALNUM"])]:
        out |= {getattr(mod, n) for n in names}
    return out


def test_every_stage_is_found_by_name():
    found = registry.available()
    assert {"langid", "quality", "toxicity", "pii", "exact_dedup", "minhash_dedup", "line_dedup"} <= set(found)
    assert all(issubclass(c, Stage) and registry.get(n) is c for n, c in found.items())
    with pytest.raises(KeyError):
        registry.get("no_such_stage")


def test_reasons_are_snake_case_and_say_one_thing():
    seen: dict[str, str] = {r: "read" for r in read_reasons()}
    for name, cls in registry.available().items():
        assert len(set(cls.reasons)) == len(cls.reasons), name
        for r in cls.reasons:
            assert SNAKE.fullmatch(r), (name, r)
            assert seen.setdefault(r, name) == name, f"{r!r} is a reason of both {seen[r]} and {name}"
    for r in read_reasons():
        assert SNAKE.fullmatch(r), r


def test_quality_reasons_carry_their_family():
    assert all(r.startswith(QUALITY_FAMILIES) for r in Quality.reasons)
    q = Quality(gopher_repetition={"top_n_grams": [(5, 0.1)], "dup_n_grams": [(3, 0.2)]})
    assert all(r.startswith(QUALITY_FAMILIES) for r in q.reasons)
    for rs in q.rule_sets:  # every reason of a family maps to datatrove's string for that rule
        assert set(rs.datatrove_reasons()) == set(rs.reasons())
