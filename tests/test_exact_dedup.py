"""Exact dedup: normalisation, survivor choice, global grouping across spill files, determinism."""
from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.schema import doc_id, make_record, records_to_table
from stages.base import LocalExecutor
from stages.dedup.exact import ExactDedup, normalise, text_hash
from stages.registry import get
from tests.helpers import PoolExecutor

F = "data.jsonl"


def spill(stage, tmp_path, shards, extra=None, name="spill"):
    """Write annotated shards (lists of (source, offset, text)) as spill files, like the runner."""
    d = tmp_path / name
    d.mkdir()
    paths = []
    for i, shard in enumerate(shards):
        t = records_to_table(make_record(source=s, kind="jsonl", file=F, offset=o, text=x) for s, o, x in shard)
        if extra is not None:
            t = t.append_column("quality_score", pa.array([extra.get((s, o)) for s, o, _ in shard], pa.float64()))
        t = stage.annotate(t)
        p = d / f"part-{i:03d}.parquet"
        pq.write_table(t, p)
        paths.append(str(p))
    return paths


def decisions(files):
    return pa.concat_tables([pq.read_table(f) for f in files]).to_pylist()


def test_registered_and_normalisation():
    assert get("exact_dedup") is ExactDedup
    assert normalise("  a\t\nb  c ") == "a b c"
    assert normalise("Cafe\u0301") == "Caf\u00e9"  # NFD and NFC spellings are one text
    assert text_hash("A  B") == text_hash("A B\n")
    assert text_hash("A B") != text_hash("a b")
    assert text_hash("A B", lowercase=True) == text_hash("a b", lowercase=True)
    assert text_hash(None) is None and len(text_hash("")) == 32


def test_global_across_shards_and_sources(tmp_path):
    stage = ExactDedup()
    shards = [
        [("web", 0, "hello world"), ("web", 1, "unique one"), ("web", 2, None)],
        [("code", 0, "hello   world\n"), ("code", 1, "unique two")],
        [("web", 7, "hello world"), ("arxiv", 3, "unique one")],
    ]
    spills = spill(stage, tmp_path, shards)
    files = stage.resolve(spills, LocalExecutor())
    assert len(files) == 3
    work = tmp_path / "spill" / "_exact_dedup_work"  # intermediates are gone, decisions stay
    assert [p.name for p in work.iterdir()] == ["decisions"]
    assert sorted(p.name for p in (work / "decisions").iterdir()) == [f"f{i}.parquet" for i in range(3)]
    for f, s in zip(files, spills):  # same rows, same order as the spill file
        assert pq.read_table(f).column("id").to_pylist() == pq.read_table(s).column("id").to_pylist()
    rows = {r["id"]: r for r in decisions(files)}
    hello = sorted([doc_id("web", F, 0), doc_id("code", F, 0), doc_id("web", F, 7)])
    uniq = sorted([doc_id("web", F, 1), doc_id("arxiv", F, 3)])
    assert rows[hello[0]]["drop_reason"] is None
    for h in hello[1:]:
        assert rows[h]["drop_reason"] == "exact_duplicate" and rows[h]["drop_detail"] == hello[0]
    assert all(rows[h]["exact_dup_count"] == 3 for h in hello)
    assert rows[uniq[0]]["drop_reason"] is None and rows[uniq[1]]["drop_detail"] == uniq[0]
    for k in (doc_id("web", F, 2), doc_id("code", F, 1)):  # null text and a unique text stay
        assert rows[k]["drop_reason"] is None and rows[k]["exact_dup_count"] == 1
    assert sum(r["drop_reason"] is not None for r in rows.values()) == 3


def test_highest_quality_then_lowest_id(tmp_path):
    stage = ExactDedup(keep="highest_quality")
    shards = [[("a", 0, "same"), ("a", 1, "same"), ("a", 2, "same"), ("a", 3, "same")]]
    q = {("a", 0): 0.2, ("a", 1): 0.9, ("a", 2): 0.9, ("a", 3): None}
    rows = {r["id"]: r for r in decisions(stage.resolve(spill(stage, tmp_path, shards, q), LocalExecutor()))}
    best = min(doc_id("a", F, 1), doc_id("a", F, 2))
    kept = [k for k, r in rows.items() if r["drop_reason"] is None]
    assert kept == [best]
    assert {r["drop_detail"] for r in rows.values() if r["drop_reason"]} == {best}


