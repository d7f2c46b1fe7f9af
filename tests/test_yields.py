"""The report's yield: per-setting gains from the stored signals, checked against `refinery retune`."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from pipeline.engine.ledger import Ledger
from pipeline.engine.retune import retune
from pipeline.report.yields import _move, _off_values, duplicate_pairs, near_misses, rule_yields
from tests.test_retune import _full


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("yields")
    out = _full(tmp, "base", {"langid.min_score": 0.65})  # one threshold for every language
    with open(f"{out}/recipe.json", encoding="utf-8") as fh:
        recipe = json.load(fh)
    return tmp, out, recipe, Ledger.read(f"{out}/ledger.json")


def test_steps():
    assert _move(2, 1, -1) == 1 and _move(0, 3, -1) == 0 and _move(0.5, 2, +1) == pytest.approx(0.6)
    assert _move([[2, 0.2]], 1, +1) == [[2, pytest.approx(0.22)]]
    assert _off_values(0.3, +1) == [None, 1.0, 10**18] and _off_values(5, -1) == [None, 0]


def test_stage_gain_equals_a_retune(sample):
    tmp, out, recipe, ledger = sample
    rules = [r for r in rule_yields(out, recipe, ledger, 0.25) if r.points[-1].docs]
    assert rules, "no setting frees a document on the sample"
    for r in rules:  # a curve that only rises, up to the rule off
        assert all(a.docs <= b.docs for a, b in zip(r.points, r.points[1:])), r.name
    rule = next(r for r in rules if any(p.docs for p in r.points[:-1]) and r.column)
    step = next(p for p in rule.points[:-1] if p.docs)
    value = json.dumps(step.value)
    res = retune(out, [f"{rule.name}={value}"], str(tmp / "re"))
    assert res.ledger.total(rule.stage).kept - ledger.total(rule.stage).kept == step.docs
    outside, inside = near_misses(out, ledger.stage_order, rule.stage, rule.column, rule.current, rule.freed)
    assert outside and inside
    side = 1 if outside[0][rule.column] > rule.current else -1
    assert all(side * (r[rule.column] - rule.current) > 0 for r in outside)
    assert all(side * (r[rule.column] - rule.current) <= 0 for r in inside)


def test_near_duplicates_come_with_what_they_duplicate(sample):
    _, out, _, ledger = sample
    pairs = duplicate_pairs(out, ledger.stage_order, "minhash_dedup")
    assert pairs and all(p["of_text"] and p["jaccard"] is not None and p["jaccard"] >= 0.8 for p in pairs)


def _points(rules) -> list:
    return [(r.name, [(repr(p.value), p.docs, p.bytes, p.by_source, p.by_lang) for p in r.points], r.freed)
            for r in rules]


def test_measurements_are_stored_and_reused_by_the_next_report(sample, monkeypatch, tmp_path):
    """A report keeps the documents the quality stage measured again (report/yield_measures/);
    a later report of the run, or of a run retuned from it, measures none of them again and finds
    the same yield."""
    from stages.quality.stage import Quality

    tmp, out, recipe, ledger = sample
    first = rule_yields(out, recipe, ledger, 0.25, reuse=[out])
    stored = sorted((tmp / "base" / "report" / "yield_measures").glob("quality.*.parquet"))
    assert stored and sum(pq.read_metadata(p).num_rows for p in stored) > 0
    measured = []
    real = Quality.annotate
    monkeypatch.setattr(Quality, "annotate", lambda self, batch: measured.append(batch.num_rows) or real(self, batch))
    again = rule_yields(out, recipe, ledger, 0.25, reuse=[out])
    assert not measured and _points(again) == _points(first)
    # a retuned run reuses its parent's report; its yield is the one a report without them finds
    re = retune(out, ["langid.min_score=0.5"], str(tmp_path / "re"))
    re_recipe = json.loads((tmp_path / "re" / "recipe.json").read_text())
    re_ledger = Ledger.read(f"{re.out}/ledger.json")
    reused = rule_yields(re.out, re_recipe, re_ledger, 0.25, reuse=[out])
    monkeypatch.setattr(Quality, "annotate", real)
    import shutil

    shutil.rmtree(tmp_path / "re" / "report")
    fresh = rule_yields(re.out, re_recipe, re_ledger, 0.25)
    assert _points(reused) == _points(fresh)
    assert sum(measured) < sum(pq.read_metadata(p).num_rows for p in stored)
