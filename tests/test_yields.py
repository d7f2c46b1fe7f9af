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
    # a share near 1 stays in [0, 1]: 0.95 went to 1.045, a threshold no probability reaches
    assert [_move(0.95, s, +1) for s in (1, 2, 3, 5)] == pytest.approx([0.96, 0.97, 0.98, 1.0])
    assert all(0 < _move(0.67, s, +1) <= 1 for s in (1, 2, 3, 5)) and _move(0.1, 5, -1) >= 0
    assert _off_values(0.3, +1) == [None, 1.0, 10**18] and _off_values(5, -1) == [None, 0]


@pytest.mark.slow
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


@pytest.mark.slow
def test_near_duplicates_come_with_what_they_duplicate(sample):
    _, out, _, ledger = sample
    pairs = duplicate_pairs(out, ledger.stage_order, "minhash_dedup")
    assert pairs and all(p["of_text"] and p["jaccard"] is not None and p["jaccard"] >= 0.8 for p in pairs)


def _points(rules) -> list:
    return [(r.name, [(repr(p.value), p.docs, p.bytes, p.by_source, p.by_lang) for p in r.points], r.freed)
            for r in rules]


@pytest.mark.slow
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


def test_part_reader_sizes_from_the_scan_and_texts_from_row_groups_match_full_reads(tmp_path):
    """The yield section takes the rejected documents' sizes from the report's scan and reads the
    texts of a few documents from only the row groups holding them: both as a full read gives."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from pipeline.report.scan import scan_run
    from pipeline.report.yields import PartReader
    from tests.report_helpers import doc, write_run

    rows = [(doc("web", 0, i, "x" * (i % 7) + f" é {i}", lang="de"), "language_not_allowed") for i in range(50)]
    out = str(write_run(tmp_path / "run", [{"source": "web", "raw_bytes": 4000, "kept": [], "rejects": {
        "langid": rows}}]))
    f = PartReader(out).files("rejects/langid")[0]
    table = pq.read_table(f)
    text = pa.array([None if i % 5 == 0 else t for i, t in enumerate(table.column("text").to_pylist())], pa.string())
    table = table.set_column(table.schema.get_field_index("text"), "text", text)  # some without text
    pq.write_table(table, f, row_group_size=8)  # several row groups
    assert pq.ParquetFile(f).metadata.num_row_groups > 2
    scan = scan_run(out, Ledger.read(f"{out}/ledger.json"))
    want = pc.fill_null(pc.binary_length(table.column("text")), 0).to_pylist()
    assert scan.text_bytes[f].tolist() == want
    for reader in (PartReader(out), PartReader(out, scan.text_bytes)):  # read, or from the scan
        got = reader.table(["rejects/langid"], ["id", "_bytes"])
        assert got.column("_bytes").to_pylist() == want and got.column("id") == table.column("id")
    ids = table.column("id").to_pylist()
    some = [ids[k] for k in (1, 5, 6, 17, 49)]  # in four row groups; 5 has no text
    texts = dict(zip(ids, table.column("text").to_pylist()))
    assert PartReader(out).texts(some) == {i: texts[i] for i in some}
    sub = PartReader(out).table(["rejects/langid"], ["id", "text"], ids=some)
    assert sub.column("id").to_pylist() == sorted(some, key=ids.index)
    assert sub.column("text").to_pylist() == [texts[i] for i in sub.column("id").to_pylist()]
    pick = [49, 1, 17, 1, 0, 30]  # by row of the file, in any order and repeated
    assert PartReader(out).texts_at(f, pick) == [texts[ids[k]] for k in pick]


@pytest.mark.slow
def test_texts_read_a_chunk_at_a_time_give_the_same_yields(sample, monkeypatch):
    """The documents measured again (three here) are read and measured `chunk` at a time (a crawl's rejected
    texts are never held at once); the gains are those of one pass."""
    import pipeline.report.yields as yields

    _, out, recipe, ledger = sample
    whole = _points(rule_yields(out, recipe, ledger, 0.25))
    decide = yields._decide
    monkeypatch.setattr(yields, "_decide", lambda *a, **k: decide(*a, **{**k, "chunk": 1}))
    load = yields._load_measures
    monkeypatch.setattr(yields, "_load_measures", lambda runs, *a: load([], *a))  # measure everything again
    assert _points(rule_yields(out, recipe, ledger, 0.25)) == whole


def test_yields_hold_one_part_file_at_a_time(tmp_path, monkeypatch):
    """The yield section reduces each part file's rejects to the sums it reports before it reads the
    next (its memory does not grow with the run): no re-decision sees more than one file's rows, and
    of the documents a rule frees it keeps only the NEAR nearest its threshold."""
    import pipeline.report.yields as yields
    from tests.report_helpers import RECIPE, doc, write_run

    recipe = {**RECIPE, "stages": [{"stage": "langid", "languages": ["en"], "min_score": 0.5,
                                    "second_opinion": False}]}
    shards = [{"source": "web", "raw_bytes": 4000, "kept": [doc("web", s, 99, "kept", lang="en", lang_score=0.9)],
               "rejects": {"langid": [(doc("web", s, i, f"text {s} {i}", lang="en", lang_score=0.1 + i / 100),
                                       "language_score_too_low") for i in range(40)]}} for s in range(4)]
    out = str(write_run(tmp_path / "run", shards, recipe))
    seen: list[int] = []
    decide = yields._decide
    monkeypatch.setattr(yields, "_decide", lambda st, t, *a, **k: seen.append(t.num_rows) or decide(st, t, *a, **k))
    rule = next(r for r in rule_yields(out, recipe, Ledger.read(f"{out}/ledger.json"), 0.25) if r.key == "min_score")
    assert rule.points[-1].docs == 160 and rule.points[0].docs > 0  # off frees all four files' rejects
    assert seen and max(seen) <= 40
    assert len(rule.freed) == yields.NEAR
    outside, _ = near_misses(out, ["read", "langid", "dedup"], "langid", rule.column, rule.current, rule.freed)
    assert [r["lang_score"] for r in outside] == pytest.approx([0.49] * 3)  # the nearest of all four files
