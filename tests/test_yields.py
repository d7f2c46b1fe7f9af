"""The report's yield: per-setting gains from the stored signals, checked against `refinery retune`."""
from __future__ import annotations

import json

import pytest

from pipeline.engine.ledger import Ledger
from pipeline.engine.retune import retune
from pipeline.report.yields import _move, _off_values, duplicate_pairs, near_misses, rule_yields
from tests.test_retune import _full


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("yields")
    out = _full(tmp, "base", {})
    with open(f"{out}/recipe.json", encoding="utf-8") as fh:
        recipe = json.load(fh)
    return tmp, out, recipe, Ledger.read(f"{out}/ledger.json")


def test_steps():
    assert _move(2, 1, -1) == 1 and _move(0, 3, -1) == 0 and _move(0.5, 2, +1) == pytest.approx(0.6)
    assert _move([[2, 0.2]], 1, +1) == [[2, pytest.approx(0.22)]]
    assert _off_values(0.3, +1) == [None, 1.0, 10**18] and _off_values(5, -1) == [None, 0]


def test_stage_gain_equals_a_retune(sample):
    tmp, out, recipe, ledger = sample
    rules = {r.name: r for r in rule_yields(out, recipe, ledger, 0.25)}
    lang = rules["langid.min_score"]
    low = ledger.total("langid").rejected.get("language_score_too_low", [0])[0]
    assert lang.points[-1].docs == low > 0  # off frees every low-score document, nothing else
    for p in lang.points[:-1]:
        if p.docs:
            res = retune(out, [f"langid.min_score={p.value}"], str(tmp / f"re{p.docs}"))
            assert res.ledger.total("langid").kept - ledger.total("langid").kept == p.docs
            break
    else:
        pytest.fail("no step of langid.min_score frees a document on the sample")
    assert all(a.docs <= b.docs for a, b in zip(lang.points, lang.points[1:]))  # a curve that only rises
    outside, inside = near_misses(out, ledger.stage_order, "langid", "lang_score", lang.current, lang.freed)
    assert outside and all(r["lang_score"] < lang.current for r in outside)
    assert inside and all(r["lang_score"] >= lang.current for r in inside)


def test_near_duplicates_come_with_what_they_duplicate(sample):
    _, out, _, ledger = sample
    pairs = duplicate_pairs(out, ledger.stage_order, "minhash_dedup")
    assert pairs and all(p["of_text"] and p["jaccard"] is not None and p["jaccard"] >= 0.8 for p in pairs)