def test_missing_quality_column_falls_back_to_lowest_id(tmp_path):
    stage = ExactDedup(keep="highest_quality")
    rows = decisions(stage.resolve(spill(stage, tmp_path, [[("a", i, "x") for i in range(5)]]), LocalExecutor()))
    kept = [r["id"] for r in rows if r["drop_reason"] is None]
    assert kept == [min(doc_id("a", F, i) for i in range(5))]


def test_bad_ids_are_refused(tmp_path):
    stage = ExactDedup()
    t = stage.annotate(pa.table({"id": ["not-an-id"], "text": ["x"]}))
    p = tmp_path / "s.parquet"
    pq.write_table(t, p)
    with pytest.raises(ValueError, match="32-hex"):
        stage.resolve([str(p)], LocalExecutor())


def test_independent_of_partitions_workers_and_order(tmp_path):
    rng = random.Random(5)
    texts = [f"text number {rng.randrange(60)}" for _ in range(600)]
    recs = [("s", i, t) for i, t in enumerate(texts)]
    shards_a = [recs[i::4] for i in range(4)]
    shuffled = recs[:]
    rng.shuffle(shuffled)
    shards_b = [shuffled[i::3] for i in range(3)]

    def kept(stage, shards, ex, name):
        rows = decisions(stage.resolve(spill(stage, tmp_path, shards, name=name), ex))
        return {r["id"]: (r["drop_reason"], r["drop_detail"]) for r in rows}

    base = kept(ExactDedup(partitions=1), shards_a, LocalExecutor(), "a")
    assert kept(ExactDedup(partitions=7), shards_b, LocalExecutor(), "b") == base
    assert kept(ExactDedup(partitions=3), shards_a, PoolExecutor(2), "c") == base
    assert sum(v[0] is None for v in base.values()) == len(set(texts))


def test_empty_spill_files(tmp_path):
    stage = ExactDedup()
    paths = spill(stage, tmp_path, [[], [("a", 0, "x"), ("a", 1, "x")], []])
    files = stage.resolve(paths, LocalExecutor())
    assert [pq.read_table(f).num_rows for f in files] == [0, 2, 0]
    assert stage.resolve([], LocalExecutor()) == []


@pytest.mark.slow
def test_real_text_copies_with_whitespace_and_unicode_noise(corpora, tmp_path):
    import unicodedata

    text = (corpora / "quality" / "wikitext2_valid.tokens.txt").read_text(encoding="utf-8")
    paras = list(dict.fromkeys(p.strip() for p in text.split("\n") if len(p.split()) >= 30))[:150]
    rng = random.Random(7)
    recs, copies = [], {}
    for k, p in enumerate(paras):
        recs.append(("wiki", k, p))
        if k % 3 == 0:  # same text: re-wrapped lines, doubled spaces, NFD spelling
            noisy = unicodedata.normalize("NFD", p.replace(" . ", " .\n")).replace(" , ", "  ,\t ")
            recs.append(("web", 1000 + k, noisy))
            copies[doc_id("web", F, 1000 + k)] = doc_id("wiki", F, k)
        if k % 5 == 0:  # one changed word: not an exact duplicate
            recs.append(("web", 2000 + k, p + " extra"))
    rng.shuffle(recs)
    stage = ExactDedup()
    rows = {r["id"]: r for r in decisions(stage.resolve(spill(stage, tmp_path, [recs[0::2], recs[1::2]]), LocalExecutor()))}
    dropped = {k: r["drop_detail"] for k, r in rows.items() if r["drop_reason"]}
    want = {max(a, b): min(a, b) for a, b in copies.items()}
    assert dropped == want
