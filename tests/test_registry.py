"""The stage registry and the one vocabulary of rejection reasons (docs/architecture.md)."""
from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import pipeline.sources
from stages import registry
from stages.base import Stage
from stages.quality.stage import Quality

SNAKE = re.compile(r"[a-z][a-z0-9_]*")
WORD = re.compile(r"[a-z][a-z0-9_-]*")  # what a reason looks like, hyphens included (to catch them)
QUALITY_FAMILIES = ("gopher_repetition_", "gopher_quality_", "c4_", "fineweb_", "quality_score_", "classifier_")


def shipped() -> dict[str, type[Stage]]:
    """Stages of the package (tests define stages of their own, which the registry also finds)."""
    return {n: c for n, c in registry.available().items() if c.__module__.startswith("stages.")}


def read_reasons() -> set[str]:
    """Every reason constant of the readers: module-level upper-case names holding a bare word."""
    out = set()
    for m in pkgutil.iter_modules(pipeline.sources.__path__):
        mod = importlib.import_module(f"pipeline.sources.{m.name}")
        out |= {v for k, v in vars(mod).items() if k.isupper() and isinstance(v, str) and WORD.fullmatch(v)
                and not k.endswith("_PROCESS")}  # a child process's name, not a reason
    return out


def test_every_stage_is_found_by_name():
    found = registry.available()
    assert {"langid", "quality", "toxicity", "pii", "exact_dedup", "minhash_dedup", "line_dedup"} <= set(found)
    assert all(issubclass(c, Stage) and registry.get(n) is c for n, c in found.items())
    with pytest.raises(KeyError):
        registry.get("no_such_stage")


def test_reasons_are_snake_case_and_say_one_thing():
    seen: dict[str, str] = {r: "read" for r in read_reasons()}
    for name, cls in shipped().items():
        assert len(set(cls.reasons)) == len(cls.reasons), name
        for r in cls.reasons:
            assert SNAKE.fullmatch(r), (name, r)
            assert seen.setdefault(r, name) == name, f"{r!r} is a reason of both {seen[r]} and {name}"
    found = read_reasons()
    assert {"unreadable", "not_html", "no_tex_source", "lock_file", "outside_root"} <= found
    for r in found:
        assert SNAKE.fullmatch(r), r


def test_quality_reasons_carry_their_family():
    assert all(r.startswith(QUALITY_FAMILIES) for r in Quality.reasons)
    q = Quality(gopher_repetition={"top_n_grams": [(5, 0.1)], "dup_n_grams": [(3, 0.2)]})
    assert all(r.startswith(QUALITY_FAMILIES) for r in q.reasons)
    for rs in q.rule_sets:  # every reason of a family maps to datatrove's string for that rule
        assert set(rs.datatrove_reasons()) == set(rs.reasons())


def test_every_config_key_of_every_stage_has_a_description():
    for name, cls in shipped().items():
        keys = registry.config_keys(cls.Config)
        assert keys and [k.key for k in keys if not k.description] == [], name


def test_describe_lists_reasons_signals_and_nested_config():
    info = registry.describe(Quality)
    assert info.reasons == Quality.reasons and info.kind == "per-document"
    sig = dict((n, d) for n, _, d in info.signals)
    assert sig["rps_doc_top_3gram_frac"] and sig["quality_score"] and sig["c4_num_sentences"]
    keys = {k.key: k for k in info.config}
    assert keys["gopher_quality.min_doc_words"].default == 50
    assert "gopher_quality_too_few_words" in keys["gopher_quality.min_doc_words"].description
    assert "classifier.model_path" in keys
